"""Fast path of the ``realistic`` regime: both walls for many draws, on a shortlist of shapes.

The full realistic search (:func:`forecast.model.search.find_walls` with ``regime="realistic"``)
ranks every launchable shape of :func:`forecast.model.realistic.launch_grid` (61,880) at 513
budgets: ~10-30 s per accelerator on 2 cores, far too slow for thousands of draws and years.
This path keeps the same plan model, the same microbatch choice per plan
(:func:`forecast.model.realistic._plans_at`) and the same definitions of the walls, and changes
four things:

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
  BENCHMARKS.md section 6).  The best-ranked are picked through float32
  (:func:`forecast.model.fast.top_k_indices`): exactly ``top_k``'s, at 1.2-1.3x the walls' speed
  (``benchmarks/realistic_top_k.py``);
* **budgets where they matter**: a 0.25-dex scan from 10^20 to 10^40 FLOP (every fifth point of
  the full search's 0.05-dex grid) for the small-scale maximum (refined on the 0.05 grid around
  the scan's best point), the last feasible budget and the first one below the threshold; a
  bisection inside the scan's bracket for the latency wall; for the data-movement wall the
  0.05-dex grid over :data:`DIP_WINDOW_DEX` before the scan's crossing (an earlier grid point
  below the threshold, a dip between scan points, is the crossing the full search reports) and a
  bisection inside the 0.05-dex bracket;
* **the whole shortlist only where a wall's place depends on it** (issue 23, :func:`_walls_one`):
  the scan searches all 979 shapes at every second budget (the anchors) and, between them, the
  four that won at the anchors either side; every budget a reading of the scan rests on (the
  first infeasible one, the first below the threshold, the best one and those either side of it
  and of the two best anchors, every one below the first feasible one) is searched again on the
  whole shortlist until none is left that was not.  The stages after the scan search the shapes
  that won around them; a bisection step or dip they call infeasible or below the level is
  checked on the whole shortlist (a plan of a subset is a plan of the whole, so "feasible" and
  "above" need no check, except that the screen can miss a plan a carried shape holds:
  :func:`_unless`).  On 2,000 held-out conditions every wall is the one the whole shortlist at
  every budget gives, bit for bit (measured, not guaranteed; the small-scale maximum, read on
  carried shapes, differs in 1.3 %, by up to 1.5 %), at 1.7-2.0x its speed
  (``benchmarks/realistic_carry.py``, BENCHMARKS.md section 6).

Both walls are read as :func:`forecast.model.search.walls_from_curve` and the refinement of
``find_walls`` read them: the latency wall where the first run of feasible budgets ends, the
data-movement wall where utilization first falls below ``threshold`` times the maximum after the
budget of the maximum.

One concept: the realistic regime's walls and costs for many draws, on the shortlist.
"""

from __future__ import annotations

import functools
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np

from forecast.config.runtime import require_x64
from forecast.model.cost import MIN_RUN_DAYS_RANGE, shortest_log10_days
from forecast.model.fast import _bisect_bounds, in_draw_chunks, top_k_indices
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
SCAN_FULL_EVERY = 2  # the scan searches the whole grid at every 2nd budget (_sparse_scan)
REFINE_KEEP = 32  # best-ranked shapes of the scan's best budget the refinement carries
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


def _subset(g: LaunchGrid, constants: dict, idx) -> tuple[LaunchGrid, dict]:
    """The shapes of ``g`` at indices ``idx`` and their entries of :func:`_constants`."""
    n = g.tp.shape[0]
    sub = LaunchGrid(*(f[idx] for f in g))
    return sub, {
        k: (v[idx] if jnp.ndim(v) == 1 and v.shape[0] == n else v) for k, v in constants.items()
    }


def _subset_best(hw: Hardware, a: Assumptions, x, g: LaunchGrid, sub: LaunchGrid, constants):
    """(utilization, feasible) of the best plan of the shapes ``sub`` of ``g`` at budget ``x``,
    every microbatch candidate each: whether a deep pipeline (given by its chunk size) is a
    shape to search is the whole grid's rule (deeper than every pipeline of ``g`` given by its
    stages), not the subset's."""
    util, _, pp, *_ = _plans_at(hw, a, x, sub, constants)
    util = jnp.where((sub.pp > 0) | (pp > jnp.max(g.pp)), util, 0.0)
    return jnp.max(util), jnp.any(util > 0.0)


