"""Landing folder: validate a new accelerator file and merge it into ``data/hardware.csv``.

A file dropped into ``data/incoming/`` (or given to ``wallcast ingest FILE``) must have the columns
of ``data/hardware.csv``.  Then, all or nothing:

* **rejected** - the file is too large (:data:`MAX_FILE_BYTES`) or has too many rows
  (:data:`MAX_ROWS_PER_FILE`), is not UTF-8 CSV, any row fails
  :func:`forecast.data.hardware.validate_hardware`, names an accelerator already in the table with
  different numbers (a *conflict*; names compare normalised), or would grow the table past
  :data:`MAX_HARDWARE_ROWS`: the file is archived whole in ``data/rejected/`` next to
  ``<name>.reason`` (one line per problem naming row and field, at most :data:`MAX_REASONS`
  lines, then "... and K more") and nothing else changes;
* **unchanged** - every row is an exact duplicate of a row already there (same name, same values
  in every column except ``source_url`` and ``notes``): nothing is written, the file is archived;
* **merged** - the new rows are appended (exact duplicates are skipped, names written normalised)
  with their provenance, written atomically (temporary file + ``os.replace``) after the whole new
  table passed validation, and the file is archived in ``data/processed/``.

Ownership: a file in ``data/incoming/`` belongs to the landing folder and is moved (archived, then
removed; a symbolic link there is removed, never its target).  A file from anywhere else is
*copied* to the archive and left where it is.  The data folder's own files (``hardware.csv``,
``frontier_runs.csv``, anything else in it, ``processed/``, ``rejected/``), however they are named
(relative ``../`` paths, symbolic links), are refused with :class:`IngestRefusedError` and never
touched.  Nothing in ``data/rejected/`` or ``data/processed/`` is ever overwritten: archive names
are claimed with ``O_CREAT | O_EXCL``, in ``rejected/`` as a pair (the file and its ``.reason``).

Provenance: ``added_from`` (the source file name) and ``added_at`` (UTC, ISO 8601), two optional
columns of ``hardware.csv`` (``forecast.data.hardware.OPTIONAL_HARDWARE_COLUMNS``), added on the first
merge and empty for curated rows; the row's ``source_url`` keeps its source.

Plain Python, no Prefect: ``wallcast ingest`` calls :func:`ingest_file` directly, and the
``watch-landing`` flow (:mod:`flows.serve`) wraps it in a retried task.
"""

from __future__ import annotations

import contextlib
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

from forecast.config import paths
from forecast.config.errors import DataValidationError, WallcastError
from forecast.config.filelock import exclusive_lock
from forecast.data.hardware import (
    HARDWARE_COLUMNS,
    PROVENANCE_COLUMNS,
    normalise_name,
    parse_number,
    read_strings,
    validate_hardware,
)

INCOMING_DIR = "incoming"
REJECTED_DIR = "rejected"
PROCESSED_DIR = "processed"
HARDWARE_FILE = paths.HARDWARE_FILE
INGEST_LOCK = ".ingest.lock"
REASON_SUFFIX = ".reason"


#: Largest file ingest reads, bytes (checked before parsing).
MAX_FILE_BYTES = 1_000_000


#: Most data rows in one file.
MAX_ROWS_PER_FILE = 200


#: Most rows hardware.csv may reach by ingest (24 curated rows in 2025).
MAX_HARDWARE_ROWS = 500


#: Most problems listed in a ``.reason`` file and on stderr; the rest are counted.
MAX_REASONS = 20


#: Columns that may differ between a duplicate and the existing row without a conflict.
_FREE_TEXT = frozenset({"source_url", "notes"})


#: Columns compared case-insensitively.
_CASELESS = frozenset({"status", "flagship", "scaleup_topology", "vendor"})


class IngestRefusedError(WallcastError, ValueError):
    """A file ingest will not touch (one of the data folder's own tables) or cannot use."""


class IngestWriteError(WallcastError, OSError):
    """Writing the table or the archive failed (e.g. disk full); nothing was merged."""


