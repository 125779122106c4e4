"""Propagation: posterior trend draws and prior draws -> both walls per year -> hit year/FLOP.

For every draw and year 2024-2045 the *frontier accelerator* is the fitted flagship trend of that
year (peak FLOP/s, HBM bandwidth and capacity, scale-up and scale-out bandwidth), with a scale-up
domain of 8 accelerators until 2024 and 72 from 2025, growing at the sampled rate; latencies
change at the sampled rate per year.  The walls of that accelerator come from the vectorized fast
path (:func:`forecast.model.fast.fast_walls`); the frontier run of the year comes from the fitted
training-compute trend.  No Python loop per draw.
"""

from __future__ import annotations

import zlib
from typing import Any

import jax
import numpy as np
import xarray as xr

from forecast.config.constants import DEFAULT_WALL_YEAR_STEP, REFERENCE_YEAR
from forecast.config.runtime import init_jax
from forecast.config.settings import FIRST_YEAR, LAST_YEAR
from forecast.inference.crossing import first_crossing
from forecast.inference.draws import posterior_draws
from forecast.model.cost import (
    best_utilization,
    cost_multiplier,
    min_run_days,
)
from forecast.model.fast import WALL_CHUNK, fast_walls, padded_size
from forecast.model.params import SECONDS_PER_DAY, Assumptions, Hardware
from forecast.model.realistic_fast import fast_realistic_cost, fast_realistic_walls
from forecast.priors import PriorSet
from forecast.priors.registry import FITTED_INPUTS, PROPAGATED_KEYS
from forecast.stats.joint import draw_free_inputs
from forecast.stats.sequence_length import SEQUENCE_REFERENCE_YEAR
from forecast.stats.trends import project

DEFAULT_YEARS = np.arange(FIRST_YEAR, LAST_YEAR + 1, dtype=float)

WALLS = ("data_movement", "latency")
DOMAIN_BEFORE_2025 = 8.0
DOMAIN_2025 = 72.0


def domain_size(years: np.ndarray, growth: np.ndarray) -> np.ndarray:
    """Frontier scale-up domain: 8 before 2025, then 72 x growth^(year - 2025)."""
    years = np.asarray(years, dtype=float)
    grown = DOMAIN_2025 * np.asarray(growth)[..., None] ** np.maximum(years - 2025.0, 0.0)
    return np.where(years < 2025.0, DOMAIN_BEFORE_2025, grown)


def frontier_hardware(
    trend_log10: dict[str, np.ndarray], inputs: dict[str, np.ndarray], years
) -> Hardware:
    """Hardware of the frontier accelerator per (sample, year) from projected log10 trends.

    FLOP/s follow the 16-bit trend; with 1 byte per number (FP8) they double, as FP8 = 2 x BF16
    on H100, B200, GB200, B300, GB300, MI300X, MI355X and TPU7x (data/hardware.csv).
    """
    precision_gain = 2.0 / np.asarray(inputs["training.bytes_per_number"])[..., None]
    return Hardware(
        flops=10.0 ** trend_log10["flops"] * precision_gain,
        hbm_bandwidth=10.0 ** trend_log10["hbm_bandwidth"],
        hbm_capacity=10.0 ** trend_log10["hbm_capacity"],
        scaleup_bandwidth=10.0 ** trend_log10["scaleup_bandwidth"],
        scaleup_domain_size=domain_size(
            years, inputs["hardware.scaleup_domain_size_growth_per_year"]
        ),
        scaleout_bandwidth=10.0 ** trend_log10["scaleout_bandwidth"],
    )