def _evaluators(
    hw: Hardware,
    a: Assumptions,
    g: LaunchGrid,
    keep: int,
    carry: int,
    float32_selection: bool = True,
):
    """``(full, full_many, carried)``: the best plan at a budget over the whole grid, the same at
    many budgets side by side, and the best over a few shapes.

    ``full(x) -> (utilization, feasible, winners)`` searches every shape of ``g`` at budget ``x``,
    screened (``keep`` > 0): every shape is evaluated exactly at its closed-form top microbatch
    count and ranked by its utilization :data:`SCREEN_GROUPS_ABOVE` groups above that count
    without the checks (a little above which its best plan lies); the ``keep`` best-ranked shapes
    get all the microbatch candidates of :func:`_plans_at`.  Every utilization returned is an
    exact plan's, so the best never exceeds the unscreened one; ``keep=0``: no screen.
    ``winners``: the indices of the ``carry`` shapes of highest utilization among those given
    every candidate and of the best shape at its top count (``carry + 1``), then of the
    :data:`REFINE_KEEP` best-ranked shapes (the refinement of the maximum carries those).
    ``full_many(xs)``: ``full`` at each budget of ``xs`` (1-D), vectorized, its ``keep`` best
    ranked picked for all budgets at once (:func:`forecast.model.fast.top_k_indices`, exactly
    ``top_k``'s, whose check must run outside ``vmap`` to pay; ``float32_selection`` False:
    ``jax.lax.top_k`` itself, the path before).

    ``carried(x, shapes) -> (utilization, feasible)``: the best plan of the shapes at indices
    ``shapes`` (every microbatch candidate each, no screen): a subset of the grid, so a plan of
    ``full``'s grid, at a fraction of its cost.  Whether a deep pipeline (given by its chunk
    size) is a shape to search is the whole grid's rule (deeper than every pipeline given by its
    stages), not the subset's."""
    constants = _constants(hw, a, g)
    n = g.tp.shape[0]
    width = max(int(carry), 1) + 1
    if float32_selection:
        select = top_k_indices
    else:

        def select(values, k):
            return jax.lax.top_k(values, k)[1]

    def subset(idx):
        return _subset(g, constants, idx)

    def carried(x, shapes):
        return _subset_best(hw, a, x, g, *subset(shapes))

    if keep <= 0 or keep >= n:

        def full_all(x):
            util, ok, *_ = _plans_at(hw, a, x, g, constants)
            return jnp.max(util), jnp.any(ok), jax.lax.top_k(util, width + REFINE_KEEP)[1]

        return full_all, jax.vmap(full_all), carried

    def screen(x):
        """Every shape exact at its top count, and its rank (utilization above that count)."""
        c = _microbatch_choice(hw, a, x, g, constants)
        at_top = c.at_microbatches(c.top)[0]
        above = jnp.minimum(c.top + SCREEN_GROUPS_ABOVE * c.unit, c.batch_microbatches)
        rank = c.at_microbatches(above, checked=False)[0]
        return c.ok, at_top, rank

    def finish(x, shape_ok, at_top, idx):
        """The best plan, given the ``keep`` best-ranked shapes ``idx``."""
        sub, sub_constants = subset(idx)
        # a deep pipeline of the full grid is a shape to search only if deeper than every pipeline
        # given by its stages: the full grid's mask, not the subset's, decides
        util = jnp.where(shape_ok[idx], _plans_at(hw, a, x, sub, sub_constants)[0], 0.0)
        winners = jnp.concatenate(
            [idx[jax.lax.top_k(util, width - 1)[1]], jnp.argmax(at_top)[None], idx[:REFINE_KEEP]]
        )
        best = jnp.maximum(jnp.max(at_top), jnp.max(util))
        return best, jnp.any(at_top > 0) | jnp.any(util > 0), winners

    def full(x):
        shape_ok, at_top, rank = screen(x)
        return finish(x, shape_ok, at_top, select(rank, keep))

    def full_many(xs):
        shape_ok, at_top, rank = jax.vmap(screen)(xs)
        return jax.vmap(finish)(xs, shape_ok, at_top, select(rank, keep))

    return full, full_many, carried


