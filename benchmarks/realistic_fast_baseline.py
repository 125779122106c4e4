"""A frozen copy of the realistic regime's fast path (walls only) as it was before issue 23's
search changes (commit 28bddd3): the baseline ``benchmarks/walls.py --regime realistic`` times the
current path against, in the same process and on the same draws.  Not imported by the package;
do not change it.  What it shares with the package and does not freeze: the plan model
(``forecast.model.realistic``), the shortlist (``shortlist_grid``) and the chunking over draws
(``_by_draw``), so that both paths search the same shapes in the same chunks.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from forecast.config.runtime import require_x64
from forecast.model.params import Assumptions, Hardware
from forecast.model.realistic import LaunchGrid, _constants, _microbatch_choice, _plans_at
from forecast.model.realistic_fast import _by_draw, shortlist_grid
from forecast.model.search import UTILIZATION_THRESHOLD

COARSE_LOG10_FLOP = np.round(np.arange(20.0, 40.0001, 0.25), 4)  # 81 budgets
GRID_STEP_DEX = 0.05  # the full search's grid
MAX_REFINE_POINTS = 4  # grid points either side of the scan's best budget
DIP_WINDOW_DEX = 1.2  # grid before the scan's crossing searched for an earlier one
LATENCY_STEPS = 9  # bisection steps in a 0.25-dex bracket: 0.0005 dex
CROSSING_STEPS = 6  # bisection steps in a 0.05-dex bracket: 0.0008 dex
SCREEN_KEEP = 64  # shapes given every microbatch candidate per budget (of 979): _best_fn
SCREEN_GROUPS_ABOVE = 2.0  # the screen ranks shapes this many groups above their top count
SCAN_CHUNK = 3  # scan budgets per step, up to the latency wall's bracket (_scan; 81 = 27 x 3)


def _best_fn(hw: Hardware, a: Assumptions, g: LaunchGrid, keep: int = SCREEN_KEEP):
    """``best(x) -> (utilization, feasible)`` of the best plan of ``g`` at budget ``x``.

    Screened: every shape is evaluated exactly at its closed-form top microbatch count (a
    feasible plan or nothing) and ranked by its utilization one group above that count without
    the checks (the count a little above which its best plan lies); the ``keep`` best-ranked
    shapes get all the microbatch candidates of :func:`_plans_at`.  Every utilization returned
    is an exact plan's, so the best never exceeds the unscreened one; ``keep=0``: no screen."""
    constants = _constants(hw, a, g)
    n = g.tp.shape[0]
    if keep <= 0 or keep >= n:

        def best_all(x):
            util, ok, *_ = _plans_at(hw, a, x, g, constants)
            return jnp.max(util), jnp.any(ok)

        return best_all

    per_shape = {k for k, v in constants.items() if jnp.ndim(v) == 1 and v.shape[0] == n}

    def best(x):
        c = _microbatch_choice(hw, a, x, g, constants)
        at_top = c.at_microbatches(c.top)[0]
        above = jnp.minimum(c.top + SCREEN_GROUPS_ABOVE * c.unit, c.batch_microbatches)
        rank = c.at_microbatches(above, checked=False)[0]
        idx = jax.lax.top_k(rank, keep)[1]
        sub = LaunchGrid(*(f[idx] for f in g))
        sub_constants = {k: (v[idx] if k in per_shape else v) for k, v in constants.items()}
        # a deep pipeline of the full grid is a shape to search only if deeper than every pipeline
        # given by its stages: the full grid's mask, not the subset's, decides
        util = jnp.where(c.ok[idx], _plans_at(hw, a, x, sub, sub_constants)[0], 0.0)
        return jnp.maximum(jnp.max(at_top), jnp.max(util)), jnp.any(at_top > 0) | jnp.any(util > 0)

    return best


def _scan(best, coarse, scan_chunk: int):
    """``best`` at the scan's budgets: (utilization, feasible) per budget.

    ``scan_chunk`` > 0: in chunks of that many budgets from the bottom, stopping after the chunk
    that holds the first infeasible budget past a feasible one (the latency wall's bracket); the
    budgets above it are left as infeasible (utilization 0). Every reading of the scan in
    :func:`_walls_one` stops at that budget (the latency bracket; the first budget below the
    threshold, which an infeasible budget is), so the walls are those of the whole scan; the
    small-scale maximum is the largest utilization before the latency wall (the whole scan's
    unless a run of feasible budgets came back above the wall with a higher utilization, which no
    plan model here does). ``scan_chunk`` 0: every budget at once."""
    n = coarse.size
    if scan_chunk <= 0 or n % scan_chunk:
        return jax.vmap(best)(coarse)
    chunks = coarse.reshape(-1, scan_chunk)
    idx = jnp.arange(n)

    def more(state):
        k, _, _, done = state
        return (k < chunks.shape[0]) & ~done

    def step(state):
        k, u, ok, _ = state
        uc, okc = jax.vmap(best)(chunks[k])
        u = jax.lax.dynamic_update_slice(u, uc, (k * scan_chunk,))
        ok = jax.lax.dynamic_update_slice(ok, okc, (k * scan_chunk,))
        seen = idx < (k + 1) * scan_chunk
        first_ok = jnp.min(jnp.where(ok, idx, n))
        done = jnp.any(seen & ~ok & (idx > first_ok))
        return k + 1, u, ok, done

    start = (jnp.int32(0), jnp.zeros(n), jnp.zeros(n, dtype=bool), jnp.bool_(False))
    _, u, ok, _ = jax.lax.while_loop(more, step, start)
    return u, ok


