"""The walls service: both walls of one accelerator, and its utilization-vs-compute curve.

The one place that turns "accelerator X, a run of D days at precision P" into walls.  Used by
``wallcast walls`` and ``wallcast curve``, by the report's per-accelerator section and by
the HTTP API.  Every function takes plain hashable arguments (an accelerator name or table row,
numbers, strings, a table path) and returns a plain JSON-ready record (floats, ints, strings,
lists, ``None``); nothing here prints or formats.

:func:`walls_record` returns exactly what ``wallcast walls --json`` prints for one accelerator.
:func:`curve_record` returns the best utilization at each compute budget of a grid, with both
walls, for the ``curve`` command and the report's chart.  The plan search itself
(:func:`forecast.model.search.find_walls`) runs once per distinct (hardware, assumptions) pair
in a process: results are cached on those numbers, so a caller that asks twice (the report's
table and its chart) pays once.  A service that caches whole records across processes can key
them on :func:`hardware_table_hash` and the arguments.

The physics (and with it JAX) is imported on the first search (:func:`_physics`): the report,
the CLI and the API import this module to read records and tables without loading JAX.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from forecast.config.errors import WallcastError
from forecast.config.paths import hardware_path
from forecast.config.runtime import init_jax
from forecast.data.hardware import data_hash, get_accelerator, load_hardware
from forecast.queries.posterior_walls import REGIME_NOTES

if TYPE_CHECKING:
    from forecast.data.hardware import Accelerator
    from forecast.model.params import Assumptions, Hardware
    from forecast.model.search import Walls

DEFAULT_DURATION_DAYS = 90.0
DEFAULT_PRECISION = "bf16"
#: Plan regimes (``forecast.model.search.REGIMES``, kept equal; a test checks): ``paper``, the
#: continuous relaxation of Erdil & Schneider-Joseph (2024); ``realistic``, plans a run can launch.
REGIMES = ("paper", "realistic")
DEFAULT_REGIME = "paper"
#: One sentence per regime (kept in :mod:`forecast.queries.posterior_walls`, which reads records
#: without this module).
REGIME_SENTENCES = REGIME_NOTES


#: The plan search's compute grid (log10 FLOP); a wall outside it is ``None`` in a record.
#: Kept equal to ``forecast.model.search.DEFAULT_LOG10_FLOP_GRID``'s ends (a test checks).
SEARCH_LOG10_FLOP_RANGE = (20.0, 40.0)


#: The compute range (log10 FLOP) and step of a utilization curve, as ``wallcast curve`` draws it.
CURVE_LOG10_FLOP_RANGE = (22.0, 33.0)
CURVE_STEP_LOG10 = 0.02

_WALL_LABELS = {"data_movement": "data-movement wall", "latency": "latency wall"}


class WallsInputError(WallcastError, ValueError):
    """An argument of the walls service out of range (duration, MoE settings)."""


def _physics() -> tuple[Any, Any, Any]:
    """The model modules a search needs (:mod:`forecast.model.accelerators`, ``params`` and
    ``search``), imported on first use."""
    # why here: importing the walls module (report, CLI, API) must not load JAX; a search does
    from forecast.model import accelerators, params, search

    return accelerators, params, search


def hardware_table_path(hardware: str | Path | None = None) -> Path:
    """The accelerator table used: ``hardware`` if given, else the data folder's ``hardware.csv``
    (``WALLCAST_DATA_DIR`` honoured, see :mod:`forecast.config.paths`)."""
    return Path(hardware) if hardware is not None else hardware_path()


def hardware_table_hash(hardware: str | Path | None = None) -> str:
    """SHA-256 of the accelerator table's bytes: with the other arguments, a cache key for records."""
    return data_hash(hardware_table_path(hardware))