def _scan(full_many, coarse, scan_chunk: int):
    """``full_many`` (:func:`_evaluators`) at the scan's budgets: (utilization, feasible,
    winners) per budget.

    ``scan_chunk`` > 0: in chunks of that many budgets from the bottom, stopping after the chunk
    that holds the first infeasible budget past a feasible one (the latency wall's bracket); the
    budgets above it are left as infeasible (utilization 0). Every reading of the scan in
    :func:`_walls_one` stops at that budget (the latency bracket; the first budget below the
    threshold, which an infeasible budget is), so the walls are those of the whole scan; the
    small-scale maximum is the largest utilization before the latency wall (the whole scan's
    unless a run of feasible budgets came back above the wall with a higher utilization, which no
    plan model here does). ``scan_chunk`` 0: every budget at once."""
    n = coarse.size
    if scan_chunk <= 0:
        return full_many(coarse)
    if n % scan_chunk:  # pad with the top budget to whole chunks, trim after
        pad = scan_chunk - n % scan_chunk
        u, ok, win = _scan(
            full_many, jnp.concatenate([coarse, jnp.repeat(coarse[-1:], pad)]), scan_chunk
        )
        return u[:n], ok[:n], win[:n]
    chunks = coarse.reshape(-1, scan_chunk)
    idx = jnp.arange(n)
    winners = jax.eval_shape(full_many, coarse[:1])[2]

    def more(state):
        k, *_, done = state
        return (k < chunks.shape[0]) & ~done

    def step(state):
        k, u, ok, win, _ = state
        uc, okc, winc = full_many(chunks[k])
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
        jnp.zeros((n, winners.shape[1]), dtype=winners.dtype),
        jnp.bool_(False),
    )
    _, u, ok, win, _ = jax.lax.while_loop(more, step, start)
    return u, ok, win


