"""The planner: the best launchable plan of a run, per posterior draw of a published forecast.

"With H100s or B200s, how big a run before utilization drops, and what does it cost?"  For each
accelerator asked about (a row of the hardware table, or the frontier accelerator of a year from
the forecast's fitted trends), a compute budget (given, or the frontier run of a year from the
forecast's fitted trend) and a run length, every kept posterior draw gets its best launchable
plan (:func:`forecast.model.planner.best_plans`: the realistic regime's plans, whole degrees,
microbatches of whole sequences or a sequence split over context-parallel ranks), and the answer
is the distribution over draws: utilization, P(feasible), accelerators, accelerator-hours, step
time, the cost multiplier against the small-scale best, the plan of the median draw, and energy
(MWh), the power to provision (MW) and money (USD) from the accelerator's TDP and listed rental
prices (``data/accelerator_costs.csv``) and the cost priors (``priors/costs.toml``); a frontier
accelerator's power and price come from the reference accelerator's by the energy-efficiency and
price-performance trends (:mod:`forecast.analyses.plan_costs`).  Cost priors are drawn once per answer and
paired across the accelerators compared.

The draws are those of the forecast's group ``forecast_inputs`` (first scenario), evenly thinned
to ``draws``: the inputs every other surface uses (:mod:`forecast.analyses.posterior_walls`);
latencies drift to the year asked (today's accelerators: 2024), the sequence length follows the
forecast's fitted sequence-length law in that year.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from forecast.analyses.accelerator_walls import REGIMES, WallsInputError, select_accelerators
from forecast.analyses.plan_costs import cost_draws, cost_fields
from forecast.analyses.posterior_walls import input_draws, sequence_draws, today_assumptions
from forecast.config.constants import REFERENCE_YEAR
from forecast.config.runtime import init_jax
from forecast.model import accelerators as acc_model
from forecast.model.cost import min_run_days, small_scale_max_utilization
from forecast.model.evaluate import ParallelPlan, evaluate_plan, run_model_for_flop
from forecast.model.params import Assumptions, Hardware
from forecast.model.planner import (
    SHORTEST_RUN_DAYS_RANGE,
    best_paper_plans,
    best_plans,
    plan_of,
    shortest_run_days,
)
from forecast.model.realistic_fast import shortlist_grid
from forecast.model.requirements import (
    LEVERS,
    LOG10_FACTOR_MIN,
    inside_walls,
    required_log10_factors,
)
from forecast.priors.costs import load_cost_priors
from forecast.queries.answers import quantiles_with_inf
from forecast.store.reader import load_forecast, resolve_forecast_path

DEFAULT_DRAWS = 500
MAX_DRAWS = 4000
PROB = 0.8
FRONTIER = "frontier"  # the accelerator name of "the frontier accelerator of the year"
SHORTEST_RUN_DRAWS = 100  # the shortest run is bisected on this many of the draws (evenly thinned)


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


class YearInputs:
    """The draws a planner question is answered over: the forecast's first scenario, ``draws``
    kept posterior draws (:func:`forecast.analyses.posterior_walls.input_draws`), their
    assumptions in ``year`` (latencies, sequence length; 2024 when None), and the forecast's
    frontier run and frontier accelerator of that year per kept draw."""

    def __init__(
        self,
        tree: xr.DataTree,
        year: int | None,
        draws: int,
        duration_days: float,
        precision: str,
    ) -> None:
        init_jax()
        fc = tree["forecast"].to_dataset()
        self.scenario = str(fc["scenario"].values[0])
        years = [int(y) for y in fc["year"].values]
        if year is not None and int(year) not in years:
            raise WallsInputError(
                f"year must be one of the forecast's years {years[0]}-{years[-1]}"
            )
        self.year_asked = None if year is None else int(year)
        self.year = float(year) if year is not None else float(REFERENCE_YEAR)
        self.precision = precision
        fin = tree["forecast_inputs"].to_dataset().sel(scenario=self.scenario)
        self.inputs, self.keep = input_draws(fin, int(draws))
        step = int(tree.attrs.get("propagation_thinning", 1))
        self.assumptions = today_assumptions(
            self.inputs,
            duration_days=duration_days,
            bytes_per_number=acc_model.bytes_per_number(precision),
            sequence_length=sequence_draws(
                tree["posterior"].to_dataset(), self.keep, step, self.year
            ),
            year=self.year,
        )
        self.at = fc.sel(scenario=self.scenario)
        self.forecast_id = str(tree.attrs.get("id", ""))

    def frontier_log10_flop(self) -> np.ndarray:
        """log10 of the frontier run of the year asked, per kept draw."""
        frontier = self.at["frontier_flop"].sel(year=self.year_asked)
        return np.log10(_flat(frontier.transpose("chain", "draw").values, self.keep))

    def frontier_hardware(self) -> tuple[Hardware, np.ndarray]:
        """The frontier accelerator of the year asked per kept draw, at the precision asked,
        and its 16-bit peak FLOP/s."""
        specs = {
            f: _flat(
                self.at[f"hardware_{f}"]
                .sel(year=self.year_asked)
                .transpose("chain", "draw")
                .values,
                self.keep,
            )
            for f in Hardware._fields
        }
        # the stored FLOP/s are at the scenario's precision (propagation doubles the 16-bit
        # trend for FP8): rescale to the precision asked
        scenario_bytes = np.asarray(self.inputs["training.bytes_per_number"], dtype=float)
        flops_16bit = specs["flops"] * scenario_bytes / acc_model.bytes_per_number("bf16")
        specs["flops"] = (
            specs["flops"] * scenario_bytes / acc_model.bytes_per_number(self.precision)
        )
        return Hardware(**specs), flops_16bit


def year_inputs(
    tree: xr.DataTree, year: int | None, draws: int, duration_days: float, precision: str
) -> YearInputs:
    """:class:`YearInputs` of a loaded forecast."""
    return YearInputs(tree, year, draws, duration_days, precision)


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
    cost_priors: str | Path | None = None,
    accelerator_costs: str | Path | None = None,
    regime: str = "realistic",
) -> dict[str, Any]:
    """The planner's JSON answer (see the module docstring).

    ``regime``: ``realistic`` (launchable plans, whole degrees) or ``paper`` (the paper's
    relaxed plans, :func:`forecast.model.planner.best_paper_plans`: continuous microbatches and
    degrees, labelled as such; its shortest run and small-scale maximum are the paper regime's,
    :mod:`forecast.model.cost`).

    ``accelerators``: names in the hardware table (exact or a unique part); None with a ``year``:
    the frontier accelerator of that year (its specs per draw from the forecast).
    ``training_flop``: the budget; None with a ``year``: the frontier run of that year per draw.
    ``year``: the year of the frontier accelerator, the frontier run, the latencies and the
    sequence length (default 2024 for named accelerators).
    ``cost_priors``, ``accelerator_costs``: the cost prior file and the per-accelerator table
    (default: ``priors/costs.toml`` and ``data/accelerator_costs.csv`` of the configured folders).
    """
    if not (duration_days > 0 and math.isfinite(duration_days)):
        raise WallsInputError(f"days must be a positive number, got {duration_days}")
    if training_flop is not None and not (training_flop > 0 and math.isfinite(training_flop)):
        raise WallsInputError(f"flop must be a positive number, got {training_flop}")
    if regime not in REGIMES:
        raise WallsInputError(f"regime must be one of {', '.join(REGIMES)}, got {regime!r}")
    if not 1 <= int(draws) <= MAX_DRAWS:
        raise WallsInputError(f"draws must be between 1 and {MAX_DRAWS}, got {draws}")
    if training_flop is None and year is None:
        raise WallsInputError("give --flop, or --year for the frontier run of that year")
    if not accelerators and year is None:
        raise WallsInputError("give --accelerator, or --year for the frontier accelerator")
    tree = load_forecast(resolve_forecast_path(forecast)) if tree is None else tree
    ctx = year_inputs(tree, year, draws, duration_days, precision)
    scenario, at_year, keep, a = ctx.scenario, ctx.year, ctx.keep, ctx.assumptions
    if training_flop is None:
        log10_flop = ctx.frontier_log10_flop()
    else:
        log10_flop = np.full(keep.size, math.log10(training_flop))

    priors = load_cost_priors(cost_priors)
    costs = cost_draws(priors, accelerator_costs, hardware, keep.size, frontier=not accelerators)
    targets: list[tuple[str, Hardware, list[str], tuple[Any, Any, dict[str, str]]]] = []
    for acc in select_accelerators(accelerators, hardware) if accelerators else []:
        hw, gaps = acc_model.hardware_from_accelerator(acc, precision)
        targets.append((acc.name, hw, gaps, costs.listed(acc.name)))
    if not accelerators:
        hw, flops_16bit = ctx.frontier_hardware()
        targets.append(
            (f"{FRONTIER} accelerator of {year}", hw, [], costs.trend(flops_16bit, at_year))
        )

    grid = shortlist_grid()
    rows = []
    for name, hw, gaps, (tdp, price, sources) in targets:
        if regime == "paper":
            row = _paper_row(name, hw, a, log10_flop, gaps, prob=prob)
            row.update(_shortest_run(hw, a, log10_flop, prob, _paper_shortest_days))
        else:
            plans = best_plans(hw, a, log10_flop)
            row = _row(name, hw, plans, grid, a, log10_flop, gaps, prob=prob)
            row.update(_shortest_run(hw, a, log10_flop, prob))
        draws_of_row = row.pop("_draws")
        summary = functools.partial(_summary, prob=prob)
        rows.append({**row, **cost_fields(draws_of_row, costs, tdp, price, sources, summary)})
    return {
        "forecast_id": ctx.forecast_id,
        "scenario": scenario,
        "year": at_year,
        "duration_days": float(duration_days),
        "precision": precision,
        "regime": regime,
        "draws": int(keep.size),
        "prob": float(prob),
        "budget": "given" if training_flop is not None else f"frontier run of {year}",
        "training_flop": _summary(10.0**log10_flop, prob),
        "accelerators": rows,
        "note": (
            (
                "best launchable plan per posterior draw (whole degrees; microbatches of whole "
                "sequences or one sequence over context-parallel ranks; the realistic regime's "
                "shortlist of shapes)"
                if regime == "realistic"
                else "the paper regime's best plan per posterior draw (Erdil & Schneider-Joseph "
                "2024's relaxation: microbatches of any number of tokens, fractional degrees "
                "and layers per stage; not a plan a run can launch, its idealized bound)"
            )
            + "; utilization over every draw (0 where no plan finishes in "
            "time); accelerators, accelerator-hours, run days, step time, cost multiplier and "
            "the median draw's plan over the feasible draws; cost multiplier: "
            + (
                "the best utilization of runs up to 1e27 FLOP"
                if regime == "realistic"
                else "the best utilization of simple plans (no pipeline, 1D tensor parallelism) "
                "of runs from 1e21 to 1e28 FLOP, the paper regime's small-scale maximum"
            )
            + " (or of this run, if higher) / this run's: accelerator-time per FLOP against "
            "the small-scale best; shortest run: the shortest run length in which some plan "
            + ("" if regime == "realistic" else "(one microbatch, the deepest pipelines) ")
            + f"finishes, by bisection over {SHORTEST_RUN_DAYS_RANGE[0]:g}-"
            f"{SHORTEST_RUN_DAYS_RANGE[1]:g} days on up to {SHORTEST_RUN_DRAWS} of the draws "
            "(null at the upper end: not even in 10 years); energy: accelerator-hours x TDP x server watts per "
            "accelerator watt x average power fraction x PUE; facility power: accelerators x TDP "
            "x server ratio x PUE; money: accelerator-hours x rental price (cloud prices include "
            "the data centre and its power)"
        ),
        "cost_priors": {
            key: {"describe": priors[key].describe(), "source": priors[key].source}
            for key in priors
        },
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
    """One accelerator's answer from the realistic regime's best plans per draw."""
    ok = np.asarray(plans.feasible, bool) & (np.asarray(plans.utilization) > 0)

    def plan(k: int, run_days: float) -> dict[str, Any]:
        return _median_plan(grid, plans, k, hw, a, log10_flop, run_days)

    return _draws_row(
        name,
        hw,
        log10_flop,
        ok,
        utilization=plans.utilization,
        accelerators=_count(plans, grid),
        step_time_s=plans.step_time_s,
        small_scale_utilization=plans.small_scale_utilization,
        plan=plan,
        gaps=gaps,
        prob=prob,
    )


def _paper_row(
    name: str,
    hw: Hardware,
    a: Assumptions,
    log10_flop: np.ndarray,
    gaps: list[str],
    *,
    prob: float,
) -> dict[str, Any]:
    """:func:`_row` of the paper regime: its best plan per draw, continuous quantities."""
    plans = best_paper_plans(hw, a, log10_flop)
    ok = np.asarray(plans.feasible, bool) & (np.asarray(plans.utilization) > 0)

    def plan(k: int, run_days: float) -> dict[str, Any]:
        return {
            "regime": "paper",
            "tensor_parallel": int(plans.tensor_parallel[k]),
            "tensor_parallel_layout": "2D" if bool(plans.two_d[k]) else "1D",
            "pipeline_parallel": int(plans.pipeline_parallel[k]),
            "data_parallel": float(plans.data_parallel[k]),
            "microbatches": float(plans.microbatches[k]),
            "microbatch_tokens": float(plans.microbatch_tokens[k]),
            "layers": float(plans.layers[k]),
            "layers_per_stage": float(plans.layers[k] / plans.pipeline_parallel[k]),
            "accelerators": float(plans.accelerators[k]),
            "run_days": run_days,
            "step_time_s": float(plans.step_time_s[k]),
        }

    return _draws_row(
        name,
        hw,
        log10_flop,
        ok,
        utilization=plans.utilization,
        accelerators=plans.accelerators,
        step_time_s=plans.step_time_s,
        small_scale_utilization=small_scale_max_utilization(hw, a),
        plan=plan,
        gaps=gaps,
        prob=prob,
    )


def _draws_row(
    name: str,
    hw: Hardware,
    log10_flop: np.ndarray,
    ok: np.ndarray,
    *,
    utilization: Any,
    accelerators: Any,
    step_time_s: Any,
    small_scale_utilization: Any,
    plan: Any,
    gaps: list[str],
    prob: float,
) -> dict[str, Any]:
    """An accelerator's answer from per-draw arrays of either regime's best plans (``ok``: a
    plan finishes in time; ``plan(k, run_days)``: the median draw's plan as shown)."""
    util = np.where(ok, utilization, 0.0)
    accelerators = np.where(ok, accelerators, np.nan)
    small = np.broadcast_to(np.asarray(small_scale_utilization, dtype=float), util.shape)
    # accelerator-time is the budget over the delivered FLOP/s (MFU = C / (n peak t)): a run
    # that finishes before the deadline is charged for the time it runs, not the deadline
    peak = np.broadcast_to(np.asarray(hw.flops, dtype=float), util.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        hours = np.where(ok, 10.0**log10_flop / (peak * util) / 3600.0, np.nan)
        run_days = hours / accelerators / 24.0
        # against the best of small runs and this one (a run at the peak costs 1x, not less)
        multiplier = np.where(ok, np.maximum(small, util) / util, np.inf)
    k = _median_draw(util, ok)
    return {
        "accelerator": name,
        "feasible_probability": float(np.mean(ok)),
        "utilization": _summary(util, prob),
        "small_scale_utilization": _summary(small, prob),
        "cost_multiplier": _summary(multiplier, prob),
        "accelerators": _summary(accelerators, prob),
        "accelerator_hours": _summary(hours, prob),
        "run_days": _summary(run_days, prob),
        "step_time_s": _summary(np.where(ok, step_time_s, np.nan), prob),
        "plan_median_draw": plan(k, float(run_days[k])) if k is not None else None,
        "assumptions": gaps,
        "_draws": {"ok": ok, "hours": hours, "accelerators": accelerators},
    }


def _paper_shortest_days(hw: Hardware, a: Assumptions, log10_flop: np.ndarray) -> np.ndarray:
    """The paper regime's shortest run (:func:`forecast.model.cost.min_run_days`: plans of one
    microbatch, the deepest pipelines) on the realistic form's range of days."""
    days = min_run_days(hw, a, log10_flop)
    low, high = SHORTEST_RUN_DAYS_RANGE
    return np.where(days > high, np.inf, np.maximum(days, low))


def _shortest_run(
    hw: Hardware,
    a: Assumptions,
    log10_flop: np.ndarray,
    prob: float,
    days_of: Any = shortest_run_days,
) -> dict[str, Any]:
    """The shortest run that some plan finishes (days), over an even thinning of the draws to
    :data:`SHORTEST_RUN_DRAWS` (the launchable plans' bisection costs 11 plan searches per
    draw); ``days_of``: the regime's (:func:`forecast.model.planner.shortest_run_days`, or
    :func:`_paper_shortest_days`)."""
    n = log10_flop.size
    idx = np.unique(np.linspace(0, n - 1, min(n, SHORTEST_RUN_DRAWS)).round().astype(int))

    def take(fields: Any) -> list[np.ndarray]:
        return [np.broadcast_to(np.asarray(f, dtype=float), (n,))[idx] for f in fields]

    days = days_of(Hardware(*take(hw)), Assumptions(*take(a)), log10_flop[idx])
    return {
        "shortest_run_days": _summary(days, prob),
        "shortest_run_draws": int(idx.size),
        "shortest_run_below_range_probability": float(np.mean(days <= SHORTEST_RUN_DAYS_RANGE[0])),
    }


def _draw(fields: Any, k: int, n: int) -> list[float]:
    """Draw ``k`` of each field of a Hardware / Assumptions broadcast over ``n`` draws."""
    return [float(np.broadcast_to(np.asarray(f, dtype=float), (n,))[k]) for f in fields]


def _median_plan(
    grid: Any,
    plans: Any,
    k: int,
    hw: Hardware,
    a: Assumptions,
    log10_flop: np.ndarray,
    run_days: float,
) -> dict[str, Any]:
    """The median draw's plan in whole numbers, with its step time split into its parts
    (compute, HBM, tensor, context, pipeline, data-parallel, latency, bubble: the evaluator of
    a given plan, :func:`forecast.model.evaluate.evaluate_plan`, on that draw's inputs and the
    depth the plan gave the model, whole layers per pipeline chunk)."""
    n = log10_flop.size
    a_k = Assumptions(*_draw(a, k, n))
    plan = {**plan_of(grid, plans, k, float(a_k.sequence_length)), "run_days": run_days}
    evaluation = evaluate_plan(
        Hardware(*_draw(hw, k, n)),
        a_k,
        run_model_for_flop(float(log10_flop[k]), a_k, layers=plan["layers"]),
        ParallelPlan(
            tp=plan["tensor_parallel"],
            pp=plan["pipeline_parallel"],
            dp=plan["data_parallel"],
            sequence_length=plan["sequence_length"],
            microbatch_sequences=plan["microbatch_sequences"],
            cp=plan["context_parallel"],
            two_d=plan["tensor_parallel_layout"] == "2D",
            recompute=plan["recompute"],
            virtual_stages=plan["virtual_stages"],
            microbatches=plan["microbatches"],
        ),
    )
    return {
        **plan,
        "step_breakdown_s": {key: float(v) for key, v in evaluation.step_breakdown_s.items()},
        "bound_by": evaluation.bound_by,
        "evaluated_utilization": float(evaluation.utilization),
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


REQUIREMENTS_DRAWS = 200  # each draw costs 12 batched evaluations of 5 levers


def requirements_answer(
    forecast: str | Path | None = None,
    *,
    year: int,
    duration_days: float = 90.0,
    precision: str = "bf16",
    draws: int = REQUIREMENTS_DRAWS,
    tree: xr.DataTree | None = None,
    prob: float = PROB,
) -> dict[str, Any]:
    """What the frontier accelerator of ``year`` would need, one property at a time, for the
    frontier run of ``year`` to stay inside both walls (the JSON of ``wallcast requirements``).

    Per kept posterior draw: that draw's frontier accelerator and frontier run of the year
    (:class:`YearInputs`), and per lever of :data:`forecast.model.requirements.LEVERS` the
    smallest improvement factor (:func:`forecast.model.requirements.required_log10_factors`).
    Answers the trend's value, the required value and the factor as median and ``prob``
    interval, P(inside both walls on the trend) and per lever P(reachable by that lever alone
    within 1000x).
    """
    if not (duration_days > 0 and math.isfinite(duration_days)):
        raise WallsInputError(f"days must be a positive number, got {duration_days}")
    if not 1 <= int(draws) <= MAX_DRAWS:
        raise WallsInputError(f"draws must be between 1 and {MAX_DRAWS}, got {draws}")
    tree = load_forecast(resolve_forecast_path(forecast)) if tree is None else tree
    ctx = year_inputs(tree, int(year), draws, duration_days, precision)
    hw, _ = ctx.frontier_hardware()
    a = ctx.assumptions
    log10_flop = ctx.frontier_log10_flop()
    dm_ok, lat_ok = inside_walls(hw, a, log10_flop)
    factors = required_log10_factors(hw, a, log10_flop)
    n = log10_flop.size
    levers = []
    for lever, log10_factor in zip(LEVERS, factors, strict=True):
        source = hw if lever.on == "hardware" else a
        trend = np.broadcast_to(np.asarray(getattr(source, lever.fields[0]), float), (n,))
        factor = 10.0**log10_factor  # inf where the lever alone cannot do it
        with np.errstate(divide="ignore", over="ignore"):
            required = trend * factor if lever.direction > 0 else trend / factor
        summary = _summary(required, prob)
        if lever.direction < 0:  # no latency suffices: 0 s, shown as None (beyond reach)
            summary = {k: (None if v == 0.0 else v) for k, v in summary.items()}
        levers.append(
            {
                "lever": lever.name,
                "label": lever.label,
                "unit": lever.unit,
                "direction": "higher is better" if lever.direction > 0 else "lower is better",
                "trend": _summary(trend, prob),
                "required": summary,
                "improvement_factor": _summary(factor, prob),
                "on_trend_probability": float(np.mean(log10_factor <= 0.0)),
                "reachable_alone_probability": float(np.mean(np.isfinite(log10_factor))),
                "headroom_over_100x_probability": float(np.mean(log10_factor <= LOG10_FACTOR_MIN)),
            }
        )
    return {
        "forecast_id": ctx.forecast_id,
        "scenario": ctx.scenario,
        "year": int(year),
        "duration_days": float(duration_days),
        "precision": precision,
        "regime": "realistic",
        "draws": int(n),
        "prob": float(prob),
        "training_flop": _summary(10.0**log10_flop, prob),
        "inside_data_movement_wall_probability": float(np.mean(dm_ok)),
        "inside_latency_wall_probability": float(np.mean(lat_ok)),
        "on_trend_probability": float(np.mean(dm_ok & lat_ok)),
        "levers": levers,
        "note": (
            f"per posterior draw, the frontier run of {int(year)} on the frontier accelerator of "
            f"{int(year)} (the forecast's trends); inside both walls: the best launchable plan "
            "reaches at least 80% of the small-scale best utilization and finishes in time; per "
            "lever alone (every other property on its trend) the smallest improvement factor "
            "that does it, by bisection to 0.01 dex between 1/100x and 1000x bracketed by the trend "
            "(a factor of exactly 0.01 is censored: at most 1/100x); improvement "
            "factor <= 1: the trend already suffices (on_trend); None at an interval end: "
            "beyond what the lever alone can reach at 1000x"
        ),
    }
