"""Fast path of the ``realistic`` regime: both walls for many draws, on a shortlist of shapes.

The full realistic search (:func:`forecast.model.search.find_walls` with ``regime="realistic"``)
ranks every launchable shape of :func:`forecast.model.realistic.launch_grid` (61,880) at 513
budgets: ~10-30 s per accelerator on 2 cores, far too slow for thousands of draws and years.
This path keeps the same plan model, the same microbatch choice per plan
(:func:`forecast.model.realistic._plans_at`) and the same definitions of the walls, and changes
three things:

* **a shortlist of shapes** (:data:`forecast.model.realistic_shortlist.SHAPES`, 979): the fewest
  shapes that reach 99.8 % of the full grid's best plan at every feasible budget of 227
  accelerators, future frontier accelerators and assumptions (``scripts/realistic_shortlist.py``
  writes it and lists them).  The best plan over the shortlist is a plan of the full grid, so the
  fast path's utilization never exceeds the full search's: a missed winner brings the
  data-movement wall earlier (or later, through a lower small-scale maximum) and the latency wall
  earlier.  On 30 conditions the shortlist never saw, both walls are the full search's within
  0.01 dex for 28 and 29 of them (``benchmarks/realistic_fast.py``, BENCHMARKS.md section 6);
* **a screen per budget** (:func:`_evaluators`): every shape exact at its closed-form top
  microbatch count, all nine microbatch candidates only for the :data:`SCREEN_KEEP` shapes that
  rank best two groups above that count (unchecked); every utilization is still an exact plan's,
  and on 2,000 held-out conditions every latency wall and 1,999 data-movement walls are the
  unscreened path's (one 0.07 dex early) at 1.29x its speed (``benchmarks/realistic_screen.py``,
  BENCHMARKS.md section 6);
* **budgets where they matter**: a 0.25-dex scan from 10^20 to 10^40 FLOP (every fifth point of
  the full search's 0.05-dex grid) for the small-scale maximum (refined on the 0.05 grid around
  the scan's best point), the last feasible budget and the first one below the threshold; a
  bisection inside the scan's bracket for the latency wall; for the data-movement wall the
  0.05-dex grid over :data:`DIP_WINDOW_DEX` before the scan's crossing (an earlier grid point
  below the threshold, a dip between scan points, is the crossing the full search reports) and a
  bisection inside the 0.05-dex bracket.

Both walls are read as :func:`forecast.model.search.walls_from_curve` and the refinement of
``find_walls`` read them: the latency wall where the first run of feasible budgets ends, the
data-movement wall where utilization first falls below ``threshold`` times the maximum after the
budget of the maximum.
"""

from __future__ import annotations

import functools
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np

from forecast.config.runtime import require_x64
from forecast.model.cost import shortest_log10_days
from forecast.model.params import SECONDS_PER_DAY, Assumptions, Hardware
from forecast.model.realistic import LaunchGrid, _constants, _microbatch_choice, _plans_at
from forecast.model.realistic_shortlist import SHAPES
from forecast.model.search import UTILIZATION_THRESHOLD

COARSE_LOG10_FLOP = np.round(np.arange(20.0, 40.0001, 0.25), 4)  # 81 budgets
GRID_STEP_DEX = 0.05  # the full search's grid
MAX_REFINE_POINTS = 4  # grid points either side of the scan's best budget
DIP_WINDOW_DEX = 1.2  # grid before the scan's crossing searched for an earlier one
LATENCY_STEPS = 9  # bisection steps in a 0.25-dex bracket: 0.0005 dex
CROSSING_STEPS = 6  # bisection steps in a 0.05-dex bracket: 0.0008 dex
DRAW_CHUNK = 16  # draws per compiled call
SCREEN_KEEP = 64  # shapes given every microbatch candidate per budget (of 979): _evaluators
SCREEN_GROUPS_ABOVE = 2.0  # the screen ranks shapes this many groups above their top count
SCAN_CHUNK = 3  # scan budgets per step, up to the latency wall's bracket (_scan; 81 = 27 x 3)
CARRY_TOP = 3  # shapes carried from each scan budget into the later stages, plus one (_evaluators)


@cache
def shortlist_grid() -> LaunchGrid:
    """The shortlist of launchable shapes (:data:`forecast.model.realistic_shortlist.SHAPES`)."""
    return grid_of(SHAPES)


