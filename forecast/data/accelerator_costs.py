"""``data/accelerator_costs.csv``: power (TDP) and listed rental prices per accelerator, with a
validating loader.

One row per accelerator of ``data/hardware.csv`` (by exact name): its thermal design power in
watts and the lowest and highest rental price per accelerator-hour listed in the sources (cloud
on-demand and committed-use prices, neoclouds), with the month of the listings.  Empty where the
sources have no figure: the planner then reports no energy (no TDP) or no money (no price) for
that accelerator, and says why.  The planner's cost priors (``priors/costs.toml``) turn these into
energy and money; the forecast does not read this table (it is not in the data hash).

Error convention as :mod:`forecast.data.evidence`: a
:class:`~forecast.config.errors.DataValidationError` names the file, the 1-based data row and the
field.  No JAX import here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from forecast.config import paths
from forecast.config.errors import DataValidationError
from forecast.data.evidence import _in_data_dir, _number
from forecast.data.hardware import (
    _as_float,
    _check_columns,
    _check_duplicates,
    _check_numeric,
    _check_required_text,
    _check_text,
    _Collector,
    _fmt,
    _NumSpec,
    _parse_year_month,
    _read_validated,
    _resolve,
)

DEFAULT_ACCELERATOR_COSTS_PATH: Path = paths.REPO_ROOT / "data" / "accelerator_costs.csv"
ACCELERATOR_COSTS_COLUMNS: tuple[str, ...] = (
    "name",
    "tdp_watts",
    "price_usd_per_hour_low",
    "price_usd_per_hour_high",
    "price_date",
    "source_url",
    "notes",
)
_PRICE = _NumSpec(0.01, 1000, "USD per accelerator-hour", 3.0, required=False)
_COSTS_NUMERIC: dict[str, _NumSpec] = {
    "tdp_watts": _NumSpec(10, 5000, "W", 700, (("kW", 1e3),), required=False),
    "price_usd_per_hour_low": _PRICE,
    "price_usd_per_hour_high": _PRICE,
}


@dataclass(frozen=True)
class AcceleratorCosts:
    """One row: TDP (W) and the listed rental price range (USD per accelerator-hour), None where
    the sources have no figure; ``price_year``: decimal year of the listings."""

    name: str
    tdp_watts: float | None
    price_low: float | None
    price_high: float | None
    price_year: float | None
    price_date: str
    source_url: str


def validate_accelerator_costs(
    df: pd.DataFrame, file: str, lines: Sequence[int] | None = None
) -> list[DataValidationError]:
    """Every problem in a costs table read with all cells as strings (empty list = valid):
    columns, names (unique), numeric ranges, both prices or neither, low <= high, and a
    YYYY-MM ``price_date`` exactly where there is a price."""
    df = df.fillna("").astype(str).apply(lambda s: s.str.strip())
    col = _Collector(file, len(df), lines)
    present = set(_check_columns(col, df, ACCELERATOR_COSTS_COLUMNS))
    if "name" in present:
        _check_text(col, df, "name", is_name=True)
        _check_duplicates(col, df, "name")
    for name in ("source_url", "notes"):
        if name in present:
            _check_required_text(col, df, name)
    for name, spec in _COSTS_NUMERIC.items():
        if name in present:
            _check_numeric(col, df, name, spec)
    prices = {"price_usd_per_hour_low", "price_usd_per_hour_high", "price_date"}
    if prices <= present:
        for i in range(len(df)):
            low = _number(df["price_usd_per_hour_low"].iat[i])
            high = _number(df["price_usd_per_hour_high"].iat[i])
            date = df["price_date"].iat[i]
            if (low is None) != (high is None):
                missing = "price_usd_per_hour_high" if high is None else "price_usd_per_hour_low"
                col.cell(i, missing, "give both the lowest and the highest price, or neither")
            elif low is not None and high is not None and low > high:
                col.cell(i, "price_usd_per_hour_low", f"{_fmt(low)} is above the high {_fmt(high)}")
            if low is not None and _parse_year_month(date) is None:
                col.cell(i, "price_date", f"bad date {date!r}: a price needs its YYYY-MM")
            if low is None and high is None and date:
                col.cell(i, "price_date", "a date without a price")
    return sorted(col.errors, key=lambda e: -1 if e.row is None else e.row)


def load_accelerator_costs(path: str | Path | None = None) -> dict[str, AcceleratorCosts]:
    """Load and validate the costs table (default: the data folder's copy), by accelerator name.
    Raises the first :class:`DataValidationError`."""
    p = _resolve(path, _in_data_dir(DEFAULT_ACCELERATOR_COSTS_PATH))
    df = _read_validated(p, validate_accelerator_costs)
    out: dict[str, AcceleratorCosts] = {}
    numeric = {name: _as_float(df[name]) for name in _COSTS_NUMERIC}
    for i in range(len(df)):

        def value(name: str, i: int = i) -> float | None:
            x = float(numeric[name].iat[i])
            return None if x != x else x

        date = str(df["price_date"].iat[i]).strip()
        ym = _parse_year_month(date) if date else None
        name = str(df["name"].iat[i]).strip()
        out[name] = AcceleratorCosts(
            name=name,
            tdp_watts=value("tdp_watts"),
            price_low=value("price_usd_per_hour_low"),
            price_high=value("price_usd_per_hour_high"),
            price_year=None if ym is None else ym[0] + (ym[1] - 1) / 12 + 1 / 24,
            price_date=date,
            source_url=str(df["source_url"].iat[i]).strip(),
        )
    return out
