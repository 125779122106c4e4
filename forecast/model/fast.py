"""Fast path: both walls for many parameter draws in one vectorized call.

The same plan model as :mod:`forecast.model.search` (``best_plan``, closed form in the
microbatch), but instead of scanning a fine compute grid for each draw, each wall is found by a
vectorized bisection on log10 compute over a reduced plan grid:

* data-movement wall: the largest compute at which some plan reaches ``threshold * max_utilization``;
* latency wall: the largest compute at which some plan is feasible at all.

Bisection assumes each predicate holds on an interval of compute that starts small, which the
model satisfies (larger runs need more steps, more layers and more memory per replica).
``tests/test_model_fast.py`` checks the fast walls against the full plan search on random draws
of hardware and assumptions (agreement within a factor 1.5).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from forecast.model.params import Assumptions, Hardware
from forecast.model.plan import best_plan, stationary_microbatches
from forecast.model.scaling import model_shape
from forecast.model.search import UTILIZATION_THRESHOLD, PlanGrid


def _grid(tp, pp, m, two_d) -> PlanGrid:
    grids = np.meshgrid(tp, pp, m, two_d, indexing="ij")
    return PlanGrid(*(g.ravel() for g in grids))


def _concat(*grids: PlanGrid) -> PlanGrid:
    return PlanGrid(*(np.concatenate(parts) for parts in zip(*grids, strict=True)))


def _tp_layouts(max_log2_tp: int = 18) -> tuple[np.ndarray, np.ndarray]:
    """Tensor-parallel options: 1D up to 2^10, 2D (sqrt x sqrt mesh) from 2^4 up."""
    one_d = 2.0 ** np.arange(0, 11)
    two_d = 2.0 ** np.arange(4, max_log2_tp + 1)
    return np.concatenate([one_d, two_d]), np.concatenate(
        [np.zeros(11, bool), np.ones(two_d.size, bool)]
    )


def dm_plan_grid() -> PlanGrid:
    """Plans searched for the data-movement wall.

    tp: every power of two in both layouts (see ``_tp_layouts``); pp: every power of two up to
    4096.  ``m`` here is 0, a placeholder: for each plan the microbatch counts tried are 4, 16
    and 64 per pipeline stage and the stationary ones of
    :func:`forecast.model.plan.stationary_microbatches` (per budget).
    """
    tp, two_d = _tp_layouts()
    pp = 2.0 ** np.arange(0, 13)
    tt, pg = np.meshgrid(np.arange(tp.size), pp, indexing="ij")
    tt, pg = tt.ravel(), pg.ravel()
    return PlanGrid(tp[tt], pg, np.zeros(tt.size), two_d[tt])


def small_scale_plan_grid() -> PlanGrid:
    """Plans for the small-scale maximum utilization: tp <= 1024 (1D), no pipeline, m = 1."""
    tp = 2.0 ** np.arange(0, 11)
    return PlanGrid(tp, np.ones_like(tp), np.ones_like(tp), np.zeros(tp.size, bool))


def latency_plan_grid() -> PlanGrid:
    """Plans for the latency wall: every tp and layout, one microbatch, pp set per budget.

    With one microbatch a step is L layers long whatever pp is; deeper pipelines cut memory and
    gradient traffic per accelerator but add a send per stage.  pp is therefore searched among
    the largest power of two not above L and 4, 16 and 64 times less (encoded here as -1 .. -4
    and resolved per budget in ``_evaluate``).
    """
    tp, two_d = _tp_layouts()
    rows = [
        PlanGrid(tp, np.full(tp.size, -k), np.ones_like(tp), two_d) for k in (1.0, 2.0, 3.0, 4.0)
    ]
    return _concat(*rows)


def _evaluate(hw, a, log10_flop, grid: PlanGrid, stationary_m: bool = False):
    """Plans of ``grid`` at each budget; pp <= 0 and m == 0 are resolved per budget."""
    shape = model_shape(log10_flop[..., None], a)
    deepest = jnp.floor(jnp.log2(shape.layers))
    pp = jnp.where(grid.pp > 0, grid.pp, 2.0 ** jnp.maximum(deepest + 2.0 * (grid.pp + 1.0), 0.0))
    if not stationary_m:
        return best_plan(hw, a, shape, grid.tp, pp, grid.m, grid.two_d)
    m_star = stationary_microbatches(hw, a, shape, grid.tp, pp, grid.two_d)
    ratios = jnp.asarray(_BUBBLE_RATIOS)
    m_fixed = jnp.where(pp[..., None] > 1.0, pp[..., None] * ratios, 1.0)
    m = jnp.concatenate(
        [jnp.broadcast_to(m_fixed, (*m_star.shape[:-1], ratios.size)), m_star], axis=-1
    )
    ex = Hardware(*(v[..., None] for v in hw))
    ea = Assumptions(*(v[..., None] for v in a))
    es = type(shape)(*(v[..., None] for v in shape))
    res = best_plan(ex, ea, es, grid.tp[..., None], pp[..., None], m, grid.two_d[..., None])
    return type(res)(
        *(jnp.max(v, axis=-1) if v.dtype != bool else jnp.any(v, axis=-1) for v in res)
    )


def _candidate_microbatches(hw, a, shape, tp, pp, two_d, kind=None):
    """Microbatch counts tried per plan: ``_BUBBLE_RATIOS`` x pp, then the stationary ones.

    Without ``kind`` returns all of them on a new last axis; with ``kind`` (same shape as tp)
    returns the one of that index.
    """
    m_star = stationary_microbatches(hw, a, shape, tp, pp, two_d)
    ratios = jnp.asarray(_BUBBLE_RATIOS)
    m_fixed = jnp.where(pp[..., None] > 1.0, pp[..., None] * ratios, 1.0)
    m_all = jnp.concatenate(
        [jnp.broadcast_to(m_fixed, (*m_star.shape[:-1], ratios.size)), m_star], axis=-1
    )
    if kind is None:
        return m_all
    return jnp.take_along_axis(m_all, kind[..., None].astype(int), axis=-1)[..., 0]


def _dm_utilization(hw, a, log10_flop, tp, pp, two_d, kind=None):
    """Utilization of data-movement candidates at each budget.

    Without ``kind``: every plan of the grid with every microbatch count, shape (..., plans, M).
    With ``kind``: one microbatch count per plan (a per-draw shortlist), shape (..., plans).
    """
    shape = model_shape(log10_flop[..., None], a)
    m = _candidate_microbatches(hw, a, shape, tp, pp, two_d, kind)
    if kind is not None:
        return best_plan(hw, a, shape, tp, pp, m, two_d).utilization
    ex = Hardware(*(v[..., None] for v in hw))
    ea = Assumptions(*(v[..., None] for v in a))
    es = type(shape)(*(v[..., None] for v in shape))
    return best_plan(ex, ea, es, tp[..., None], pp[..., None], m, two_d[..., None]).utilization


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


_SCAN = jnp.arange(21.0, 28.01, 0.5)
_COARSE_STEPS = 5  # bisection steps over all data-movement candidates
_SHORTLIST = 8  # candidates kept per draw for the remaining steps
_BUBBLE_RATIOS = (
    4.0,
    16.0,
    64.0,
)  # microbatches per pipeline stage tried besides the stationary ones


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

    # Small-scale maximum: scan budgets with simple plans (expand a scan axis before plans).
    hw_s = Hardware(*(v[..., None] for v in hw))
    a_s = Assumptions(*(v[..., None] for v in a))
    scan = jnp.broadcast_to(_SCAN, (*dims, _SCAN.size))
    u_scan = jnp.max(_evaluate(hw_s, a_s, scan, small_grid).utilization, axis=-1)
    u_small = jnp.max(u_scan, axis=-1)
    x0 = _SCAN[jnp.argmax(u_scan, axis=-1)]
    level = threshold * u_small

    # Data-movement wall in two stages: a coarse bisection over every candidate plan, then a
    # fine one over the per-draw shortlist of the plans that do best at the coarse bracket.
    n_m = len(_BUBBLE_RATIOS) + 3

    def dm_all(x):
        return _dm_utilization(hw, a, x, dm_grid.tp, dm_grid.pp, dm_grid.two_d)

    def dm_ok(x):
        return jnp.max(dm_all(x), axis=(-2, -1)) >= level

    top = jnp.where(jnp.isfinite(lat), lat, hi)
    coarse = min(_COARSE_STEPS, iterations)
    lo1, hi1 = _bisect_bounds(dm_ok, x0, top, coarse)
    u_lo = dm_all(lo1).reshape(*dims, -1)
    _, best = jax.lax.top_k(u_lo, _SHORTLIST)
    plan, kind = best // n_m, best % n_m
    tp_s, pp_s, td_s = (jnp.take(g, plan) for g in (dm_grid.tp, dm_grid.pp, dm_grid.two_d))

    def dm_ok_short(x):
        u = _dm_utilization(hw, a, x, tp_s, pp_s, td_s, kind)
        return jnp.max(u, axis=-1) >= level

    dm = _bisect(dm_ok_short, lo1, hi1, iterations - coarse + 2)
    dm = jnp.where(dm_ok(top), jnp.where(jnp.isfinite(lat), top, jnp.inf), dm)
    dm = jnp.where(u_small > 0, dm, -jnp.inf)
    return dm, lat, u_small


def fast_walls(
    hw: Hardware,
    a: Assumptions | None = None,
    *,
    threshold: float = UTILIZATION_THRESHOLD,
    grid: PlanGrid | None = None,
    log10_flop_range: tuple[float, float] = (20.0, 40.0),
    iterations: int = 12,
    chunk: int = 2048,
) -> tuple[np.ndarray, np.ndarray]:
    """(data-movement wall, latency wall) in log10 FLOP for every draw, vectorized.

    Fields of ``hw`` and ``a`` may be scalars or arrays that broadcast to the draws' shape.
    The data-movement wall uses ``threshold * a.max_utilization`` as its level (the utilization
    the plan model reaches at small scale).  -inf: not even the smallest budget qualifies;
    +inf: beyond the range searched.  The latency wall takes ``iterations + 2`` bisection steps
    on the whole range (1e-3 dex for 14 steps on 20 dex), the data-movement wall ``iterations``
    steps between the small-scale optimum and the latency wall (<= 3e-3 dex).
    """
    a = Assumptions() if a is None else a
    grids = tuple(
        PlanGrid(*(jnp.asarray(x) for x in g))
        for g in (
            dm_plan_grid() if grid is None else grid,
            small_scale_plan_grid(),
            latency_plan_grid(),
        )
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