@dataclass(frozen=True)
class IngestResult:
    """What :func:`ingest_file` did with one file."""

    file: str
    status: Literal["merged", "unchanged", "rejected"]
    added: tuple[str, ...] = ()
    duplicates: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()  # at most MAX_REASONS + 1 lines (the last one counts the rest)
    moved_to: str | None = None
    provenance: str | None = None  # where provenance was written
    notes: tuple[str, ...] = field(default=())
    n_problems: int = 0
    kept_source: bool = False  # the source was copied, not moved (a file outside incoming/)

    @property
    def changed(self) -> bool:
        """True when ``hardware.csv`` changed (a refresh is due)."""
        return self.status == "merged"

    @property
    def ok(self) -> bool:
        return self.status != "rejected"

    def message(self) -> str:
        if self.status == "rejected":
            n = self.n_problems or len(self.problems)
            return (
                f"{self.file}: rejected ({n} problem{'s' if n != 1 else ''}), archived as "
                f"{self.moved_to}: " + "; ".join(self.problems)
            )
        dup = f"; {len(self.duplicates)} exact duplicate(s) skipped" if self.duplicates else ""
        if self.status == "unchanged":
            return f"{self.file}: nothing new (all rows already in {HARDWARE_FILE}){dup}"
        return f"{self.file}: added {len(self.added)} accelerator(s): {', '.join(self.added)}{dup}"


def summarise(problems: Sequence[str], limit: int = MAX_REASONS) -> list[str]:
    """The first ``limit`` problems, then one line "... and K more problems" when there are more."""
    if len(problems) <= limit:
        return list(problems)
    return [*problems[:limit], f"... and {len(problems) - limit} more problems"]


def read_table(path: str | Path) -> tuple[pd.DataFrame, list[int]]:
    """Read a CSV with every cell as a stripped string; also each record's physical line.

    Raises the first structural problem (:class:`DataValidationError`)."""
    p = Path(path)
    df, lines, problems = read_strings(p.read_text(encoding="utf-8-sig"), p.name)
    if problems:
        raise problems[0]
    return df, lines


def _same(column: str, a: str, b: str) -> bool:
    a, b = a.strip(), b.strip()
    if a == b:
        return True
    if column == "name":
        return normalise_name(a).casefold() == normalise_name(b).casefold()
    if column in _CASELESS and a.casefold() == b.casefold():
        return True
    na, nb = parse_number(a), parse_number(b)
    return na is not None and nb is not None and math.isclose(na, nb, rel_tol=1e-12, abs_tol=0)


def compare_with_existing(
    new: pd.DataFrame, existing: pd.DataFrame, file: str, lines: Sequence[int] | None = None
) -> tuple[list[int], list[int], list[str]]:
    """Split the rows of ``new`` into (new row indices, exact-duplicate indices, conflicts).

    A row is a duplicate when ``existing`` has the same name (normalised, case-insensitive: see
    :func:`forecast.data.hardware.normalise_name`).  It is exact when every column but ``source_url``
    and ``notes`` holds the same value (numbers compared as numbers); otherwise it is a conflict,
    reported per differing field as ``"<file>, row R, field 'F': accelerator 'X' is already in
    hardware.csv with F=a, this file has b (line L)"``.
    """
    by_name = {normalise_name(str(n)).casefold(): i for i, n in enumerate(existing["name"])}
    fresh: list[int] = []
    exact: list[int] = []
    conflicts: list[str] = []
    for i in range(len(new)):
        row = new.iloc[i]
        j = by_name.get(normalise_name(str(row["name"])).casefold())
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
            os.chmod(tmp, path.stat().st_mode & 0o7777)
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


def _candidates(name: str):
    """Archive names for ``name``: itself, then with a UTC timestamp, then numbered."""
    if name.endswith(REASON_SUFFIX):  # an upload never takes a name that reads as a reason
        name += ".upload"
    yield name
    p = Path(name)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    yield f"{p.stem}.{stamp}{p.suffix}"
    for k in range(1, 10_000):
        yield f"{p.stem}.{stamp}-{k}{p.suffix}"
    raise IngestWriteError(f"no free archive name for {name}")  # pragma: no cover


def _create_new(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)


def _claim(folder: Path, name: str, *, with_reason: bool) -> tuple[Path, list[int]]:
    """Create a new archive file (and its ``.reason`` companion) that did not exist before.

    Both names are claimed with ``O_EXCL``: an existing file or reason is never reused, so nothing
    already archived is overwritten.  Returns the path and the open descriptors (file, reason)."""
    folder.mkdir(parents=True, exist_ok=True)
    for candidate in _candidates(name):
        dest = folder / candidate
        try:
            fds = [_create_new(dest)]
        except FileExistsError:
            continue
        if with_reason:
            try:
                fds.append(_create_new(dest.with_name(dest.name + REASON_SUFFIX)))
            except FileExistsError:
                os.close(fds[0])
                dest.unlink()
                continue
        return dest, fds
    raise AssertionError("unreachable")  # pragma: no cover