def assumptions_from_inputs(inputs: dict[str, np.ndarray], years) -> Assumptions:
    """Model assumptions per (sample, year) from sampled prior inputs (sample,)."""
    years = np.asarray(years, dtype=float)

    def col(key: str) -> np.ndarray:
        return np.asarray(inputs[key], dtype=float)[..., None]

    drift = col("latency.change_per_year") ** (years - REFERENCE_YEAR)
    return Assumptions(
        duration_s=col("training.duration_days") * SECONDS_PER_DAY,
        max_utilization=col("training.max_utilization"),
        bytes_per_number=col("training.bytes_per_number"),
        tokens_per_param=col("scaling.tokens_per_param"),
        moe_experts=col("scaling.moe_experts"),
        moe_active_experts=col("scaling.moe_active_experts"),
        layers_ref=col("scaling.layers_at_reference"),
        layer_ref_params=col("scaling.layer_reference_params"),
        layer_exponent=col("scaling.layer_exponent"),
        batch_tokens_ref=col("scaling.batch_tokens_2024"),
        batch_ref_params=col("scaling.batch_reference_params"),
        batch_exponent=col("scaling.batch_exponent"),
        collective_efficiency=col("network.collective_efficiency"),
        scaleout_multiplier=col("network.scaleout_multiplier"),
        kernel_latency_s=col("latency.kernel_us") * 1e-6 * drift,
        allreduce_base_latency_s=col("latency.allreduce_base_us") * 1e-6 * drift,
        intra_domain_hop_s=col("latency.intra_domain_hop_us") * 1e-6 * drift,
        inter_domain_hop_s=col("latency.inter_domain_hop_us") * 1e-6 * drift,
    )


def interpolate_years(
    years_out: np.ndarray, years_in: np.ndarray, values: np.ndarray
) -> np.ndarray:
    """Linear interpolation along the last axis (years); infinite ends snap to the nearer end."""
    years_out = np.asarray(years_out, dtype=float)
    years_in = np.asarray(years_in, dtype=float)
    j = np.clip(np.searchsorted(years_in, years_out, side="right") - 1, 0, years_in.size - 2)
    frac = (years_out - years_in[j]) / (years_in[j + 1] - years_in[j])
    v0, v1 = values[..., j], values[..., j + 1]
    # at a year of years_in (frac 0) this is v0 whether v1 is finite, infinite or NaN: what
    # first_hits relies on to leave later years unsearched
    finite = np.isfinite(v0) & np.isfinite(v1)
    with np.errstate(invalid="ignore"):
        lin = v0 + frac * (v1 - v0)
    return np.where(finite, lin, np.where(frac < 0.5, v0, v1))


def wall_conditions(
    trend_log10: dict[str, np.ndarray],
    inputs: dict[str, np.ndarray],
    years,
    wall_year_step: int = 1,
) -> tuple[Hardware, Hardware, Assumptions, np.ndarray]:
    """What :func:`propagate` searches: ``(hw, sub_hw, sub_a, idx)``, the frontier accelerator of
    every (sample, year), and the accelerator and assumptions of every (sample, wall-year) (every
    ``wall_year_step``-th year and the last: indices ``idx`` of ``years``), the sequence length
    from the fitted law where ``trend_log10`` has it (the realistic regime)."""
    years = np.asarray(years, dtype=float)
    hw = frontier_hardware(trend_log10, inputs, years)
    a = assumptions_from_inputs(inputs, years)
    if "sequence_length" in trend_log10:  # the fitted law (realistic regime only)
        a = a._replace(sequence_length=10.0 ** np.asarray(trend_log10["sequence_length"]))
    # Walls at every ``wall_year_step``-th year (and the last), interpolated in between
    idx = np.unique(np.r_[np.arange(0, years.size, max(int(wall_year_step), 1)), years.size - 1])
    shape = np.shape(trend_log10["frontier_compute"])
    sub_hw = Hardware(*(np.broadcast_to(v, shape)[..., idx] for v in hw))
    sub_a = Assumptions(*(np.broadcast_to(v, (*shape[:-1], years.size))[..., idx] for v in a))
    return hw, sub_hw, sub_a, idx


