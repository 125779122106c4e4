"""Evidence tables behind the scaling, system and latency inputs, with validating loaders.

Three curated tables, each row with a public source (``data/README.md`` documents every column):

* ``data/model_shapes.csv``: published LLM training configurations (parameters, depth, width,
  batch, tokens, compute, utilization), the data of the depth, batch and utilization laws;
* ``data/scaleup_domains.csv``: scale-up domain sizes of shipped and announced systems, switched
  domains apart from tori and meshes, the data of the domain-growth law;
* ``data/latency_measurements.csv``: NCCL latency constants and small-message all-reduce timings
  behind the latency priors.

``data/training_runs.csv`` (published runs with their parallel layouts) has its loader in
:mod:`forecast.data.training_runs`.

Error convention (as :mod:`forecast.data.hardware`): a :class:`~forecast.config.errors.DataValidationError`
names the file, the 1-based data row and the field, and ends with the physical line, e.g.
``"model_shapes.csv, row 7, field 'layers': '3x' is not a number (expected layers) (line 8)"``.
``validate_*`` return every problem; ``load_*`` raise the first. No JAX import here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from forecast.config import paths
from forecast.config.errors import DataValidationError
from forecast.data.hardware import (
    _as_float,
    _check_choice,
    _check_columns,
    _check_duplicates,
    _check_numeric,
    _check_required_text,
    _Collector,
    _fmt,
    _NumSpec,
    _read_validated,
    _release_year,
    _resolve,
    parse_number,
)

#: The shipped tables.  The loaders' defaults are the data folder's copies
#: (:func:`forecast.config.paths.data_dir`, ``WALLCAST_DATA_DIR`` honoured), resolved at call time.
DEFAULT_MODEL_SHAPES_PATH: Path = paths.REPO_ROOT / "data" / "model_shapes.csv"
DEFAULT_SCALEUP_DOMAINS_PATH: Path = paths.REPO_ROOT / "data" / "scaleup_domains.csv"
DEFAULT_LATENCY_MEASUREMENTS_PATH: Path = paths.REPO_ROOT / "data" / "latency_measurements.csv"


def _in_data_dir(default: Path):
    return lambda: paths.data_dir() / default.name


_BOOLS = {"true": True, "false": False}

MODEL_SHAPES_COLUMNS: tuple[str, ...] = (
    "model",
    "organization",
    "date",
    "architecture",
    "total_params",
    "active_params",
    "layers",
    "d_model",
    "sequence_length",
    "batch_size_tokens",
    "training_tokens",
    "training_compute_flop",
    "compute_method",
    "hardware",
    "utilization_mfu",
    "source_url",
    "notes",
)
ARCHITECTURES = ("dense", "moe")
COMPUTE_METHODS = ("reported", "epoch", "6ND")
"""``reported``: the paper's figure; ``epoch``: Epoch AI's estimate as in ``frontier_runs.csv``;
``6ND``: computed here as 6 x active parameters x training tokens (checked to 1 %)."""

MODEL_SHAPES_YEARS = (2018, 2030)
"""Inclusive year range of ``model_shapes.csv`` dates (first GPT in 2018; announced models)."""
_SIX_ND_RTOL = 0.01

_SHAPES_NUMERIC: dict[str, _NumSpec] = {
    "total_params": _NumSpec(1e6, 1e14, "parameters", 1e10),
    "active_params": _NumSpec(1e6, 1e14, "parameters", 1e10),
    "layers": _NumSpec(1, 1000, "layers", 32, required=False, integer=True),
    "d_model": _NumSpec(64, 1e6, "model width", 4096, required=False, integer=True),
    "sequence_length": _NumSpec(16, 1e7, "tokens", 4096, required=False, integer=True),
    "batch_size_tokens": _NumSpec(1e3, 1e10, "tokens", 4e6, required=False),
    "training_tokens": _NumSpec(1e8, 1e15, "tokens", 1e12, required=False),
    "training_compute_flop": _NumSpec(1e17, 1e30, "FLOP", 1e24, required=False),
    "utilization_mfu": _NumSpec(1e-3, 1, "fraction of peak", 0.4, (("%", 0.01),), required=False),
}


def _parse_month(raw: str, years: tuple[int, int]) -> float | None:
    """'2024-07' -> mid-month decimal year, or None when malformed or outside ``years``."""
    parts = raw.split("-")
    if len(parts) != 2 or len(parts[0]) != 4 or len(parts[1]) != 2:
        return None
    if not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    y, m = int(parts[0]), int(parts[1])
    if not (1 <= m <= 12 and years[0] <= y <= years[1]):
        return None
    return _release_year(raw)


def _check_month(
    col: _Collector, df: pd.DataFrame, name: str, years: tuple[int, int], *, required: bool = True
) -> None:
    for i, raw in enumerate(df[name].tolist()):
        if raw == "":
            if required:
                col.cell(i, name, "required value is empty (YYYY-MM)")
        elif _parse_month(raw, years) is None:
            col.cell(
                i,
                name,
                f"bad date {raw!r}: expected YYYY-MM with month 01..12 and year "
                f"{years[0]}..{years[1]}",
            )


def _number(raw: str) -> float | None:
    """The float of a cell already accepted by ``_check_numeric`` (None when empty or bad)."""
    if raw == "":
        return None
    v = parse_number(raw)
    return v if v is not None and v > 0 else None


def validate_model_shapes(
    df: pd.DataFrame, file: str, lines: Sequence[int] | None = None
) -> list[DataValidationError]:
    """Every problem in a model-shapes table read with all cells as strings (empty list = valid).

    Beyond columns, required text, unique models, dates and numeric ranges: active parameters at
    most total, equal to total for dense models and below it for MoE; ``compute_method`` present
    exactly when compute is, and for ``6ND`` compute within 1 % of 6 x active x tokens; the batch
    no larger than the training tokens.
    """
    df = df.fillna("").astype(str).apply(lambda s: s.str.strip())
    col = _Collector(file, len(df), lines)
    present = set(_check_columns(col, df, MODEL_SHAPES_COLUMNS))
    for name in ("model", "organization", "source_url"):
        if name in present:
            _check_required_text(col, df, name)
    if "model" in present:
        _check_duplicates(col, df, "model")
    if "date" in present:
        _check_month(col, df, "date", MODEL_SHAPES_YEARS)
    if "architecture" in present:
        _check_choice(col, df, "architecture", ARCHITECTURES)
    for name, spec in _SHAPES_NUMERIC.items():
        if name in present:
            _check_numeric(col, df, name, spec)
    needed = {"architecture", "total_params", "active_params"}
    if needed <= present:
        for i, (arch, tot, act) in enumerate(
            zip(df["architecture"], df["total_params"], df["active_params"], strict=True)
        ):
            total, active = _number(tot), _number(act)
            if total is None or active is None:
                continue
            if active > total:
                col.cell(
                    i,
                    "active_params",
                    f"{_fmt(active)} active parameters exceed the {_fmt(total)} total",
                )
            elif arch.lower() == "dense" and active != total:
                col.cell(
                    i,
                    "active_params",
                    f"a dense model has active = total parameters, got {_fmt(active)} and "
                    f"{_fmt(total)}",
                )
            elif arch.lower() == "moe" and active == total:
                col.cell(i, "active_params", "a mixture of experts has fewer active than total")
    if {"training_compute_flop", "compute_method"} <= present:
        for i, (c, method) in enumerate(
            zip(df["training_compute_flop"], df["compute_method"], strict=True)
        ):
            if c == "" and method == "":
                continue
            if c != "" and method == "":
                col.cell(
                    i,
                    "compute_method",
                    f"required when training_compute_flop is given (one of {', '.join(COMPUTE_METHODS)})",
                )
            elif c == "" and method != "":
                col.cell(i, "compute_method", "given without a training_compute_flop")
            elif method not in COMPUTE_METHODS:
                col.cell(
                    i, "compute_method", f"{method!r} is not one of {', '.join(COMPUTE_METHODS)}"
                )
            elif method == "6ND" and {"active_params", "training_tokens"} <= present:
                compute, active = _number(c), _number(df["active_params"].iat[i])
                tokens = _number(df["training_tokens"].iat[i])
                if compute is None or active is None:
                    continue
                if tokens is None:
                    col.cell(i, "training_tokens", "required when compute_method is 6ND")
                    continue
                six_nd = 6.0 * active * tokens
                if abs(compute / six_nd - 1.0) > _SIX_ND_RTOL:
                    col.cell(
                        i,
                        "training_compute_flop",
                        f"{_fmt(compute)} is not 6 x active_params x training_tokens = "
                        f"{_fmt(six_nd)} (compute_method 6ND)",
                    )
    if {"batch_size_tokens", "training_tokens"} <= present:
        for i, (b, t) in enumerate(
            zip(df["batch_size_tokens"], df["training_tokens"], strict=True)
        ):
            batch, tokens = _number(b), _number(t)
            if batch is not None and tokens is not None and batch > tokens:
                col.cell(
                    i,
                    "batch_size_tokens",
                    f"batch {_fmt(batch)} exceeds the {_fmt(tokens)} training tokens",
                )
    return sorted(col.errors, key=lambda e: -1 if e.row is None else e.row)


def load_model_shapes(path: str | Path | None = None) -> pd.DataFrame:
    """Load and validate ``model_shapes.csv`` (default: the data folder's copy, :func:`forecast.config.paths.data_dir`).

    Raises the first :class:`DataValidationError`. Numeric columns become float64 with NaN for
    empty cells; ``architecture`` is lower case; an added ``year`` column holds the mid-month
    decimal year of ``date`` (2024-07 -> 2024.54).
    """
    p = _resolve(path, _in_data_dir(DEFAULT_MODEL_SHAPES_PATH))
    raw = _read_validated(p, validate_model_shapes)
    df = raw.loc[:, list(MODEL_SHAPES_COLUMNS)].copy()
    for name in _SHAPES_NUMERIC:
        df[name] = _as_float(df[name])
    df["architecture"] = df["architecture"].str.lower()
    df["year"] = df["date"].map(_release_year).astype("float64")
    return df.reset_index(drop=True)


SCALEUP_DOMAINS_COLUMNS: tuple[str, ...] = (
    "system",
    "vendor",
    "accelerator",
    "announced",
    "available",
    "status",
    "role",
    "domain_size",
    "topology",
    "in_network_reduction",
    "scaleup_bandwidth_bytes_per_s",
    "source_url",
    "notes",
)
DOMAIN_ROLES = ("flagship", "variant", "maximum")
"""``flagship``: the vendor's headline training system of a generation (what frontier clusters are
built from); ``variant``: a smaller or alternative system of the same generation; ``maximum``: the
largest domain the fabric supports or was announced with, not a volume product."""
DOMAIN_STATUSES = ("shipped", "announced")
DOMAIN_TOPOLOGIES = ("switched", "torus", "mesh")
SCALEUP_DOMAINS_YEARS = (2010, 2035)

_BW_PREFIXES = (("GB/s", 1e9), ("TB/s", 1e12))
_DOMAIN_NUMERIC: dict[str, _NumSpec] = {
    "domain_size": _NumSpec(1, 1e6, "accelerators", 8, integer=True),
    "scaleup_bandwidth_bytes_per_s": _NumSpec(
        1e9, 1e14, "bytes/s", 5e11, _BW_PREFIXES, required=False
    ),
}


def validate_scaleup_domains(
    df: pd.DataFrame, file: str, lines: Sequence[int] | None = None
) -> list[DataValidationError]:
    """Every problem in a scale-up-domains table read with all cells as strings.

    Beyond columns, required text, unique systems, dates, choices and numeric ranges: a shipped
    system has an ``available`` date, ``available`` is not before ``announced``, and only a
    switched domain can reduce in the network (tori and meshes have no switch to do it).
    """
    df = df.fillna("").astype(str).apply(lambda s: s.str.strip())
    col = _Collector(file, len(df), lines)
    present = set(_check_columns(col, df, SCALEUP_DOMAINS_COLUMNS))
    for name in ("system", "vendor", "accelerator", "source_url"):
        if name in present:
            _check_required_text(col, df, name)
    if "system" in present:
        _check_duplicates(col, df, "system")
    if "announced" in present:
        _check_month(col, df, "announced", SCALEUP_DOMAINS_YEARS)
    if "available" in present:
        _check_month(col, df, "available", SCALEUP_DOMAINS_YEARS, required=False)
    for name, allowed in (
        ("status", DOMAIN_STATUSES),
        ("role", DOMAIN_ROLES),
        ("topology", DOMAIN_TOPOLOGIES),
        ("in_network_reduction", tuple(_BOOLS)),
    ):
        if name in present:
            _check_choice(col, df, name, allowed)
    for name, spec in _DOMAIN_NUMERIC.items():
        if name in present:
            _check_numeric(col, df, name, spec)
    if {"status", "available"} <= present:
        for i, (status, avail) in enumerate(zip(df["status"], df["available"], strict=True)):
            if status.lower() == "shipped" and avail == "":
                col.cell(i, "available", "a shipped system needs its availability date (YYYY-MM)")
    if {"announced", "available"} <= present:
        for i, (ann, avail) in enumerate(zip(df["announced"], df["available"], strict=True)):
            a = _parse_month(ann, SCALEUP_DOMAINS_YEARS)
            b = _parse_month(avail, SCALEUP_DOMAINS_YEARS)
            if a is not None and b is not None and b < a:
                col.cell(i, "available", f"available {avail} is before announced {ann}")
    if {"topology", "in_network_reduction"} <= present:
        for i, (topo, red) in enumerate(
            zip(df["topology"], df["in_network_reduction"], strict=True)
        ):
            if red.lower() == "true" and topo.lower() in ("torus", "mesh"):
                col.cell(
                    i,
                    "in_network_reduction",
                    f"a {topo.lower()} has no switch to reduce in; only switched domains can",
                )
    return sorted(col.errors, key=lambda e: -1 if e.row is None else e.row)


def load_scaleup_domains(path: str | Path | None = None) -> pd.DataFrame:
    """Load and validate ``scaleup_domains.csv`` (default: the data folder's copy, :func:`forecast.config.paths.data_dir`).

    Raises the first :class:`DataValidationError`. ``domain_size`` and the bandwidth become
    float64; ``in_network_reduction`` bool; choices lower case; added columns
    ``announced_year`` and ``available_year`` (mid-month decimal years, NaN when not available).
    """
    p = _resolve(path, _in_data_dir(DEFAULT_SCALEUP_DOMAINS_PATH))
    raw = _read_validated(p, validate_scaleup_domains)
    df = raw.loc[:, list(SCALEUP_DOMAINS_COLUMNS)].copy()
    for name in _DOMAIN_NUMERIC:
        df[name] = _as_float(df[name])
    for name in ("status", "role", "topology"):
        df[name] = df[name].str.lower()
    df["in_network_reduction"] = df["in_network_reduction"].str.lower().map(_BOOLS).astype(bool)
    df["announced_year"] = df["announced"].map(_release_year).astype("float64")
    df["available_year"] = (
        df["available"].map(lambda s: _release_year(s) if s else math.nan).astype("float64")
    )
    return df.reset_index(drop=True)


LATENCY_COLUMNS: tuple[str, ...] = (
    "quantity",
    "kind",
    "value_s",
    "system",
    "ranks",
    "nodes",
    "message_bytes",
    "algorithm",
    "protocol",
    "software",
    "date",
    "source_url",
    "notes",
)
LATENCY_QUANTITIES = (
    "allreduce_time",
    "allreduce_base_latency",
    "intra_domain_hop_latency",
    "inter_domain_hop_latency",
    "kernel_latency",
)
"""``allreduce_time``: a measured small-message all-reduce; the others are the terms of the
model's latency (``latency.*`` priors), measured or as constants of NCCL's tuning model."""
LATENCY_KINDS = ("measurement", "tuning_constant")
LATENCY_YEARS = (2010, 2035)

_LATENCY_NUMERIC: dict[str, _NumSpec] = {
    "value_s": _NumSpec(1e-8, 1e-1, "seconds", 5e-6, (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3))),
    "ranks": _NumSpec(1, 1e7, "ranks", 8, required=False, integer=True),
    "nodes": _NumSpec(1, 1e7, "nodes", 1, required=False, integer=True),
    "message_bytes": _NumSpec(1, 1e12, "bytes", 8, required=False, integer=True),
}
_LATENCY_KEY = (
    "quantity",
    "kind",
    "system",
    "ranks",
    "nodes",
    "message_bytes",
    "algorithm",
    "protocol",
    "software",
)


def validate_latency_measurements(
    df: pd.DataFrame, file: str, lines: Sequence[int] | None = None
) -> list[DataValidationError]:
    """Every problem in a latency table read with all cells as strings.

    Beyond columns, required text, dates, choices and ranges (``value_s`` in seconds, with a hint
    when a value looks like microseconds): a measurement names its system and rank count, a
    tuning constant its algorithm and protocol; nodes do not exceed ranks; no two rows describe
    the same setting.
    """
    df = df.fillna("").astype(str).apply(lambda s: s.str.strip())
    col = _Collector(file, len(df), lines)
    present = set(_check_columns(col, df, LATENCY_COLUMNS))
    for name in ("software", "source_url"):
        if name in present:
            _check_required_text(col, df, name)
    if "quantity" in present:
        _check_choice(col, df, "quantity", LATENCY_QUANTITIES, lower=False)
    if "kind" in present:
        _check_choice(col, df, "kind", LATENCY_KINDS, lower=False)
    if "date" in present:
        _check_month(col, df, "date", LATENCY_YEARS)
    for name, spec in _LATENCY_NUMERIC.items():
        if name in present:
            _check_numeric(col, df, name, spec)
    if "kind" in present:
        for i, kind in enumerate(df["kind"].tolist()):
            if kind == "measurement":
                for name in ("system", "ranks"):
                    if name in present and df[name].iat[i] == "":
                        col.cell(i, name, "required for a measurement")
            elif kind == "tuning_constant":
                for name in ("algorithm", "protocol"):
                    if name in present and df[name].iat[i] == "":
                        col.cell(i, name, "required for a tuning constant")
    if {"ranks", "nodes"} <= present:
        for i, (r, n) in enumerate(zip(df["ranks"], df["nodes"], strict=True)):
            ranks, nodes = _number(r), _number(n)
            if ranks is not None and nodes is not None and nodes > ranks:
                col.cell(i, "nodes", f"{_fmt(nodes)} nodes exceed the {_fmt(ranks)} ranks")
    if set(_LATENCY_KEY) <= present:
        first: dict[tuple[str, ...], int] = {}
        for i, key in enumerate(zip(*(df[c] for c in _LATENCY_KEY), strict=True)):
            k = tuple(x.casefold() for x in key)
            if k in first:
                col.cell(
                    i, None, f"duplicate of row {first[k] + 1} (same {', '.join(_LATENCY_KEY)})"
                )
            else:
                first[k] = i
    return sorted(col.errors, key=lambda e: -1 if e.row is None else e.row)


def load_latency_measurements(path: str | Path | None = None) -> pd.DataFrame:
    """Load and validate ``latency_measurements.csv`` (default: the data folder's copy, :func:`forecast.config.paths.data_dir`).

    Raises the first :class:`DataValidationError`. ``value_s``, ``ranks``, ``nodes`` and
    ``message_bytes`` become float64 (NaN when empty); an added ``year`` column holds the
    mid-month decimal year of ``date``.
    """
    p = _resolve(path, _in_data_dir(DEFAULT_LATENCY_MEASUREMENTS_PATH))
    raw = _read_validated(p, validate_latency_measurements)
    df = raw.loc[:, list(LATENCY_COLUMNS)].copy()
    for name in _LATENCY_NUMERIC:
        df[name] = _as_float(df[name])
    df["year"] = df["date"].map(_release_year).astype("float64")
    return df.reset_index(drop=True)