def _walls_one(
    hw: Hardware,
    a: Assumptions,
    g: LaunchGrid,
    threshold,
    keep: int = SCREEN_KEEP,
    scan_chunk: int = SCAN_CHUNK,
):
    """(data-movement wall, latency wall, max utilization) of one draw (scalars in hw, a)."""
    best = _best_fn(hw, a, g, keep)

    coarse = jnp.asarray(COARSE_LOG10_FLOP)
    n = coarse.size
    u, ok = _scan(best, coarse, scan_chunk)
    i_best = jnp.argmax(u)
    offsets = GRID_STEP_DEX * jnp.arange(-MAX_REFINE_POINTS, MAX_REFINE_POINTS + 1)
    near = jnp.clip(coarse[i_best] + offsets, coarse[0], coarse[-1])
    u_near, _ = jax.vmap(best)(near)
    u_max = jnp.maximum(u[i_best], jnp.max(u_near))
    x_best = jnp.where(jnp.max(u_near) > u[i_best], near[jnp.argmax(u_near)], coarse[i_best])

    # latency wall: the end of the first run of feasible budgets
    idx = jnp.arange(n)
    first_ok = jnp.min(jnp.where(ok, idx, n))
    first_bad = jnp.min(jnp.where((~ok) & (idx > first_ok), idx, n))

    def bisect_feasible(lo, hi, steps):
        def step(_, b):
            lo, hi = b
            mid = 0.5 * (lo + hi)
            f = best(mid)[1]
            return jnp.where(f, mid, lo), jnp.where(f, hi, mid)

        lo, hi = jax.lax.fori_loop(0, steps, step, (lo, hi))
        return 0.5 * (lo + hi)

    k = jnp.clip(first_bad, 1, n - 1)
    lat = bisect_feasible(coarse[k - 1], coarse[k], LATENCY_STEPS)
    lat = jnp.where(first_bad >= n, jnp.inf, lat)
    lat = jnp.where(first_ok >= n, -jnp.inf, lat)

    # data-movement wall: the first budget after the maximum below the threshold
    level = threshold * u_max
    below = (u < level) & (coarse > x_best)
    j = jnp.min(jnp.where(below, idx, n))
    x_scan = coarse[jnp.clip(j, 0, n - 1)]
    w = int(round(DIP_WINDOW_DEX / GRID_STEP_DEX))
    window = x_scan - GRID_STEP_DEX * jnp.arange(w, 0, -1)  # grid points before the crossing
    u_win, _ = jax.vmap(best)(window)
    dip = (u_win < level) & (window > x_best)
    first_dip = jnp.min(jnp.where(dip, jnp.arange(w), w))
    hi = jnp.where(first_dip < w, window[jnp.clip(first_dip, 0, w - 1)], x_scan)

    def bisect_below(lo, hi, steps):
        def step(_, b):
            lo, hi = b
            mid = 0.5 * (lo + hi)
            under = best(mid)[0] < level
            return jnp.where(under, lo, mid), jnp.where(under, mid, hi)

        lo, hi = jax.lax.fori_loop(0, steps, step, (lo, hi))
        return 0.5 * (lo + hi)

    dm = bisect_below(hi - GRID_STEP_DEX, hi, CROSSING_STEPS)
    dm = jnp.where(j >= n, jnp.inf, dm)
    dm = jnp.where(u_max > 0.0, dm, -jnp.inf)
    return dm, lat, u_max


@functools.partial(jax.jit, static_argnames=("keep", "scan_chunk"))
def _walls_chunk(
    hw: Hardware,
    a: Assumptions,
    threshold,
    g: LaunchGrid,
    keep: int = SCREEN_KEEP,
    scan_chunk: int = SCAN_CHUNK,
):
    return jax.lax.map(
        lambda z: _walls_one(z[0], z[1], g, z[2], keep, scan_chunk), (hw, a, threshold)
    )


def fast_realistic_walls(
    hw: Hardware,
    a: Assumptions,
    threshold: float = UTILIZATION_THRESHOLD,
    grid: LaunchGrid | None = None,
    screen_keep: int = SCREEN_KEEP,
    scan_chunk: int = SCAN_CHUNK,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both walls (log10 FLOP) and the small-scale maximum utilization per draw, realistic plans.

    ``hw`` and ``a``: fields broadcast to one shape (the draws); returns arrays of that shape:
    ``(data_movement_wall, latency_wall, max_utilization)``.  ``grid``: the shapes to search
    (default: :func:`shortlist_grid`; the full :func:`forecast.model.realistic.launch_grid` gives
    the full search's walls at this path's budgets).  ``screen_keep``: shapes given every
    microbatch candidate at each budget (:func:`_best_fn`; 0: all of them).  ``scan_chunk``:
    the scan's budgets per step, stopping past the latency wall (:func:`_scan`; 0: all at once)."""
    require_x64()
    g = shortlist_grid() if grid is None else grid
    g = LaunchGrid(*(jnp.asarray(x) for x in g))
    chunk = functools.partial(_walls_chunk, keep=int(screen_keep), scan_chunk=int(scan_chunk))
    dm, lat, umax = _by_draw(chunk, hw, a, (jnp.float64(threshold),), g)
    return dm, lat, umax