def propagate(
    trend_log10: dict[str, np.ndarray],
    inputs: dict[str, np.ndarray],
    years: np.ndarray = DEFAULT_YEARS,
    wall_year_step: int = 1,
    *,
    cost: bool = True,
    regime: str = "paper",
    paper_beside: bool = True,
) -> dict[str, np.ndarray]:
    """Walls per (sample, year) and the first year the frontier reaches each wall.

    ``cost=False`` leaves out what the walls cost (``frontier_utilization``, ``cost_multiplier``,
    ``min_run_days``: about a third of the time); the walls and hit years are the same.
    ``regime``: ``"paper"`` (continuous plans, :func:`forecast.model.fast.fast_walls`) or
    ``"realistic"`` (plans a run can launch, :mod:`forecast.model.realistic_fast`: ~9x the time).
    In the realistic regime ``paper_beside`` also gives the paper regime's walls and hit years on
    the same draws (``paper_*``: the idealized bound the realistic walls are compared with).

    Parameters
    ----------
    trend_log10 : metric -> log10 values (sample, year), from :func:`forecast.stats.trends.project`,
        including ``"frontier_compute"``.
    inputs : prior key -> draws (sample,), the keys of :data:`PROPAGATED_KEYS`.

    Returns
    -------
    dict of arrays: ``wall_log10_flop`` (sample, year, wall), ``frontier_log10_flop``
    (sample, year), ``hit_year``, ``hit_log10_flop``, ``hit`` (sample, wall),
    ``frontier_utilization``, ``cost_multiplier`` and ``min_run_days`` (sample, year) (see
    :mod:`forecast.model.cost`), and the frontier accelerator's specs (sample, year) under
    ``hardware_*``; realistic with ``paper_beside``: ``paper_wall_log10_flop``,
    ``paper_hit_year``, ``paper_hit_log10_flop`` and ``paper_hit``.
    """
    init_jax()
    years = np.asarray(years, dtype=float)
    _check_regime(regime)
    hw, sub_hw, sub_a, idx = wall_conditions(trend_log10, inputs, years, wall_year_step)
    dm, lat, u_max = _search_walls(sub_hw, sub_a, regime)
    walls = _annual_walls(years, idx, np.stack([dm, lat], axis=-1))
    frontier = np.asarray(trend_log10["frontier_compute"], dtype=float)
    hit_year, hit_flop, hit = _crossings(years, frontier, walls)
    out = {
        "wall_log10_flop": walls,
        "frontier_log10_flop": frontier,
        "hit_year": hit_year,
        "hit_log10_flop": hit_flop,
        "hit": hit,
    }
    if regime == "realistic" and paper_beside:
        # the paper's bound beside it, on the same draws and years (its fast path: ~1/10 the time)
        p_dm, p_lat, _ = _search_walls(sub_hw, sub_a, "paper")
        p_walls = _annual_walls(years, idx, np.stack([p_dm, p_lat], axis=-1))
        p_year, p_flop, p_hit = _crossings(years, frontier, p_walls)
        out |= {
            "paper_wall_log10_flop": p_walls,
            "paper_hit_year": p_year,
            "paper_hit_log10_flop": p_flop,
            "paper_hit": p_hit,
        }
    if not cost:
        return out
    # What the wall costs: the frontier run's best utilization on the year's frontier hardware
    # against the small-scale maximum, and the shortest run that could train it at all.
    if regime == "realistic":
        u_frontier, days = fast_realistic_cost(sub_hw, sub_a, frontier[..., idx])
    else:
        u_frontier = best_utilization(sub_hw, sub_a, frontier[..., idx])
        days = min_run_days(sub_hw, sub_a, frontier[..., idx])
    # u_max: the small-scale maximum utilization, from the wall search above (the same plans and
    # budgets as forecast.model.cost.small_scale_max_utilization in the paper regime)
    with np.errstate(divide="ignore"):  # 0 days (feasible at any length): -inf, kept
        log10_days = np.log10(days)
    if idx.size != years.size:
        u_frontier = interpolate_years(years, years[idx], u_frontier)
        u_max = interpolate_years(years, years[idx], u_max)
        log10_days = interpolate_years(years, years[idx], log10_days)
    out["frontier_utilization"] = u_frontier
    out["cost_multiplier"] = cost_multiplier(u_max, u_frontier)
    out["min_run_days"] = 10.0**log10_days
    for name, value in hw._asdict().items():
        out[f"hardware_{name}"] = np.broadcast_to(value, frontier.shape).astype(float)
    return out


