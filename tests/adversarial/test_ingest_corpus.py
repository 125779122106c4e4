"""Adversarial corpus, data half (issue 13): hostile files given to ``wallcast ingest``.

Every case is a bad upload.  For EVERY case the contract of issue 13 is checked: exit 2, one
``error:`` line and it is the last line (naming the file and, where a row or field is at fault,
that row or field), no traceback, ``data/*.csv`` byte-identical, nothing under ``data/rejected/``
or ``data/processed/`` overwritten or removed, ``hardware.csv`` still loadable, no process left.

The cases run in process (typer's CliRunner, ``--no-refresh``) against one temporary copy of the
data folder that accumulates the archive across cases, so later cases also prove that earlier
rejections are never overwritten.  :func:`test_real_cli_subprocess` runs a sample through the
real ``wallcast`` command.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from adversarial.harness import (
    assert_clean_error,
    assert_unchanged,
    processes_mentioning,
    run_cli,
    run_cli_in_process,
    snapshot,
)
from forecast.data.hardware import HARDWARE_COLUMNS, load_hardware
from forecast.data.ingest import MAX_FILE_BYTES, MAX_REASONS, MAX_ROWS_PER_FILE

REPO_DATA = Path(__file__).resolve().parents[2] / "data"
HEADER = list(HARDWARE_COLUMNS)
#: A valid new accelerator (synthetic), as a column -> cell mapping.
GOOD = dict(
    zip(
        HEADER,
        [
            "Corpus Accel Z1",
            "CorpusCo",
            "2025-03",
            "shipped",
            "true",
            "2.5e15",
            "5.0e15",
            "1.2e13",
            "2.88e11",
            "1.8e12",
            "72",
            "switched",
            "1.0e11",
            "https://example.com/z1",
            "Synthetic accelerator of the adversarial corpus",
        ],
        strict=True,
    )
)
#: The H100 row of the shipped table, as written there.
H100 = "NVIDIA H100 SXM5"


def table(*rows: dict[str, str], header: list[str] | None = None) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = header or HEADER
    w.writerow(cols)
    for r in rows:
        w.writerow([r.get(c, "") for c in cols])
    return buf.getvalue().encode("utf-8")


def row(**changes: str) -> dict[str, str]:
    return {**GOOD, **changes}


def existing(which: str, **changes: str) -> dict[str, str]:
    with (REPO_DATA / "hardware.csv").open(encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["name"] == which:
                return {**r, **changes}
    raise KeyError(which)


@dataclass(frozen=True)
class Case:
    """One hostile upload: file name, its bytes (made lazily), what the error must mention."""

    id: str
    klass: int  # issue 13 class of failure
    filename: str
    content: Callable[[], bytes]
    mention: tuple[str, ...] = ()
    where: str = "incoming"  # incoming | outside


def _many_bad_rows() -> bytes:
    return table(*(row(name=f"Bad {k}", release_date="2025-13") for k in range(60)))


CASES: list[Case] = [
    # 1. values that validate but poison the table: one ASCII number syntax
    Case("arabic-indic-digits", 1, "c01.csv", lambda: table(row(hbm_bandwidth_bytes_per_s="١٢e12")), ("row 1", "hbm_bandwidth_bytes_per_s")),
    Case("fullwidth-digits", 1, "c02.csv", lambda: table(row(peak_dense_16bit_flops="２.５e15")), ("peak_dense_16bit_flops",)),
    Case("superscript-exponent", 1, "c03.csv", lambda: table(row(peak_dense_16bit_flops="2.5e¹⁵")), ("peak_dense_16bit_flops",)),
    Case("underscore-digits", 1, "c04.csv", lambda: table(row(scaleup_domain_size="1_000")), ("scaleup_domain_size",)),
    Case("nan", 1, "c05.csv", lambda: table(row(hbm_capacity_bytes="nan")), ("hbm_capacity_bytes",)),
    Case("infinity", 1, "c06.csv", lambda: table(row(hbm_capacity_bytes="Infinity")), ("hbm_capacity_bytes",)),
    Case("hex", 1, "c07.csv", lambda: table(row(scaleup_domain_size="0x48")), ("scaleup_domain_size",)),
    Case("overflow", 1, "c08.csv", lambda: table(row(peak_dense_fp8_flops="1e999")), ("peak_dense_fp8_flops",)),
    Case("nbsp-inside-number", 1, "c09.csv", lambda: table(row(hbm_bandwidth_bytes_per_s="1.2\u00a0e13")), ("hbm_bandwidth_bytes_per_s",)),
    Case("negative", 1, "c10.csv", lambda: table(row(scaleup_bandwidth_bytes_per_s="-1.8e12")), ("scaleup_bandwidth_bytes_per_s",)),
    Case("unit-in-cell", 1, "c11.csv", lambda: table(row(hbm_bandwidth_bytes_per_s="12 TB/s")), ("hbm_bandwidth_bytes_per_s",)),
    Case("thousands-comma", 1, "c12.csv", lambda: table(row(scaleup_domain_size="1,000")), ("scaleup_domain_size",)),
    # 2. names that look equal but are not; formula-like, multi-line or huge names
    Case("zero-width-name-conflict", 2, "c13.csv", lambda: table(existing(H100, name="NVIDIA\u200b H100 SXM5", hbm_bandwidth_bytes_per_s="3.9e12")), ("hbm_bandwidth_bytes_per_s",)),
    Case("fullwidth-name-conflict", 2, "c14.csv", lambda: table(existing(H100, name="ＮＶＩＤＩＡ Ｈ１００ ＳＸＭ５", hbm_capacity_bytes="9.6e10")), ("hbm_capacity_bytes",)),
    Case("bom-in-name-conflict", 2, "c15.csv", lambda: table(existing(H100, name="\ufeffNVIDIA H100 SXM5", release_date="2023-01")), ("release_date",)),
    Case("formula-equals", 2, "c16.csv", lambda: table(row(name='=HYPERLINK("http://x","y")')), ("row 1", "'name'")),
    Case("formula-plus", 2, "c17.csv", lambda: table(row(name="+cmd|' /C calc'!A0")), ("'name'",)),
    Case("formula-minus", 2, "c18.csv", lambda: table(row(name="-2+3")), ("'name'",)),
    Case("formula-at", 2, "c19.csv", lambda: table(row(name="@SUM(A1:A9)")), ("'name'",)),
    Case("formula-in-vendor", 2, "c20.csv", lambda: table(row(vendor="=1+1")), ("'vendor'",)),
    Case("newline-in-name", 2, "c21.csv", lambda: table(row(name="Corpus\nAccel")), ("'name'",)),
    Case("ten-thousand-char-name", 2, "c22.csv", lambda: table(row(name="X" * 10_000)), ("'name'",)),
    Case("invisible-only-name", 2, "c23.csv", lambda: table(row(name="\u200b\u200d\u2060")), ("'name'",)),
    Case("names-equal-once-normalised", 2, "c24.csv", lambda: table(row(), row(name="Corpus\u00a0Accel\u200b Z1")), ("row 2", "'name'")),
    Case("control-char-in-notes", 2, "c25.csv", lambda: table(row(notes="bell\x07")), ("'notes'",)),
    # 4. names that collide in data/rejected/ (the archive of earlier cases must survive)
    Case("upload-named-like-a-reason", 4, "c01.csv.reason", lambda: table(row(release_date="2025-13"))),
    Case("same-name-as-earlier-rejection", 4, "c01.csv", lambda: table(row(release_date="2025-13")), ("release_date",)),
    Case("same-name-again", 4, "c01.csv", lambda: b"garbage,\x00\n"),
    # 5. bounds on size and plausibility
    Case("file-over-1MB", 5, "c29.csv", lambda: table(row()) + b"#" * (MAX_FILE_BYTES + 10), (str(MAX_FILE_BYTES),)),
    Case("too-many-rows", 5, "c30.csv", lambda: table(*(row(name=f"Corpus Many {k}") for k in range(MAX_ROWS_PER_FILE + 1))), (str(MAX_ROWS_PER_FILE),)),
    Case("shipped-in-2040", 5, "c31.csv", lambda: table(row(release_date="2040-01")), ("release_date",)),
    Case("announced-far-ahead", 5, "c32.csv", lambda: table(row(status="announced", release_date="2039-06")), ("release_date",)),
    Case("released-before-2010", 5, "c33.csv", lambda: table(row(release_date="2005-01")), ("release_date",)),
    Case("flops-out-of-range", 5, "c34.csv", lambda: table(row(peak_dense_16bit_flops="1e20")), ("peak_dense_16bit_flops",)),
    Case("domain-not-whole", 5, "c35.csv", lambda: table(row(scaleup_domain_size="8.0000000001")), ("8.0000000001",)),
    Case("many-bad-rows", 5, "c36.csv", _many_bad_rows, ("60 problems",)),
    Case("year-zero", 5, "c37.csv", lambda: table(row(release_date="0000-01")), ("release_date",)),
    # 7. unreadable files
    Case("latin-1-bytes", 7, "c38.csv", lambda: table(row(notes="café")).decode().encode("latin-1"), ("UTF-8",)),
    Case("nul-bytes", 7, "c39.csv", lambda: table(row(notes="a\x00b")), ("'notes'",)),
    Case("empty-file", 7, "c40.csv", lambda: b"", ("empty",)),
    Case("header-only", 7, "c41.csv", lambda: table(), ("no data rows",)),
    Case("not-csv-extension", 7, "c42.txt", lambda: table(row()), ("not a .csv",)),
    Case("binary-garbage", 7, "c43.csv", lambda: bytes(range(256)) * 4, ()),
    Case("unterminated-quote", 7, "c44.csv", lambda: table(row()) + b'"unterminated,', ()),
    # 11. misleading messages
    Case("extra-field", 11, "c45.csv", lambda: table(row()).rstrip(b"\n") + b",true\n", ("row 1 has 16 fields, header has 15",)),
    Case("missing-field", 11, "c46.csv", lambda: b"\n".join(table(row()).split(b"\n")[:1] + [b"A,B,2025-01"]) + b"\n", ("row 1 has 3 fields",)),
    Case("duplicate-column", 11, "c47.csv", lambda: table(row(), header=[*HEADER, "name"]), ("duplicate column",)),
    Case("missing-column", 11, "c48.csv", lambda: table(row(), header=HEADER[:-2]), ("missing column",)),
    Case("unexpected-column", 11, "c49.csv", lambda: table(row(), header=[*HEADER, "price"]), ("unexpected column 'price'",)),
    Case("frontier-runs-shape", 11, "c50.csv", lambda: (REPO_DATA / "frontier_runs.csv").read_bytes(), ("missing column",)),
    Case("outside-file-rejected", 4, "c51.csv", lambda: table(row(hbm_capacity_bytes="lots")), ("hbm_capacity_bytes",), where="outside"),
]  # fmt: skip


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("corpus") / "data"
    (d / "incoming").mkdir(parents=True)
    for p in REPO_DATA.glob("*.csv"):
        shutil.copy(p, d / p.name)
    return d


def _tables(data_dir: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(data_dir).items() if "/" not in k and k.endswith(".csv")}


def _archive(data_dir: Path) -> dict[str, str]:
    return {
        k: v for k, v in snapshot(data_dir).items() if k.startswith(("rejected/", "processed/"))
    }


def _check_case(data_dir: Path, src: Path, proc, mention: tuple[str, ...]) -> str:
    line = assert_clean_error(proc, src.name, *mention)
    return line


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_upload_is_refused_cleanly(case: Case, data_dir: Path, tmp_path: Path):
    folder = data_dir / "incoming" if case.where == "incoming" else tmp_path
    src = folder / case.filename
    content = case.content()
    src.write_bytes(content)
    tables, archive = _tables(data_dir), _archive(data_dir)

    proc = run_cli_in_process(["ingest", str(src), "--no-refresh", "--data-dir", str(data_dir)])

    line = _check_case(data_dir, src, proc, case.mention)
    assert _tables(data_dir) == tables, "a data table changed"
    assert_unchanged(archive, _archive(data_dir), "the archive")
    # the upload itself is archived whole under a new name, with its reason
    archived = Path(line.split("archived as ", 1)[1].split(" (reasons in", 1)[0])
    assert archived.parent == data_dir / "rejected" and archived.read_bytes() == content
    reason = Path(f"{archived}.reason").read_text(encoding="utf-8")
    assert len(reason.splitlines()) <= MAX_REASONS + 2  # header line, reasons, "... and K more"
    assert len(proc.stderr.splitlines()) <= MAX_REASONS + 2
    assert len(proc.stderr) < 20_000
    if case.where == "incoming":
        assert not src.exists()  # the landing folder's file is moved
    else:
        assert src.read_bytes() == content  # a file from elsewhere is copied, never moved
    load_hardware(data_dir / "hardware.csv")


def test_corpus_covers_each_class_and_is_large_enough():
    assert len(CASES) + len(OWN_TABLE_CASES) >= 35
    assert {c.klass for c in CASES} >= {1, 2, 4, 5, 7, 11}


def test_many_problems_are_summarised(data_dir: Path):
    src = data_dir / "incoming" / "summary.csv"
    src.write_bytes(_many_bad_rows())
    proc = run_cli_in_process(["ingest", str(src), "--no-refresh", "--data-dir", str(data_dir)])
    assert_clean_error(proc, "summary.csv", "60 problems")
    assert "... and 40 more problems" in proc.stderr
    assert sum("release_date" in ln for ln in proc.stderr.splitlines()) == MAX_REASONS


# ----------------------------------------------------------------------------- class 3


def _own(data_dir: Path) -> dict[str, Callable[[], Path]]:
    def link(target: Path, where: Path) -> Path:
        p = where / f"link-to-{target.name}"
        p.unlink(missing_ok=True)
        p.symlink_to(target)
        return p

    def archived() -> Path:
        (data_dir / "processed").mkdir(exist_ok=True)
        p = data_dir / "processed" / "old-upload.csv"
        if not p.exists():
            p.write_bytes(table(row(name="Corpus Archived")))
        return p

    return {
        "hardware.csv": lambda: data_dir / "hardware.csv",
        "frontier_runs.csv": lambda: data_dir / "frontier_runs.csv",
        "model_shapes.csv": lambda: data_dir / "model_shapes.csv",
        "dotdot-from-incoming": lambda: data_dir / "incoming" / ".." / "hardware.csv",
        "link-in-incoming": lambda: link(data_dir / "hardware.csv", data_dir / "incoming"),
        "link-outside": lambda: link(data_dir / "frontier_runs.csv", data_dir.parent),
        "processed-archive": archived,
        "rejected-reason": lambda: next((data_dir / "rejected").glob("*.reason")),
    }


OWN_TABLE_CASES = (
    "hardware.csv",
    "frontier_runs.csv",
    "model_shapes.csv",
    "dotdot-from-incoming",
    "link-in-incoming",
    "link-outside",
    "processed-archive",
    "rejected-reason",
)


@pytest.mark.parametrize("which", OWN_TABLE_CASES)
def test_own_tables_are_never_moved(which: str, data_dir: Path):
    src = _own(data_dir)[which]()
    target = src.resolve()
    before = snapshot(data_dir)
    proc = run_cli_in_process(["ingest", str(src), "--no-refresh", "--data-dir", str(data_dir)])
    assert_clean_error(proc, "data folder's own files")
    assert_unchanged(before, snapshot(data_dir), "the data folder")
    assert target.exists()
    # a link in the landing folder is dropped (it is the landing folder's), never its target
    assert src.exists() != (which == "link-in-incoming")
    load_hardware(data_dir / "hardware.csv")


def test_relative_dotdot_path_from_the_data_folder(data_dir: Path):
    before = snapshot(data_dir)
    proc = run_cli(
        ["ingest", "incoming/../frontier_runs.csv", "--no-refresh", "--data-dir", "."],
        cwd=data_dir,
    )
    assert_clean_error(proc, "frontier_runs.csv", "own files")
    assert_unchanged(before, snapshot(data_dir), "the data folder")


# ----------------------------------------------------------------------------- real command


def test_real_cli_subprocess(data_dir: Path, tmp_path: Path):
    """A sample of the corpus through the real ``wallcast`` command (a fresh interpreter)."""
    sample = [c for c in CASES if c.id in {"arabic-indic-digits", "extra-field", "nan"}]
    for case in sample:
        src = data_dir / "incoming" / f"sub-{case.filename}"
        src.write_bytes(case.content())
        tables, archive = _tables(data_dir), _archive(data_dir)
        proc = run_cli(["ingest", str(src), "--no-refresh", "--data-dir", str(data_dir)])
        assert_clean_error(proc, src.name, *case.mention)
        assert _tables(data_dir) == tables
        assert_unchanged(archive, _archive(data_dir), "the archive")
    assert processes_mentioning(str(data_dir)) == []


def test_data_folder_without_hardware_csv(tmp_path: Path):
    empty = tmp_path / "nodata"
    empty.mkdir()
    src = tmp_path / "x.csv"
    src.write_bytes(table(row()))
    proc = run_cli_in_process(["ingest", str(src), "--no-refresh", "--data-dir", str(empty)])
    assert_clean_error(proc, "hardware.csv", "no such file")
    assert sorted(os.listdir(empty)) == [] and src.exists()


def test_not_a_regular_file(data_dir: Path, tmp_path: Path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    before = snapshot(data_dir)
    for src in (fifo, Path("/dev/null")):
        proc = run_cli_in_process(["ingest", str(src), "--no-refresh", "--data-dir", str(data_dir)])
        assert_clean_error(proc, str(src), "not a regular file")
    assert snapshot(data_dir) == before


def test_data_dir_naming_a_file(data_dir: Path, tmp_path: Path):
    src = tmp_path / "x.csv"
    src.write_bytes(table(row()))
    proc = run_cli_in_process(
        ["ingest", str(src), "--no-refresh", "--data-dir", str(data_dir / "hardware.csv")]
    )
    assert_clean_error(proc, "hardware.csv", "no such file")
    assert src.read_bytes() == table(row())
