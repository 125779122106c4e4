"""The best launchable plan per draw at one compute budget: the planner's physics.

For each draw (its own hardware and assumptions, and its own budget) the best plan of the
realistic regime's shortlist of shapes (:data:`forecast.model.realistic_shortlist.SHAPES`, the
same plans, microbatch choice and utilization as the realistic fast path,
:mod:`forecast.model.realistic_fast`), with its whole degrees, and the small-scale maximum
utilization the cost multiplier is taken against: the best plan over :data:`SMALL_LOG10_FLOP`
(1e20 to 1e27 FLOP every 0.5 dex), which the walls search refines on a finer grid (so this
maximum can sit a little below the walls search's: a multiplier a little nearer 1).

The ``paper`` regime's counterpart, :func:`best_paper_plans`: the full search of
:func:`forecast.model.search.utilization_curve` at each draw's budget (continuous microbatches,
fractional degrees and layers per stage, as Erdil & Schneider-Joseph 2024).

Pure JAX functions of arrays; :func:`best_plans` runs them in chunks of draws.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from forecast.config.runtime import require_x64
from forecast.model.fast import in_draw_chunks
from forecast.model.params import Assumptions, Hardware
from forecast.model.realistic import LaunchGrid, LaunchResult, _constants, _plans_at, plan_dict
from forecast.model.realistic_fast import shortlist_grid
from forecast.model.scaling import model_shape
from forecast.model.search import PlanGrid, _curve, plan_grid

SMALL_LOG10_FLOP = np.round(np.arange(20.0, 27.0001, 0.5), 4)  # 15 budgets
DRAW_CHUNK = 32


class PlanDraws(NamedTuple):
    """The best launchable plan per draw (arrays over draws)."""

    utilization: np.ndarray  # 0 where no plan finishes in time
    feasible: np.ndarray
    index: np.ndarray  # into the grid
    pipeline_parallel: np.ndarray
    layers: np.ndarray
    microbatches: np.ndarray
    data_parallel: np.ndarray
    step_time_s: np.ndarray
    small_scale_utilization: np.ndarray  # the best over SMALL_LOG10_FLOP


def _one(hw: Hardware, a: Assumptions, x, g: LaunchGrid):
    constants = _constants(hw, a, g)
    util, ok, pp, depth, m, dp, st = _plans_at(hw, a, x, g, constants)
    i = jnp.argmax(util)

    def small(xs):
        return jnp.max(_plans_at(hw, a, xs, g, constants)[0])

    u_small = jnp.max(jax.vmap(small)(jnp.asarray(SMALL_LOG10_FLOP)))
    return util[i], jnp.any(ok), i, pp[i], depth[i], m[i], dp[i], st[i], u_small


@jax.jit
def _chunk(hw: Hardware, a: Assumptions, x, g: LaunchGrid):
    return jax.lax.map(lambda z: _one(z[0], z[1], z[2], g), (hw, a, x))


def _feasible_one(hw: Hardware, a: Assumptions, x, g: LaunchGrid):
    util, ok, *_ = _plans_at(hw, a, x, g, _constants(hw, a, g))
    return (jnp.any(ok & (util > 0)),)


@jax.jit
def _feasible_chunk(hw: Hardware, a: Assumptions, x, g: LaunchGrid):
    return jax.lax.map(lambda z: _feasible_one(z[0], z[1], z[2], g), (hw, a, x))


def best_plans(
    hw: Hardware, a: Assumptions, log10_flop, grid: LaunchGrid | None = None
) -> PlanDraws:
    """The best launchable plan of each draw at its budget (log10 FLOP): fields of ``hw``, ``a``
    and ``log10_flop`` broadcast to the draws' shape (1-D)."""
    return PlanDraws(*_over_draws(_chunk, hw, a, log10_flop, grid))


def any_feasible(hw: Hardware, a: Assumptions, log10_flop, grid: LaunchGrid | None = None):
    """Whether some launchable plan finishes each draw's budget in time (no small-scale search:
    1/16 of :func:`best_plans`' work)."""
    return np.asarray(_over_draws(_feasible_chunk, hw, a, log10_flop, grid)[0], bool)


class PaperPlanDraws(NamedTuple):
    """The paper regime's best plan per draw (arrays over draws; continuous quantities)."""

    utilization: np.ndarray  # 0 where no plan finishes in time
    feasible: np.ndarray
    tensor_parallel: np.ndarray
    pipeline_parallel: np.ndarray
    microbatches: np.ndarray
    two_d: np.ndarray
    data_parallel: np.ndarray
    microbatch_tokens: np.ndarray
    accelerators: np.ndarray
    layers: np.ndarray  # the depth law's, unrounded
    steps: np.ndarray
    step_time_s: np.ndarray  # the run's time at its utilization over its D / B steps; NaN: none


