"""``data/training_runs.csv``: published large runs with their parallel layout and achieved
utilization, with a validating loader.

Each row is a run (or a throughput benchmark at scale) with its model, accelerator, degrees of
tensor, pipeline, data, context and expert parallelism, microbatch, sequence length, batch,
recomputation, interleaving and observed model FLOP utilization, and its primary source
(``data/README.md`` documents every column, ``data/training_runs.md`` where each number was read).
The evidence that checks the step-time model against real runs
(:mod:`forecast.analyses.published_runs`).

Error convention as :mod:`forecast.data.evidence`: a
:class:`~forecast.config.errors.DataValidationError` names the file, the 1-based data row and the
field.  No JAX import here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from forecast.config import paths
from forecast.config.errors import DataValidationError
from forecast.data.evidence import ARCHITECTURES, _in_data_dir, _number
from forecast.data.hardware import (
    _MAX_YEAR,
    _MIN_YEAR,
    _as_float,
    _check_choice,
    _check_columns,
    _check_duplicates,
    _check_numeric,
    _check_required_text,
    _Collector,
    _decimal_year,
    _fmt,
    _NumSpec,
    _parse_ymd,
    _read_validated,
    _resolve,
)

DEFAULT_TRAINING_RUNS_PATH: Path = paths.REPO_ROOT / "data" / "training_runs.csv"
TRAINING_RUNS_COLUMNS: tuple[str, ...] = (
    "run",
    "organization",
    "date",
    "run_kind",
    "architecture",
    "total_params",
    "active_params",
    "layers",
    "d_model",
    "attention_heads",
    "experts",
    "active_experts",
    "accelerator",
    "accelerators",
    "tensor_parallel",
    "pipeline_parallel",
    "data_parallel",
    "context_parallel",
    "expert_parallel",
    "virtual_stages",
    "microbatch_sequences",
    "sequence_length",
    "global_batch_sequences",
    "recompute",
    "precision",
    "training_tokens",
    "training_flop",
    "duration_days",
    "observed_mfu",
    "utilization_basis",
    "mfu_arithmetic",
    "source_url",
    "notes",
)
RUN_KINDS = ("production", "benchmark")
RECOMPUTE_KINDS = ("none", "selective", "full")
RUN_PRECISIONS = ("bf16", "fp8")
UTILIZATION_BASES = ("mfu_reported", "throughput", "gpu_hours")
_DEGREE = _NumSpec(1, 1e6, "ranks", 8, integer=True)
_RUNS_LAYOUT_NUMERIC: dict[str, _NumSpec] = {
    "total_params": _NumSpec(1e6, 1e14, "parameters", 1e11),
    "active_params": _NumSpec(1e6, 1e14, "parameters", 1e11),
    "layers": _NumSpec(1, 1000, "layers", 96, integer=True),
    "d_model": _NumSpec(64, 1e6, "model width", 12288, integer=True),
    "attention_heads": _NumSpec(1, 1e5, "heads", 96, integer=True),
    "experts": _NumSpec(1, 1e5, "experts", 1, integer=True),
    "active_experts": _NumSpec(1, 1e5, "experts", 1, integer=True),
    "accelerators": _NumSpec(1, 1e8, "accelerators", 4096, integer=True),
    "tensor_parallel": _DEGREE,
    "pipeline_parallel": _DEGREE,
    "data_parallel": _DEGREE,
    "context_parallel": _DEGREE,
    "expert_parallel": _NumSpec(1, 1e6, "ranks", 8, required=False, integer=True),
    "virtual_stages": _NumSpec(1, 1e3, "chunks per rank", 1, required=False, integer=True),
    "microbatch_sequences": _NumSpec(1, 1e6, "sequences", 1, required=False, integer=True),
    "sequence_length": _NumSpec(16, 1e7, "tokens", 8192, required=False, integer=True),
    "global_batch_sequences": _NumSpec(1, 1e8, "sequences", 2048, required=False, integer=True),
    "training_tokens": _NumSpec(1e8, 1e15, "tokens", 1e13, required=False),
    "training_flop": _NumSpec(1e17, 1e30, "FLOP", 1e24, required=False),
    "duration_days": _NumSpec(0.01, 3650, "days", 90, required=False),
    "observed_mfu": _NumSpec(1e-3, 1, "fraction of peak", 0.4, (("%", 0.01),)),
}


def validate_training_runs(
    df: pd.DataFrame, file: str, lines: Sequence[int] | None = None
) -> list[DataValidationError]:
    """Every problem in a training-runs table read with all cells as strings (empty list = valid).

    Beyond columns, required text, unique runs, real YYYY-MM-DD dates, choices and numeric ranges:
    the accelerator count is the product of the tensor, pipeline, data and context-parallel
    degrees; active parameters at most total (equal for dense models); a dense model has one
    expert; the batch holds at least one sequence per data-parallel replica.
    """
    df = df.fillna("").astype(str).apply(lambda s: s.str.strip())
    col = _Collector(file, len(df), lines)
    present = set(_check_columns(col, df, TRAINING_RUNS_COLUMNS))
    for name in ("run", "organization", "accelerator", "source_url", "utilization_basis"):
        if name in present:
            _check_required_text(col, df, name)
    if "run" in present:
        _check_duplicates(col, df, "run")
    if "date" in present:
        for i, raw in enumerate(df["date"].tolist()):
            if _parse_ymd(raw) is None:
                col.cell(
                    i,
                    "date",
                    f"bad date {raw!r}: expected a real YYYY-MM-DD date in "
                    f"{_MIN_YEAR}..{_MAX_YEAR}",
                )
    for name, allowed in (
        ("run_kind", RUN_KINDS),
        ("architecture", ARCHITECTURES),
        ("utilization_basis", UTILIZATION_BASES),
    ):
        if name in present:
            _check_choice(col, df, name, allowed)
    for name, allowed in (("recompute", RECOMPUTE_KINDS), ("precision", RUN_PRECISIONS)):
        if name in present:
            for i, raw in enumerate(df[name].tolist()):
                if raw and raw.lower() not in allowed:
                    col.cell(i, name, f"{raw!r} is not one of {', '.join(allowed)} or empty")
    for name, spec in _RUNS_LAYOUT_NUMERIC.items():
        if name in present:
            _check_numeric(col, df, name, spec)
    degrees = ("tensor_parallel", "pipeline_parallel", "data_parallel", "context_parallel")
    if {"accelerators", *degrees} <= present:
        for i in range(len(df)):
            values = [_number(df[c].iat[i]) for c in ("accelerators", *degrees)]
            if any(v is None for v in values):
                continue
            count, *parts = values
            if math.prod(parts) != count:
                col.cell(
                    i,
                    "accelerators",
                    f"{_fmt(count)} is not tensor x pipeline x data x context parallel = "
                    f"{_fmt(math.prod(parts))}",
                )
    if {"architecture", "total_params", "active_params", "experts"} <= present:
        for i in range(len(df)):
            arch = df["architecture"].iat[i].lower()
            total, active = _number(df["total_params"].iat[i]), _number(df["active_params"].iat[i])
            experts = _number(df["experts"].iat[i])
            if total is not None and active is not None and active > total:
                col.cell(i, "active_params", f"{_fmt(active)} exceed the {_fmt(total)} total")
            if arch == "dense" and total is not None and active is not None and active != total:
                col.cell(i, "active_params", "a dense model has active = total parameters")
            if arch == "dense" and experts not in (None, 1.0):
                col.cell(i, "experts", f"a dense model has 1 expert, got {_fmt(experts)}")
    if {"global_batch_sequences", "data_parallel"} <= present:
        for i in range(len(df)):
            batch = _number(df["global_batch_sequences"].iat[i])
            dp = _number(df["data_parallel"].iat[i])
            if batch is not None and dp is not None and batch < dp:
                col.cell(
                    i,
                    "global_batch_sequences",
                    f"{_fmt(batch)} sequences cannot feed {_fmt(dp)} data-parallel replicas",
                )
    return sorted(col.errors, key=lambda e: -1 if e.row is None else e.row)


def load_training_runs(path: str | Path | None = None) -> pd.DataFrame:
    """Load and validate ``training_runs.csv`` (default: the data folder's copy).

    Raises the first :class:`DataValidationError`. Numeric columns become float64 with NaN for
    empty cells; ``architecture``, ``recompute`` and ``precision`` are lower case ('' when empty);
    an added ``year`` column holds the decimal year of ``date``.
    """
    p = _resolve(path, _in_data_dir(DEFAULT_TRAINING_RUNS_PATH))
    raw = _read_validated(p, validate_training_runs)
    df = raw.loc[:, list(TRAINING_RUNS_COLUMNS)].copy()
    for name in _RUNS_LAYOUT_NUMERIC:
        df[name] = _as_float(df[name])
    for name in ("architecture", "recompute", "precision"):
        df[name] = df[name].fillna("").astype(str).str.lower()
    df["year"] = df["date"].map(lambda raw: _decimal_year(_parse_ymd(raw))).astype("float64")
    return df.reset_index(drop=True)
