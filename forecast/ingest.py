"""Landing folder: validate a new accelerator file and merge it into ``data/hardware.csv``.

A file dropped into ``data/incoming/`` (or given to ``wallcast ingest FILE``) must have the columns
of ``data/hardware.csv``.  Then, all or nothing:

* **rejected** - any row fails :func:`forecast.hardware.validate_hardware`, or names an accelerator
  already in the table with different numbers (a *conflict*), or the file cannot be read: the file
  is moved whole to ``data/rejected/`` next to ``<name>.reason`` (one line per problem, naming row
  and field) and nothing else changes;
* **unchanged** - every row is an exact duplicate of a row already there (same name, same values
  in every column except ``source_url`` and ``notes``): nothing is written, the file is archived;
* **merged** - the new rows are appended (exact duplicates are skipped) with their provenance,
  written atomically (temporary file + ``os.replace``), and the file is archived in
  ``data/processed/``.

Provenance: ``added_from`` (the source file name) and ``added_at`` (UTC, ISO 8601), two optional
columns of ``hardware.csv`` (``forecast.hardware.OPTIONAL_HARDWARE_COLUMNS``), added on the first
merge and empty for curated rows; the row's ``source_url`` keeps its source.

Plain Python, no Prefect: ``wallcast ingest`` calls :func:`ingest_file` directly, and the
``watch-landing`` flow (:mod:`flows.serve`) wraps it in a retried task.
"""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pandas as pd

from forecast import paths
from forecast.errors import DataValidationError
from forecast.hardware import HARDWARE_COLUMNS, PROVENANCE_COLUMNS, validate_hardware
from forecast.storage import exclusive_lock

__all__ = [
    "INCOMING_DIR",
    "PROCESSED_DIR",
    "PROVENANCE_COLUMNS",
    "REJECTED_DIR",
    "IngestResult",
    "compare_with_existing",
    "ingest_file",
    "pending_files",
    "read_table",
]

INCOMING_DIR = "incoming"
REJECTED_DIR = "rejected"
PROCESSED_DIR = "processed"
HARDWARE_FILE = paths.HARDWARE_FILE
INGEST_LOCK = ".ingest.lock"

#: Columns that may differ between a duplicate and the existing row without a conflict.
_FREE_TEXT = frozenset({"source_url", "notes"})
#: Columns compared case-insensitively.
_CASELESS = frozenset({"status", "flagship", "scaleup_topology", "vendor"})


@dataclass(frozen=True)
class IngestResult:
    """What :func:`ingest_file` did with one file."""

    file: str
    status: Literal["merged", "unchanged", "rejected"]
    added: tuple[str, ...] = ()
    duplicates: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    moved_to: str | None = None
    provenance: str | None = None  # where provenance was written
    notes: tuple[str, ...] = field(default=())

    @property
    def changed(self) -> bool:
        """True when ``hardware.csv`` changed (a refresh is due)."""
        return self.status == "merged"

    @property
    def ok(self) -> bool:
        return self.status != "rejected"

    def message(self) -> str:
        if self.status == "rejected":
            return (
                f"{self.file}: rejected ({len(self.problems)} problem"
                f"{'s' if len(self.problems) != 1 else ''}), moved to {self.moved_to}: "
                + "; ".join(self.problems)
            )
        dup = f"; {len(self.duplicates)} exact duplicate(s) skipped" if self.duplicates else ""
        if self.status == "unchanged":
            return f"{self.file}: nothing new (all rows already in {HARDWARE_FILE}){dup}"
        return f"{self.file}: added {len(self.added)} accelerator(s): {', '.join(self.added)}{dup}"


# ----------------------------------------------------------------------------- reading


def _record_lines(text: str) -> list[int]:
    """Physical (1-based) first line of each non-blank record after the header."""
    starts: list[int] = []
    reader = csv.reader(io.StringIO(text))
    prev_end = 0
    for i, rec in enumerate(reader):
        start = prev_end + 1
        prev_end = reader.line_num
        if i == 0 or not rec:
            continue
        starts.append(start)
    return starts


def read_table(path: str | Path) -> tuple[pd.DataFrame, list[int]]:
    """Read a CSV with every cell as a stripped string; also each record's physical line."""
    text = Path(path).read_text(encoding="utf-8")
    if not text.strip():
        raise ValueError("the file is empty")
    df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    df.columns = [str(c).strip() for c in df.columns]
    df = df.astype(str).apply(lambda s: s.str.strip()) if len(df) else df
    return df, _record_lines(text)


def _as_number(x: str) -> float | None:
    try:
        v = float(x)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _same(column: str, a: str, b: str) -> bool:
    a, b = a.strip(), b.strip()
    if a == b:
        return True
    if column in _CASELESS and a.casefold() == b.casefold():
        return True
    na, nb = _as_number(a), _as_number(b)
    return na is not None and nb is not None and math.isclose(na, nb, rel_tol=1e-12, abs_tol=0)