def first_hits(
    trend_log10: dict[str, np.ndarray],
    inputs: dict[str, np.ndarray],
    years: np.ndarray = DEFAULT_YEARS,
    wall_year_step: int = 1,
    *,
    regime: str = "paper",
) -> dict[str, np.ndarray]:
    """When the frontier reaches each wall, searching a draw's walls only until it has reached both.

    :func:`propagate`'s ``hit_year``, ``hit_log10_flop`` and ``hit`` (bit for bit, tested), for
    callers that need nothing else (the sensitivity analysis's thousands of evaluations).  The
    wall-years (every ``wall_year_step``-th year and the last) are searched in order, and a draw
    leaves the search once the frontier has reached both walls by the wall-year just searched:
    the walls of the years up to a wall-year are interpolated from that wall-year's walls and the
    earlier ones only, so the later wall-years cannot move its first crossing.  A draw whose
    frontier never reaches a wall is searched at every wall-year, as in :func:`propagate`.  Every
    search call is padded to the draws of :func:`propagate`'s one call (one compiled program, the
    same walls).  ``wall_years_searched``: the (draw, wall-year) searches made, of
    ``wall_years_total``.
    """
    _check_regime(regime)
    init_jax()
    years = np.asarray(years, dtype=float)
    _, sub_hw, sub_a, idx = wall_conditions(trend_log10, inputs, years, wall_year_step)
    frontier = np.asarray(trend_log10["frontier_compute"], dtype=float)
    lead = frontier.shape[:-1]
    frontier = frontier.reshape(-1, years.size)
    n, n_wall_years = frontier.shape[0], idx.size

    def flat(field):
        return np.broadcast_to(field, (*lead, n_wall_years)).reshape(n, n_wall_years)

    sub_hw = Hardware(*(flat(f) for f in sub_hw))
    sub_a = Assumptions(*(flat(f) for f in sub_a))
    size = padded_size(n * n_wall_years, WALL_CHUNK)  # propagate's one call over them all
    walls = np.full((n, n_wall_years, len(WALLS)), np.nan)  # not searched: NaN (_annual_walls)
    active = np.ones(n, dtype=bool)
    searched = 0
    for j in range(n_wall_years):
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        hw_j = Hardware(*(f[rows, j] for f in sub_hw))
        a_j = Assumptions(*(f[rows, j] for f in sub_a))
        dm, lat, _ = _search_walls(hw_j, a_j, regime, size=size)
        walls[rows, j, 0], walls[rows, j, 1] = dm, lat
        searched += rows.size
        upto = idx[j] + 1  # the years whose walls rest on the wall-years searched so far
        annual = _annual_walls(years, idx, walls[rows])[:, :upto]
        reached = (frontier[rows, :upto, None] - annual >= 0.0).any(axis=1).all(axis=-1)
        active[rows[reached]] = False
    hit_year, hit_flop, hit = _crossings(years, frontier, _annual_walls(years, idx, walls))
    return {
        "hit_year": hit_year.reshape(*lead, len(WALLS)),
        "hit_log10_flop": hit_flop.reshape(*lead, len(WALLS)),
        "hit": hit.reshape(*lead, len(WALLS)),
        "wall_years_searched": np.int64(searched),
        "wall_years_total": np.int64(n * n_wall_years),
    }


def _check_regime(regime: str) -> None:
    if regime not in ("paper", "realistic"):
        raise ValueError(f"regime must be 'paper' or 'realistic', got {regime!r}")