def _paper_one(hw: Hardware, a: Assumptions, x, g: PlanGrid):
    c = _curve(hw, a, x[None], g.tp, g.pp, g.m, g.two_d)
    shape = model_shape(x, a)
    fields = (c.utilization, c.feasible, c.tp, c.pp, c.m, c.two_d, c.data_parallel)
    fields += (c.microbatch_tokens, c.n_accelerators)
    util, n = c.utilization[0], c.n_accelerators[0]
    # the plan trains 6 N D = 10^x FLOP at util of n accelerators' peak, over D / B steps (the
    # paper's plans use the whole critical batch B: dp = B / (m b))
    run_s = 10.0**x / (n * hw.flops * jnp.where(util > 0.0, util, 1.0))
    step = jnp.where(util > 0.0, run_s / shape.steps, jnp.nan)
    return (*(f[0] for f in fields), shape.layers, shape.steps, step)


@jax.jit
def _paper_chunk(hw: Hardware, a: Assumptions, x, g: PlanGrid):
    return jax.lax.map(lambda z: _paper_one(z[0], z[1], z[2], g), (hw, a, x))


def best_paper_plans(hw: Hardware, a: Assumptions, log10_flop) -> PaperPlanDraws:
    """The ``paper`` regime's best plan of each draw at its budget (the full search of
    :func:`forecast.model.search.utilization_curve` on :func:`~forecast.model.search.plan_grid`);
    broadcasting as :func:`best_plans`."""
    return PaperPlanDraws(*_over_draws(_paper_chunk, hw, a, log10_flop, plan_grid()))


def _over_draws(kernel, hw: Hardware, a: Assumptions, log10_flop, grid):
    """``kernel`` over the draws in chunks of :data:`DRAW_CHUNK` (one compilation); ``grid``:
    a :class:`LaunchGrid` (None: the shortlist) or a paper :class:`PlanGrid`."""
    require_x64()
    g = shortlist_grid() if grid is None else grid
    g = type(g)(*(jnp.asarray(x) for x in g))
    return in_draw_chunks(
        lambda h, aa, x: kernel(h, aa, x, g), hw, a, (log10_flop,), DRAW_CHUNK, size=DRAW_CHUNK
    )


def plan_of(grid: LaunchGrid, plans: PlanDraws, k: int, sequence_length: float) -> dict:
    """Draw ``k``'s plan in whole numbers (:func:`forecast.model.realistic.plan_dict`, with its
    step time; empty when no plan finishes in time)."""
    if not bool(plans.feasible[k]) or plans.utilization[k] <= 0:
        return {}
    res = LaunchResult(*plans[: len(LaunchResult._fields)])
    a = Assumptions()._replace(sequence_length=float(sequence_length))
    return {**plan_dict(grid, res, k, a), "step_time_s": float(plans.step_time_s[k])}


SHORTEST_RUN_DAYS_RANGE = (0.1, 3650.0)  # 2.4 hours to 10 years
SHORTEST_RUN_STEPS = 9  # log10(36500) / 2^9 < 0.01 dex


def shortest_run_days(
    hw: Hardware, a: Assumptions, log10_flop, steps: int = SHORTEST_RUN_STEPS
) -> np.ndarray:
    """The shortest run (days) in which some launchable plan trains each draw's budget: bisection
    on log10 of the run length of the planner's feasibility (a longer run never makes a plan
    infeasible: more time per step, as many accelerators as it takes).  Draws broadcast as in
    :func:`best_plans`; +inf where not even the longest run of the range is enough, the range's
    shortest where that already is."""
    log10_flop = np.asarray(log10_flop, dtype=float).ravel()
    n = log10_flop.size
    lo = np.full(n, np.log10(SHORTEST_RUN_DAYS_RANGE[0]))
    hi = np.full(n, np.log10(SHORTEST_RUN_DAYS_RANGE[1]))

    def feasible(log10_days: np.ndarray) -> np.ndarray:
        return any_feasible(hw, a._replace(duration_s=10.0**log10_days * 86400.0), log10_flop)

    reachable = feasible(hi)
    already = feasible(lo)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        ok = feasible(mid)
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    out = np.where(already, SHORTEST_RUN_DAYS_RANGE[0], 10.0**hi)
    return np.where(reachable, out, np.inf)
