"""Fast path: both walls for many parameter draws in one vectorized call.

The same plan model and the same plan shapes as :mod:`forecast.model.search` (every power-of-two
tp in both layouts, every power-of-two pp), and the same definitions:

* latency wall: the largest compute at which some plan is feasible at all, found by bisection
  (feasibility is monotone in compute) over every tensor-parallel option with one microbatch and
  the deepest pipelines (:func:`latency_plan_grid`);
* data-movement wall: the **first** compute after the small-scale maximum at which the best plan
  falls below ``threshold`` times that maximum, as in Epoch's simulator and
  :func:`forecast.model.search.walls_from_curve`.  At each budget the best plan is estimated by
  ranking every plan with two microbatch counts each (cheap, closed form), then optimizing the
  number of microbatches of the ``SHORTLIST`` best as the full search does
  (:func:`forecast.model.plan.best_plan_over_m`).  A bisection over the whole range finds a
  crossing; because the utilization curve can dip below the threshold and recover
  (power-of-two tp and pp), that may be a later one, so a backward scan over ``DIP_WINDOW_DEX``
  below it, on the full search's absolute 0.05-dex grid, looks for the earliest grid point below
  the threshold (confirmed with a ``VERIFY_SHORTLIST``-plan shortlist), and a last bisection
  inside that 0.05-dex bracket finds the first crossing.  Both paths thus see the same dips (one
  narrower than the grid is seen by neither), which keeps the fast path monotone in every input,
  but for one case: where the whole-range bisection itself lands in a dip narrower than the grid,
  it keeps that earlier crossing, and a neighbouring input whose bisection lands elsewhere does
  not, so the wall can move by up to the dip's width (< 0.05 dex) the "wrong" way (found by
  Hypothesis, tests/model/test_model_properties.py, a dip 0.02 dex wide).

Agreement with the full search within 0.05 dex on 1,000 random draws: data-movement wall 99.7 %,
latency wall 99.4 % (BENCHMARKS.md section 1, docs/validation.md section 8.6).

Speed: its rate against the per-draw search is measured in BENCHMARKS.md section 1.  What keeps
it fast, none of it touching the physics or the search: plan constants that do not depend on the
budget (collective layouts, latencies, per-size costs) computed once per draw
(:func:`forecast.model.plan.plan_constants`); the coarse ranking without a trailing axis of two
microbatch counts (a minor axis of 2 defeated XLA's vectorization); a grouped top-k (the same
shortlist, much cheaper than ``top_k`` over 468 plans); shortlists and the small-scale scan laid
out with the draws on the minor axis; chunks of 256 draws, which stay in cache.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from forecast.config.runtime import chunk_helpers, chunks_in_place, require_x64
from forecast.model.params import Assumptions, Hardware
from forecast.model.plan import (
    best_from_terms,
    best_plan_over_m,
    plan_constants,
    terms_at,
)
from forecast.model.scaling import model_shape
from forecast.model.search import UTILIZATION_THRESHOLD, PlanGrid

BUBBLE_RATIOS = (4.0, 16.0)  # microbatches per max(pp, MIN_COARSE_STAGES) in the coarse stage
MIN_COARSE_STAGES = 4.0  # without a pipeline, gradient accumulation still needs microbatches
SHORTLIST = 8  # plans per budget (ranked by the coarse stage) with m optimized; 6 until issue 22,
# whose 2D fix brought more 2D meshes within a few % of the best plan (a TPU v5p case missed by
# 0.012 dex with 6, tests/model/test_model_properties.py)
RANKED_STEPS = 6  # bisection steps that rank every plan (later ones reuse the shortlists)
SCAN_ANCHOR_EVERY = 4  # scan points per ranking of every plan (0.2 dex)
VERIFY_SHORTLIST = 24  # plans that confirm a dip found on the scan's shortlist
VERIFY_ROUNDS = 3  # false alarms dropped per draw
_SCAN = np.arange(21.0, 28.01, 0.5)  # budgets scanned for the small-scale maximum
SCAN_STEP_DEX = 0.05  # the full search's grid spacing
DIP_WINDOW_DEX = 1.2  # how far below the bisection's crossing the scan looks for a dip
PIPELINE_OPTIONS = 13  # pp = 1, 2, ..., 4096, as the full search
DIP_STEPS = 6  # bisection steps inside the 0.05-dex bracket of a dip (resolution 1e-3 dex)


def _tp_layouts(max_log2_tp: int = 18) -> tuple[np.ndarray, np.ndarray]:
    """Tensor-parallel options of the full search: 1D from 1, 2D (sqrt x sqrt mesh) from 4."""
    one_d = 2.0 ** np.arange(0, max_log2_tp + 1)
    two_d = 2.0 ** np.arange(2, max_log2_tp + 1)
    layout = np.concatenate([np.zeros(one_d.size, bool), np.ones(two_d.size, bool)])
    return np.concatenate([one_d, two_d]), layout


def dm_plan_grid() -> PlanGrid:
    """(tp, pp, layout) searched for the data-movement wall; ``m`` = 0: chosen per stage.

    Ordered tp-major: the ``PIPELINE_OPTIONS`` plans of one tensor-parallel option are
    consecutive (``_top_k_grouped`` relies on it)."""
    tp, two_d = _tp_layouts()
    ti, pp = np.meshgrid(np.arange(tp.size), 2.0 ** np.arange(PIPELINE_OPTIONS), indexing="ij")
    ti, pp = ti.ravel(), pp.ravel()
    return PlanGrid(tp[ti], pp, np.zeros(ti.size), two_d[ti])


def small_scale_plan_grid() -> PlanGrid:
    """Plans for the small-scale maximum utilization: tp <= 1024 (1D), no pipeline, the number
    of microbatches optimized as in the full search (gradient accumulation amortizes the
    gradient all-reduce, which one microbatch would leave exposed)."""
    tp = 2.0 ** np.arange(0, 11)
    return PlanGrid(tp, np.ones_like(tp), np.ones_like(tp), np.zeros(tp.size, bool))


def latency_plan_grid() -> PlanGrid:
    """Plans for the latency wall: every tp and layout, one microbatch, pp set per budget.

    With one microbatch a step is L layers long whatever pp is; deeper pipelines cut memory and
    gradient traffic per accelerator but add a send per stage.  pp is therefore searched among
    the largest power of two not above L and 2, 4, ..., 64 times less (encoded here as -1 .. -7
    and resolved per budget in ``_evaluate``).  Every tp of the full search, both layouts: near
    the latency wall a wide 1D group (one collective per matmul) can beat a 2D mesh (two).
    """
    tp, two_d = _tp_layouts()
    rows = [PlanGrid(tp, np.full(tp.size, -k), np.ones_like(tp), two_d) for k in range(1, 8)]
    return PlanGrid(*(np.concatenate(parts) for parts in zip(*rows, strict=True)))


def _evaluate(hw, a, log10_flop, grid: PlanGrid, constants: dict):
    """Plans of ``grid`` (explicit m) at each budget; pp <= 0 is resolved per budget.

    ``constants``: :func:`forecast.model.plan.plan_constants` of the grid, computed once per
    call of ``_walls`` (they do not depend on the budget)."""
    shape = model_shape(log10_flop[..., None], a)
    deepest = jnp.floor(jnp.log2(shape.layers))
    pp = jnp.where(grid.pp > 0, grid.pp, 2.0 ** jnp.maximum(deepest + grid.pp + 1.0, 0.0))
    return best_from_terms(hw, a, shape, terms_at(constants, a, shape, pp, grid.m))


def _coarse_utilization(hw, a, log10_flop, grid: PlanGrid, constants: dict):
    """(..., plans) best utilization over m = ratio x max(pp, MIN_COARSE_STAGES), ratio in
    ``BUBBLE_RATIOS``.  One plan-axis array per ratio: a trailing axis of length 2 would be the
    minor dimension and defeat XLA's vectorization (BENCHMARKS.md section 1)."""
    shape = model_shape(log10_flop[..., None], a)
    stages = jnp.maximum(grid.pp, MIN_COARSE_STAGES)
    best = None
    for ratio in BUBBLE_RATIOS:
        t = terms_at(constants, a, shape, grid.pp, stages * ratio)
        u = best_from_terms(hw, a, shape, t).utilization
        best = u if best is None else jnp.maximum(best, u)
    return best


