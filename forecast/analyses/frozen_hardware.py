"""The paper's framing: hardware frozen at today's accelerator, the frontier run on its trend.

Erdil & Schneider-Joseph (2024, [erdil2024]) read the walls off *today's* hardware: an H100 cluster
loses utilization beyond ~1e28 FLOP, which at the current pace of scaling is "a barrier in about
three years".  The forecast instead moves the wall with the hardware (the frontier accelerator of
each year, scale-up domains of 72 from 2025 and growing, bandwidth trends).  This module computes
the frozen reading so that both can be shown side by side:

* the walls of one accelerator (H100 SXM by default) with the forecast's scaling and training
  inputs at single values (posterior medians of the fitted law parameters where the forecast has
  them, else the prior medians; latencies at their 2024 values: nothing improves);
* the year the frontier run, on the posterior of the fitted compute trend, reaches each of those
  fixed walls, per posterior draw (:func:`frozen_hit_years`, the forecast's own first-crossing
  rule on its year grid: a wall not reached by the last year is ``+inf``).

With fixed walls and a log-linear frontier run the hit year of a draw is
``2024 + (log10 W - a) / b`` (intercept ``a``, slope ``b``) for walls above the 2024 run: faster
growth gives an earlier year.  Array and mapping functions only; the caller (``forecast.jobs.analyse_job``)
reads the forecast and asks the walls service (:mod:`forecast.analyses.accelerator_walls`) for the accelerator's walls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from forecast.config.constants import REFERENCE_YEAR
from forecast.inference.crossing import first_crossing
from forecast.inference.propagate import assumptions_from_inputs
from forecast.queries.answers import quantiles_with_inf

FROZEN_ACCELERATOR = "NVIDIA H100 SXM5"
"""The accelerator of [erdil2024]'s headline (a name of ``data/hardware.csv``)."""

PAPER_DM_WALL_LOG10_FLOP = 28.0
"""[erdil2024] abstract: on H100s, utilization falls beyond ~1e28 FLOP (3-month run)."""

WALLS = ("data_movement", "latency")


# Prior keys that set the model's assumptions (forecast.inference.propagate.assumptions_from_inputs) and
# are neither hardware growth nor set by the accelerator: the frozen walls use one value of each.
_HARDWARE_ONLY_KEYS = ("hardware.scaleup_domain_size_growth_per_year",)


def scaling_inputs(
    keys: Sequence[str],
    posterior: Mapping[str, np.ndarray],
    prior_medians: Mapping[str, float],
    fitted: Mapping[str, str],
) -> tuple[dict[str, float], dict[str, str]]:
    """One value per propagated input and where it came from.

    Parameters
    ----------
    keys : the propagated prior keys (``forecast.inference.propagate.PROPAGATED_KEYS``).
    posterior : variable -> draws of the forecast's ``posterior`` group (any shape).
    prior_medians : key -> the prior median of the forecast's priors.
    fitted : key -> posterior variable of a fitted input (``registry.FITTED_INPUTS``).

    Returns
    -------
    (values, sources): the posterior median of ``fitted[key]`` where ``posterior`` has it
    (source ``"posterior:<variable>"``), else the prior median (source ``"prior"``).
    """
    values: dict[str, float] = {}
    sources: dict[str, str] = {}
    for key in keys:
        variable = fitted.get(key)
        if variable is not None and variable in posterior:
            values[key] = float(np.median(np.asarray(posterior[variable], dtype=float)))
            sources[key] = f"posterior:{variable}"
        else:
            values[key] = float(prior_medians[key])
            sources[key] = "prior"
    return values, sources


def assumption_overrides(values: Mapping[str, float]) -> dict[str, float]:
    """The model's :class:`~forecast.model.params.Assumptions` fields for single input values,
    as the forecast maps them (:func:`forecast.inference.propagate.assumptions_from_inputs`) in
    :data:`REFERENCE_YEAR` (no latency drift)."""
    inputs = {k: np.asarray([v], dtype=float) for k, v in values.items()}
    a = assumptions_from_inputs(inputs, np.asarray([REFERENCE_YEAR]))
    return {name: float(np.asarray(v).ravel()[0]) for name, v in a._asdict().items()}