def grid_of(shapes) -> LaunchGrid:
    """A :class:`LaunchGrid` of rows ``(tp, pp, chunk_layers, two_d, cp, sequences,
    virtual_stages, recompute)``."""
    cols = np.asarray(shapes, dtype=float).reshape(-1, len(LaunchGrid._fields)).T
    g = LaunchGrid(*cols)
    return g._replace(two_d=g.two_d.astype(bool))


def _evaluators(hw: Hardware, a: Assumptions, g: LaunchGrid, keep: int, carry: int):
    """``(full, carried)``: the best plan at a budget over the whole grid and over a few shapes.

    ``full(x) -> (utilization, feasible, winners)`` searches every shape of ``g`` at budget ``x``,
    screened (``keep`` > 0): every shape is evaluated exactly at its closed-form top microbatch
    count and ranked by its utilization :data:`SCREEN_GROUPS_ABOVE` groups above that count
    without the checks (a little above which its best plan lies); the ``keep`` best-ranked shapes
    get all the microbatch candidates of :func:`_plans_at`.  Every utilization returned is an
    exact plan's, so the best never exceeds the unscreened one; ``keep=0``: no screen.
    ``winners``: the indices of the ``carry`` shapes of highest utilization among those given
    every candidate, and the best shape at its top count (``carry + 1`` indices).

    ``carried(x, shapes) -> (utilization, feasible)``: the best plan of the shapes at indices
    ``shapes`` (every microbatch candidate each, no screen): a subset of the grid, so a plan of
    ``full``'s grid, at a fraction of its cost.  Whether a deep pipeline (given by its chunk
    size) is a shape to search is the whole grid's rule (deeper than every pipeline given by its
    stages), not the subset's."""
    constants = _constants(hw, a, g)
    n = g.tp.shape[0]
    per_shape = {k for k, v in constants.items() if jnp.ndim(v) == 1 and v.shape[0] == n}
    deepest_given = jnp.max(g.pp)
    width = max(int(carry), 1) + 1

    def subset(idx):
        sub = LaunchGrid(*(f[idx] for f in g))
        return sub, {k: (v[idx] if k in per_shape else v) for k, v in constants.items()}

    def carried(x, shapes):
        sub, sub_constants = subset(shapes)
        util, _, pp, *_ = _plans_at(hw, a, x, sub, sub_constants)
        util = jnp.where((sub.pp > 0) | (pp > deepest_given), util, 0.0)
        return jnp.max(util), jnp.any(util > 0.0)

    if keep <= 0 or keep >= n:

        def full_all(x):
            util, ok, *_ = _plans_at(hw, a, x, g, constants)
            return jnp.max(util), jnp.any(ok), jax.lax.top_k(util, width)[1]

        return full_all, carried

    def full(x):
        c = _microbatch_choice(hw, a, x, g, constants)
        at_top = c.at_microbatches(c.top)[0]
        above = jnp.minimum(c.top + SCREEN_GROUPS_ABOVE * c.unit, c.batch_microbatches)
        rank = c.at_microbatches(above, checked=False)[0]
        idx = jax.lax.top_k(rank, keep)[1]
        sub, sub_constants = subset(idx)
        # a deep pipeline of the full grid is a shape to search only if deeper than every pipeline
        # given by its stages: the full grid's mask, not the subset's, decides
        util = jnp.where(c.ok[idx], _plans_at(hw, a, x, sub, sub_constants)[0], 0.0)
        winners = jnp.concatenate(
            [idx[jax.lax.top_k(util, width - 1)[1]], jnp.argmax(at_top)[None]]
        )
        best = jnp.maximum(jnp.max(at_top), jnp.max(util))
        return best, jnp.any(at_top > 0) | jnp.any(util > 0), winners

    return full, carried


