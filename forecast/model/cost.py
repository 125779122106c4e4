"""What the walls cost: best utilization at a given compute, and the shortest feasible run.

Vectorized over draws like :mod:`forecast.model.fast`, and built only from the public plan
evaluation (:func:`forecast.model.plan.best_plan`, :func:`~forecast.model.plan.best_plan_over_m`)
and plan grids (:func:`forecast.model.search.plan_grid`, :mod:`forecast.model.fast`):

* :func:`best_utilization`: the best achievable utilization of a run of a given compute: every
  plan shape of the full search's grid is ranked with microbatch counts 1, 4, ..., 2^20, and the
  ``SHORTLIST`` best get their number of microbatches optimized as in the full search;
* :func:`small_scale_max_utilization`: the small-scale maximum the data-movement wall is measured
  against (simple plans, no pipeline, m optimized, budgets 1e21..1e28 FLOP);
* :func:`cost_multiplier`: ``max_utilization / utilization`` (>= 1; +inf where no plan is
  feasible, i.e. the run is past the latency wall): how many times more accelerator-time each
  FLOP of the run costs than at small scale;
* :func:`min_run_days`: the shortest run (days) that could train a model of a given compute at
  all, by bisection on log10 duration of the latency-wall predicate (feasibility only grows
  with the duration).

``tests/model/test_model_cost.py`` compares both with the full plan search on random draws.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from forecast.model.fast import in_draw_chunks, latency_plan_grid, small_scale_plan_grid
from forecast.model.params import SECONDS_PER_DAY, Assumptions, Hardware
from forecast.model.plan import best_plan, best_plan_over_m
from forecast.model.scaling import model_shape
from forecast.model.search import PlanGrid, plan_grid

RANK_LOG2_MICROBATCHES = tuple(range(0, 21, 2))  # m = 2^k tried per plan shape when ranking
SHORTLIST = 8  # plan shapes per draw whose number of microbatches is optimized
SMALL_SCALE_LOG10_FLOP = np.arange(21.0, 28.01, 0.5)  # budgets of the small-scale maximum
MIN_RUN_DAYS_RANGE = (1e-3, 1e5)  # bisection bracket of the shortest run, days
MIN_RUN_STEPS = 40  # bisection steps on log10 days: 8 dex / 2^40, far below any other error


def _expand(nt, k: int):
    return type(nt)(*(v[(...,) + (None,) * k] for v in nt))


@jax.jit
def _best_utilization(hw, a, log10_flop, grid: PlanGrid):
    """(...,) best utilization over ``grid`` at ``log10_flop`` (...,)."""
    m = 2.0 ** jnp.asarray(RANK_LOG2_MICROBATCHES, dtype=jnp.float64)
    hw2, a2 = _expand(hw, 2), _expand(a, 2)
    shape2 = model_shape(log10_flop[..., None, None], a2)
    ranked = best_plan(hw2, a2, shape2, grid.tp[:, None], grid.pp[:, None], m, grid.two_d[:, None])
    coarse = jnp.max(ranked.utilization, axis=-1)  # (..., plans)
    _, idx = jax.lax.top_k(coarse, SHORTLIST)
    tp, pp_s, td = (jnp.take(g, idx) for g in (grid.tp, grid.pp, grid.two_d))
    hw1, a1 = _expand(hw, 1), _expand(a, 1)
    res, _ = best_plan_over_m(hw1, a1, model_shape(log10_flop[..., None], a1), tp, pp_s, td)
    return jnp.maximum(jnp.max(res.utilization, axis=-1), jnp.max(coarse, axis=-1))


@jax.jit
def _small_scale_max(hw, a, grid: PlanGrid):
    scan = jnp.asarray(SMALL_SCALE_LOG10_FLOP)
    hw2, a2 = _expand(hw, 2), _expand(a, 2)
    shape = model_shape(scan[:, None], a2)
    res, _ = best_plan_over_m(hw2, a2, shape, grid.tp, grid.pp, grid.two_d)
    return jnp.max(res.utilization, axis=(-2, -1))


def _feasible(hw, a, log10_flop, grid: PlanGrid):
    """Whether any latency-wall plan (one microbatch, deepest pipelines) fits the deadline."""
    hw1, a1 = _expand(hw, 1), _expand(a, 1)
    shape = model_shape(log10_flop[..., None], a1)
    deepest = jnp.floor(jnp.log2(shape.layers))
    pp = jnp.where(grid.pp > 0, grid.pp, 2.0 ** jnp.maximum(deepest + grid.pp + 1.0, 0.0))
    return jnp.any(best_plan(hw1, a1, shape, grid.tp, pp, grid.m, grid.two_d).feasible, axis=-1)


def shortest_log10_days(feasible, shape, steps: int):
    """Shortest run (log10 days) for which ``feasible(log10_days)`` holds, by bisection over
    :data:`MIN_RUN_DAYS_RANGE` (feasibility only grows with the duration): -inf where even the
    shortest end is feasible, +inf where not even the longest is.  ``shape``: of the result."""
    lo0, hi0 = (jnp.full(shape, np.log10(d)) for d in MIN_RUN_DAYS_RANGE)

    def body(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        good = feasible(mid)
        return jnp.where(good, lo, mid), jnp.where(good, mid, hi)

    lo, hi = jax.lax.fori_loop(0, steps, body, (lo0, hi0))
    out = jnp.where(feasible(hi0), hi, jnp.inf)
    return jnp.where(feasible(lo0), -jnp.inf, out)


@partial(jax.jit, static_argnames=("steps",))
def _min_run_log10_days(hw, a, log10_flop, grid: PlanGrid, steps: int):
    def ok(log10_days):
        return _feasible(
            hw, a._replace(duration_s=10.0**log10_days * SECONDS_PER_DAY), log10_flop, grid
        )

    return shortest_log10_days(ok, log10_flop.shape, steps)


def _vectorized(fn, hw: Hardware, a: Assumptions, extra: tuple, chunk: int) -> np.ndarray:
    """Apply ``fn(hw, a, *extra)`` over the broadcast shape of all inputs, in chunks."""
    return in_draw_chunks(fn, hw, a, extra, chunk)[0]


def _grid(g: PlanGrid) -> PlanGrid:
    return PlanGrid(*(jnp.asarray(x) for x in g))


def best_utilization(hw: Hardware, a: Assumptions, log10_flop, *, chunk: int = 1024) -> np.ndarray:
    """Best achievable utilization (fraction of peak) of a run of ``log10_flop``; 0: infeasible.

    Fields of ``hw``, ``a`` and ``log10_flop`` broadcast to the draws' shape.
    """
    grid = _grid(plan_grid())
    return _vectorized(
        lambda h, aa, x: _best_utilization(h, aa, x, grid), hw, a, (log10_flop,), chunk
    )


def small_scale_max_utilization(hw: Hardware, a: Assumptions, *, chunk: int = 1024) -> np.ndarray:
    """Best utilization of simple plans over budgets 1e21..1e28 FLOP (the walls' reference)."""
    grid = _grid(small_scale_plan_grid())
    return _vectorized(lambda h, aa: _small_scale_max(h, aa, grid), hw, a, (), chunk)


def cost_multiplier(max_utilization, utilization) -> np.ndarray:
    """``max_utilization / utilization``, at least 1, +inf where ``utilization`` is 0.

    Where the run's best plan beats the small-scale maximum (a large run can afford wider
    plans than the simple ones of the reference), the multiplier is 1: no extra cost.
    """
    u = np.asarray(utilization, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(u > 0, np.asarray(max_utilization) / np.where(u > 0, u, 1.0), np.inf)
    return np.maximum(ratio, 1.0)


def min_run_days(hw: Hardware, a: Assumptions, log10_flop, *, chunk: int = 1024) -> np.ndarray:
    """Shortest run (days) in which any plan can train a model of ``log10_flop`` at all.

    The latency wall inverted in duration (``a.duration_s`` is ignored).  0: feasible even in
    ``MIN_RUN_DAYS_RANGE[0]`` days; +inf: not even in ``MIN_RUN_DAYS_RANGE[1]`` days.
    """
    grid = _grid(latency_plan_grid())
    log10_days = _vectorized(
        lambda h, aa, x: _min_run_log10_days(h, aa, x, grid, MIN_RUN_STEPS),
        hw,
        a,
        (log10_flop,),
        chunk,
    )
    with np.errstate(over="ignore"):
        return np.where(np.isneginf(log10_days), 0.0, 10.0**log10_days)