def frozen_hit_years(
    wall_log10_flop: float,
    frontier_slope: np.ndarray,
    frontier_intercept: np.ndarray,
    years: np.ndarray,
    reference_year: float = REFERENCE_YEAR,
) -> np.ndarray:
    """First (fractional) year in which the frontier run ``a + b (year - reference)`` reaches a
    fixed wall, per draw (same shape as ``frontier_slope``); ``+inf`` if not by ``years[-1]``,
    ``years[0]`` if already reached then (:func:`forecast.inference.crossing.first_crossing`)."""
    slope = np.asarray(frontier_slope, dtype=float)
    intercept = np.broadcast_to(np.asarray(frontier_intercept, dtype=float), slope.shape)
    years = np.asarray(years, dtype=float)
    frontier = intercept[..., None] + slope[..., None] * (years - reference_year)
    wall = np.full_like(frontier, float(wall_log10_flop))
    hit_year, _, _ = first_crossing(years, frontier, wall)
    return hit_year


def frozen_dataset(
    walls_log10_flop: Mapping[str, float],
    frontier_slope: np.ndarray,
    frontier_intercept: np.ndarray,
    years: np.ndarray,
    *,
    accelerator: str,
    values: Mapping[str, float],
    sources: Mapping[str, str],
    scenario: str,
    precision: str,
    duration_days: float,
    reference_year: float = REFERENCE_YEAR,
) -> xr.Dataset:
    """The ``frozen_hardware`` group: the accelerator's walls (``wall``) and the hit year of each
    per posterior draw (``chain``, ``draw``, ``wall``; ``frontier_slope`` is (chain, draw))."""
    slope = np.asarray(frontier_slope, dtype=float)
    if slope.ndim != 2:
        raise ValueError(f"frontier_slope must be (chain, draw), got shape {slope.shape}")
    walls = [w for w in WALLS if w in walls_log10_flop]
    hit = np.stack(
        [
            frozen_hit_years(walls_log10_flop[w], slope, frontier_intercept, years, reference_year)
            for w in walls
        ],
        axis=-1,
    )
    log_walls = np.asarray([walls_log10_flop[w] for w in walls], dtype=float)
    paper = frozen_hit_years(
        PAPER_DM_WALL_LOG10_FLOP, slope, frontier_intercept, years, reference_year
    )
    ds = xr.Dataset(
        {
            "wall_flop": (("wall",), 10.0**log_walls, {"units": "FLOP"}),
            "hit_year": (("chain", "draw", "wall"), hit, {"units": "year"}),
            "paper_wall_hit_year": (("chain", "draw"), paper, {"units": "year"}),
        },
        coords={
            "wall": walls,
            "chain": np.arange(slope.shape[0]),
            "draw": np.arange(slope.shape[1]),
        },
    )
    ds["wall_flop"].attrs["long_name"] = f"walls of {accelerator} at the forecast's inputs"
    ds["paper_wall_hit_year"].attrs["long_name"] = (
        "first year the frontier run reaches [erdil2024]'s ~1e28 FLOP (the paper's H100 wall)"
    )
    ds["hit_year"].attrs["long_name"] = (
        "first year the frontier run (posterior of the fitted trend) reaches the frozen wall; "
        f"+inf if not by {float(np.max(years)):g}"
    )
    ds.attrs.update(
        {
            "method": "hardware frozen at one accelerator, frontier run on its fitted trend",
            "accelerator": accelerator,
            "scenario": scenario,
            "precision": precision,
            "duration_days": float(duration_days),
            "reference_year": float(reference_year),
            "inputs": json.dumps({k: float(v) for k, v in values.items()}),
            "input_sources": json.dumps(dict(sources)),
        }
    )
    return ds


