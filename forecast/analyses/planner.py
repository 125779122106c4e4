"""The planner: the best launchable plan of a run, per posterior draw of a published forecast.

"With H100s or B200s, how big a run before utilization drops, and what does it cost?"  For each
accelerator asked about (a row of the hardware table, or the frontier accelerator of a year from
the forecast's fitted trends), a compute budget (given, or the frontier run of a year from the
forecast's fitted trend) and a run length, every kept posterior draw gets its best launchable
plan (:func:`forecast.model.planner.best_plans`: the realistic regime's plans, whole degrees,
microbatches of whole sequences or a sequence split over context-parallel ranks), and the answer
is the distribution over draws: utilization, P(feasible), accelerators, accelerator-hours, step
time, the cost multiplier against the small-scale best, and the plan of the median draw.

The draws are those of the forecast's group ``forecast_inputs`` (first scenario), evenly thinned
to ``draws``: the inputs every other surface uses (:mod:`forecast.analyses.posterior_walls`);
latencies drift to the year asked (today's accelerators: 2024), the sequence length follows the
forecast's fitted sequence-length law in that year.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from forecast.analyses.accelerator_walls import WallsInputError, select_accelerators
from forecast.analyses.posterior_walls import input_draws, sequence_draws, today_assumptions
from forecast.config.constants import REFERENCE_YEAR
from forecast.config.runtime import init_jax
from forecast.model import accelerators as acc_model
from forecast.model.params import Assumptions, Hardware
from forecast.model.planner import best_plans, plan_of
from forecast.model.realistic_fast import shortlist_grid
from forecast.queries.answers import quantiles_with_inf
from forecast.store.reader import load_forecast, resolve_forecast_path

DEFAULT_DRAWS = 500
MAX_DRAWS = 4000
PROB = 0.8
FRONTIER = "frontier"  # the accelerator name of "the frontier accelerator of the year"


def _summary(values: np.ndarray, prob: float = PROB) -> dict[str, float | None]:
    v = np.asarray(values, dtype=float).ravel()
    v = v[~np.isnan(v)]
    if v.size == 0:
        return {"median": None, "lower": None, "upper": None}
    lo, med, hi = quantiles_with_inf(v, [(1 - prob) / 2, 0.5, (1 + prob) / 2])

    def clean(x: float) -> float | None:
        return float(x) if math.isfinite(x) else None

    return {"median": clean(med), "lower": clean(lo), "upper": clean(hi)}


def _flat(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """(chain, draw) -> the kept flat draws."""
    return np.asarray(values, dtype=float).reshape(-1)[keep]


def plan_answer(
    forecast: str | Path | None = None,
    *,
    accelerators: Sequence[str] | None = None,
    year: int | None = None,
    training_flop: float | None = None,
    duration_days: float = 90.0,
    precision: str = "bf16",
    draws: int = DEFAULT_DRAWS,
    hardware: str | Path | None = None,
    tree: xr.DataTree | None = None,
    prob: float = PROB,
) -> dict[str, Any]:
    """The planner's JSON answer (see the module docstring).

    ``accelerators``: names in the hardware table (exact or a unique part); None with a ``year``:
    the frontier accelerator of that year (its specs per draw from the forecast).
    ``training_flop``: the budget; None with a ``year``: the frontier run of that year per draw.
    ``year``: the year of the frontier accelerator, the frontier run, the latencies and the
    sequence length (default 2024 for named accelerators).
    """
    if not (duration_days > 0 and math.isfinite(duration_days)):
        raise WallsInputError(f"days must be a positive number, got {duration_days}")
    if training_flop is not None and not (training_flop > 0 and math.isfinite(training_flop)):
        raise WallsInputError(f"flop must be a positive number, got {training_flop}")
    if not 1 <= int(draws) <= MAX_DRAWS:
        raise WallsInputError(f"draws must be between 1 and {MAX_DRAWS}, got {draws}")
    if training_flop is None and year is None:
        raise WallsInputError("give --flop, or --year for the frontier run of that year")
    if not accelerators and year is None:
        raise WallsInputError("give --accelerator, or --year for the frontier accelerator")
    init_jax()
    path = resolve_forecast_path(forecast)
    tree = load_forecast(path) if tree is None else tree
    fc = tree["forecast"].to_dataset()
    scenario = str(fc["scenario"].values[0])
    years = [int(y) for y in fc["year"].values]
    if year is not None and int(year) not in years:
        raise WallsInputError(f"year must be one of the forecast's years {years[0]}-{years[-1]}")
    at_year = float(year) if year is not None else float(REFERENCE_YEAR)
    fin = tree["forecast_inputs"].to_dataset().sel(scenario=scenario)
    inputs, keep = input_draws(fin, int(draws))
    step = int(tree.attrs.get("propagation_thinning", 1))
    a = today_assumptions(
        inputs,
        duration_days=duration_days,
        bytes_per_number=acc_model.bytes_per_number(precision),
        sequence_length=sequence_draws(tree["posterior"].to_dataset(), keep, step, at_year),
        year=at_year,
    )
    at = fc.sel(scenario=scenario)
    if training_flop is None:
        frontier = at["frontier_flop"].sel(year=int(year)).transpose("chain", "draw").values
        log10_flop = np.log10(_flat(frontier, keep))
    else:
        log10_flop = np.full(keep.size, math.log10(training_flop))

    targets: list[tuple[str, Hardware, list[str]]] = []
    for acc in select_accelerators(accelerators, hardware) if accelerators else []:
        hw, gaps = acc_model.hardware_from_accelerator(acc, precision)
        targets.append((acc.name, hw, gaps))
    if not accelerators:
        specs = {
            f: _flat(
                at[f"hardware_{f}"].sel(year=int(year)).transpose("chain", "draw").values, keep
            )
            for f in Hardware._fields
        }
        # the stored FLOP/s are at the scenario's precision (propagation doubles the 16-bit
        # trend for FP8): rescale to the precision asked
        scenario_bytes = np.asarray(inputs["training.bytes_per_number"], dtype=float)
        specs["flops"] = specs["flops"] * scenario_bytes / acc_model.bytes_per_number(precision)
        targets.append((f"{FRONTIER} accelerator of {year}", Hardware(**specs), []))

    grid = shortlist_grid()
    rows = []
    for name, hw, gaps in targets:
        plans = best_plans(hw, a, log10_flop)
        rows.append(_row(name, hw, plans, grid, a, log10_flop, gaps, prob=prob))
    return {
        "forecast_id": str(tree.attrs.get("id", "")),
        "scenario": scenario,
        "year": at_year,
        "duration_days": float(duration_days),
        "precision": precision,
        "regime": "realistic",
        "draws": int(keep.size),
        "prob": float(prob),
        "budget": "given" if training_flop is not None else f"frontier run of {year}",
        "training_flop": _summary(10.0**log10_flop, prob),
        "accelerators": rows,
        "note": (
            "best launchable plan per posterior draw (whole degrees; microbatches of whole "
            "sequences or one sequence over context-parallel ranks; the realistic regime's "
            "shortlist of shapes); utilization over every draw (0 where no plan finishes in "
            "time); accelerators, accelerator-hours, run days, step time, cost multiplier and "
            "the median draw's plan over the feasible draws; cost multiplier: the best utilization of runs up to 1e27 "
            "FLOP (or of this run, if higher) / this run's: accelerator-time per FLOP against "
            "the small-scale best"
        ),
    }


def _row(
    name: str,
    hw: Hardware,
    plans: Any,
    grid: Any,
    a: Assumptions,
    log10_flop: np.ndarray,
    gaps: list[str],
    *,
    prob: float,
) -> dict[str, Any]:
    ok = np.asarray(plans.feasible, bool) & (np.asarray(plans.utilization) > 0)
    util = np.where(ok, plans.utilization, 0.0)
    accelerators = np.where(ok, _count(plans, grid), np.nan)
    # accelerator-time is the budget over the delivered FLOP/s (MFU = C / (n peak t)): a run
    # that finishes before the deadline is charged for the time it runs, not the deadline
    peak = np.broadcast_to(np.asarray(hw.flops, dtype=float), util.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        hours = np.where(ok, 10.0**log10_flop / (peak * util) / 3600.0, np.nan)
        run_days = hours / accelerators / 24.0
    with np.errstate(divide="ignore", invalid="ignore"):
        # against the best of small runs and this one (a run at the peak costs 1x, not less)
        best = np.maximum(plans.small_scale_utilization, util)
        multiplier = np.where(ok, best / util, np.inf)
    representative = _median_draw(util, ok)
    seq = np.broadcast_to(np.asarray(a.sequence_length, dtype=float), util.shape)
    return {
        "accelerator": name,
        "feasible_probability": float(np.mean(ok)),
        "utilization": _summary(util, prob),
        "small_scale_utilization": _summary(plans.small_scale_utilization, prob),
        "cost_multiplier": _summary(multiplier, prob),
        "accelerators": _summary(accelerators, prob),
        "accelerator_hours": _summary(hours, prob),
        "run_days": _summary(run_days, prob),
        "step_time_s": _summary(np.where(ok, plans.step_time_s, np.nan), prob),
        "plan_median_draw": (
            {
                **plan_of(grid, plans, representative, float(seq[representative])),
                "run_days": float(run_days[representative]),
            }
            if representative is not None
            else None
        ),
        "assumptions": gaps,
    }


def _count(plans: Any, grid: Any) -> np.ndarray:
    idx = np.asarray(plans.index, dtype=int)
    tp, cp = np.asarray(grid.tp)[idx], np.asarray(grid.cp)[idx]
    return tp * cp * np.asarray(plans.pipeline_parallel) * np.asarray(plans.data_parallel)


def _median_draw(util: np.ndarray, ok: np.ndarray) -> int | None:
    """The feasible draw whose utilization is the median of the feasible draws'."""
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(util[idx], kind="stable")]
    return int(order[(order.size - 1) // 2])