def compare_with_existing(
    new: pd.DataFrame, existing: pd.DataFrame, file: str, lines: Sequence[int] | None = None
) -> tuple[list[int], list[int], list[str]]:
    """Split the rows of ``new`` into (new row indices, exact-duplicate indices, conflicts).

    A row is a duplicate when ``existing`` has the same name (case-insensitive).  It is exact when
    every column but ``source_url`` and ``notes`` holds the same value (numbers compared as
    numbers); otherwise it is a conflict, reported per differing field as
    ``"<file>, row R, field 'F': accelerator 'X' is already in hardware.csv with F=a, this file
    has b (line L)"``.
    """
    by_name = {str(n).strip().casefold(): i for i, n in enumerate(existing["name"].tolist())}
    fresh: list[int] = []
    exact: list[int] = []
    conflicts: list[str] = []
    for i in range(len(new)):
        row = new.iloc[i]
        j = by_name.get(str(row["name"]).strip().casefold())
        if j is None:
            fresh.append(i)
            continue
        old = existing.iloc[j]
        line = lines[i] if lines is not None and len(lines) == len(new) else i + 2
        diffs = [
            c
            for c in HARDWARE_COLUMNS
            if c not in _FREE_TEXT and not _same(c, str(old[c]), str(row[c]))
        ]
        for c in diffs:
            conflicts.append(
                f"{file}, row {i + 1}, field {c!r}: accelerator {old['name']!r} is already in "
                f"{HARDWARE_FILE} with {c}={old[c]!r}, this file has {row[c]!r} (line {line}); "
                "conflicting duplicate not merged"
            )
        if not diffs:
            exact.append(i)
    return fresh, exact, conflicts


# ----------------------------------------------------------------------------- writing


def _now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _csv_lines(rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _unique_destination(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / name
    if not dest.exists():
        return dest
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    p = Path(name)
    return folder / f"{p.stem}.{stamp}{p.suffix}"


def _move(src: Path, folder: Path) -> Path:
    dest = _unique_destination(folder, src.name)
    shutil.move(str(src), dest)
    return dest


def _reject(src: Path, data_dir: Path, problems: list[str]) -> IngestResult:
    dest = _move(src, data_dir / REJECTED_DIR)
    reason = dest.with_name(dest.name + ".reason")
    header = f"{src.name} rejected at {_now_iso()}; nothing was merged into {HARDWARE_FILE}.\n"
    _atomic_write(reason, header + "".join(p + "\n" for p in problems))
    return IngestResult(src.name, "rejected", problems=tuple(problems), moved_to=str(dest))


def _merge(
    hw_path: Path,
    new: pd.DataFrame,
    rows: list[int],
    source: str,
    added_at: str,
) -> None:
    text = hw_path.read_text(encoding="utf-8")
    records = [r for r in csv.reader(io.StringIO(text)) if r]
    header = [c.strip() for c in records[0]]
    add_columns = [c for c in PROVENANCE_COLUMNS if c not in header]
    if add_columns:  # first provenance ever: widen every row (empty for curated rows)
        header = header + add_columns
        body = [r + [""] * (len(header) - len(r)) for r in records[1:]]
        text = _csv_lines([header, *body])
    elif not text.endswith("\n"):
        text += "\n"
    prov = {"added_from": source, "added_at": added_at}
    out = []
    for i in rows:
        src = new.iloc[i]
        out.append([str(src[c]) if c in new.columns else prov.get(c, "") for c in header])
        for c in PROVENANCE_COLUMNS:
            out[-1][header.index(c)] = prov[c]
    _atomic_write(hw_path, text + _csv_lines(out))


# ----------------------------------------------------------------------------- ingest


def ingest_file(
    path: str | Path, data_dir: str | Path | None = None, *, lock_wait: float = 60.0
) -> IngestResult:
    """Validate ``path`` and merge it into ``<data_dir>/hardware.csv`` (all or nothing).

    ``data_dir`` None: :func:`forecast.paths.data_dir` (``WALLCAST_DATA_DIR`` or ``data/``).
    The file always leaves where it was: to ``data/rejected/`` (with ``<name>.reason``) or to
    ``data/processed/``.  Concurrent ingests into one data folder are serialised by
    ``data/.ingest.lock``.
    """
    src = Path(path)
    data_dir = paths.data_dir(data_dir)
    hw_path = paths.hardware_path(data_dir)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such file")
    with exclusive_lock(data_dir / INGEST_LOCK, "ingest", wait=lock_wait):
        if src.suffix.lower() != ".csv":
            return _reject(src, data_dir, [f"{src.name}: not a .csv file"])
        try:
            new, lines = read_table(src)
        except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
            return _reject(src, data_dir, [f"{src.name}: cannot read as CSV: {exc}"])
        errors: list[DataValidationError] = validate_hardware(new, src.name, lines)
        problems = [str(e) for e in errors]
        if not problems and len(new) == 0:
            problems = [f"{src.name}: no data rows under the header"]
        if problems:
            return _reject(src, data_dir, problems)
        existing, _ = read_table(hw_path)
        fresh, exact, conflicts = compare_with_existing(new, existing, src.name, lines)
        if conflicts:
            return _reject(src, data_dir, conflicts)
        names = tuple(str(new.iloc[i]["name"]) for i in fresh)
        dups = tuple(str(new.iloc[i]["name"]) for i in exact)
        if not fresh:
            dest = _move(src, data_dir / PROCESSED_DIR)
            return IngestResult(src.name, "unchanged", duplicates=dups, moved_to=str(dest))
        added_at = _now_iso()
        _merge(hw_path, new, fresh, src.name, added_at)
        prov = str(hw_path)
        dest = _move(src, data_dir / PROCESSED_DIR)
        return IngestResult(
            src.name, "merged", added=names, duplicates=dups, moved_to=str(dest), provenance=prov
        )


def pending_files(incoming: str | Path, settle_seconds: float = 2.0) -> list[Path]:
    """Files waiting in the landing folder, oldest first.

    Hidden files, ``README*`` and files modified in the last ``settle_seconds`` (perhaps still
    being written) are left for a later poll.  Writers should copy to a temporary name and rename.
    """
    folder = Path(incoming)
    if not folder.is_dir():
        return []
    now = datetime.now().timestamp()
    out = []
    for p in folder.iterdir():
        if not p.is_file() or p.name.startswith(".") or p.name.upper().startswith("README"):
            continue
        if now - p.stat().st_mtime < settle_seconds:
            continue
        out.append(p)
    return sorted(out, key=lambda p: (p.stat().st_mtime, p.name))