def frozen_dataset_from_draws(
    wall_log10_flop: Mapping[str, np.ndarray],
    frontier_log10_flop: np.ndarray,
    years: np.ndarray,
    *,
    accelerator: str,
    scenario: str,
    precision: str,
    duration_days: float,
    forecast_id: str = "",
    prob: float = 0.8,
    reference_year: float = REFERENCE_YEAR,
) -> xr.Dataset:
    """The ``frozen_hardware`` group from walls per draw: ``wall_log10_flop`` wall -> (sample,),
    the accelerator's walls over the forecast's posterior inputs (group ``accelerator_walls``),
    paired with ``frontier_log10_flop`` (sample, year), the frontier run of the same draws.

    ``wall_flop`` is each wall's median over the draws (with ``wall_flop_lower`` /
    ``wall_flop_upper``, the central ``prob`` interval): the number the per-accelerator table,
    ``wallcast walls`` and the API print.  ``hit_year`` (sample, wall): the first year the draw's
    frontier run reaches the draw's wall (:func:`forecast.inference.crossing.first_crossing`).
    """
    frontier = np.asarray(frontier_log10_flop, dtype=float)
    if frontier.ndim != 2:
        raise ValueError(f"frontier_log10_flop must be (sample, year), got {frontier.shape}")
    years = np.asarray(years, dtype=float)
    walls = [w for w in WALLS if w in wall_log10_flop]
    hit, summaries = [], []
    for w in walls:
        draws = np.asarray(wall_log10_flop[w], dtype=float)
        crossing, _, _ = first_crossing(
            years, frontier, np.broadcast_to(draws[:, None], frontier.shape)
        )
        hit.append(crossing)
        summaries.append(quantiles_with_inf(draws, [0.5, (1 - prob) / 2, (1 + prob) / 2]))
    paper, _, _ = first_crossing(years, frontier, np.full_like(frontier, PAPER_DM_WALL_LOG10_FLOP))
    med, lo, hi = (np.asarray([q[i] for q in summaries], dtype=float) for i in range(3))
    ds = xr.Dataset(
        {
            "wall_flop": (("wall",), 10.0**med, {"units": "FLOP"}),
            "wall_flop_lower": (("wall",), 10.0**lo, {"units": "FLOP"}),
            "wall_flop_upper": (("wall",), 10.0**hi, {"units": "FLOP"}),
            "hit_year": (("sample", "wall"), np.stack(hit, axis=-1), {"units": "year"}),
            "paper_wall_hit_year": (("sample",), paper, {"units": "year"}),
        },
        coords={"wall": walls, "sample": np.arange(frontier.shape[0])},
    )
    ds["wall_flop"].attrs["long_name"] = (
        f"walls of {accelerator}: median over the forecast's posterior draws"
    )
    ds["paper_wall_hit_year"].attrs["long_name"] = (
        "first year the frontier run reaches [erdil2024]'s ~1e28 FLOP (the paper's H100 wall)"
    )
    ds["hit_year"].attrs["long_name"] = (
        "first year the draw's frontier run reaches the draw's frozen wall; "
        f"+inf if not by {float(np.max(years)):g}"
    )
    ds.attrs.update(
        {
            "method": "hardware frozen at one accelerator, walls and frontier run per posterior "
            "draw (the forecast's accelerator_walls group and its frontier run)",
            "accelerator": accelerator,
            "scenario": scenario,
            "precision": precision,
            "duration_days": float(duration_days),
            "reference_year": float(reference_year),
            "forecast_id": forecast_id,
            "prob": float(prob),
        }
    )
    return ds


def frozen_keys(keys: Sequence[str]) -> list[str]:
    """The propagated keys the frozen walls depend on (domain growth is the forecast's moving
    hardware, not an input of a frozen accelerator)."""
    return [k for k in keys if k not in _HARDWARE_ONLY_KEYS]


def precision_name(bytes_per_number: float) -> str:
    """'bf16' for 2 bytes per number, 'fp8' for 1 (the walls service's precision names)."""
    if bytes_per_number == 2:
        return "bf16"
    if bytes_per_number == 1:
        return "fp8"
    raise ValueError(f"no precision of {bytes_per_number} bytes per number; expected 1 or 2")
