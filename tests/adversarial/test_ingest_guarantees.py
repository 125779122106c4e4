"""Guarantees behind the ingest corpus (issue 13, data half): properties and the paths that
succeed (copy from outside, normalised names), the rejected-archive pairing and refresh locking."""

from __future__ import annotations

import csv
import io
import shutil
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adversarial.harness import assert_clean_error, run_cli, snapshot
from adversarial.test_ingest_corpus import GOOD, REPO_DATA, row, table
from forecast.config.errors import UnknownAcceleratorError
from forecast.config.filelock import exclusive_lock
from forecast.data.hardware import (
    HARDWARE_COLUMNS,
    get_accelerator,
    load_hardware,
    normalise_name,
    parse_number,
    read_strings,
    validate_hardware,
)
from forecast.data.ingest import REJECTED_DIR, ingest_file
from forecast.store.layout import LOCK_FILE

NUMERIC = (
    "peak_dense_16bit_flops",
    "peak_dense_fp8_flops",
    "hbm_bandwidth_bytes_per_s",
    "hbm_capacity_bytes",
    "scaleup_bandwidth_bytes_per_s",
    "scaleup_domain_size",
    "scaleout_bandwidth_bytes_per_s",
)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    (d / "incoming").mkdir(parents=True)
    for p in REPO_DATA.glob("*.csv"):
        shutil.copy(p, d / p.name)
    return d


# ----------------------------------------------------------------------------- class 1 and 2

_cell = st.one_of(
    st.text(max_size=12),
    st.text(alphabet="0123456789.eE+-_ \u0661\uff12\u00b9xna", max_size=10),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**20), 10**20).map(str),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cell=_cell)
def test_parse_number_accepts_only_what_float_and_the_loader_read_alike(cell: str):
    value = parse_number(cell)
    if value is not None:
        assert cell.strip().isascii()
        assert value == float(cell.strip())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(column=st.sampled_from(NUMERIC), cell=_cell, name=st.text(min_size=1, max_size=30))
def test_any_row_the_validator_accepts_loads(tmp_path_factory, column: str, cell: str, name: str):
    """Property (issue 13, class 1): the loader never fails on a table the validator accepted,
    and loads each number as the validator read it."""
    text = table(row(**{column: cell, "name": name})).decode()
    df, lines, structural = read_strings(text, "prop.csv")
    errors = structural or validate_hardware(df, "prop.csv", lines)
    if errors:
        return
    path = tmp_path_factory.mktemp("prop") / "hardware.csv"
    path.write_text(text, encoding="utf-8")
    loaded = load_hardware(path)
    expected = parse_number(cell.strip())
    got = loaded[column].iloc[0]
    assert (expected is None and got != got) or got == expected


def test_names_are_normalised_and_compared_normalised():
    assert normalise_name("ＮＶＩＤＩＡ\u200b H100\u00a0SXM5\u2028") == "NVIDIA H100 SXM5"
    df = load_hardware(REPO_DATA / "hardware.csv")
    assert get_accelerator(df, "NVIDIA\u200b H100 SXM5").name == "NVIDIA H100 SXM5"
    assert get_accelerator(df, "Ｈ１００").name == "NVIDIA H100 SXM5"
    with pytest.raises(UnknownAcceleratorError):
        get_accelerator(df, "\u200b")


def test_release_dates_are_tied_to_status_and_today():
    def problems(**changes: str) -> list[str]:
        df, lines, _ = read_strings(table(row(**changes)).decode(), "d.csv")
        return [str(e) for e in validate_hardware(df, "d.csv", lines, today=date(2026, 1, 15))]

    assert problems(release_date="2026-01") == []
    assert "in the future" in problems(release_date="2026-02")[0]
    assert problems(status="announced", release_date="2029-01") == []  # 36 months ahead
    assert "more than 36 months" in problems(status="announced", release_date="2029-02")[0]
    assert "before 2010" in problems(release_date="2009-12")[0]


def test_a_normalised_name_is_merged_normalised_and_then_found(data_dir: Path):
    src = data_dir / "incoming" / "zw.csv"
    src.write_bytes(table(row(name="Corpus\u200b Accel\u00a0Z1")))
    result = ingest_file(src, data_dir)
    assert result.status == "merged" and result.added == ("Corpus Accel Z1",)
    df = load_hardware(data_dir / "hardware.csv")
    assert get_accelerator(df, "corpus accel z1").name == "Corpus Accel Z1"
    again = data_dir / "incoming" / "zw2.csv"
    again.write_bytes(table(row(name="CORPUS ACCEL Z1")))
    assert ingest_file(again, data_dir).status == "unchanged"  # the same part, not a new one


# ----------------------------------------------------------------------------- class 3


def test_a_file_from_outside_is_copied_and_left_in_place(data_dir: Path, tmp_path: Path):
    src = tmp_path / "mine.csv"
    src.write_bytes(table(row()))
    result = ingest_file(src, data_dir)
    assert result.status == "merged" and result.kept_source
    assert src.read_bytes() == Path(result.moved_to).read_bytes() == table(row())
    assert Path(result.moved_to).parent == data_dir / "processed"


