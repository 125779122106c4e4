"""Fast path: both walls for many parameter draws in one vectorized call.

The same plan model as :mod:`forecast.model.search` (closed form in the microbatch size), but
instead of scanning a fine compute grid for each draw, each wall is found by a vectorized
bisection on log10 compute:

* latency wall: the largest compute at which some plan is feasible at all (bisection over every
  tensor-parallel option with one microbatch and the deepest pipelines, see
  :func:`latency_plan_grid`);
* data-movement wall: the largest compute at which some plan reaches ``threshold`` times the
  small-scale maximum utilization, in two stages: a coarse bisection over every (tp, pp, layout)
  with 4, 16 or 64 microbatches per pipeline stage, then a fine bisection over the per-draw
  shortlist of plans that did best, each with its number of microbatches optimized as in the
  full search (:func:`forecast.model.plan.best_plan_over_m`).

Bisection assumes each predicate holds on an interval of compute, which holds for the latency
wall and almost always for the data-movement wall; where a utilization curve dips below the
threshold and recovers, bisection may land on a later crossing than the full search's first
one.  ``tests/test_model_fast.py`` compares both on random draws.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from forecast.model.params import Assumptions, Hardware
from forecast.model.plan import best_plan, best_plan_over_m
from forecast.model.scaling import model_shape
from forecast.model.search import UTILIZATION_THRESHOLD, PlanGrid

BUBBLE_RATIOS = (4.0, 16.0)  # microbatches per pipeline stage in the coarse stage
COARSE_STEPS = 5  # bisection steps over every data-movement plan
SHORTLIST = 8  # plans kept per draw for the fine stage
FINE_MARGIN_DEX = 0.5  # the fine stage may go this far above the coarse bracket
_SCAN = jnp.arange(21.0, 28.01, 0.5)  # budgets scanned for the small-scale maximum


def _tp_layouts(max_log2_tp: int = 18, max_log2_tp_1d: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Tensor-parallel options: 1D up to 2^max_log2_tp_1d, 2D (sqrt x sqrt mesh) from 2^4 up."""
    one_d = 2.0 ** np.arange(0, max_log2_tp_1d + 1)
    two_d = 2.0 ** np.arange(4, max_log2_tp + 1)
    layout = np.concatenate([np.zeros(one_d.size, bool), np.ones(two_d.size, bool)])
    return np.concatenate([one_d, two_d]), layout


def dm_plan_grid() -> PlanGrid:
    """(tp, pp, layout) searched for the data-movement wall; ``m`` = 0: chosen per stage."""
    tp, two_d = _tp_layouts()
    ti, pp = np.meshgrid(np.arange(tp.size), 2.0 ** np.arange(0, 13), indexing="ij")
    ti, pp = ti.ravel(), pp.ravel()
    return PlanGrid(tp[ti], pp, np.zeros(ti.size), two_d[ti])


def small_scale_plan_grid() -> PlanGrid:
    """Plans for the small-scale maximum utilization: tp <= 1024 (1D), no pipeline, m = 1."""
    tp = 2.0 ** np.arange(0, 11)
    return PlanGrid(tp, np.ones_like(tp), np.ones_like(tp), np.zeros(tp.size, bool))


def latency_plan_grid() -> PlanGrid:
    """Plans for the latency wall: every tp and layout, one microbatch, pp set per budget.

    With one microbatch a step is L layers long whatever pp is; deeper pipelines cut memory and
    gradient traffic per accelerator but add a send per stage.  pp is therefore searched among
    the largest power of two not above L and 2, 4, ..., 64 times less (encoded here as -1 .. -7
    and resolved per budget in ``_evaluate``).  1D tensor parallelism goes up to 2^14 here: near
    the latency wall a wide 1D group (one all-reduce per matmul) can beat a 2D mesh (two).
    """
    tp, two_d = _tp_layouts(max_log2_tp_1d=14)
    rows = [PlanGrid(tp, np.full(tp.size, -k), np.ones_like(tp), two_d) for k in range(1, 8)]
    return PlanGrid(*(np.concatenate(parts) for parts in zip(*rows, strict=True)))


def _evaluate(hw, a, log10_flop, grid: PlanGrid):
    """Plans of ``grid`` (explicit m) at each budget; pp <= 0 is resolved per budget."""
    shape = model_shape(log10_flop[..., None], a)
    deepest = jnp.floor(jnp.log2(shape.layers))
    pp = jnp.where(grid.pp > 0, grid.pp, 2.0 ** jnp.maximum(deepest + grid.pp + 1.0, 0.0))
    return best_plan(hw, a, shape, grid.tp, pp, grid.m, grid.two_d)


def _coarse_utilization(hw, a, log10_flop, grid: PlanGrid):
    """(..., plans, len(BUBBLE_RATIOS)) utilization with m = ratio x pp (m = 1 if pp = 1)."""
    ex = Hardware(*(v[..., None] for v in hw))
    ea = Assumptions(*(v[..., None] for v in a))
    shape = model_shape(log10_flop[..., None, None], ea)
    ratios = jnp.asarray(BUBBLE_RATIOS)
    pp = grid.pp[..., None]
    m = jnp.where(pp > 1.0, pp * ratios, 1.0)
    return best_plan(ex, ea, shape, grid.tp[..., None], pp, m, grid.two_d[..., None]).utilization