def select_accelerators(
    names: Sequence[str] | None = None, hardware: str | Path | None = None
) -> list[Accelerator]:
    """Accelerators by name (exact, unique part or whole word), in order and deduplicated;
    every row of the table when ``names`` is empty.  Unknown names raise
    :class:`forecast.config.errors.UnknownAcceleratorError` with the closest names."""
    df = load_hardware(hardware_table_path(hardware))
    wanted = [str(n) for n in df["name"].tolist()] if not names else list(names)
    out: list[Accelerator] = []
    seen: set[str] = set()
    for name in wanted:
        acc = get_accelerator(df, name)
        if acc.name not in seen:
            seen.add(acc.name)
            out.append(acc)
    return out


def _accelerator(accelerator: str | Accelerator, hardware: str | Path | None) -> Accelerator:
    if isinstance(accelerator, str):
        return select_accelerators([accelerator], hardware)[0]
    return accelerator


def _check_inputs(duration_days: float, moe_experts: int, moe_active_experts: int) -> None:
    if not (duration_days > 0 and math.isfinite(duration_days)):
        raise WallsInputError(f"duration_days must be a positive number, got {duration_days}")
    if moe_experts < 1 or moe_active_experts < 1:
        raise WallsInputError(
            f"moe_experts and moe_active_experts must be at least 1, got "
            f"{moe_experts} and {moe_active_experts}"
        )
    if moe_active_experts > moe_experts:
        raise WallsInputError(
            f"moe_active_experts ({moe_active_experts}) cannot exceed moe_experts ({moe_experts})"
        )


def _model_inputs(
    acc: Accelerator,
    duration_days: float,
    precision: str,
    moe_experts: int,
    moe_active_experts: int,
) -> tuple[Hardware, Assumptions, list[str]]:
    """The model's hardware and assumptions for one request, and the gap-filling sentences."""
    _check_inputs(duration_days, moe_experts, moe_active_experts)
    accelerators, params, _ = _physics()
    a = params.assumptions_with(
        duration_days=duration_days,
        bytes_per_number=accelerators.bytes_per_number(precision),
        moe_experts=float(moe_experts),
        moe_active_experts=float(moe_active_experts),
    )
    hw, notes = accelerators.hardware_from_accelerator(acc, precision)
    return hw, a, notes


@functools.lru_cache(maxsize=256)
def _search(hw: Hardware, a: Assumptions, regime: str = DEFAULT_REGIME) -> Walls:
    """The full plan search (JAX), once per distinct pair of numbers and regime in this process.

    The returned ``plan_at_wall`` dict is shared between calls: copy it before changing it.
    """
    init_jax()

    _, _, search = _physics()
    return search.find_walls(hw, a, regime=regime)


def _check_regime(regime: str) -> None:
    if regime not in REGIMES:
        raise WallsInputError(f"regime must be one of {', '.join(REGIMES)}, got {regime!r}")


def _beyond_grid_note(label: str, log10_flop: float) -> str | None:
    if not math.isinf(log10_flop):
        return None
    lo, hi = SEARCH_LOG10_FLOP_RANGE
    if log10_flop > 0:
        return f"{label} beyond the search grid (above 1e{hi:.0f} FLOP)"
    return f"{label} below the search grid (under 1e{lo:.0f} FLOP)"


def _finite_or_none(x: float) -> float | None:
    return None if math.isinf(x) else x