def _sparse_scan(full_many, carried, coarse, every: int, scan_chunk: int, carried_width: int):
    """The scan with ``full_many`` at every ``every``-th budget only (the anchors, from the bottom,
    stopping past the latency wall's bracket as :func:`_scan`) and ``carried`` between them on
    the two neighbouring anchors' winners: ``(utilization, feasible, winners, exact)`` per
    budget, ``exact`` where the value is ``full``'s (the anchors, and the budgets past the first
    infeasible anchor, which the scan leaves infeasible as :func:`_scan` does).  The caller
    confirms the budgets its decisions rest on (:func:`_patched`)."""
    n = coarse.size
    anchors = np.arange(0, n, every)
    between = np.setdiff1d(np.arange(n), anchors)
    left = jnp.asarray(between // every)
    ua, oka, wina = _scan(full_many, coarse[anchors], scan_chunk)
    shapes = jnp.concatenate([wina[left, :carried_width], wina[left + 1, :carried_width]], axis=-1)
    ub, okb = jax.vmap(carried)(coarse[between], shapes)
    u = jnp.zeros(n).at[anchors].set(ua).at[between].set(ub)
    ok = jnp.zeros(n, dtype=bool).at[anchors].set(oka).at[between].set(okb)
    win = jnp.zeros((n, wina.shape[1]), dtype=wina.dtype).at[anchors].set(wina)
    win = win.at[between].set(wina[left])
    k = jnp.arange(anchors.size)
    first_ok = jnp.min(jnp.where(oka, k, anchors.size))
    stop = jnp.min(jnp.where(~oka & (k > first_ok), k, anchors.size))
    past = jnp.arange(n) > jnp.where(stop < anchors.size, stop * every, n)
    u = jnp.where(past, 0.0, u)
    ok = ok & ~past
    exact = jnp.zeros(n, dtype=bool).at[anchors].set(True) | past
    return u, ok, win, exact


def _patched(full, coarse, state, decisive):
    """``state`` (utilization, feasible, winners, exact per budget) with ``full`` evaluated at
    the budget ``decisive(state)`` names while it names one that is not exact (-1: none); each
    budget is made exact at most once, so the loop ends within the scan's budgets."""

    def patch(state):
        u, ok, win, exact = state
        i = decisive(state)
        ui, oki, wi = full(coarse[i])
        return u.at[i].set(ui), ok.at[i].set(oki), win.at[i].set(wi), exact.at[i].set(True)

    return jax.lax.while_loop(lambda state: decisive(state) >= 0, patch, state)


def _first_inexact(candidates, exact):
    """The first of ``candidates`` (indices; out of range: none) whose budget is not exact, -1 if
    none."""
    n = exact.shape[0]
    candidates = jnp.asarray(candidates)
    inside = (candidates >= 0) & (candidates < n)
    bad = inside & ~exact[jnp.clip(candidates, 0, n - 1)]
    return jnp.where(jnp.any(bad), candidates[jnp.argmax(bad)], -1)


def _unless(sure, full_predicate):
    """A predicate that is ``sure(x)`` where that holds and ``full_predicate(x)`` otherwise, the
    latter computed only then (per draw under ``lax.map``, so ``lax.cond`` takes one branch).

    For a predicate a plan proves (feasible, at or above a level), a carried "yes" is an exact
    plan's, so the unscreened whole grid says yes too; the screened whole grid (every microbatch
    candidate only for its 64 best-ranked shapes) can miss that plan and say no, where a carried
    shape given every candidate does not.  So the steps are the screened grid's except where its
    screen misses a plan the carried shapes hold (then they are the unscreened grid's): measured,
    not guaranteed, identical (2,000 of 2,000 held-out conditions, BENCHMARKS.md section 6)."""
    return lambda x: jax.lax.cond(sure(x), lambda: jnp.bool_(True), lambda: full_predicate(x))


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
    every: int = SCAN_FULL_EVERY,
    float32_selection: bool = True,
):
    """(data-movement wall, latency wall, max utilization) of one draw (scalars in hw, a).

    ``carry`` > 0 (and ``every`` > 1): the scan searches the whole grid at every ``every``-th
    budget and the neighbours' winners between (:func:`_sparse_scan`), then the whole grid again
    at every budget its readings rest on (:func:`_patched`); the stages after it (refinement of
    the maximum, latency bisection, dip window, crossing bisection) search the shapes that won at
    the scan budgets around them (``carry + 1`` per budget, the refinement also the best budget's
    :data:`REFINE_KEEP` best-ranked), every bisection step they call infeasible or below the
    level checked on the whole grid (:func:`_unless`) and the first dip confirmed on it (else
    the window searched again on it: :func:`_confirmed`).  The small-scale maximum is read on
    carried shapes.  ``carry`` 0: every budget on the whole grid."""
    full, full_many, carried = _evaluators(hw, a, g, keep, carry, float32_selection)

    def full_u(x):
        return full(x)[0]

    def full_ok(x):
        return full(x)[1]

    coarse = jnp.asarray(COARSE_LOG10_FLOP)
    n = coarse.size
    idx = jnp.arange(n)
    sparse = carry > 0 and every > 1
    anchors = np.arange(0, n, every)
    if sparse:
        state = _sparse_scan(full_many, carried, coarse, every, scan_chunk, carry + 1)

        def scan_reading(state):  # the latency bracket and the maximum: budgets to confirm
            u, ok, _, exact = state
            first_ok = jnp.min(jnp.where(ok, idx, n))
            first_bad = jnp.min(jnp.where((~ok) & (idx > first_ok), idx, n))
            i_best = jnp.argmax(u)
            # the curve is jagged near its maximum (whole layers, heads and microbatches): the
            # budgets either side of the two best anchors as well as of the best budget
            top = jnp.asarray(anchors)[jax.lax.top_k(u[anchors], 2)[1]]
            # every budget below the first feasible one: a feasible run between anchors that
            # are not (the carried shapes there are the winners of infeasible anchors)
            below_first = jnp.where(idx < first_ok, idx, -1)
            return _first_inexact(
                jnp.concatenate(
                    [
                        below_first,
                        jnp.stack([first_bad, i_best - 1, i_best, i_best + 1]),
                        top - 1,
                        top + 1,
                    ]
                ),
                exact,
            )

        state = _patched(full, coarse, state, scan_reading)
        u, ok, win, exact = state
    else:
        u, ok, win = _scan(full_many, coarse, scan_chunk)

    def shapes_at(scan_indices):
        return win[jnp.clip(jnp.asarray(scan_indices), 0, n - 1), : carry + 1].reshape(-1)

    def carried_u(shapes):
        return lambda x: carried(x, shapes)[0]

    def carried_ok(shapes):
        return lambda x: carried(x, shapes)[1]

    i_best = jnp.argmax(u)
    offsets = GRID_STEP_DEX * jnp.arange(-MAX_REFINE_POINTS, MAX_REFINE_POINTS + 1)
    near = jnp.clip(coarse[i_best] + offsets, coarse[0], coarse[-1])
    if carry > 0:
        # the best-ranked shapes at the scan's best budget, the winners either side of it
        around = jnp.concatenate([win[i_best], shapes_at(i_best + jnp.array([-1, 1]))])
        u_near = jax.vmap(carried_u(around))(near)
    else:
        u_near = full_many(near)[0]
    u_max = jnp.maximum(u[i_best], jnp.max(u_near))
    x_best = jnp.where(jnp.max(u_near) > u[i_best], near[jnp.argmax(u_near)], coarse[i_best])

    # latency wall: the end of the first run of feasible budgets
    first_ok = jnp.min(jnp.where(ok, idx, n))
    first_bad = jnp.min(jnp.where((~ok) & (idx > first_ok), idx, n))
    k = jnp.clip(first_bad, 1, n - 1)

    feasible = full_ok
    if carry > 0:
        feasible = _unless(carried_ok(shapes_at(k - 1 + jnp.arange(-1, 1))), full_ok)
    lo, hi = _bisect_bounds(feasible, coarse[k - 1], coarse[k], LATENCY_STEPS)
    lat = 0.5 * (lo + hi)
    lat = jnp.where(first_bad >= n, jnp.inf, lat)
    lat = jnp.where(first_ok >= n, -jnp.inf, lat)

    # data-movement wall: the first budget after the maximum below the threshold
    level = threshold * u_max

    def first_below(u):
        return jnp.min(jnp.where((u < level) & (coarse > x_best), idx, n))

    if sparse:
        state = _patched(
            full,
            coarse,
            (u, ok, win, exact),
            lambda st: _first_inexact(first_below(st[0])[None], st[3]),
        )
        u, ok, win, exact = state
    j = first_below(u)
    x_scan = coarse[jnp.clip(j, 0, n - 1)]
    w = int(round(DIP_WINDOW_DEX / GRID_STEP_DEX))
    window = x_scan - GRID_STEP_DEX * jnp.arange(w, 0, -1)  # grid points before the crossing
    steps_back = int(np.ceil(DIP_WINDOW_DEX / (COARSE_LOG10_FLOP[1] - COARSE_LOG10_FLOP[0])))
    crossing_shapes = shapes_at(j - jnp.arange(steps_back, -1, -1))

    def first_dip(u_win):
        dip = (u_win < level) & (window > x_best)
        return jnp.min(jnp.where(dip, jnp.arange(w), w))

    def dip_full():
        return (first_dip(full_many(window)[0]),)

    if carry > 0:
        (first,) = (first_dip(jax.vmap(carried_u(crossing_shapes))(window)),)
        at = window[jnp.clip(first, 0, w - 1)]
        confirmed = jax.lax.cond(first >= w, lambda: jnp.bool_(True), lambda: full_u(at) < level)
        (first,) = _confirmed((first,), confirmed, dip_full)
    else:
        (first,) = dip_full()
    hi = jnp.where(first < w, window[jnp.clip(first, 0, w - 1)], x_scan)

    def above(x):
        return full_u(x) >= level

    if carry > 0:
        above = _unless(lambda x: carried_u(crossing_shapes)(x) >= level, above)
    c_lo, c_hi = _bisect_bounds(above, hi - GRID_STEP_DEX, hi, CROSSING_STEPS)
    dm = 0.5 * (c_lo + c_hi)
    dm = jnp.where(j >= n, jnp.inf, dm)
    dm = jnp.where(u_max > 0.0, dm, -jnp.inf)
    return dm, lat, u_max


