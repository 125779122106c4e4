"""Landing folder: validate, merge with provenance, reject whole files, conflicts, duplicates."""

from __future__ import annotations

import csv
import io
import os
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from forecast.cli import app
from forecast.config.paths import DATA_TABLE_FILES
from forecast.data import ingest as landing
from forecast.data.hardware import HARDWARE_COLUMNS, load_hardware
from forecast.data.ingest import PROCESSED_DIR, REJECTED_DIR, ingest_file, pending_files

REPO_DATA = Path(__file__).resolve().parents[2] / "data"
HEADER = ",".join(HARDWARE_COLUMNS)
NEW_ROW = (
    "Test Accel X1,TestCo,2026-03,announced,true,2.5e15,5.0e15,1.2e13,2.88e11,1.8e12,72,switched,"
    "1.0e11,https://example.com/x1,Synthetic accelerator for tests"
)
NEW_ROW_2 = (
    "Test Accel X2,TestCo,2026-06,announced,true,3.0e15,6.0e15,1.5e13,3.0e11,1.8e12,72,switched,"
    "1.0e11,https://example.com/x2,Second synthetic accelerator"
)


def _existing_row(name: str) -> dict[str, str]:
    df = pd.read_csv(REPO_DATA / "hardware.csv", dtype=str, keep_default_na=False)
    return df[df["name"] == name].iloc[0].to_dict()


def _csv(rows: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(HARDWARE_COLUMNS), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    (d / "incoming").mkdir(parents=True)
    for name in DATA_TABLE_FILES:
        shutil.copy(REPO_DATA / name, d / name)
    return d


def _drop(data_dir: Path, name: str, text: str) -> Path:
    path = data_dir / "incoming" / name
    path.write_text(text)
    return path


def test_valid_file_is_merged_with_provenance_columns(data_dir: Path):
    before = (data_dir / "hardware.csv").read_text()
    src = _drop(data_dir, "new-parts.csv", f"{HEADER}\n{NEW_ROW}\n{NEW_ROW_2}\n")
    result = ingest_file(src, data_dir)
    assert result.status == "merged" and result.changed
    assert result.added == ("Test Accel X1", "Test Accel X2")
    assert before.splitlines()[1].split(",")[0] in (data_dir / "hardware.csv").read_text()
    df = load_hardware(data_dir / "hardware.csv")
    assert {"Test Accel X1", "Test Accel X2"} <= set(df["name"])
    assert df.loc[df["name"] == "Test Accel X1", "hbm_bandwidth_bytes_per_s"].item() == 1.2e13
    assert df.loc[df["name"] == "Test Accel X2", "added_from"].item() == "new-parts.csv"
    assert not src.exists() and (data_dir / PROCESSED_DIR / "new-parts.csv").exists()


def test_provenance_columns_go_into_the_table(data_dir: Path):
    src = _drop(data_dir, "x1.csv", f"{HEADER}\n{NEW_ROW}\n")
    assert ingest_file(src, data_dir).status == "merged"
    df = pd.read_csv(data_dir / "hardware.csv", dtype=str, keep_default_na=False)
    assert list(df.columns) == [*HARDWARE_COLUMNS, "added_from", "added_at"]
    assert (df["added_from"].iloc[:-1] == "").all() and (df["added_at"].iloc[:-1] == "").all()
    assert df["added_from"].iloc[-1] == "x1.csv" and df["added_at"].iloc[-1].endswith("Z")
    # a second file appends under the existing provenance columns
    src2 = _drop(data_dir, "x2.csv", f"{HEADER}\n{NEW_ROW_2}\n")
    assert ingest_file(src2, data_dir).status == "merged"
    df = pd.read_csv(data_dir / "hardware.csv", dtype=str, keep_default_na=False)
    assert df["added_from"].iloc[-1] == "x2.csv" and len(df.columns) == len(HARDWARE_COLUMNS) + 2


def test_file_with_one_invalid_row_is_rejected_whole(data_dir: Path):
    before = (data_dir / "hardware.csv").read_bytes()
    bad = NEW_ROW_2.replace("1.5e13", "15")  # TB/s slip in hbm_bandwidth_bytes_per_s
    src = _drop(data_dir, "mixed.csv", f"{HEADER}\n{NEW_ROW}\n{bad}\n")
    result = ingest_file(src, data_dir)
    assert result.status == "rejected" and not result.changed
    assert (data_dir / "hardware.csv").read_bytes() == before
    moved = data_dir / REJECTED_DIR / "mixed.csv"
    assert moved.exists() and not src.exists()
    reason = (data_dir / REJECTED_DIR / "mixed.csv.reason").read_text()
    assert "row 2" in reason and "'hbm_bandwidth_bytes_per_s'" in reason and "(line 3)" in reason
    assert "looks like TB/s" in reason


def test_conflicting_duplicate_is_rejected_not_overwritten(data_dir: Path):
    before = (data_dir / "hardware.csv").read_bytes()
    row = _existing_row("NVIDIA H100 SXM5")
    row["hbm_bandwidth_bytes_per_s"] = "3.9e12"
    src = _drop(data_dir, "h100.csv", _csv([row]))
    result = ingest_file(src, data_dir)
    assert result.status == "rejected"
    assert (data_dir / "hardware.csv").read_bytes() == before
    reason = (data_dir / REJECTED_DIR / "h100.csv.reason").read_text()
    assert "row 1, field 'hbm_bandwidth_bytes_per_s'" in reason
    assert "already in hardware.csv" in reason and "3.35e12" in reason and "3.9e12" in reason


def test_exact_duplicate_is_a_no_op(data_dir: Path):
    before = (data_dir / "hardware.csv").read_bytes()
    row = _existing_row("NVIDIA H100 SXM5")
    row["notes"] = "re-sent with other notes"
    row["hbm_bandwidth_bytes_per_s"] = "3350000000000"  # same number, other spelling
    row["status"] = "SHIPPED"
    src = _drop(data_dir, "again.csv", _csv([row]))
    result = ingest_file(src, data_dir)
    assert result.status == "unchanged" and result.duplicates == ("NVIDIA H100 SXM5",)
    assert (data_dir / "hardware.csv").read_bytes() == before
    assert (data_dir / PROCESSED_DIR / "again.csv").exists()


def test_new_rows_merge_and_exact_duplicates_are_skipped(data_dir: Path):
    dup = _existing_row("NVIDIA H200 SXM")
    new = dict(zip(HARDWARE_COLUMNS, next(csv.reader([NEW_ROW])), strict=True))
    src = _drop(data_dir, "both.csv", _csv([dup, new]))
    result = ingest_file(src, data_dir)
    assert result.status == "merged"
    assert result.added == ("Test Accel X1",) and result.duplicates == ("NVIDIA H200 SXM",)
    df = load_hardware(data_dir / "hardware.csv")
    assert (df["name"] == "NVIDIA H200 SXM").sum() == 1


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("empty.csv", "", "empty"),
        ("header-only.csv", f"{HEADER}\n", "no data rows"),
        ("notes.txt", f"{HEADER}\n{NEW_ROW}\n", "not a .csv file"),
        ("cols.csv", "name,vendor\nX,Y\n", "missing column 'release_date'"),
    ],
)
def test_unusable_files_are_rejected_with_a_reason(data_dir: Path, name, text, needle):
    src = _drop(data_dir, name, text)
    result = ingest_file(src, data_dir)
    assert result.status == "rejected"
    assert needle in (data_dir / REJECTED_DIR / f"{name}.reason").read_text()