def _scan(full, coarse, scan_chunk: int):
    """``full`` at the scan's budgets: (utilization, feasible, winners) per budget.

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
        return jax.vmap(full)(coarse)
    chunks = coarse.reshape(-1, scan_chunk)
    idx = jnp.arange(n)
    winners = jax.eval_shape(full, coarse[0])[2]

    def more(state):
        k, *_, done = state
        return (k < chunks.shape[0]) & ~done

    def step(state):
        k, u, ok, win, _ = state
        uc, okc, winc = jax.vmap(full)(chunks[k])
        u = jax.lax.dynamic_update_slice(u, uc, (k * scan_chunk,))
        ok = jax.lax.dynamic_update_slice(ok, okc, (k * scan_chunk,))
        win = jax.lax.dynamic_update_slice(win, winc, (k * scan_chunk, jnp.zeros_like(k)))
        seen = idx < (k + 1) * scan_chunk
        first_ok = jnp.min(jnp.where(ok, idx, n))
        done = jnp.any(seen & ~ok & (idx > first_ok))
        return k + 1, u, ok, win, done

    start = (
        jnp.int32(0),
        jnp.zeros(n),
        jnp.zeros(n, dtype=bool),
        jnp.zeros((n, winners.shape[0]), dtype=winners.dtype),
        jnp.bool_(False),
    )
    _, u, ok, win, _ = jax.lax.while_loop(more, step, start)
    return u, ok, win


def _bisect(decide, lo, hi, steps):
    """``steps`` bisections of ``[lo, hi]``: ``decide(mid)`` True moves ``hi`` to ``mid``."""

    def step(_, b):
        lo, hi = b
        mid = 0.5 * (lo + hi)
        d = decide(mid)
        return jnp.where(d, lo, mid), jnp.where(d, mid, hi)

    return jax.lax.fori_loop(0, steps, step, (lo, hi))


def _confirmed(carried_result, check, full_result):
    """``carried_result`` (a tuple) where ``check`` holds, else ``full_result()`` (computed only
    then: :func:`_walls_one` runs per draw under ``lax.map``, so ``lax.cond`` takes one branch)."""
    return jax.lax.cond(check, lambda: carried_result, full_result)


def _walls_one(
    hw: Hardware,
    a: Assumptions,
    g: LaunchGrid,
    threshold,
    keep: int = SCREEN_KEEP,
    scan_chunk: int = SCAN_CHUNK,
    carry: int = CARRY_TOP,
):
    """(data-movement wall, latency wall, max utilization) of one draw (scalars in hw, a).

    ``carry`` > 0: the stages after the scan (refinement of the maximum, latency bisection, dip
    window, crossing bisection) search only the shapes that won at the scan budgets around them
    (``carry + 1`` per budget), and each decision that places a wall is confirmed on the whole
    grid (the latency bracket's infeasible end, the first dip, the crossing bracket's end below
    the level); where a confirmation fails, that stage is searched again on the whole grid.
    ``carry`` 0: every stage on the whole grid."""
    full, carried = _evaluators(hw, a, g, keep, carry)

    def full_u(x):
        return full(x)[0]

    def full_ok(x):
        return full(x)[1]

    coarse = jnp.asarray(COARSE_LOG10_FLOP)
    n = coarse.size
    u, ok, win = _scan(full, coarse, scan_chunk)
    idx = jnp.arange(n)

    def shapes_at(scan_indices):
        return win[jnp.clip(jnp.asarray(scan_indices), 0, n - 1)].reshape(-1)

    def carried_u(shapes):
        return lambda x: carried(x, shapes)[0]

    def carried_ok(shapes):
        return lambda x: carried(x, shapes)[1]

    i_best = jnp.argmax(u)
    offsets = GRID_STEP_DEX * jnp.arange(-MAX_REFINE_POINTS, MAX_REFINE_POINTS + 1)
    near = jnp.clip(coarse[i_best] + offsets, coarse[0], coarse[-1])
    if carry > 0:
        u_near = jax.vmap(carried_u(shapes_at(i_best + jnp.arange(-1, 2))))(near)
    else:
        u_near = jax.vmap(full_u)(near)
    u_max = jnp.maximum(u[i_best], jnp.max(u_near))
    x_best = jnp.where(jnp.max(u_near) > u[i_best], near[jnp.argmax(u_near)], coarse[i_best])

    # latency wall: the end of the first run of feasible budgets
    first_ok = jnp.min(jnp.where(ok, idx, n))
    first_bad = jnp.min(jnp.where((~ok) & (idx > first_ok), idx, n))
    k = jnp.clip(first_bad, 1, n - 1)

    def infeasible(oracle):
        return lambda x: ~oracle(x)

    def latency_full():
        return _bisect(infeasible(full_ok), coarse[k - 1], coarse[k], LATENCY_STEPS)

    if carry > 0:
        lo, hi = _bisect(
            infeasible(carried_ok(shapes_at(k - 1 + jnp.arange(-1, 1)))),
            coarse[k - 1],
            coarse[k],
            LATENCY_STEPS,
        )
        lo, hi = _confirmed((lo, hi), ~full_ok(hi) | (hi >= coarse[k]), latency_full)
    else:
        lo, hi = latency_full()
    lat = 0.5 * (lo + hi)
    lat = jnp.where(first_bad >= n, jnp.inf, lat)
    lat = jnp.where(first_ok >= n, -jnp.inf, lat)

    # data-movement wall: the first budget after the maximum below the threshold
    level = threshold * u_max
    below = (u < level) & (coarse > x_best)
    j = jnp.min(jnp.where(below, idx, n))
    x_scan = coarse[jnp.clip(j, 0, n - 1)]
    w = int(round(DIP_WINDOW_DEX / GRID_STEP_DEX))
    window = x_scan - GRID_STEP_DEX * jnp.arange(w, 0, -1)  # grid points before the crossing
    steps_back = int(np.ceil(DIP_WINDOW_DEX / (COARSE_LOG10_FLOP[1] - COARSE_LOG10_FLOP[0])))
    crossing_shapes = shapes_at(j - jnp.arange(steps_back, -1, -1))

    def first_dip(u_win):
        dip = (u_win < level) & (window > x_best)
        return jnp.min(jnp.where(dip, jnp.arange(w), w))

    def dip_full():
        return (first_dip(jax.vmap(full_u)(window)),)

    if carry > 0:
        (first,) = (first_dip(jax.vmap(carried_u(crossing_shapes))(window)),)
        at = window[jnp.clip(first, 0, w - 1)]
        (first,) = _confirmed((first,), (first >= w) | (full_u(at) < level), dip_full)
    else:
        (first,) = dip_full()
    hi = jnp.where(first < w, window[jnp.clip(first, 0, w - 1)], x_scan)

    def under(oracle):
        return lambda x: oracle(x) < level

    def crossing_full():
        return _bisect(under(full_u), hi - GRID_STEP_DEX, hi, CROSSING_STEPS)

    if carry > 0:
        c_lo, c_hi = _bisect(
            under(carried_u(crossing_shapes)), hi - GRID_STEP_DEX, hi, CROSSING_STEPS
        )
        c_lo, c_hi = _confirmed((c_lo, c_hi), (c_hi >= hi) | (full_u(c_hi) < level), crossing_full)
    else:
        c_lo, c_hi = crossing_full()
    dm = 0.5 * (c_lo + c_hi)
    dm = jnp.where(j >= n, jnp.inf, dm)
    dm = jnp.where(u_max > 0.0, dm, -jnp.inf)
    return dm, lat, u_max


@functools.partial(jax.jit, static_argnames=("keep", "scan_chunk", "carry"))
def _walls_chunk(
    hw: Hardware,
    a: Assumptions,
    threshold,
    g: LaunchGrid,
    keep: int = SCREEN_KEEP,
    scan_chunk: int = SCAN_CHUNK,
    carry: int = CARRY_TOP,
):
    return jax.lax.map(
        lambda z: _walls_one(z[0], z[1], g, z[2], keep, scan_chunk, carry), (hw, a, threshold)
    )


def fast_realistic_walls(
    hw: Hardware,
    a: Assumptions,
    threshold: float = UTILIZATION_THRESHOLD,
    grid: LaunchGrid | None = None,
    screen_keep: int = SCREEN_KEEP,
    scan_chunk: int = SCAN_CHUNK,
    carry: int = CARRY_TOP,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both walls (log10 FLOP) and the small-scale maximum utilization per draw, realistic plans.

    ``hw`` and ``a``: fields broadcast to one shape (the draws); returns arrays of that shape:
    ``(data_movement_wall, latency_wall, max_utilization)``.  ``grid``: the shapes to search
    (default: :func:`shortlist_grid`; the full :func:`forecast.model.realistic.launch_grid` gives
    the full search's walls at this path's budgets).  ``screen_keep``: shapes given every
    microbatch candidate at each budget (:func:`_evaluators`; 0: all of them).  ``scan_chunk``:
    the scan's budgets per step, stopping past the latency wall (:func:`_scan`; 0: all at once).
    ``carry``: shapes carried from each scan budget into the later stages, whose decisions are
    confirmed on the whole grid (:func:`_walls_one`; 0: every stage on the whole grid)."""
    require_x64()
    g = shortlist_grid() if grid is None else grid
    g = LaunchGrid(*(jnp.asarray(x) for x in g))
    chunk = functools.partial(
        _walls_chunk, keep=int(screen_keep), scan_chunk=int(scan_chunk), carry=int(carry)
    )
    dm, lat, umax = _by_draw(chunk, hw, a, (jnp.float64(threshold),), g)
    return dm, lat, umax