@functools.partial(
    jax.jit, static_argnames=("keep", "scan_chunk", "carry", "every", "float32_selection")
)
def _walls_chunk(
    hw: Hardware,
    a: Assumptions,
    threshold,
    g: LaunchGrid,
    keep: int = SCREEN_KEEP,
    scan_chunk: int = SCAN_CHUNK,
    carry: int = CARRY_TOP,
    every: int = SCAN_FULL_EVERY,
    float32_selection: bool = True,
):
    return jax.lax.map(
        lambda z: _walls_one(
            z[0], z[1], g, z[2], keep, scan_chunk, carry, every, float32_selection
        ),
        (hw, a, threshold),
    )


def fast_realistic_walls(
    hw: Hardware,
    a: Assumptions,
    threshold: float = UTILIZATION_THRESHOLD,
    grid: LaunchGrid | None = None,
    screen_keep: int = SCREEN_KEEP,
    scan_chunk: int = SCAN_CHUNK,
    carry: int = CARRY_TOP,
    scan_full_every: int = SCAN_FULL_EVERY,
    float32_selection: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both walls (log10 FLOP) and the small-scale maximum utilization per draw, realistic plans.

    ``hw`` and ``a``: fields broadcast to one shape (the draws); returns arrays of that shape:
    ``(data_movement_wall, latency_wall, max_utilization)``.  ``grid``: the shapes to search
    (default: :func:`shortlist_grid`; the full :func:`forecast.model.realistic.launch_grid` gives
    the full search's walls at this path's budgets).  ``screen_keep``: shapes given every
    microbatch candidate at each budget (:func:`_evaluators`; 0: all of them).  ``scan_chunk``:
    the scan's budgets per step, stopping past the latency wall (:func:`_scan`; 0: all at once).
    ``carry``: shapes carried from each scan budget into the later stages, whose decisions are
    confirmed on the whole grid (:func:`_walls_one`; 0: every stage on the whole grid).
    ``float32_selection``: pick each budget's best-ranked shapes through float32, exactly
    ``top_k``'s at a fraction of its cost (:func:`forecast.model.fast.top_k_indices`; False:
    ``jax.lax.top_k``, the path before; the walls are the same either way)."""
    require_x64()
    g = shortlist_grid() if grid is None else grid
    g = LaunchGrid(*(jnp.asarray(x) for x in g))
    chunk = functools.partial(
        _walls_chunk,
        keep=int(screen_keep),
        scan_chunk=int(scan_chunk),
        carry=int(carry),
        every=int(scan_full_every),
        float32_selection=bool(float32_selection),
    )
    dm, lat, umax = _by_draw(chunk, hw, a, (jnp.float64(threshold),), g)
    return dm, lat, umax


MIN_RUN_STEPS = 24  # bisection steps on log10 days: 8 dex / 2^24 = 5e-7 dex
COST_CARRY = 32  # shapes the shortest run's last steps are bisected on (_cost_one)
COST_GRID_STEPS = 6  # its first steps, on the whole grid: 8 dex / 2^6 = 0.125 dex


def _cost_one(
    hw: Hardware,
    a: Assumptions,
    log10_flop,
    g: LaunchGrid,
    carry: int = COST_CARRY,
    check_every_step: bool = False,
):
    """(best utilization at ``log10_flop``, log10 of the shortest feasible run in days).

    The shortest run is bisected on log10 days as :func:`forecast.model.cost.shortest_log10_days`
    does.  ``carry`` > 0: the first :data:`COST_GRID_STEPS` steps on the whole grid, the rest on
    the ``carry`` best shapes at the bracket's feasible end.  When those hold every shape feasible
    there (at most ``carry`` are), the rest of the bisection runs on them alone and its last
    infeasible end is checked on the whole grid; otherwise, or if that check fails, every step
    the carried shapes call infeasible is checked on the whole grid (:func:`_unless`).  The
    range's ends are evaluated only where the first steps never left them (a step feasible below
    ``hi0`` means feasible at ``hi0``; infeasible above ``lo0``, infeasible at ``lo0``).  This is
    the checked path's answer wherever the whole grid's feasibility grows with the run's length
    (as the bisection itself assumes): the carried and the checked steps can only part at a mid
    the carried shapes call infeasible and the whole grid does not, and the check at the last
    infeasible end then finds the whole grid feasible and falls back.  Measured: the whole
    grid's answer to the bit (``benchmarks/realistic_cost.py``).
    ``check_every_step``: the path before (every step checked, both ends evaluated)."""
    constants = _constants(hw, a, g)  # independent of the run's length
    util, _, *_ = _plans_at(hw, a, log10_flop, g, constants)

    def run_of(log10_days):
        return a._replace(duration_s=10.0**log10_days * SECONDS_PER_DAY)

    def feasible(log10_days):
        return jnp.any(_plans_at(hw, run_of(log10_days), log10_flop, g, constants)[1])

    if carry <= 0:
        return jnp.max(util), shortest_log10_days(feasible, (), MIN_RUN_STEPS)
    lo0, hi0 = (jnp.float64(np.log10(d)) for d in MIN_RUN_DAYS_RANGE)
    # the bracket of the shortest feasible run: infeasible at lo, feasible at hi
    lo, hi = _bisect_bounds(lambda d: ~feasible(d), lo0, hi0, COST_GRID_STEPS)
    rest = MIN_RUN_STEPS - COST_GRID_STEPS
    util_hi, ok_hi, *_ = _plans_at(hw, run_of(hi), log10_flop, g, constants)
    sub, sub_constants = _subset(g, constants, jax.lax.top_k(util_hi, carry)[1])

    def feasible_carried(log10_days):
        return _subset_best(hw, run_of(log10_days), log10_flop, g, sub, sub_constants)[1]

    def every_step_checked():
        checked = _unless(feasible_carried, feasible)
        return _bisect_bounds(lambda d: ~checked(d), lo, hi, rest)[1]

    if check_every_step:
        days = every_step_checked()
        days = jnp.where(feasible(hi0), days, jnp.inf)
        return jnp.max(util), jnp.where(feasible(lo0), -jnp.inf, days)

    any_at_hi = jnp.any(ok_hi)  # False only if hi is still hi0 and nothing fits there: +inf
    # every shape feasible at hi is carried
    on_carried = (jnp.sum(ok_hi) <= carry) & any_at_hi
    c_lo, c_hi = jax.lax.cond(
        on_carried,
        lambda: _bisect_bounds(lambda d: ~feasible_carried(d), lo, hi, rest),
        lambda: (lo, hi),
    )
    # where the carried steps and the whole grid's would part (a mid the carried shapes call
    # infeasible and the whole grid does not), the last infeasible end shows it
    missed = jax.lax.cond(
        on_carried & (c_lo > lo), lambda: feasible(c_lo), lambda: jnp.bool_(False)
    )
    fall_back = any_at_hi & ~(on_carried & ~missed)  # nothing fits at hi0: +inf below, no steps
    days = jax.lax.cond(fall_back, every_step_checked, lambda: c_hi)
    # a step feasible below hi0 means feasible at hi0 (and at hi == hi0, ok_hi is hi0's);
    # a step infeasible above lo0, infeasible at lo0
    at_hi0 = (hi < hi0) | any_at_hi
    at_lo0 = jax.lax.cond(lo > lo0, lambda: jnp.bool_(False), lambda: feasible(lo0))
    days = jnp.where(at_hi0, days, jnp.inf)
    return jnp.max(util), jnp.where(at_lo0, -jnp.inf, days)


@functools.partial(jax.jit, static_argnames=("carry", "check_every_step"))
def _cost_chunk(
    hw: Hardware,
    a: Assumptions,
    log10_flop,
    g: LaunchGrid,
    carry: int = COST_CARRY,
    check_every_step: bool = False,
):
    return jax.lax.map(
        lambda z: _cost_one(z[0], z[1], z[2], g, carry, check_every_step), (hw, a, log10_flop)
    )


def fast_realistic_cost(
    hw: Hardware,
    a: Assumptions,
    log10_flop,
    grid: LaunchGrid | None = None,
    carry: int = COST_CARRY,
    check_every_step: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """What a run of ``log10_flop`` costs in the realistic regime, per draw: the best plan's
    utilization (0: infeasible) and the shortest run (days) in which any plan trains it at all
    (the latency wall inverted in duration; 0: feasible in a thousandth of a day, +inf: not in
    1e5 days: :data:`forecast.model.cost.MIN_RUN_DAYS_RANGE`).  As
    :func:`forecast.model.cost.best_utilization` and
    :func:`~forecast.model.cost.min_run_days` do for the paper regime.  ``carry``: shapes the
    shortest run's last bisection steps search (0: every step on the whole grid);
    ``check_every_step``: the path before its last change (:func:`_cost_one`)."""
    require_x64()
    g = shortlist_grid() if grid is None else grid
    g = LaunchGrid(*(jnp.asarray(x) for x in g))
    chunk = functools.partial(
        _cost_chunk, carry=int(carry), check_every_step=bool(check_every_step)
    )
    util, log10_days = _by_draw(chunk, hw, a, (log10_flop,), g)
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
    utilization of :func:`fast_realistic_cost` without the shortest run's bisection (one budget
    per condition; a draw's curve over many budgets: :func:`fast_realistic_curves`)."""
    require_x64()
    g = shortlist_grid() if grid is None else grid
    g = LaunchGrid(*(jnp.asarray(x) for x in g))
    (util,) = _by_draw(_utilization_chunk, hw, a, (log10_flop,), g)
    return util