def _search_walls(hw: Hardware, a: Assumptions, regime: str, size: int | None = None):
    """(data-movement wall, latency wall, small-scale maximum) of every draw in a plan regime;
    ``size``: the paper search's padded call (:func:`forecast.model.fast.fast_walls`; the
    realistic one pads every call alike)."""
    if regime == "realistic":
        return fast_realistic_walls(hw, a)
    return fast_walls(hw, a, small_scale=True, size=size)


def _crossings(years: np.ndarray, frontier: np.ndarray, walls: np.ndarray):
    """:func:`first_crossing` of the frontier (..., year) with both walls (..., year, wall)."""
    return first_crossing(years, frontier[..., None, :], np.moveaxis(walls, -1, -2))


def _annual_walls(years: np.ndarray, idx: np.ndarray, walls: np.ndarray) -> np.ndarray:
    """Walls (..., wall-year, wall) at every year (..., year, wall), as :func:`propagate`
    interpolates them.  A wall-year not searched holds NaN: the years after the last one searched
    get NaN or, in the first half of the interval, that wall-year's wall (the nearer finite end);
    either way they lie after the draw's first crossing, so :func:`first_crossing` never reads
    them, and the years up to the last searched wall-year equal :func:`propagate`'s (at a
    wall-year itself ``interpolate_years`` gives ``v0``, whatever its neighbour)."""
    if idx.size == years.size:
        return walls
    out = [interpolate_years(years, years[idx], walls[..., w]) for w in range(walls.shape[-1])]
    return np.stack(out, axis=-1)


def forecast_dataset(result: dict[str, np.ndarray], years, chains: int, draws: int) -> xr.Dataset:
    """The ``forecast`` variables of one scenario as a Dataset with dims chain, draw, year, wall."""
    years = np.asarray(years)

    def cd(x: np.ndarray) -> np.ndarray:
        return np.asarray(x).reshape(chains, draws, *np.shape(x)[1:])

    walls = cd(result["wall_log10_flop"])
    frontier = cd(result["frontier_log10_flop"])
    hit_log = cd(result["hit_log10_flop"])
    ds = xr.Dataset(
        {
            "wall_flop": (("chain", "draw", "year", "wall"), 10.0**walls),
            "frontier_flop": (("chain", "draw", "year"), 10.0**frontier),
            "hit_year": (("chain", "draw", "wall"), cd(result["hit_year"])),
            "hit_flop": (
                ("chain", "draw", "wall"),
                np.where(np.isfinite(hit_log), 10.0**hit_log, np.inf),
            ),
            "hit": (("chain", "draw", "wall"), cd(result["hit"]).astype(bool)),
            "frontier_utilization": (("chain", "draw", "year"), cd(result["frontier_utilization"])),
            "cost_multiplier": (("chain", "draw", "year"), cd(result["cost_multiplier"])),
            "min_run_days": (("chain", "draw", "year"), cd(result["min_run_days"])),
        },
        coords={
            "chain": np.arange(chains),
            "draw": np.arange(draws),
            "year": years.astype(int),
            "wall": list(WALLS),
        },
    )
    units = {
        "wall_flop": (
            "FLOP",
            "largest training compute before the wall, frontier accelerator of the year; "
            "+inf: beyond the search grid (1e40 FLOP), 0: below it (1e20 FLOP)",
        ),
        "frontier_flop": ("FLOP", "largest training run of the year (fitted trend)"),
        "hit_year": (
            "year",
            "first fractional year the frontier run reaches the wall; +inf: not by the last year",
        ),
        "hit_flop": (
            "FLOP",
            "training compute of the frontier run when it reaches the wall; +inf: not hit",
        ),
        "hit": ("1", "whether the frontier reaches the wall by the last year"),
        "frontier_utilization": (
            "1",
            "best achievable utilization (fraction of peak) of the frontier run on the frontier "
            "accelerator of the year; 0: infeasible (past the latency wall)",
        ),
        "cost_multiplier": (
            "1",
            "small-scale maximum utilization / frontier_utilization: accelerator-time per FLOP "
            "of the frontier run against the small-scale best, >= 1; +inf: infeasible",
        ),
        "min_run_days": (
            "days",
            "shortest run in which any plan could train the frontier run of the year "
            "(the latency wall inverted in duration)",
        ),
    }
    if "paper_hit_year" in result:
        p_hit_log = cd(result["paper_hit_log10_flop"])
        ds["paper_wall_flop"] = (
            ("chain", "draw", "year", "wall"),
            10.0 ** cd(result["paper_wall_log10_flop"]),
        )
        ds["paper_hit_year"] = (("chain", "draw", "wall"), cd(result["paper_hit_year"]))
        ds["paper_hit_flop"] = (
            ("chain", "draw", "wall"),
            np.where(np.isfinite(p_hit_log), 10.0**p_hit_log, np.inf),
        )
        ds["paper_hit"] = (("chain", "draw", "wall"), cd(result["paper_hit"]).astype(bool))
        for name in ("wall_flop", "hit_year", "hit_flop", "hit"):
            unit, long_name = units[name]
            units[f"paper_{name}"] = (
                unit,
                f"{long_name} (the paper's idealized plans, same draws: the bound beside the "
                "realistic walls)",
            )
    for name, (unit, long_name) in units.items():
        ds[name].attrs.update(units=unit, long_name=long_name)
    for name in (
        "flops",
        "hbm_bandwidth",
        "hbm_capacity",
        "scaleup_bandwidth",
        "scaleup_domain_size",
        "scaleout_bandwidth",
    ):
        ds[f"hardware_{name}"] = (("chain", "draw", "year"), cd(result[f"hardware_{name}"]))
    hw_units = {
        "flops": "FLOP/s",
        "hbm_bandwidth": "bytes/s",
        "hbm_capacity": "bytes",
        "scaleup_bandwidth": "bytes/s per direction",
        "scaleup_domain_size": "accelerators",
        "scaleout_bandwidth": "bytes/s per direction",
    }
    for name, unit in hw_units.items():
        ds[f"hardware_{name}"].attrs.update(
            units=unit, long_name=f"frontier accelerator {name.replace('_', ' ')}"
        )
    return ds