MIN_RUN_STEPS = 24  # bisection steps on log10 days: 8 dex / 2^24 = 5e-7 dex


def _cost_one(hw: Hardware, a: Assumptions, log10_flop, g: LaunchGrid):
    """(best utilization at ``log10_flop``, log10 of the shortest feasible run in days)."""
    constants = _constants(hw, a, g)  # independent of the run's length
    util, _, *_ = _plans_at(hw, a, log10_flop, g, constants)

    def feasible(log10_days):
        run = a._replace(duration_s=10.0**log10_days * SECONDS_PER_DAY)
        return jnp.any(_plans_at(hw, run, log10_flop, g, constants)[1])

    days = shortest_log10_days(feasible, (), MIN_RUN_STEPS)
    return jnp.max(util), days


@jax.jit
def _cost_chunk(hw: Hardware, a: Assumptions, log10_flop, g: LaunchGrid):
    return jax.lax.map(lambda z: _cost_one(z[0], z[1], z[2], g), (hw, a, log10_flop))


def fast_realistic_cost(
    hw: Hardware, a: Assumptions, log10_flop, grid: LaunchGrid | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """What a run of ``log10_flop`` costs in the realistic regime, per draw: the best plan's
    utilization (0: infeasible) and the shortest run (days) in which any plan trains it at all
    (the latency wall inverted in duration; 0: feasible in a thousandth of a day, +inf: not in
    1e5 days: :data:`forecast.model.cost.MIN_RUN_DAYS_RANGE`).  As
    :func:`forecast.model.cost.best_utilization` and
    :func:`~forecast.model.cost.min_run_days` do for the paper regime."""
    require_x64()
    g = shortlist_grid() if grid is None else grid
    g = LaunchGrid(*(jnp.asarray(x) for x in g))
    util, log10_days = _by_draw(_cost_chunk, hw, a, (log10_flop,), g)
    with np.errstate(over="ignore"):
        days = np.where(np.isneginf(log10_days), 0.0, 10.0**log10_days)
    return util, days


def _utilization_one(hw: Hardware, a: Assumptions, log10_flop, g: LaunchGrid):
    """(best utilization at ``log10_flop``,): the first half of :func:`_cost_one`."""
    return (jnp.max(_plans_at(hw, a, log10_flop, g, _constants(hw, a, g))[0]),)


@jax.jit
def _utilization_chunk(hw: Hardware, a: Assumptions, log10_flop, g: LaunchGrid):
    return jax.lax.map(lambda z: _utilization_one(z[0], z[1], z[2], g), (hw, a, log10_flop))


def fast_realistic_utilization(
    hw: Hardware, a: Assumptions, log10_flop, grid: LaunchGrid | None = None
) -> np.ndarray:
    """The best launchable plan's utilization (0: infeasible) per draw at ``log10_flop``: the
    utilization of :func:`fast_realistic_cost` without the shortest run's bisection (the
    utilization curves: 1/25 of the cost's time)."""
    require_x64()
    g = shortlist_grid() if grid is None else grid
    g = LaunchGrid(*(jnp.asarray(x) for x in g))
    (util,) = _by_draw(_utilization_chunk, hw, a, (log10_flop,), g)
    return util


def _by_draw(fn, hw: Hardware, a: Assumptions, extra: tuple, g: LaunchGrid) -> list[np.ndarray]:
    """``fn(hw, a, *extra, g)`` over the broadcast shape of every input, ``DRAW_CHUNK`` draws a
    compiled call (the last chunk padded), reshaped back."""
    fields = [np.asarray(x, dtype=np.float64) for x in (*hw, *a, *extra)]
    shape = np.broadcast_shapes(*(f.shape for f in fields))
    flat = [np.broadcast_to(f, shape).reshape(-1) for f in fields]
    size = flat[0].size
    nh, na = len(Hardware._fields), len(Assumptions._fields)
    out = []
    for start in range(0, size, DRAW_CHUNK):
        part = [f[start : start + DRAW_CHUNK] for f in flat]
        pad = DRAW_CHUNK - part[0].size
        part = [jnp.asarray(np.pad(p, (0, pad), mode="edge")) for p in part]
        res = fn(Hardware(*part[:nh]), Assumptions(*part[nh : nh + na]), *part[nh + na :], g)
        out.append([np.asarray(r)[: DRAW_CHUNK - pad] for r in res])
    return [np.concatenate(c).reshape(shape) for c in zip(*out, strict=True)]
