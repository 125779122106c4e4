"""Curated data tables: accelerator specs and frontier training runs, with validating loaders.

Units are SI throughout: FLOP/s are *dense* (no 2:4 sparsity), bandwidths are bytes/s per accelerator
*per direction*, capacities are bytes. No JAX import here (pandas/numpy only).

Error convention (both tables): a :class:`~forecast.config.errors.DataValidationError` carries ``row`` = the
1-based *data* row (the first record under the header is row 1) and the reason ends with the physical
file line, e.g. ``"hardware.csv, row 5, field 'hbm_bandwidth_bytes_per_s': ... (line 6)"``.
Problems with the header (missing or unexpected columns) have ``row=None`` and say ``(line 1)``.

Why one module of ~720 lines: validation and loading of the two tables share one number parser and
one name normaliser, so that nothing the validator accepts can fail to load; keeping
them together keeps that guarantee in one place.

One concept: the two sourced tables of chips and record runs, validated cell by cell with one shared set of checks.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from forecast.config import paths
from forecast.config.errors import DataValidationError, UnknownAcceleratorError

#: Provenance of rows merged by `wallcast ingest` (source file, UTC time); empty for curated rows.
PROVENANCE_COLUMNS: tuple[str, ...] = ("added_from", "added_at")


#: Columns a hardware table may have besides :data:`HARDWARE_COLUMNS`: the provenance columns.
OPTIONAL_HARDWARE_COLUMNS: tuple[str, ...] = PROVENANCE_COLUMNS

HARDWARE_COLUMNS: tuple[str, ...] = (
    "name",
    "vendor",
    "release_date",
    "status",
    "flagship",
    "peak_dense_16bit_flops",
    "peak_dense_fp8_flops",
    "hbm_bandwidth_bytes_per_s",
    "hbm_capacity_bytes",
    "scaleup_bandwidth_bytes_per_s",
    "scaleup_domain_size",
    "scaleup_topology",
    "scaleout_bandwidth_bytes_per_s",
    "source_url",
    "notes",
)

FRONTIER_RUNS_COLUMNS: tuple[str, ...] = (
    "model",
    "organization",
    "publication_date",
    "training_compute_flop",
    "hardware",
    "hardware_quantity",
    "training_days",
    "batch_size_tokens",
    "hardware_utilization",
    "source_url",
    "notes",
    "record",
    "confidence",
)

STATUSES = ("shipped", "announced")
TOPOLOGIES = ("switched", "torus", "mesh")
CONFIDENCES = ("Confident", "Likely", "Speculative")

_BOOLS = {"true": True, "false": False}
_MIN_YEAR, _MAX_YEAR = 2000, 2040


@dataclass(frozen=True)
class _NumSpec:
    """Plausible range of a numeric column (inclusive), its unit and the unit prefixes people slip into."""

    lo: float
    hi: float
    unit: str
    typical: float
    prefixes: tuple[tuple[str, float], ...] = ()
    required: bool = True
    integer: bool = False


_BW_PREFIXES = (("kB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9), ("TB/s", 1e12), ("PB/s", 1e15))
_FLOP_PREFIXES = (("GFLOP/s", 1e9), ("TFLOP/s", 1e12), ("PFLOP/s", 1e15))
_CAP_PREFIXES = (("MB", 1e6), ("GB", 1e9), ("TB", 1e12))

_HW_NUMERIC: dict[str, _NumSpec] = {
    "peak_dense_16bit_flops": _NumSpec(1e12, 1e17, "FLOP/s", 1e15, _FLOP_PREFIXES),
    "peak_dense_fp8_flops": _NumSpec(1e12, 1e17, "FLOP/s", 2e15, _FLOP_PREFIXES, required=False),
    "hbm_bandwidth_bytes_per_s": _NumSpec(1e9, 1e14, "bytes/s", 3e12, _BW_PREFIXES),
    "hbm_capacity_bytes": _NumSpec(1e9, 1e13, "bytes", 1e11, _CAP_PREFIXES),
    "scaleup_bandwidth_bytes_per_s": _NumSpec(1e9, 1e14, "bytes/s", 5e11, _BW_PREFIXES),
    "scaleup_domain_size": _NumSpec(1, 1e6, "accelerators", 8, required=False, integer=True),
    "scaleout_bandwidth_bytes_per_s": _NumSpec(
        1e9, 1e14, "bytes/s", 5e10, _BW_PREFIXES, required=False
    ),
}
_HW_TEXT_REQUIRED = ("name", "vendor", "source_url", "notes")

_RUNS_NUMERIC: dict[str, _NumSpec] = {
    "training_compute_flop": _NumSpec(1e15, 1e30, "FLOP", 1e24, required=False),
    "hardware_quantity": _NumSpec(1, 1e8, "accelerators", 1e3, required=False, integer=True),
    "training_days": _NumSpec(1e-3, 3650, "days", 30, required=False),
    "batch_size_tokens": _NumSpec(1, 1e11, "tokens", 4e6, required=False),
    "hardware_utilization": _NumSpec(0, 1, "fraction of peak", 0.4, (("%", 0.01),), required=False),
}
_RUNS_TEXT_REQUIRED = ("model", "organization", "source_url", "notes")


#: Hardware: plausible release dates.  A shipped part cannot be dated after the current month; an
#: announced part at most this many months ahead; nothing before the first year below.
MIN_RELEASE_YEAR = 2010
MAX_ANNOUNCED_MONTHS_AHEAD = 36


#: Longest name (accelerator, model), in characters after normalisation.
MAX_NAME_CHARS = 120


#: Longest text cell (source_url, notes, ...), in characters.
MAX_TEXT_CHARS = 2000


#: Leading characters that make a spreadsheet read a cell as a formula (CSV injection).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


#: The one number syntax of every table: ASCII decimal or scientific notation, nothing else
#: (no '1_000', no non-ASCII digits, no 'nan'/'inf', no hex).  Validation and loading share it.
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e")
_YM_RE = re.compile(r"^(\d{4})-(\d{2})$")
_YMD_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


@dataclass(frozen=True)
class Accelerator:
    """One accelerator row in SI units (FLOP/s dense, bytes/s per direction, bytes)."""

    name: str
    vendor: str
    release_year: float
    status: str
    flops_16bit: float
    flops_fp8: float | None
    hbm_bandwidth: float
    hbm_capacity: float
    scaleup_bandwidth: float
    scaleup_domain_size: int | None
    scaleup_topology: str
    scaleout_bandwidth: float | None
    source_url: str


def parse_number(raw: str) -> float | None:
    """The float of an ASCII decimal or scientific-notation cell ('2.5e15', '-3', '.5'), else None.

    The one parser of numbers for validation, duplicate checks and loading: a cell it accepts
    loads; anything else (non-ASCII digits, '1_000', 'nan', 'inf', '0x10', overflow) is refused.
    """
    text = raw.strip()
    if not _NUMBER_RE.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def normalise_name(raw: str) -> str:
    """A name as stored and compared: Unicode NFKC, without control, format (invisible) and
    line/paragraph-separator characters, runs of whitespace collapsed to one space, stripped."""
    text = unicodedata.normalize("NFKC", raw)
    kept = "".join(
        ch
        for ch in text
        if ch not in _ZERO_WIDTH and unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp")
    )
    return " ".join(kept.split())


def _name_key(raw: str) -> str:
    """Comparison key of a name: normalised and case-folded."""
    return normalise_name(raw).casefold()


def _show(raw: str, limit: int = 60) -> str:
    """repr of a cell for a message, cut to ``limit`` characters."""
    return repr(raw) if len(raw) <= limit else repr(raw[:limit]) + f"... ({len(raw)} chars)"


def read_strings(text: str, file: str) -> tuple[pd.DataFrame, list[int], list[DataValidationError]]:
    """Parse CSV text: every cell a stripped string, each data row's physical first line, and the
    structural problems (a row whose field count differs from the header's, duplicate or empty
    column names, unparsable CSV).  Blank records are skipped (as pandas does).  A row with a
    wrong field count is padded/cut to the header so that row numbers stay right."""
    problems: list[DataValidationError] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    records: list[list[str]] = []
    lines: list[int] = []
    prev_end = 0
    try:
        for rec in reader:
            start = prev_end + 1
            prev_end = reader.line_num
            if not rec:
                continue
            records.append([c.strip() for c in rec])
            lines.append(start)
    except csv.Error as exc:
        problems.append(
            DataValidationError(
                file, None, None, f"not readable as CSV: {exc} (line {prev_end + 1})"
            )
        )
        return pd.DataFrame(), [], problems
    if not records:
        problems.append(DataValidationError(file, None, None, "the file is empty (line 1)"))
        return pd.DataFrame(), [], problems
    header, body, lines = records[0], records[1:], lines[1:]
    seen: set[str] = set()
    for c in header:
        if c in seen:
            problems.append(DataValidationError(file, None, c, "duplicate column (line 1)"))
        seen.add(c)
    width = len(header)
    rows = []
    for i, rec in enumerate(body):
        if len(rec) != width:
            problems.append(
                DataValidationError(
                    file,
                    i + 1,
                    None,
                    f"row {i + 1} has {len(rec)} field{'s' if len(rec) != 1 else ''}, header "
                    f"has {width} (line {lines[i]})",
                )
            )
            rec = (rec + [""] * width)[:width]
        rows.append(rec)
    columns = header if len(seen) == width else [f"{c}#{k}" for k, c in enumerate(header)]
    return pd.DataFrame(rows, columns=columns, dtype=str), lines, problems


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8-sig")


def _read_checked(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """Read a table for loading; raise its first structural problem."""
    df, lines, problems = read_strings(_read_text(path), path.name)
    if problems:
        raise problems[0]
    return df, lines


def _read_validated(path: Path, validate) -> pd.DataFrame:
    """Read a table and run its validator (``validate(df, file, lines)``); raise the first
    problem.  Every loader starts here, so validation and loading read the same bytes."""
    raw, lines = _read_checked(path)
    errors = validate(raw, path.name, lines)
    if errors:
        raise errors[0]
    return raw


class _Collector:
    """Collects DataValidationErrors with the row/line convention of this module."""

    def __init__(self, file: str, n_rows: int, lines: Sequence[int] | None) -> None:
        self.file = file
        self.lines = list(lines) if lines is not None and len(lines) == n_rows else None
        self.errors: list[DataValidationError] = []

    def header(self, field: str, reason: str) -> None:
        self.errors.append(DataValidationError(self.file, None, field, f"{reason} (line 1)"))

    def cell(self, i: int, field: str | None, reason: str) -> None:
        if len(reason) > 400:
            reason = reason[:400] + "..."
        line = self.lines[i] if self.lines is not None else i + 2
        self.errors.append(DataValidationError(self.file, i + 1, field, f"{reason} (line {line})"))


def _fmt(x: float) -> str:
    """Compact number: 1e9 rather than 1e+09."""
    return re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", f"{x:g}")


def _unit_hint(value: float, spec: _NumSpec) -> str:
    """Guess which unit prefix an out-of-range value was written in, e.g. 'looks like TB/s'."""
    fits = [(p, s) for p, s in spec.prefixes if spec.lo <= value * s <= spec.hi]
    if not fits:
        return ""
    # the prefix whose conversion lands closest (in log) to a typical value of this column
    prefix, _ = min(fits, key=lambda ps: abs(math.log10(value * ps[1] / spec.typical)))
    return f"{_fmt(value)} looks like {prefix}; "


def _check_numeric(col: _Collector, df: pd.DataFrame, name: str, spec: _NumSpec) -> None:
    for i, raw in enumerate(df[name].tolist()):
        if raw == "":
            if spec.required:
                col.cell(i, name, "required value is empty")
            continue
        value = parse_number(raw)
        if value is None:
            col.cell(
                i,
                name,
                f"{_show(raw)} is not a number (expected {spec.unit}, written with ASCII digits "
                "as in 2.5e15)",
            )
            continue
        if value <= 0:
            col.cell(i, name, f"{raw} must be positive ({spec.unit})")
            continue
        if spec.integer and value != round(value):
            col.cell(i, name, f"{raw} must be a whole number of {spec.unit}")
            continue
        if not spec.lo <= value <= spec.hi:
            hint = _unit_hint(value, spec)
            side = "too small" if value < spec.lo else "too large"
            what = hint or f"{_fmt(value)} is implausibly {side}; "
            col.cell(
                i,
                name,
                f"{what}this column is {spec.unit}, expected {_fmt(spec.lo)}..{_fmt(spec.hi)}",
            )


def _check_required_text(col: _Collector, df: pd.DataFrame, name: str) -> None:
    for i, raw in enumerate(df[name].tolist()):
        if raw == "":
            col.cell(i, name, "required value is empty")


def _check_text(col: _Collector, df: pd.DataFrame, name: str, *, is_name: bool = False) -> None:
    """Text cells: no control characters, no formula-like start, bounded length; a name also must
    not be empty once normalised (:func:`normalise_name`) and has at most MAX_NAME_CHARS."""
    limit = MAX_NAME_CHARS if is_name else MAX_TEXT_CHARS
    for i, raw in enumerate(df[name].tolist()):
        if raw == "":
            continue
        shown = _show(raw)
        bad = [ch for ch in raw if unicodedata.category(ch) in ("Cc", "Zl", "Zp")]
        if bad:
            col.cell(i, name, f"{shown} contains control character U+{ord(bad[0]):04X}")
        elif raw.startswith(FORMULA_PREFIXES):
            col.cell(
                i, name, f"{shown} starts with {raw[0]!r}, which spreadsheets read as a formula"
            )
        elif is_name and normalise_name(raw) == "":
            col.cell(i, name, f"{shown} is empty once invisible characters are removed")
        elif len(normalise_name(raw) if is_name else raw) > limit:
            col.cell(i, name, f"{shown} is longer than {limit} characters")


def _check_choice(
    col: _Collector, df: pd.DataFrame, name: str, allowed: Sequence[str], *, lower: bool = True
) -> None:
    for i, raw in enumerate(df[name].tolist()):
        if raw == "":
            col.cell(i, name, f"required value is empty (one of {', '.join(allowed)})")
        elif (raw.lower() if lower else raw) not in allowed:
            col.cell(i, name, f"{raw!r} is not one of {', '.join(allowed)}")


def _check_duplicates(col: _Collector, df: pd.DataFrame, name: str) -> None:
    first: dict[str, int] = {}
    for i, raw in enumerate(df[name].tolist()):
        key = _name_key(raw)
        if not key:
            continue
        if key in first:
            col.cell(i, name, f"duplicate {name} {raw!r} (first at row {first[key] + 1})")
        else:
            first[key] = i


def _check_columns(
    col: _Collector, df: pd.DataFrame, expected: Sequence[str], optional: Sequence[str] = ()
) -> list[str]:
    """Report missing/unexpected columns; return the expected columns that are present."""
    present = [c for c in expected if c in df.columns]
    for c in expected:
        if c not in df.columns:
            col.header(c, f"missing column {c!r}")
    for c in df.columns:
        if c not in expected and c not in optional:
            col.header(c, f"unexpected column {c!r}; expected columns: {', '.join(expected)}")
    return present


def _parse_year_month(raw: str) -> tuple[int, int] | None:
    m = _YM_RE.match(raw)
    if not m:
        return None
    y, mo = int(m.group(1)), int(m.group(2))
    if not (1 <= mo <= 12 and _MIN_YEAR <= y <= _MAX_YEAR):
        return None
    return y, mo


def _parse_ymd(raw: str) -> date | None:
    m = _YMD_RE.match(raw)
    if not m:
        return None
    try:
        d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None
    return d if _MIN_YEAR <= d.year <= _MAX_YEAR else None


def _as_float(s: pd.Series) -> pd.Series:
    """Cells accepted by :func:`parse_number` as float64 (NaN where empty)."""

    def one(raw: str) -> float:
        value = parse_number(raw) if raw != "" else None
        return np.nan if value is None else value

    return s.map(one).astype("float64")


def _resolve(path: str | Path | None, default: Callable[[], Path]) -> Path:
    return default() if path is None else Path(path)


def _months(year: int, month: int) -> int:
    return 12 * year + month - 1


def _check_release_dates(
    col: _Collector, df: pd.DataFrame, present: set[str], today: date | None
) -> None:
    """release_date: YYYY-MM from MIN_RELEASE_YEAR; shipped no later than the current month,
    announced at most MAX_ANNOUNCED_MONTHS_AHEAD months ahead."""
    now = today or date.today()
    now_m = _months(now.year, now.month)
    statuses = df["status"].tolist() if "status" in present else [""] * len(df)
    for i, (raw, status) in enumerate(zip(df["release_date"].tolist(), statuses, strict=True)):
        if raw == "":
            col.cell(i, "release_date", "required value is empty (YYYY-MM)")
            continue
        ym = _parse_year_month(raw)
        if ym is None:
            col.cell(
                i,
                "release_date",
                f"bad date {_show(raw)}: expected YYYY-MM with month 01..12 and year "
                f"{_MIN_YEAR}..{_MAX_YEAR}",
            )
            continue
        ahead = _months(*ym) - now_m
        if ym[0] < MIN_RELEASE_YEAR:
            col.cell(i, "release_date", f"{raw} is before {MIN_RELEASE_YEAR}")
        elif status.lower() == "shipped" and ahead > 0:
            col.cell(
                i,
                "release_date",
                f"{raw} is in the future ({now:%Y-%m} now) for a part with status 'shipped'",
            )
        elif ahead > MAX_ANNOUNCED_MONTHS_AHEAD:
            col.cell(
                i,
                "release_date",
                f"{raw} is more than {MAX_ANNOUNCED_MONTHS_AHEAD} months after {now:%Y-%m}",
            )


def validate_hardware(
    df: pd.DataFrame, file: str, lines: Sequence[int] | None = None, *, today: date | None = None
) -> list[DataValidationError]:
    """Return every problem in a hardware table read with all cells as strings (empty list = valid).

    ``file`` names the source in messages; ``lines`` optionally gives each data row's physical
    line (default: row + 1, i.e. one line per record after the header).  ``today`` (default: the
    system date) bounds release dates: see :data:`MAX_ANNOUNCED_MONTHS_AHEAD`.
    """
    df = df.fillna("").astype(str).apply(lambda s: s.str.strip())
    col = _Collector(file, len(df), lines)
    present = set(_check_columns(col, df, HARDWARE_COLUMNS, OPTIONAL_HARDWARE_COLUMNS))
    for name in _HW_TEXT_REQUIRED:
        if name in present:
            _check_required_text(col, df, name)
    for name in ("name", "vendor", "source_url", "notes"):
        if name in present:
            _check_text(col, df, name, is_name=name == "name")
    if "name" in present:
        _check_duplicates(col, df, "name")
    if "release_date" in present:
        _check_release_dates(col, df, present, today)
    if "status" in present:
        _check_choice(col, df, "status", STATUSES)
    if "flagship" in present:
        _check_choice(col, df, "flagship", tuple(_BOOLS))
    if "scaleup_topology" in present:
        _check_choice(col, df, "scaleup_topology", TOPOLOGIES)
    for name, spec in _HW_NUMERIC.items():
        if name in present:
            _check_numeric(col, df, name, spec)
    return sorted(col.errors, key=lambda e: -1 if e.row is None else e.row)


def _release_year(raw: str) -> float:
    """'2022-09' -> 2022 + 8/12 + 1/24 (mid-month) = 2022.7083."""
    ym = _parse_year_month(raw)
    if ym is None:  # pragma: no cover - validated before
        raise ValueError(raw)
    return ym[0] + (ym[1] - 1) / 12 + 1 / 24


def load_hardware(path: str | Path | None = None) -> pd.DataFrame:
    """Load and validate the accelerator table (default: :func:`forecast.config.paths.hardware_path`).

    Raises the first :class:`DataValidationError` found. Returns numeric columns as float64 (NaN
    where an optional cell is empty, incl. ``scaleup_domain_size``), ``flagship`` as bool, and an
    added ``release_year`` float column (mid-month decimal year).
    """
    p = _resolve(path, paths.hardware_path)
    raw = _read_validated(p, validate_hardware)
    extra = [c for c in OPTIONAL_HARDWARE_COLUMNS if c in raw.columns]
    df = raw.loc[:, list(HARDWARE_COLUMNS) + extra].copy()
    for name in _HW_NUMERIC:
        df[name] = _as_float(df[name])
    df["flagship"] = df["flagship"].str.lower().map(_BOOLS).astype(bool)
    df["status"] = df["status"].str.lower()
    df["scaleup_topology"] = df["scaleup_topology"].str.lower()
    df["release_year"] = df["release_date"].map(_release_year).astype("float64")
    return df.reset_index(drop=True)


def _opt(x: object) -> float | None:
    v = float(x)  # type: ignore[arg-type]
    return None if math.isnan(v) else v


def _to_accelerator(row: pd.Series) -> Accelerator:
    domain = _opt(row["scaleup_domain_size"])
    release_year = (
        row["release_year"] if "release_year" in row else _release_year(row["release_date"])
    )
    return Accelerator(
        name=str(row["name"]),
        vendor=str(row["vendor"]),
        release_year=float(release_year),
        status=str(row["status"]),
        flops_16bit=float(row["peak_dense_16bit_flops"]),
        flops_fp8=_opt(row["peak_dense_fp8_flops"]),
        hbm_bandwidth=float(row["hbm_bandwidth_bytes_per_s"]),
        hbm_capacity=float(row["hbm_capacity_bytes"]),
        scaleup_bandwidth=float(row["scaleup_bandwidth_bytes_per_s"]),
        scaleup_domain_size=None if domain is None else int(domain),
        scaleup_topology=str(row["scaleup_topology"]),
        scaleout_bandwidth=_opt(row["scaleout_bandwidth_bytes_per_s"]),
        source_url=str(row["source_url"]),
    )


_TOKEN_SPLIT = re.compile(r"[\s(),/\[\]]+")


def _closest(query: str, names: Sequence[str], n: int = 5) -> list[str]:
    """Up to ``n`` names nearest to ``query``: substring candidates first, then difflib similarity."""
    q = query.casefold()
    subs = [
        nm
        for nm in names
        if q in nm.casefold()
        or any(len(t) >= 3 and t in q for t in _TOKEN_SPLIT.split(nm.casefold()))
    ]

    def score(nm: str) -> float:
        low = nm.casefold()
        parts = [low, *(t for t in _TOKEN_SPLIT.split(low) if t)]
        return max(difflib.SequenceMatcher(None, q, t).ratio() for t in parts)

    ranked = sorted((nm for nm in names if nm not in subs), key=score, reverse=True)
    out = subs + [nm for nm in ranked if score(nm) >= 0.5]
    return out[:n]


def get_accelerator(df: pd.DataFrame, name: str) -> Accelerator:
    """Look up an accelerator by name (case-insensitive).

    Names compare normalised (:func:`normalise_name`, case-insensitive).  Order: exact name; else the unique row containing ``name`` as a substring; if several contain
    it, the unique one where it is a whole word ("B200" -> "NVIDIA B200 (HGX/DGX)", not GB200).
    Otherwise raises :class:`UnknownAcceleratorError` with the ambiguous candidates or up to 5
    closest names.
    """
    names = [str(x) for x in df["name"].tolist()]
    keys = [_name_key(nm) for nm in names]
    q = _name_key(name)
    exact = [i for i, key in enumerate(keys) if key == q]
    if len(exact) == 1:
        return _to_accelerator(df.iloc[exact[0]])
    subs = [i for i, key in enumerate(keys) if q and q in key]
    if len(subs) > 1:
        word = re.compile(rf"(?<![a-z0-9]){re.escape(q)}(?![a-z0-9])")
        whole = [i for i in subs if word.search(keys[i])]
        if len(whole) == 1:
            subs = whole
    if len(subs) == 1:
        return _to_accelerator(df.iloc[subs[0]])
    if len(subs) > 1:
        raise UnknownAcceleratorError(name, [names[i] for i in subs])
    raise UnknownAcceleratorError(name, _closest(name.strip(), names))


def validate_frontier_runs(
    df: pd.DataFrame, file: str, lines: Sequence[int] | None = None
) -> list[DataValidationError]:
    """Return every problem in a frontier-runs table read with all cells as strings.

    Checks: columns, required text, unique model names, dates YYYY-MM-DD, compute 1e15..1e30 FLOP
    when present, hardware_quantity a positive integer, utilization in (0, 1], ``record`` true/false
    and consistent with notes starting "RECORD", ``confidence`` one of Confident/Likely/Speculative
    or empty.
    """
    df = df.fillna("").astype(str).apply(lambda s: s.str.strip())
    col = _Collector(file, len(df), lines)
    present = set(_check_columns(col, df, FRONTIER_RUNS_COLUMNS))
    for name in _RUNS_TEXT_REQUIRED:
        if name in present:
            _check_required_text(col, df, name)
    for name in ("model", "organization", "hardware", "source_url", "notes"):
        if name in present:
            _check_text(col, df, name, is_name=name == "model")
    if "model" in present:
        _check_duplicates(col, df, "model")
    if "publication_date" in present:
        for i, raw in enumerate(df["publication_date"].tolist()):
            if raw == "":
                col.cell(i, "publication_date", "required value is empty (YYYY-MM-DD)")
            elif _parse_ymd(raw) is None:
                col.cell(
                    i,
                    "publication_date",
                    f"bad date {raw!r}: expected a real YYYY-MM-DD date in {_MIN_YEAR}..{_MAX_YEAR}",
                )
    for name, spec in _RUNS_NUMERIC.items():
        if name in present:
            _check_numeric(col, df, name, spec)
    if "record" in present:
        _check_choice(col, df, "record", tuple(_BOOLS))
        if "notes" in present:
            for i, (rec, notes) in enumerate(zip(df["record"], df["notes"], strict=True)):
                flag = _BOOLS.get(rec.lower())
                if flag is not None and flag != notes.startswith("RECORD"):
                    col.cell(i, "record", f"record={rec} disagrees with notes starting 'RECORD'")
    if "confidence" in present:
        for i, raw in enumerate(df["confidence"].tolist()):
            if raw and raw not in CONFIDENCES:
                col.cell(
                    i, "confidence", f"{raw!r} is not one of {', '.join(CONFIDENCES)} or empty"
                )
    return sorted(col.errors, key=lambda e: -1 if e.row is None else e.row)


def _decimal_year(d: date) -> float:
    """Mid-day decimal year: 2025-07-09 -> 2025 + (189 - 0.5) / 365."""
    n_days = 366 if (d.year % 4 == 0 and (d.year % 100 != 0 or d.year % 400 == 0)) else 365
    return d.year + (d.timetuple().tm_yday - 0.5) / n_days


def load_frontier_runs(path: str | Path | None = None) -> pd.DataFrame:
    """Load and validate the frontier training-runs table (default: :func:`forecast.config.paths.frontier_runs_path`).

    Raises the first :class:`DataValidationError`. Numeric columns become float64; rows without a
    compute estimate are kept with NaN (they document censoring of the recent frontier).
    ``record`` is bool, ``confidence`` is a string ('' when absent), ``publication_date`` a
    datetime64 and ``year`` a float decimal year.
    """
    p = _resolve(path, paths.frontier_runs_path)
    raw = _read_validated(p, validate_frontier_runs)
    df = raw.loc[:, list(FRONTIER_RUNS_COLUMNS)].copy()
    for name in _RUNS_NUMERIC:
        df[name] = _as_float(df[name])
    df["record"] = df["record"].str.lower().map(_BOOLS).astype(bool)
    dates = df["publication_date"].map(_parse_ymd)
    df["year"] = dates.map(_decimal_year).astype("float64")
    df["publication_date"] = pd.to_datetime(df["publication_date"], format="%Y-%m-%d")
    return df.reset_index(drop=True)


def data_hash(*files: str | Path) -> str:
    """SHA-256 hex digest of data files, for provenance.

    One path: the sha256 of its bytes (same as ``sha256sum``). Several: the sha256 of their
    per-file hex digests joined by newlines, in the order given. No path: the two shipped tables
    (hardware, frontier runs).
    """
    files = [Path(p) for p in files] or [paths.hardware_path(), paths.frontier_runs_path()]
    digests = [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()