def test_a_link_in_the_landing_folder_is_removed_but_not_its_target(data_dir, tmp_path):
    target = tmp_path / "target.csv"
    target.write_bytes(table(row()))
    link = data_dir / "incoming" / "link.csv"
    link.symlink_to(target)
    assert ingest_file(link, data_dir).status == "merged"
    assert not link.is_symlink() and target.read_bytes() == table(row())


# ----------------------------------------------------------------------------- class 4


def test_reason_named_upload_never_clobbers_a_pair(data_dir: Path):
    """Issue 13 class 4: 'x.csv.reason' rejected, then 'x.csv': both uploads and reasons kept."""
    inc, rej = data_dir / "incoming", data_dir / REJECTED_DIR
    (inc / "x.csv.reason").write_bytes(b"first upload")
    first = ingest_file(inc / "x.csv.reason", data_dir)
    (inc / "x.csv").write_bytes(b"second upload")
    second = ingest_file(inc / "x.csv", data_dir)
    (inc / "x.csv").write_bytes(b"third upload")
    third = ingest_file(inc / "x.csv", data_dir)
    moved = [Path(r.moved_to) for r in (first, second, third)]
    assert len(set(moved)) == 3
    assert [p.read_bytes() for p in moved] == [b"first upload", b"second upload", b"third upload"]
    for p, r in zip(moved, (first, second, third), strict=True):
        assert r.problems[0] in Path(f"{p}.reason").read_text()
    assert not any(p.name.endswith(".reason") for p in moved)
    assert len(list(rej.iterdir())) == 6


def test_a_preexisting_reason_without_its_file_is_not_overwritten(data_dir: Path):
    rej = data_dir / REJECTED_DIR
    rej.mkdir()
    (rej / "y.csv.reason").write_text("someone's notes")
    (data_dir / "incoming" / "y.csv").write_bytes(b"bad")
    result = ingest_file(data_dir / "incoming" / "y.csv", data_dir)
    assert Path(result.moved_to).name != "y.csv"
    assert (rej / "y.csv.reason").read_text() == "someone's notes"


def test_a_failed_archive_write_leaves_no_partial_pair(data_dir: Path, monkeypatch):
    from forecast.data import ingest

    def full(fd: int, data) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ingest, "_write_fd", full)
    src = data_dir / "incoming" / "z.csv"
    src.write_bytes(b"bad")
    before = snapshot(data_dir)
    with pytest.raises(ingest.IngestWriteError, match="No space left"):
        ingest_file(src, data_dir)
    after = snapshot(data_dir)
    assert {k: v for k, v in after.items() if not k.startswith(".")} == before
    assert src.exists()


# ----------------------------------------------------------------------------- class 5


def test_the_table_size_limit(data_dir: Path, monkeypatch):
    from forecast.data import ingest

    monkeypatch.setattr(ingest, "MAX_HARDWARE_ROWS", 25)  # 24 curated rows
    src = data_dir / "incoming" / "two.csv"
    src.write_bytes(table(row(name="Corpus A"), row(name="Corpus B")))
    before = (data_dir / "hardware.csv").read_bytes()
    result = ingest_file(src, data_dir)
    assert result.status == "rejected" and "limit of 25" in result.problems[0]
    assert (data_dir / "hardware.csv").read_bytes() == before


# ----------------------------------------------------------------------------- class 10


def test_ingest_with_refresh_is_refused_before_merging_while_a_refresh_runs(data_dir, tmp_path):
    """Issue 13 class 10: no merge, no archive, the file waits; exit 2 names the running refresh."""
    outputs = tmp_path / "outputs"
    src = data_dir / "incoming" / "new.csv"
    src.write_bytes(table(row()))
    before = snapshot(data_dir)
    with exclusive_lock(outputs / LOCK_FILE, "refresh"):
        proc = run_cli(
            ["ingest", str(src), "--data-dir", str(data_dir), "--outputs-dir", str(outputs)]
        )
    assert_clean_error(proc, "another refresh is running")
    assert snapshot(data_dir) == before and src.exists()


# ----------------------------------------------------------------------------- class 11


def test_extra_fields_are_reported_as_such_not_as_shifted_values():
    text = table(row()).decode().rstrip("\n") + ",true\n"
    df, lines, structural = read_strings(text, "x.csv")
    assert [str(e) for e in structural] == [
        "x.csv, row 1: row 1 has 16 fields, header has 15 (line 2)"
    ]
    assert list(df.iloc[0]) == [GOOD[c] for c in HARDWARE_COLUMNS]  # cut to the header


def test_a_quoted_multiline_cell_keeps_physical_lines():
    rows = [row(notes="two\nlines"), row(name="Corpus Z2", release_date="2025-13")]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(
        [list(HARDWARE_COLUMNS), *[[r[c] for c in HARDWARE_COLUMNS] for r in rows]]
    )
    df, lines, structural = read_strings(buf.getvalue(), "m.csv")
    assert lines == [2, 4] and not structural
