"""Tests for the curated data tables and their validating loaders (forecast.data.hardware)."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from forecast.config.errors import DataValidationError, UnknownAcceleratorError
from forecast.config.paths import frontier_runs_path, hardware_path
from forecast.data.hardware import (
    HARDWARE_COLUMNS,
    Accelerator,
    data_hash,
    get_accelerator,
    load_frontier_runs,
    load_hardware,
    validate_hardware,
)

DEFAULT_HARDWARE_PATH = hardware_path()
DEFAULT_FRONTIER_RUNS_PATH = frontier_runs_path()

H100 = "NVIDIA H100 SXM5"


@pytest.fixture(scope="module")
def hw() -> pd.DataFrame:
    return load_hardware()


@pytest.fixture(scope="module")
def raw_hw() -> pd.DataFrame:
    return pd.read_csv(DEFAULT_HARDWARE_PATH, dtype=str, keep_default_na=False)


def _write(tmp_path: Path, df: pd.DataFrame, name: str = "broken_hw.csv") -> Path:
    p = tmp_path / name
    df.to_csv(p, index=False)
    return p


def _row_of(raw: pd.DataFrame, name: str) -> int:
    """0-based index of a named row."""
    return int(np.flatnonzero(raw["name"].to_numpy() == name)[0])


# ----------------------------------------------------------------------------- shipped tables


def test_shipped_hardware_loads_typed(hw: pd.DataFrame) -> None:
    assert tuple(hw.columns[: len(HARDWARE_COLUMNS)]) == HARDWARE_COLUMNS
    assert len(hw) == 25
    for c in (
        "peak_dense_16bit_flops",
        "hbm_bandwidth_bytes_per_s",
        "scaleup_domain_size",
        "release_year",
    ):
        assert hw[c].dtype == np.float64
    assert hw["flagship"].dtype == bool
    assert set(hw["status"]) == {"shipped", "announced"}
    assert set(hw["scaleup_topology"]) == {"switched", "torus", "mesh"}
    # only the allowed columns may be empty
    for c in HARDWARE_COLUMNS:
        if c not in {
            "peak_dense_fp8_flops",
            "scaleout_bandwidth_bytes_per_s",
            "scaleup_domain_size",
        }:
            assert hw[c].notna().all(), c
    assert hw["scaleup_domain_size"].isna().sum() == 1  # MI455X only
    assert not hw.loc[hw["name"].str.contains("A100 SXM4 40GB"), "flagship"].item()


def test_h100_row(hw: pd.DataFrame) -> None:
    row = hw.loc[hw["name"] == H100].iloc[0]
    assert row["peak_dense_16bit_flops"] == pytest.approx(9.89e14)
    assert row["hbm_bandwidth_bytes_per_s"] == pytest.approx(3.35e12)
    assert row["scaleup_bandwidth_bytes_per_s"] == pytest.approx(4.5e11)
    assert row["scaleout_bandwidth_bytes_per_s"] == pytest.approx(5e10)
    assert row["scaleup_domain_size"] == 8
    assert row["release_year"] == pytest.approx(2022 + 8 / 12 + 1 / 24)
    assert row["release_year"] == pytest.approx(2022.7083, abs=1e-4)


def test_get_accelerator(hw: pd.DataFrame) -> None:
    acc = get_accelerator(hw, "h100")
    assert isinstance(acc, Accelerator)
    assert acc.name == H100
    assert acc.flops_16bit == pytest.approx(9.89e14)
    assert acc.flops_fp8 == pytest.approx(1.979e15)
    assert acc.scaleup_domain_size == 8 and isinstance(acc.scaleup_domain_size, int)
    assert acc.scaleup_topology == "switched"
    assert get_accelerator(hw, "GB200").scaleup_domain_size == 72
    # a whole-word match breaks the B200 / GB200 tie
    assert get_accelerator(hw, "B200").name == "NVIDIA B200 (HGX/DGX)"
    assert get_accelerator(hw, H100.upper()).name == H100
    mi455 = get_accelerator(hw, "MI455X")
    assert mi455.scaleup_domain_size is None and mi455.scaleout_bandwidth is None
    assert mi455.status == "announced"
    with pytest.raises(AttributeError):
        acc.name = "x"  # type: ignore[misc]


def test_unknown_accelerator_lists_closest(hw: pd.DataFrame) -> None:
    with pytest.raises(UnknownAcceleratorError) as ei:
        get_accelerator(hw, "H1000")
    assert H100 in ei.value.closest
    assert len(ei.value.closest) <= 5
    assert H100 in str(ei.value)


def test_ambiguous_accelerator_lists_candidates(hw: pd.DataFrame) -> None:
    with pytest.raises(UnknownAcceleratorError) as ei:
        get_accelerator(hw, "A100")
    assert set(ei.value.closest) == {"NVIDIA A100 SXM4 40GB", "NVIDIA A100 SXM4 80GB"}


def test_frontier_runs(hw: pd.DataFrame) -> None:
    runs = load_frontier_runs()
    assert len(runs) == 139
    censored = runs["training_compute_flop"].isna()
    assert censored.sum() == 9
    assert "Claude Opus 4" in set(runs.loc[censored, "model"])
    assert runs["record"].dtype == bool
    assert int(runs["record"].sum()) == 25
    grok4 = runs.loc[runs["model"] == "Grok 4"].iloc[0]
    assert grok4["training_compute_flop"] == pytest.approx(5e26)
    assert grok4["record"]
    assert grok4["confidence"] == "Speculative"
    assert 2025.5 < grok4["year"] < 2025.55
    assert set(runs["confidence"]) <= {"Confident", "Likely", "Speculative", ""}
    assert (runs.loc[censored, "confidence"] == "").all()
    # records are monotone in compute
    rec = runs.loc[runs["record"], "training_compute_flop"].to_numpy()
    assert np.all(np.diff(rec) > 0)


def test_data_hash() -> None:
    one = data_hash(DEFAULT_HARDWARE_PATH)
    assert one == hashlib.sha256(DEFAULT_HARDWARE_PATH.read_bytes()).hexdigest()
    both = data_hash(DEFAULT_HARDWARE_PATH, DEFAULT_FRONTIER_RUNS_PATH)
    assert both == data_hash() and both != one and len(both) == 64


# ----------------------------------------------------------------------------- broken inputs


def _break(raw: pd.DataFrame, kind: str) -> tuple[pd.DataFrame, int | None, str]:
    """Return (broken frame, expected 1-based data row or None, column) for one kind of damage."""
    df = raw.copy()
    i = _row_of(raw, H100)
    if kind == "missing_column":
        return df.drop(columns=["hbm_capacity_bytes"]), None, "hbm_capacity_bytes"
    if kind == "non_numeric":
        df.loc[i, "peak_dense_16bit_flops"] = "lots"
        return df, i + 1, "peak_dense_16bit_flops"
    if kind == "negative":
        df.loc[i, "scaleup_bandwidth_bytes_per_s"] = "-4.5e11"
        return df, i + 1, "scaleup_bandwidth_bytes_per_s"
    if kind == "unit_slip":
        df.loc[i, "hbm_bandwidth_bytes_per_s"] = "3.35"
        return df, i + 1, "hbm_bandwidth_bytes_per_s"
    if kind == "duplicate":
        j = _row_of(raw, "NVIDIA H200 SXM")
        df.loc[j, "name"] = H100.lower()
        return df, j + 1, "name"
    if kind == "bad_date":
        df.loc[i, "release_date"] = "2022-13"
        return df, i + 1, "release_date"
    if kind == "empty_required":
        df.loc[i, "vendor"] = ""
        return df, i + 1, "vendor"
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind",
    [
        "missing_column",
        "non_numeric",
        "negative",
        "unit_slip",
        "duplicate",
        "bad_date",
        "empty_required",
    ],
)
def test_broken_file_error_names_file_row_field(
    tmp_path: Path, raw_hw: pd.DataFrame, kind: str
) -> None:
    df, row, field = _break(raw_hw, kind)
    path = _write(tmp_path, df, f"hw_{kind}.csv")
    with pytest.raises(DataValidationError) as ei:
        load_hardware(path)
    err, msg = ei.value, str(ei.value)
    assert f"hw_{kind}.csv" in msg
    assert err.field == field and f"'{field}'" in msg
    if row is None:
        assert err.row is None and "line 1" in msg
    else:
        assert err.row == row
        assert f"row {row}," in msg and f"(line {row + 1})" in msg


def test_unit_slip_message_hints_units(tmp_path: Path, raw_hw: pd.DataFrame) -> None:
    df, _, _ = _break(raw_hw, "unit_slip")
    with pytest.raises(DataValidationError) as ei:
        load_hardware(_write(tmp_path, df))
    assert "3.35 looks like TB/s; this column is bytes/s, expected 1e9..1e14" in str(ei.value)


def test_validate_returns_all_problems(tmp_path: Path, raw_hw: pd.DataFrame) -> None:
    df = raw_hw.copy()
    i = _row_of(raw_hw, H100)
    df.loc[i, "hbm_bandwidth_bytes_per_s"] = "3.35"
    df.loc[i, "release_date"] = "2022-13"
    df.loc[0, "status"] = "sold"
    df.loc[1, "scaleup_topology"] = "ring"
    df.loc[2, "flagship"] = "yes"
    df.loc[3, "scaleup_domain_size"] = "7.5"
    df.loc[4, "peak_dense_fp8_flops"] = "1979"  # TFLOP/s slip in an optional column
    df = df.drop(columns=["notes"])
    errors = validate_hardware(df, "many.csv")
    fields = [e.field for e in errors]
    assert len(errors) == 8
    assert fields[0] == "notes" and errors[0].row is None  # header problems first
    assert {
        "hbm_bandwidth_bytes_per_s",
        "release_date",
        "status",
        "scaleup_topology",
        "flagship",
        "scaleup_domain_size",
        "peak_dense_fp8_flops",
    } <= set(fields)
    fp8 = next(e for e in errors if e.field == "peak_dense_fp8_flops")
    assert "looks like TFLOP/s" in fp8.reason
    assert all(e.file == "many.csv" for e in errors)
    # the shipped table itself is clean
    assert validate_hardware(raw_hw, "hardware.csv") == []


def test_dates_out_of_range_rejected(raw_hw: pd.DataFrame) -> None:
    for bad in ("1999-12", "2041-01", "2022-9", "2022-00", "Sep 2022"):
        df = raw_hw.copy()
        df.loc[0, "release_date"] = bad
        errors = validate_hardware(df, "d.csv")
        assert [e.field for e in errors] == ["release_date"], bad


def test_frontier_runs_validation(tmp_path: Path) -> None:
    raw = pd.read_csv(DEFAULT_FRONTIER_RUNS_PATH, dtype=str, keep_default_na=False)
    cases = {
        "publication_date": "2023-02-30",
        "training_compute_flop": "1e31",
        "hardware_quantity": "2.5",
        "hardware_utilization": "34",
        "record": "maybe",
        "confidence": "Sure",
    }
    for field, value in cases.items():
        df = raw.copy()
        df.loc[10, field] = value
        path = tmp_path / f"runs_{field}.csv"
        df.to_csv(path, index=False)
        with pytest.raises(DataValidationError) as ei:
            load_frontier_runs(path)
        assert ei.value.field == field and ei.value.row == 11
        assert path.name in str(ei.value) and "(line 12)" in str(ei.value)
    runs = load_frontier_runs()
    assert math.isnan(runs.loc[runs["model"] == "GPT-5.5", "training_compute_flop"].item())