def _top_k_grouped(values, k: int, group: int):
    """Indices (..., k) of the ``k`` largest of ``values`` (..., n), in no particular order.

    The same set as ``jax.lax.top_k`` (up to ties) at a fraction of its cost on CPU: the ``k``
    largest values lie in the ``k`` groups of ``group`` consecutive entries with the largest
    maxima (a value outside them has k group maxima above it), so ``top_k`` runs on the group
    maxima and then on those groups' entries only.
    """
    n = values.shape[-1]
    if n % group or n // group <= k:
        return jax.lax.top_k(values, k)[1]
    # Materialize the values once: otherwise XLA fuses their computation into both consumers
    # below and computes them twice.
    values = jax.lax.optimization_barrier(values)
    grouped = values.reshape(*values.shape[:-1], n // group, group)
    best_groups = jax.lax.top_k(jnp.max(grouped, axis=-1), k)[1]  # (..., k)
    members = jnp.take_along_axis(grouped, best_groups[..., None], axis=-2)  # (..., k, group)
    flat = members.reshape(*values.shape[:-1], k * group)
    pick = jax.lax.top_k(flat, k)[1]
    return jnp.take_along_axis(best_groups, pick // group, axis=-1) * group + pick % group


#: Candidates beyond ``k`` that :func:`top_k_indices` takes from its float32 selection.
TOP_K_SPARE = 16


def top_k_indices(values, k: int, spare: int = TOP_K_SPARE):
    """``jax.lax.top_k(values, k)[1]`` along the last axis, the same indices in the same order,
    for float64 ``values`` at a fraction of its cost on CPU.

    XLA's CPU top-k is a fast kernel in float32 and a full sort in float64 (13 against 35 us for
    the 64 best of 979 values, BENCHMARKS.md section 6).  So the ``k + spare`` best are taken in
    float32, the ``k`` best of those in float64 (ties by lower index, as ``top_k``), and the
    result is checked: it is ``top_k``'s exactly when the ``k``-th chosen value has ``k - 1``
    values before it in the whole row (larger, or equal at a lower index) and the row holds no
    NaN or -0.0 (whose order ``top_k`` and ``==`` may see differently).  Where a row fails the
    check (more than ``spare`` values that round alike near the k-th), ``top_k`` itself runs on
    all rows: one branch of a ``lax.cond``, so the saving holds where this runs outside
    ``vmap`` (under ``vmap`` both branches run, still exact)."""
    if values.dtype != jnp.float64 or values.shape[-1] <= k + spare:
        return jax.lax.top_k(values, k)[1]
    idx, exact = _top_k_through_float32(values, k, spare)
    return jax.lax.cond(jnp.all(exact), lambda: idx, lambda: jax.lax.top_k(values, k)[1])


def _top_k_through_float32(values, k: int, spare: int):
    """(indices, exact): :func:`top_k_indices`' float32 selection and, per row, whether it is
    ``top_k``'s."""
    n = values.shape[-1]
    cand = jax.lax.top_k(values.astype(jnp.float32), k + spare)[1]
    pick = jax.lax.top_k(jnp.take_along_axis(values, cand, axis=-1), k)[1]
    idx = jnp.take_along_axis(cand, pick, axis=-1)
    last = idx[..., -1:]
    v_last = jnp.take_along_axis(values, last, axis=-1)
    before = (values > v_last) | ((values == v_last) & (jnp.arange(n) < last))
    odd = jnp.isnan(values) | ((values == 0.0) & jnp.signbit(values))
    return idx, (jnp.sum(before, axis=-1) == k - 1) & ~jnp.any(odd, axis=-1)


def _rank(hw, a, x, grid: PlanGrid, constants: dict, k: int):
    """Indices (..., k) of the ``k`` plans that the coarse stage ranks best at ``x``."""
    return _top_k_grouped(_coarse_utilization(hw, a, x, grid, constants), k, PIPELINE_OPTIONS)


def _exact_utilization(hw_t, a_t, x, grid: PlanGrid, idx):
    """Best utilization at ``x`` (n,) over the plans ``idx`` (n, k), each with its number of
    microbatches optimized (golden section, as the full search).

    ``hw_t``, ``a_t``: fields of shape (1, n).  The plans run along the leading axis and the
    draws along the minor one, which XLA vectorizes (k = 6..24 plans as the minor axis would
    not fill the vector units)."""
    tp, pp, td = (jnp.take(g, idx.T) for g in (grid.tp, grid.pp, grid.two_d))
    shape = model_shape(x[None, :], a_t)
    res, _ = best_plan_over_m(hw_t, a_t, shape, tp, pp, td)
    return jnp.max(res.utilization, axis=0)


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

    lat_constants = plan_constants(hw, a, lat_grid.tp, lat_grid.two_d)
    dm_constants = plan_constants(hw, a, dm_grid.tp, dm_grid.two_d)

    def lat_ok(x):
        return jnp.any(_evaluate(hw, a, x, lat_grid, lat_constants).feasible, axis=-1)

    lat = _bisect(lat_ok, lo, hi, iterations + 2)
    lat = jnp.where(lat_ok(lo), lat, -jnp.inf)
    lat = jnp.where(lat_ok(hi), jnp.inf, lat)

    # Small-scale maximum: scan budgets with simple plans (a scan axis before the plan axis).
    # Layout (plans, budgets, draws): the draws are the minor axis (see _exact_utilization).
    hw_t = Hardware(*(v[..., 0][None] for v in hw))  # (1, n)
    a_t = Assumptions(*(v[..., 0][None] for v in a))
    hw_s = Hardware(*(v[None] for v in hw_t))
    a_s = Assumptions(*(v[None] for v in a_t))
    shape_s = model_shape(_SCAN[None, :, None], a_s)
    small, _ = best_plan_over_m(
        hw_s,
        a_s,
        shape_s,
        small_grid.tp[:, None, None],
        small_grid.pp[:, None, None],
        small_grid.two_d[:, None, None],
    )
    u_scan = jnp.max(small.utilization, axis=0).T  # (n, budgets)
    u_small = jnp.max(u_scan, axis=-1)
    level = threshold * u_small
    x0 = jnp.clip(jnp.asarray(_SCAN)[jnp.argmax(u_scan, axis=-1)], lo, hi)
    top = jnp.maximum(jnp.where(jnp.isfinite(lat), lat, hi), x0)

    def ok_with(x, idx):
        return _exact_utilization(hw_t, a_t, x, dm_grid, idx) >= level

    def ranked_ok(x):
        idx = _rank(hw, a, x, dm_grid, dm_constants, SHORTLIST)
        return ok_with(x, idx), idx

    # The last crossing of an interval that holds the maximum: bisection on the whole range.
    # The first RANKED_STEPS steps rank every plan at the midpoint; later steps (a bracket of
    # < 0.2 dex) reuse the union of the shortlists ranked at the bracket's two ends.
    _, idx_lo = ranked_ok(x0)
    ok_top, idx_hi = ranked_ok(top)

    def ranked_step(_, state):
        lo, hi, idx_lo, idx_hi = state
        mid = 0.5 * (lo + hi)
        ok, idx = ranked_ok(mid)
        return (
            jnp.where(ok, mid, lo),
            jnp.where(ok, hi, mid),
            jnp.where(ok[..., None], idx, idx_lo),
            jnp.where(ok[..., None], idx_hi, idx),
        )

    lo, hi, idx_lo, idx_hi = jax.lax.fori_loop(
        0, RANKED_STEPS, ranked_step, (x0, top, idx_lo, idx_hi)
    )
    both = jnp.concatenate([idx_lo, idx_hi], axis=-1)
    dm = _bisect(lambda x: ok_with(x, both), lo, hi, iterations + 2 - RANKED_STEPS)
    dm = jnp.where(ok_top, jnp.where(jnp.isfinite(lat), top, jnp.inf), dm)

    # Backward scan for an earlier dip: points dm - j step (j = 1..J), each judged by the union
    # of the shortlists ranked at the two anchors (every SCAN_ANCHOR_EVERY points) around it;
    # keep the earliest point below the level.
    n_scan = int(round(DIP_WINDOW_DEX / SCAN_STEP_DEX))
    finite_dm = jnp.where(jnp.isfinite(dm), dm, top)
    # Scan points on the full search's absolute grid (multiples of 0.05 dex) at and below the
    # crossing, as that search sees the curve: a dip narrower than the grid that falls between
    # two grid points is not seen by either path, so both stay monotone in every input.
    grid0 = jnp.floor(finite_dm / SCAN_STEP_DEX + 1e-9) * SCAN_STEP_DEX + SCAN_STEP_DEX

    n_anchor = n_scan // SCAN_ANCHOR_EVERY + 2
    anchors = jax.lax.map(
        lambda q: _rank(
            hw, a, grid0 - SCAN_STEP_DEX * SCAN_ANCHOR_EVERY * q, dm_grid, dm_constants, SHORTLIST
        ),
        jnp.arange(n_anchor, dtype=jnp.float64),
    )

    def scan_body(j, below):
        x = grid0 - SCAN_STEP_DEX * j
        q = j // SCAN_ANCHOR_EVERY
        idx = jnp.concatenate([anchors[q], anchors[q + 1]], axis=-1)
        return below.at[..., j].set((x > x0) & ~ok_with(x, idx))

    below = jax.lax.fori_loop(1, n_scan + 1, scan_body, jnp.zeros((*dims, n_scan + 1), dtype=bool))
    steps = jnp.arange(n_scan + 1)

    # A point judged below on a shortlist may be a false alarm (the best plan missed): confirm
    # the earliest one with a longer shortlist, and drop it if that finds a plan above the level.
    def verify(_, state):
        below, confirmed = state
        j = jnp.max(jnp.where(below, steps, 0), axis=-1)
        x = grid0 - SCAN_STEP_DEX * j
        idx = _rank(hw, a, x, dm_grid, dm_constants, VERIFY_SHORTLIST)
        false_alarm = (j > 0) & ~confirmed & ok_with(x, idx)
        below = below & ~(false_alarm[..., None] & (steps == j[..., None]))
        return below, confirmed | ((j > 0) & ~false_alarm)

    below, _ = jax.lax.fori_loop(0, VERIFY_ROUNDS, verify, (below, jnp.zeros(dims, dtype=bool)))
    j_first = jnp.max(jnp.where(below, steps, 0), axis=-1)
    earliest = jnp.where(j_first > 0, grid0 - SCAN_STEP_DEX * j_first, jnp.inf)
    dipped = jnp.isfinite(earliest) & jnp.isfinite(dm)

    lo3 = jnp.maximum(jnp.where(dipped, earliest - SCAN_STEP_DEX, x0), x0)
    hi3 = jnp.where(dipped, earliest, lo3 + SCAN_STEP_DEX)
    idx3 = jnp.concatenate(
        [
            _rank(hw, a, lo3, dm_grid, dm_constants, SHORTLIST),
            _rank(hw, a, hi3, dm_grid, dm_constants, SHORTLIST),
        ],
        axis=-1,
    )
    dm_dip = _bisect(lambda x: ok_with(x, idx3), lo3, hi3, DIP_STEPS)
    dm = jnp.where(dipped, dm_dip, dm)

    # x0 is where a plan of the grid (pp = 1, m optimized) reaches u_small >= level, so the
    # curve is above the level there by construction (a shortlist may miss that plan).
    dm = jnp.where(u_small > 0, dm, -jnp.inf)
    dm = jnp.minimum(dm, lat)
    return dm, lat, u_small


#: Draws of the smallest compiled call, unless ``chunk`` is smaller (:func:`padded_size`).
SMALLEST_CHUNK = 16


def padded_size(n: int, chunk: int) -> int:
    """Draws a compiled call over ``n`` draws (at most ``chunk`` a call) is padded to: ``chunk``
    when ``n`` exceeds it, else the smallest of 16, 64, 256, ... that holds ``n`` (never more than
    ``chunk``).  A call compiles once per shape (seconds for the wall searches), so calls of 3, 6
    or 200 draws share a few shapes instead of compiling one each, at the cost of computing up to
    4x the draws (16 for fewer than 4: milliseconds).  Each draw is computed alone, so the walls
    do not depend on the padding (``tests/model/test_model_fast.py``); the small-scale maximum
    can differ in its last bit between compiled shapes, as it could between call sizes before."""
    if n > chunk:
        return chunk
    size = SMALLEST_CHUNK
    while size < n:
        size *= 4
    return min(size, chunk)


def _map_in_threads(call, starts, helpers: int) -> list:
    """``[call(s) for s in starts]``, in order: in this thread (``helpers`` 0), else on a pool of
    ``helpers + 1`` threads of its own while this one waits (the search's own thread and its
    helpers); the chunk threads' own searches run in place (:func:`chunks_in_place`).  While the
    interpreter shuts down (a search in a daemon thread), no pool takes work: in this thread."""
    if helpers <= 0:
        return [call(s) for s in starts]

    def in_place_call(start):
        with chunks_in_place():
            return call(start)

    pool = ThreadPoolExecutor(helpers + 1, thread_name_prefix="wallcast-chunks")
    try:
        futures = [pool.submit(in_place_call, s) for s in starts]
    except RuntimeError:  # "cannot schedule new futures after interpreter shutdown"
        pool.shutdown(wait=True, cancel_futures=True)
        return [call(s) for s in starts]
    try:
        parts = [f.result() for f in futures]
    except Exception:
        pool.shutdown(wait=True, cancel_futures=True)  # a failed chunk: drop the rest, let the
        raise  # running ones end before the search gives its threads back
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # Ctrl-C: do not wait for running chunks
        raise
    pool.shutdown(wait=True)
    return parts


def in_draw_chunks(
    fn,
    hw: Hardware,
    a: Assumptions,
    extra: tuple = (),
    chunk: int = 256,
    size: int | None = None,
    map_chunks=None,
) -> list[np.ndarray]:
    """``fn(hw, a, *extra)`` (a compiled call over 1-D draws, returning an array or a tuple of
    them) over the broadcast shape of every field of ``hw``, ``a`` and ``extra``: ``chunk``
    draws a call, each call padded (repeating its last draw) to ``size`` draws (default
    :func:`padded_size`), the outputs trimmed and reshaped to the broadcast shape (followed by
    any axes an output has after its draws' axis).  The chunk calls run side by side on the
    helper threads this search may borrow (:func:`forecast.config.runtime.chunk_helpers`; none
    left: one after another in this thread); each is computed alone, so the result does not depend
    on how many threads ran them.  ``map_chunks``: run the chunk calls with this ``map`` instead
    (``benchmarks/core_throughput.py`` passes a thread pool's).  The one chunking loop of the fast
    paths, the cost functions and the planner."""
    fields = [np.asarray(x, dtype=np.float64) for x in (*hw, *a, *extra)]
    shape = np.broadcast_shapes(*(f.shape for f in fields))
    flat = [np.broadcast_to(f, shape).reshape(-1) for f in fields]
    total = flat[0].size
    size = padded_size(total, chunk) if size is None else size
    if size < min(total, chunk):
        raise ValueError(f"size {size} cannot hold a call of {min(total, chunk)} draws")
    nh, na = len(hw), len(a)

    def call(start: int) -> list[np.ndarray]:
        part = [f[start : start + chunk] for f in flat]
        n = part[0].size
        part = [
            jnp.asarray(np.pad(p, (0, size - n), mode="edge") if n else np.ones(size)) for p in part
        ]
        res = fn(Hardware(*part[:nh]), Assumptions(*part[nh : nh + na]), *part[nh + na :])
        return [np.asarray(r)[:n] for r in (res if isinstance(res, tuple | list) else (res,))]

    starts = range(0, max(total, 1), chunk)  # no draws: one call on a dummy, trimmed to 0
    if map_chunks is not None:
        parts = list(map_chunks(call, starts))
    else:
        with chunk_helpers(len(starts)) as helpers:
            parts = _map_in_threads(call, starts, helpers)
    # an output with axes after the draws' (a curve per draw) keeps them after the shape
    return [np.concatenate(c).reshape(shape + np.shape(c[0])[1:]) for c in zip(*parts, strict=True)]


WALL_CHUNK = 256
"""Draws per compiled call of :func:`fast_walls` (cache-resident: BENCHMARKS.md section 1)."""


def fast_walls(
    hw: Hardware,
    a: Assumptions | None = None,
    *,
    threshold: float = UTILIZATION_THRESHOLD,
    log10_flop_range: tuple[float, float] = (20.0, 40.0),
    iterations: int = 12,
    chunk: int = WALL_CHUNK,
    small_scale: bool = False,
    size: int | None = None,
) -> tuple[np.ndarray, ...]:
    """(data-movement wall, latency wall) in log10 FLOP for every draw, vectorized.

    ``small_scale=True`` also returns the small-scale maximum utilization the data-movement
    level is taken from (what :func:`forecast.model.cost.small_scale_max_utilization` computes,
    here for free).

    Fields of ``hw`` and ``a`` may be scalars or arrays that broadcast to the draws' shape.
    The data-movement level is ``threshold`` times the best utilization of simple plans at
    small scale (1e21..1e28 FLOP).  -inf: not even the smallest budget of the range qualifies;
    +inf: beyond the range.  The data-movement wall never exceeds the latency wall.  The
    latency wall takes ``iterations + 2`` bisection steps on the whole range (1e-3 dex for 14
    steps on 20 dex); the data-movement wall as many, then ``DIP_WINDOW_DEX / SCAN_STEP_DEX``
    scan points and ``DIP_STEPS`` bisection steps inside a dip's bracket.  ``size``: draws each
    compiled call is padded to (default :func:`padded_size`; a caller searching a few draws at
    a time passes the size of one call over all of them, so one program serves every call).
    """
    require_x64()
    a = Assumptions() if a is None else a
    grids = tuple(
        PlanGrid(*(jnp.asarray(x) for x in g))
        for g in (dm_plan_grid(), small_scale_plan_grid(), latency_plan_grid())
    )
    lo, hi = log10_flop_range
    dm, lat, u_small = in_draw_chunks(
        lambda h, aa: _walls(h, aa, grids, lo, hi, threshold, iterations),
        hw,
        a,
        chunk=chunk,
        size=size,
    )
    return (dm, lat, u_small) if small_scale else (dm, lat)