def inputs_dataset(inputs: dict[str, Any], chains: int, draws: int) -> xr.Dataset:
    """Sampled prior inputs of one scenario, dims chain, draw (names with dots -> '__')."""
    return xr.Dataset(
        {
            key.replace(".", "__"): (
                ("chain", "draw"),
                np.asarray(v, dtype=float).reshape(chains, draws),
            )
            for key, v in inputs.items()
        },
        coords={"chain": np.arange(chains), "draw": np.arange(draws)},
    )


def sequence_log10(samples: dict[str, np.ndarray], years) -> dict[str, np.ndarray]:
    """``{"sequence_length": log10 tokens per sequence (sample, year)}`` from the posterior's
    sequence-length law (:mod:`forecast.stats.sequence_length`); empty without it."""
    if "log10_sequence_2024" not in samples:
        return {}
    x = np.asarray(years, dtype=float) - SEQUENCE_REFERENCE_YEAR
    s0 = np.asarray(samples["log10_sequence_2024"], dtype=float)[..., None]
    g = np.asarray(samples["sequence_growth_dex_per_year"], dtype=float)[..., None]
    return {"sequence_length": s0 + g * x}


def scenario_seed(seed: int) -> int:
    """Seed of the prior draws in propagation (common random numbers across scenarios)."""
    return int(zlib.crc32(f"propagate-{seed}".encode()))