def walls_record(
    accelerator: str | Accelerator,
    *,
    duration_days: float = DEFAULT_DURATION_DAYS,
    precision: str = DEFAULT_PRECISION,
    moe_experts: int = 1,
    moe_active_experts: int = 1,
    hardware: str | Path | None = None,
    assumptions: Mapping[str, float] | None = None,
    regime: str = DEFAULT_REGIME,
) -> dict[str, Any]:
    """Both walls of one accelerator, the maximum utilization and the best plan at the
    data-movement wall: one entry of ``wallcast walls --json``.

    ``regime``: ``"paper"`` or ``"realistic"`` (:data:`REGIMES`); the record's ``regime`` and
    ``regime_note`` say which.

    ``assumptions``: fields of :class:`forecast.model.params.Assumptions` set on top of the
    defaults and the other arguments (e.g. a forecast's scaling inputs); unknown names raise
    :class:`WallsInputError`.

    ``accelerator`` is a name (looked up in ``hardware``, default ``data/hardware.csv``) or a
    table row.  Keys: ``accelerator``, ``precision``, ``duration_days``, ``moe_experts``,
    ``moe_active_experts``, ``utilization_threshold``, ``max_utilization`` (fraction of peak),
    ``data_movement_wall_flop`` / ``latency_wall_flop`` (FLOP) and their ``_log10_flop`` twins
    (``None`` beyond the search grid, 1e20 to 1e40 FLOP, and ``note`` says on which side),
    ``plan_at_wall`` (``None`` without a finite data-movement wall), ``hardware`` (the model's
    figures, SI), ``assumptions`` (gap-filling sentences) and ``note``.
    """
    _check_regime(regime)
    acc = _accelerator(accelerator, hardware)
    hw, a, notes = _model_inputs(acc, duration_days, precision, moe_experts, moe_active_experts)
    if assumptions:
        unknown = sorted(set(assumptions) - set(a._fields))
        if unknown:
            raise WallsInputError(f"unknown assumption fields {unknown}")
        a = a._replace(**{k: float(v) for k, v in assumptions.items()})
    w = _search(hw, a, regime)
    _, _, search = _physics()
    dm, lat = float(w.data_movement_wall_log10_flop), float(w.latency_wall_log10_flop)
    grid_notes = [
        n
        for n in (
            _beyond_grid_note(_WALL_LABELS["data_movement"], dm),
            _beyond_grid_note(_WALL_LABELS["latency"], lat),
        )
        if n
    ]
    return {
        "accelerator": acc.name,
        "precision": precision,
        "duration_days": duration_days,
        "moe_experts": moe_experts,
        "moe_active_experts": moe_active_experts,
        "utilization_threshold": search.UTILIZATION_THRESHOLD,
        "max_utilization": float(w.max_utilization),
        "data_movement_wall_flop": None if math.isinf(dm) else 10.0**dm,
        "data_movement_wall_log10_flop": _finite_or_none(dm),
        "latency_wall_flop": None if math.isinf(lat) else 10.0**lat,
        "latency_wall_log10_flop": _finite_or_none(lat),
        "plan_at_wall": dict(w.plan_at_wall) or None,
        "hardware": {k: float(v) for k, v in hw._asdict().items()},
        "assumptions": list(notes),
        "note": "; ".join(grid_notes) or None,
        "regime": regime,
        "regime_note": REGIME_SENTENCES[regime],
        "assumptions_source": "custom" if assumptions else "paper",
        "assumptions_note": "assumptions given by the caller"
        if assumptions
        else PAPER_ASSUMPTIONS_NOTE,
    }


#: What a record at the default assumptions says about them.
PAPER_ASSUMPTIONS_NOTE = (
    "the paper's fixed assumptions (Erdil & Schneider-Joseph 2024: maximum utilization 0.7, "
    "their batch and depth laws, latencies as measured in 2024), one value each, not the "
    "forecast's fitted inputs"
)


def walls_records(
    names: Sequence[str] | None = None,
    *,
    duration_days: float = DEFAULT_DURATION_DAYS,
    precision: str = DEFAULT_PRECISION,
    moe_experts: int = 1,
    moe_active_experts: int = 1,
    hardware: str | Path | None = None,
    regime: str = DEFAULT_REGIME,
) -> list[dict[str, Any]]:
    """:func:`walls_record` of each named accelerator (every table row when ``names`` is empty),
    in order, each accelerator once: what ``wallcast walls --json`` prints."""
    _check_inputs(duration_days, moe_experts, moe_active_experts)
    _check_regime(regime)
    return [
        walls_record(
            acc,
            duration_days=duration_days,
            precision=precision,
            moe_experts=moe_experts,
            moe_active_experts=moe_active_experts,
            regime=regime,
        )
        for acc in select_accelerators(names, hardware)
    ]