@jax.jit
def _curves_chunk(hw: Hardware, a: Assumptions, log10_flop, g: LaunchGrid):
    """Per draw, the best plan's utilization at every budget of ``log10_flop`` (1-D): the grid's
    constants once a draw, the budgets side by side."""

    def one(z):
        h, aa = z
        constants = _constants(h, aa, g)  # independent of the budget
        return jax.vmap(lambda x: jnp.max(_plans_at(h, aa, x, g, constants)[0]))(log10_flop)

    return jax.lax.map(one, (hw, a))


def fast_realistic_curves(
    hw: Hardware, a: Assumptions, log10_flop, grid: LaunchGrid | None = None
) -> np.ndarray:
    """Utilization curves: :func:`fast_realistic_utilization` per draw at every budget of
    ``log10_flop`` (1-D), shape (draws..., budget).  The same plans and numbers (to the last bit
    or two: XLA compiles the budgets side by side differently) at ~2.7x the speed, since the
    grid's budget-independent constants are computed once a draw, not once a budget
    (``benchmarks/realistic_curves.py``)."""
    require_x64()
    g = shortlist_grid() if grid is None else grid
    g = LaunchGrid(*(jnp.asarray(x) for x in g))
    budgets = jnp.asarray(np.asarray(log10_flop, dtype=float).reshape(-1))
    (util,) = in_draw_chunks(
        lambda h, aa: (_curves_chunk(h, aa, budgets, g),),
        hw,
        a,
        (),
        DRAW_CHUNK,
        size=DRAW_CHUNK,
    )
    return util


def _by_draw(fn, hw: Hardware, a: Assumptions, extra: tuple, g: LaunchGrid) -> list[np.ndarray]:
    """``fn(hw, a, *extra, g)`` over the broadcast shape of every input, ``DRAW_CHUNK`` draws a
    compiled call (every call padded to it: one compilation), reshaped back."""
    return in_draw_chunks(
        lambda h, aa, *ex: fn(h, aa, *ex, g), hw, a, extra, DRAW_CHUNK, size=DRAW_CHUNK
    )