def thinning_step(chains: int, draws: int, propagate_draws: int | None) -> int:
    """Keep every k-th draw of each chain so that about ``propagate_draws`` draws remain (at least
    that many when the fit has them; ``None``: every draw)."""
    if propagate_draws is None or propagate_draws <= 0:
        return 1
    return max(1, (chains * draws) // int(propagate_draws))


def scenario_inputs(
    samples: dict[str, np.ndarray], prior_set: PriorSet, n: int, seed: int
) -> dict[str, np.ndarray]:
    """Propagated inputs of one scenario, ``n`` draws per key (:mod:`forecast.priors.provenance`).

    Fitted keys hold the joint posterior's draws (``samples``, flattened (chain, draw)); a scenario
    that sets a fitted key draws it from its own distribution instead; every other key is drawn
    from its prior. The non-fitted keys are the joint program's free block, drawn by
    ``numpyro.infer.Predictive`` (:func:`forecast.stats.joint.draw_free_inputs`) from the key of
    :func:`scenario_seed`, one random stream per key: a key a scenario leaves alone has the same
    draws in every scenario.
    """
    drawn = draw_free_inputs(prior_set, samples, n, jax.random.PRNGKey(scenario_seed(seed)))
    out = {}
    for key in PROPAGATED_KEYS:
        if key in drawn:
            out[key] = drawn[key]
        else:
            out[key] = np.asarray(samples[FITTED_INPUTS[key].variable], dtype=float)
    return out


def propagate_scenario(
    fit_tree: xr.DataTree,
    prior_set: PriorSet,
    *,
    seed: int,
    years=None,
    wall_year_step: int = DEFAULT_WALL_YEAR_STEP,
    propagate_draws: int | None = None,
    regime: str = "paper",
) -> tuple[xr.Dataset, xr.Dataset]:
    """Forecast variables and propagated inputs of one scenario (dims chain, draw, ...).

    The walls are deterministic functions of the joint program's draws: the posterior's (trends
    and law parameters) and its free block's (:func:`scenario_inputs`). With
    ``propagate_draws`` the posterior is evenly thinned first (every k-th draw of each chain,
    :func:`thinning_step`); ``draw`` then counts the kept draws.

    Walls are computed every ``wall_year_step`` years and interpolated in log10 FLOP between;
    the default, 1, computes every year (the forecast's ``wall_year_step`` attribute says which).
    Against it (400 draws, three scenarios), step 2 moves the hit years' percentiles by at most
    0.06-0.10 years, but the 2025 walls' percentiles by 0.45-0.61 dex (10-25 bootstrap standard
    errors) and single percentiles elsewhere by up to 1.07 dex (BENCHMARKS.md section 6,
    ``benchmarks/year_step.py``).

    ``regime``: the plans searched (:func:`propagate`); the realistic regime's sequence length is
    the posterior's sequence-length law at each year (:func:`sequence_log10`).
    """
    init_jax()

    years = DEFAULT_YEARS if years is None else np.asarray(years, dtype=float)
    post = fit_tree["posterior"]
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    step = thinning_step(chains, draws, propagate_draws)
    if step > 1:
        fit_tree = xr.DataTree.from_dict(
            {"/posterior": post.to_dataset().isel(draw=slice(None, None, step))}
        )
        draws = fit_tree["posterior"].sizes["draw"]
    samples = posterior_draws(fit_tree)
    trends = project(samples, years)
    trends |= sequence_log10(samples, years)
    inputs = scenario_inputs(samples, prior_set, chains * draws, seed)
    result = propagate(trends, inputs, years, wall_year_step, regime=regime)
    forecast = forecast_dataset(result, years, chains, draws)
    forecast.attrs["wall_year_step"] = int(wall_year_step)
    forecast.attrs["wall_year_step_note"] = (
        "walls and costs searched at every wall_year_step-th year of `year` and the last, "
        "interpolated in between (1: every year searched; absent: a forecast made before "
        "2026-12-05, which searched every 2nd year)"
    )
    sampled = inputs_dataset(inputs, chains, draws)
    sampled["draw"] = forecast["draw"] = np.arange(0, draws * step, step)
    return forecast, sampled