def curve_record(
    accelerator: str | Accelerator,
    *,
    duration_days: float = DEFAULT_DURATION_DAYS,
    precision: str = DEFAULT_PRECISION,
    moe_experts: int = 1,
    moe_active_experts: int = 1,
    hardware: str | Path | None = None,
    log10_flop_range: tuple[float, float] = CURVE_LOG10_FLOP_RANGE,
    step_log10: float = CURVE_STEP_LOG10,
    regime: str = DEFAULT_REGIME,
) -> dict[str, Any]:
    """Best achievable utilization against training compute for one accelerator, in a plan
    ``regime`` (:data:`REGIMES`; the walls are :func:`walls_record`'s in the same regime).

    Keys: ``accelerator``, ``precision``, ``duration_days``, ``moe_experts``,
    ``moe_active_experts``, ``utilization_threshold``, ``log10_flop`` (the budgets, from
    ``log10_flop_range[0]`` to ``[1]`` every ``step_log10``), ``utilization`` (fraction of peak,
    ``None`` where no plan finishes in time), ``data_movement_wall_log10_flop`` and
    ``latency_wall_log10_flop`` (from :func:`walls_record`; ``None`` beyond the search grid),
    ``regime``, ``assumptions`` and ``note``.
    """
    init_jax()
    _check_regime(regime)

    lo, hi = (float(x) for x in log10_flop_range)
    if not (step_log10 > 0 and hi > lo):
        raise WallsInputError(
            f"curve range must increase and its step be positive, got {lo}..{hi} step {step_log10}"
        )
    acc = _accelerator(accelerator, hardware)
    walls = walls_record(
        acc,
        duration_days=duration_days,
        precision=precision,
        moe_experts=moe_experts,
        moe_active_experts=moe_active_experts,
        regime=regime,
    )
    hw, a, _ = _model_inputs(acc, duration_days, precision, moe_experts, moe_active_experts)
    grid = np.round(np.arange(lo, hi + 1e-9, step_log10), 4)
    _, _, search = _physics()
    c = search.regime_curve(hw, a, grid, regime=regime)
    feasible = np.asarray(c.feasible)
    utilization = np.asarray(c.utilization)
    keys = ("accelerator", "precision", "duration_days", "moe_experts", "moe_active_experts")
    return {
        **{k: walls[k] for k in keys},
        "utilization_threshold": walls["utilization_threshold"],
        "log10_flop": [float(x) for x in grid],
        "utilization": [
            float(u) if f else None for u, f in zip(utilization, feasible, strict=True)
        ],
        "data_movement_wall_log10_flop": walls["data_movement_wall_log10_flop"],
        "latency_wall_log10_flop": walls["latency_wall_log10_flop"],
        "regime": regime,
        "assumptions": walls["assumptions"],
        "note": walls["note"],
        "assumptions_source": walls["assumptions_source"],
        "assumptions_note": walls["assumptions_note"],
    }