def _write_fd(fd: int, data: bytes | Path) -> None:
    """Write bytes, or stream the file ``data`` (a file too large to read whole), into ``fd``."""
    with os.fdopen(fd, "wb") as fh:
        if isinstance(data, Path):
            with data.open("rb") as src:
                shutil.copyfileobj(src, fh)
        else:
            fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _archive(data: bytes | Path, name: str, folder: Path, reason: str | None = None) -> Path:
    """Write ``data`` (and ``reason``) under new names in ``folder``; on failure leave nothing."""
    dest, fds = _claim(folder, name, with_reason=reason is not None)
    written = [dest] + ([dest.with_name(dest.name + REASON_SUFFIX)] if reason is not None else [])
    try:
        _write_fd(fds[0], data)
        if reason is not None:
            _write_fd(fds[1], reason.encode("utf-8"))
    except BaseException as exc:
        for fd in fds:
            with contextlib.suppress(OSError):  # already closed by _write_fd
                os.close(fd)
        for p in written:
            p.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise IngestWriteError(f"cannot archive {name} in {folder}: {exc}") from exc
        raise
    return dest


def _merged_text(hw_text: str, new: pd.DataFrame, rows: list[int], source: str) -> str:
    """hardware.csv with ``rows`` of ``new`` appended (names normalised, provenance filled)."""
    records = [r for r in csv.reader(io.StringIO(hw_text)) if r]
    header = [c.strip() for c in records[0]]
    add_columns = [c for c in PROVENANCE_COLUMNS if c not in header]
    text = hw_text
    if add_columns:  # first provenance ever: widen every row (empty for curated rows)
        header = header + add_columns
        body = [r + [""] * (len(header) - len(r)) for r in records[1:]]
        text = _csv_lines([header, *body])
    elif not text.endswith("\n"):
        text += "\n"
    prov = {"added_from": source, "added_at": _now_iso()}
    out = []
    for i in rows:
        src = new.iloc[i]
        row = [str(src[c]) if c in new.columns else "" for c in header]
        row[header.index("name")] = normalise_name(str(src["name"]))
        for c in PROVENANCE_COLUMNS:
            row[header.index(c)] = prov[c]
        out.append(row)
    return text + _csv_lines(out)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _owned(src: Path, data_dir: Path) -> bool:
    """True when ``src`` sits in the landing folder (it is moved); False for a file from outside
    the data folder (it is copied).  Raises :class:`IngestRefusedError` for the data folder's
    own files, whatever path or link names them."""
    data_real = data_dir.resolve()
    incoming_real = (data_dir / INCOMING_DIR).resolve()
    real = src.resolve()
    in_landing = src.absolute().parent.resolve() == incoming_real
    if _inside(real, data_real) and real.parent != incoming_real:
        if in_landing and src.is_symlink():  # the link is the landing folder's; drop it, not the
            src.unlink()  # target, so that the watcher does not meet it again
        where = "is" if real == src.absolute() else f"points to {real}, which is"
        raise IngestRefusedError(
            f"{src}: {where} one of the data folder's own files ({data_dir}); ingest never moves "
            f"or archives it. Copy the new rows into a separate file and ingest that file"
        )
    return in_landing


def _problems_of(data: bytes, name: str) -> tuple[pd.DataFrame | None, list[int], list[str]]:
    """Parse and validate the bytes of an upload: (table, lines, problems)."""
    if not name.lower().endswith(".csv"):
        return None, [], [f"{name}: not a .csv file"]
    if len(data) > MAX_FILE_BYTES:
        return None, [], [f"{name}: larger than the limit of {MAX_FILE_BYTES} bytes; not read"]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, [], [f"{name}: not UTF-8 text (byte {exc.start}: {exc.reason})"]
    if not text.strip():
        return None, [], [f"{name}: cannot read as CSV: the file is empty"]
    df, lines, structural = read_strings(text, name)
    if structural and df.empty and not lines:
        return None, [], [str(e) for e in structural]
    if len(df) > MAX_ROWS_PER_FILE:
        return (
            None,
            [],
            [f"{name}: {len(df)} data rows, more than the limit of {MAX_ROWS_PER_FILE}"],
        )
    if len(df) == 0 and not structural:
        return None, [], [f"{name}: no data rows under the header"]
    errors: list[DataValidationError] = [*structural, *validate_hardware(df, name, lines)]
    if structural:  # shifted columns: report the row, not the misplaced values
        bad_rows = {e.row for e in structural}
        errors = [e for e in errors if e in structural or e.row not in bad_rows]
    errors.sort(key=lambda e: -1 if e.row is None else e.row)
    return df, lines, [str(e) for e in errors]


