"""data/accelerator_costs.csv and its loader: one row per accelerator, sourced figures, and one
clear error per bad cell (issue 24: prices and power with public sources)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from forecast.config.errors import DataValidationError
from forecast.data.accelerator_costs import (
    DEFAULT_ACCELERATOR_COSTS_PATH,
    load_accelerator_costs,
)
from forecast.data.hardware import load_hardware

RAW = pd.read_csv(DEFAULT_ACCELERATOR_COSTS_PATH, dtype=str, keep_default_na=False)


def test_every_accelerator_has_a_row_and_the_listed_figures():
    costs = load_accelerator_costs()
    names = set(load_hardware()["name"])
    assert set(costs) == names  # no orphan rows, no accelerator left out
    h100 = costs["NVIDIA H100 SXM5"]
    # Epoch's chip dataset: 700 W; Epoch's price snapshot: Cudo 2.45 and AWS p5 12.29 USD/h, 2025-03
    assert (h100.tdp_watts, h100.price_low, h100.price_high) == (700.0, 2.45, 12.29)
    assert h100.price_year == pytest.approx(2025 + 2 / 12 + 1 / 24)
    assert costs["NVIDIA A100 SXM4 80GB"].tdp_watts == 400.0
    assert costs["NVIDIA B200 (HGX/DGX)"].price_low is None  # no rental listing: no money
    assert costs["Google TPU v5p"].tdp_watts is None  # no TDP: no energy
    assert all(c.source_url.startswith("https://") for c in costs.values())


def _bad(tmp_path: Path, row: int, **cells: str) -> DataValidationError:
    raw = RAW.copy()
    for column, value in cells.items():
        raw.loc[row, column] = value
    path = tmp_path / "accelerator_costs.csv"
    raw.to_csv(path, index=False)
    with pytest.raises(DataValidationError) as info:
        load_accelerator_costs(path)
    return info.value


H100 = int((RAW["name"] == "NVIDIA H100 SXM5").to_numpy().nonzero()[0][0])
B200 = int((RAW["name"] == "NVIDIA B200 (HGX/DGX)").to_numpy().nonzero()[0][0])


@pytest.mark.parametrize(
    ("row", "cells", "field", "says"),
    [
        (H100, {"price_usd_per_hour_low": "20"}, "price_usd_per_hour_low", "above the high"),
        (H100, {"price_usd_per_hour_high": ""}, "price_usd_per_hour_high", "or neither"),
        (H100, {"price_date": "March 2025"}, "price_date", "YYYY-MM"),
        (B200, {"price_date": "2025-03"}, "price_date", "without a price"),
        (H100, {"tdp_watts": "0.7"}, "tdp_watts", "kW"),  # a unit slip: kW written as W
        (H100, {"tdp_watts": "700 W"}, "tdp_watts", ""),
        (B200, {"name": "NVIDIA H100 SXM5"}, "name", "duplicate"),  # the later row
        (H100, {"source_url": ""}, "source_url", ""),
    ],
)
def test_bad_cells_name_the_row_and_field(tmp_path, row, cells, field, says):
    err = _bad(tmp_path, row, **cells)
    assert err.row == row + 1 and err.field == field
    assert says.lower() in str(err).lower()
    assert "accelerator_costs.csv" in str(err)