def plan_record(
    accelerator: str | Accelerator,
    *,
    training_flop: float,
    tp: int,
    pp: int,
    dp: int,
    sequence_length: int,
    microbatch_sequences: int = 1,
    cp: int = 1,
    two_d: bool = False,
    recompute: bool = False,
    virtual_stages: int = 1,
    microbatches: int | None = None,
    duration_days: float = DEFAULT_DURATION_DAYS,
    precision: str = DEFAULT_PRECISION,
    moe_experts: int = 1,
    moe_active_experts: int = 1,
    ep: int | None = None,
    hardware: str | Path | None = None,
    regime: str = "realistic",
) -> dict[str, Any]:
    """One given plan for the compute-optimal model of ``training_flop`` on one accelerator:
    what ``wallcast plan`` prints (:func:`forecast.model.evaluate.evaluate_plan`).

    ``ep``: expert-parallel ranks (inside ``dp x cp``; default ``moe_experts``, one expert per
    rank).  ``regime``: ``realistic`` (the plan as launched) or ``paper`` (the paper's relaxed
    step model: ``L / pp`` layers per stage; no ``cp``, recomputation or interleaving).

    Keys: ``accelerator``, ``precision``, ``duration_days``, ``training_flop``, ``model`` (its
    parameters, layers, width, heads, tokens, the batch the law allows), ``plan`` (the integer
    degrees as given, with the microbatch count used and the accelerators), ``feasible``,
    ``reasons``, ``utilization``, ``step_time_s``, ``step_breakdown_s``, ``bound_by``,
    ``memory_bytes``, ``global_batch_tokens``, ``steps``, ``run_days``, ``layers_per_stage``,
    ``hardware``, ``assumptions``.
    """
    if not (training_flop > 0 and math.isfinite(training_flop)):
        raise WallsInputError(f"training_flop must be a positive number, got {training_flop}")
    if regime not in REGIMES:
        raise WallsInputError(f"regime must be one of {', '.join(REGIMES)}, got {regime!r}")
    if regime == "paper" and (cp != 1 or recompute or virtual_stages != 1):
        raise WallsInputError(
            "the paper regime's plans have no context parallelism, recomputation or "
            "interleaving (cp 1, no recompute, interleave 1); evaluate this plan with the "
            "realistic regime"
        )
    acc = _accelerator(accelerator, hardware)
    hw, a, notes = _model_inputs(acc, duration_days, precision, moe_experts, moe_active_experts)
    init_jax()
    # why here: the plan evaluation imports JAX; reading records must not
    from forecast.model import evaluate

    # the compute-optimal model: the depth law's layers (uneven stages where pp v does not divide)
    model = evaluate.run_model_for_flop(math.log10(training_flop), a)
    plan = evaluate.ParallelPlan(
        tp=tp,
        pp=pp,
        dp=dp,
        sequence_length=sequence_length,
        microbatch_sequences=microbatch_sequences,
        cp=cp,
        two_d=two_d,
        recompute=recompute,
        virtual_stages=virtual_stages,
        microbatches=microbatches,
        ep=ep,
    )
    ev = evaluate.evaluate_plan(hw, a, model, plan, regime=regime)
    return {
        "accelerator": acc.name,
        "precision": precision,
        "regime": regime,
        "duration_days": duration_days,
        "training_flop": training_flop,
        "moe_experts": moe_experts,
        "moe_active_experts": moe_active_experts,
        "model": {**model._asdict(), "kv_dim": model.kv_dim},
        "plan": {
            **plan._asdict(),
            "ep": moe_experts if ep is None else ep,
            "microbatches": ev.microbatches,
            "microbatch_tokens": plan.microbatch_tokens,
            "accelerators": ev.accelerators,
            "tensor_parallel_layout": "2D" if two_d else "1D",
        },
        "feasible": ev.feasible,
        "reasons": list(ev.reasons),
        "utilization": ev.utilization,
        "step_time_s": _finite_or_none_nan(ev.step_time_s),
        "step_breakdown_s": dict(ev.step_breakdown_s),
        "bound_by": ev.bound_by or None,
        "memory_bytes": dict(ev.memory_bytes),
        "global_batch_tokens": ev.global_batch_tokens,
        "steps": ev.steps,
        "run_days": _finite_or_none_nan(ev.run_days),
        "layers_per_stage": ev.layers_per_stage,
        "hardware": {k: float(v) for k, v in hw._asdict().items()},
        "assumptions": list(notes),
    }


def _finite_or_none_nan(x: float) -> float | None:
    return x if math.isfinite(x) else None