def ingest_file(
    path: str | Path, data_dir: str | Path | None = None, *, lock_wait: float = 60.0
) -> IngestResult:
    """Validate ``path`` and merge it into ``<data_dir>/hardware.csv`` (all or nothing).

    ``data_dir`` None: :func:`forecast.config.paths.data_dir` (``WALLCAST_DATA_DIR`` or ``data/``).
    The file is archived in ``data/rejected/`` (with ``<name>.reason``) or ``data/processed/``;
    a file of the landing folder is then removed, a file from elsewhere is left in place.  The
    data folder's own tables raise :class:`IngestRefusedError`; a failed write (disk full) raises
    :class:`IngestWriteError` with nothing merged.  Concurrent ingests into one data folder are
    serialised by ``data/.ingest.lock``.
    """
    src = Path(path)
    data_dir = paths.data_dir(data_dir)
    hw_path = paths.hardware_path(data_dir)
    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file")
    if not src.is_file():
        raise IngestRefusedError(f"{src}: not a regular file")
    if not hw_path.is_file():
        raise IngestRefusedError(f"{hw_path}: no such file; is {data_dir} a wallcast data folder?")
    owned = _owned(src, data_dir)
    try:
        with exclusive_lock(data_dir / INGEST_LOCK, "ingest", wait=lock_wait):
            return _ingest_locked(src, data_dir, hw_path, owned)
    except IngestWriteError:
        raise
    except OSError as exc:  # a read-only data folder, an unreadable upload, ...
        raise IngestWriteError(f"cannot ingest {src} into {data_dir}: {exc}") from exc


def _ingest_locked(src: Path, data_dir: Path, hw_path: Path, owned: bool) -> IngestResult:
    """:func:`ingest_file` once the ingest lock is held."""
    with src.open("rb") as fh:
        data = fh.read(MAX_FILE_BYTES + 1)
    new, lines, problems = _problems_of(data, src.name)
    archived: bytes | Path = src if len(data) > MAX_FILE_BYTES else data
    if not problems:
        assert new is not None
        existing, _ = read_table(hw_path)
        fresh, exact, problems = compare_with_existing(new, existing, src.name, lines)
        if not problems and len(existing) + len(fresh) > MAX_HARDWARE_ROWS:
            problems = [
                f"{src.name}: {len(fresh)} new rows would grow {HARDWARE_FILE} to "
                f"{len(existing) + len(fresh)} rows, more than the limit of {MAX_HARDWARE_ROWS}"
            ]
    if problems:
        return _reject(src, archived, data_dir, problems, owned)
    hw_text = hw_path.read_text(encoding="utf-8")
    names = tuple(normalise_name(str(new.iloc[i]["name"])) for i in fresh)
    dups = tuple(str(new.iloc[i]["name"]) for i in exact)
    merged = _merged_text(hw_text, new, fresh, src.name) if fresh else None
    if merged is not None:  # the table to be written must load
        table, merged_lines, structural = read_strings(merged, HARDWARE_FILE)
        invalid = structural or validate_hardware(table, HARDWARE_FILE, merged_lines)
        if invalid:
            return _reject(src, data, data_dir, [str(e) for e in invalid], owned)
    dest = _archive(data, src.name, data_dir / PROCESSED_DIR)
    if merged is not None:
        try:
            _atomic_write(hw_path, merged)
        except OSError as exc:
            dest.unlink(missing_ok=True)
            raise IngestWriteError(f"cannot write {hw_path}: {exc}; nothing merged") from exc
    if owned:
        src.unlink(missing_ok=True)
    if merged is None:
        return IngestResult(
            src.name, "unchanged", duplicates=dups, moved_to=str(dest), kept_source=not owned
        )
    return IngestResult(
        src.name,
        "merged",
        added=names,
        duplicates=dups,
        moved_to=str(dest),
        provenance=str(hw_path),
        kept_source=not owned,
    )


def _reject(
    src: Path, data: bytes | Path, data_dir: Path, problems: list[str], owned: bool
) -> IngestResult:
    shown = summarise(problems)
    header = f"{src.name} rejected at {_now_iso()}; nothing was merged into {HARDWARE_FILE}.\n"
    reason = header + "".join(p + "\n" for p in shown)
    dest = _archive(data, src.name, data_dir / REJECTED_DIR, reason)
    if owned:
        src.unlink(missing_ok=True)
    return IngestResult(
        src.name,
        "rejected",
        problems=tuple(shown),
        moved_to=str(dest),
        n_problems=len(problems),
        kept_source=not owned,
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