def test_rejected_names_do_not_collide(data_dir: Path):
    bad = f"{HEADER}\n{NEW_ROW.replace('2026-03', '2026-13')}\n"
    first = ingest_file(_drop(data_dir, "bad.csv", bad), data_dir)
    second = ingest_file(_drop(data_dir, "bad.csv", bad), data_dir)
    assert first.moved_to != second.moved_to
    assert Path(f"{second.moved_to}.reason").exists() and Path(first.moved_to).exists()


def test_write_is_atomic_when_replace_fails(data_dir: Path, monkeypatch):
    before = (data_dir / "hardware.csv").read_bytes()
    src = _drop(data_dir, "x1.csv", f"{HEADER}\n{NEW_ROW}\n")

    def boom(a, b):
        raise OSError("disk full")

    monkeypatch.setattr(landing.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        ingest_file(src, data_dir)
    assert (data_dir / "hardware.csv").read_bytes() == before
    assert not [p for p in data_dir.iterdir() if p.name.startswith(".hardware.csv.")]
    assert src.exists()  # still waiting in the landing folder, retried next time


def test_pending_files_skips_hidden_readme_and_unsettled(data_dir: Path):
    inc = data_dir / "incoming"
    old = _drop(data_dir, "a.csv", "x")
    os.utime(old, (time.time() - 60, time.time() - 60))
    _drop(data_dir, ".partial.csv", "x")
    _drop(data_dir, "README.md", "x")
    _drop(data_dir, "fresh.csv", "x")
    assert pending_files(inc, settle_seconds=30) == [old]
    assert {p.name for p in pending_files(inc, settle_seconds=0)} == {"a.csv", "fresh.csv"}
    assert pending_files(data_dir / "missing") == []


def test_ingest_task_fn_runs_without_prefect(data_dir: Path):
    from flows.serve import ingest_task

    src = _drop(data_dir, "x1.csv", f"{HEADER}\n{NEW_ROW}\n")
    assert ingest_task.fn(str(src), str(data_dir)).added == ("Test Accel X1",)
    assert ingest_task.retries == 2


def test_cli_ingest_rejects_with_exit_2_and_merges_with_no_refresh(data_dir: Path, tmp_path: Path):
    runner = CliRunner()
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{HEADER}\n{NEW_ROW.replace('TestCo', '')}\n")
    res = runner.invoke(app, ["ingest", str(bad), "--data-dir", str(data_dir), "--no-refresh"])
    assert res.exit_code == 2
    assert "rejected" in res.output and "row 1, field 'vendor'" in res.output
    good = tmp_path / "good.csv"
    good.write_text(f"{HEADER}\n{NEW_ROW}\n")
    res = runner.invoke(app, ["ingest", str(good), "--data-dir", str(data_dir), "--no-refresh"])
    assert res.exit_code == 0, res.output
    assert "added 1 accelerator(s): Test Accel X1" in res.output
    assert "Test Accel X1" in set(load_hardware(data_dir / "hardware.csv")["name"])