def _bisect_bounds(predicate, lo, hi, iterations):
    """Bracket [lo, hi] of the largest x with predicate(x), for predicates true on [lo, x*]."""

    def body(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        ok = predicate(mid)
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    return jax.lax.fori_loop(0, iterations, body, (lo, hi))


def _bisect(predicate, lo, hi, iterations):
    """Largest x in [lo, hi] with predicate(x) true (midpoint of the final bracket)."""
    lo, hi = _bisect_bounds(predicate, lo, hi, iterations)
    return 0.5 * (lo + hi)


@partial(jax.jit, static_argnames=("iterations",))
def _walls(hw, a, grids, lo, hi, threshold, iterations):
    dm_grid, small_grid, lat_grid = grids
    dims = jnp.broadcast_shapes(*(jnp.shape(x) for x in (*hw, *a)))
    hw = Hardware(*(jnp.broadcast_to(v, dims)[..., None] for v in hw))
    a = Assumptions(*(jnp.broadcast_to(v, dims)[..., None] for v in a))
    lo = jnp.full(dims, lo)
    hi = jnp.full(dims, hi)

    def lat_ok(x):
        return jnp.any(_evaluate(hw, a, x, lat_grid).feasible, axis=-1)

    lat = _bisect(lat_ok, lo, hi, iterations + 2)
    lat = jnp.where(lat_ok(lo), lat, -jnp.inf)
    lat = jnp.where(lat_ok(hi), jnp.inf, lat)

    # Small-scale maximum: scan budgets with simple plans (a scan axis before the plan axis).
    hw_s = Hardware(*(v[..., None] for v in hw))
    a_s = Assumptions(*(v[..., None] for v in a))
    scan = jnp.broadcast_to(_SCAN, (*dims, _SCAN.size))
    u_scan = jnp.max(_evaluate(hw_s, a_s, scan, small_grid).utilization, axis=-1)
    u_small = jnp.max(u_scan, axis=-1)
    level = threshold * u_small
    x0 = jnp.clip(_SCAN[jnp.argmax(u_scan, axis=-1)], lo, hi)
    top = jnp.maximum(jnp.where(jnp.isfinite(lat), lat, hi), x0)

    def coarse_u(x):
        return _coarse_utilization(hw, a, x, dm_grid)

    def coarse_ok(x):
        return jnp.max(coarse_u(x), axis=(-2, -1)) >= level

    lo1, hi1 = _bisect_bounds(coarse_ok, x0, top, COARSE_STEPS)
    # Shortlist the plans (tp, pp, layout) that do best at the coarse bracket.
    _, best = jax.lax.top_k(jnp.max(coarse_u(lo1), axis=-1), SHORTLIST)
    tp_s, pp_s, td_s = (jnp.take(g, best) for g in (dm_grid.tp, dm_grid.pp, dm_grid.two_d))

    def fine_ok(x):
        shape = model_shape(x[..., None], a)
        res, _ = best_plan_over_m(hw, a, shape, tp_s, pp_s, td_s)
        return jnp.max(res.utilization, axis=-1) >= level

    hi2 = jnp.minimum(hi1 + FINE_MARGIN_DEX, top)
    dm = _bisect(fine_ok, lo1, hi2, iterations - COARSE_STEPS + 2)
    dm = jnp.where(fine_ok(hi2) & (hi2 >= top), jnp.where(jnp.isfinite(lat), top, jnp.inf), dm)
    dm = jnp.where((u_small > 0) & (fine_ok(x0) | coarse_ok(x0)), dm, -jnp.inf)
    dm = jnp.minimum(dm, lat)
    return dm, lat, u_small


def fast_walls(
    hw: Hardware,
    a: Assumptions | None = None,
    *,
    threshold: float = UTILIZATION_THRESHOLD,
    log10_flop_range: tuple[float, float] = (20.0, 40.0),
    iterations: int = 12,
    chunk: int = 2048,
) -> tuple[np.ndarray, np.ndarray]:
    """(data-movement wall, latency wall) in log10 FLOP for every draw, vectorized.

    Fields of ``hw`` and ``a`` may be scalars or arrays that broadcast to the draws' shape.
    The data-movement level is ``threshold`` times the best utilization of simple plans at
    small scale (1e21..1e28 FLOP).  -inf: not even the smallest budget of the range qualifies;
    +inf: beyond the range.  The data-movement wall never exceeds the latency wall.  The
    latency wall takes ``iterations + 2`` bisection steps on the whole range (1e-3 dex for 14
    steps on 20 dex); the data-movement wall ``COARSE_STEPS`` coarse and
    ``iterations - COARSE_STEPS + 2`` fine steps.
    """
    a = Assumptions() if a is None else a
    grids = tuple(
        PlanGrid(*(jnp.asarray(x) for x in g))
        for g in (dm_plan_grid(), small_scale_plan_grid(), latency_plan_grid())
    )
    hw = [np.asarray(x, dtype=np.float64) for x in hw]
    av = [np.asarray(x, dtype=np.float64) for x in a]
    dims = np.broadcast_shapes(*(x.shape for x in (*hw, *av)))
    flat_hw = [np.broadcast_to(x, dims).reshape(-1) for x in hw]
    flat_a = [np.broadcast_to(x, dims).reshape(-1) for x in av]
    total = int(np.prod(dims)) if dims else 1
    dm_out = np.empty(total)
    lat_out = np.empty(total)
    lo, hi = log10_flop_range
    for start in range(0, total, chunk):
        stop = min(start + chunk, total)
        pad = chunk - (stop - start) if total > chunk else 0
        sl = [np.pad(x[start:stop], (0, pad), mode="edge") for x in flat_hw]
        sa = [np.pad(x[start:stop], (0, pad), mode="edge") for x in flat_a]
        dm, lat, _ = _walls(Hardware(*sl), Assumptions(*sa), grids, lo, hi, threshold, iterations)
        dm_out[start:stop] = np.asarray(dm)[: stop - start]
        lat_out[start:stop] = np.asarray(lat)[: stop - start]
    return dm_out.reshape(dims), lat_out.reshape(dims)
