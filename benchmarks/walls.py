"""Benchmark: both walls for many parameter draws, vectorized vs. a per-draw SciPy loop.

    .venv/bin/python benchmarks/walls.py --draws 20000 [--loop-draws 200] [--chunk 256]
    .venv/bin/python benchmarks/walls.py --regime realistic --draws 1000 --loop-draws 5

(a) ``forecast.model.fast.fast_walls`` on N draws in one vectorized call (after compilation),
    and beside it, in the same process and on the same draws, the fast path as it was before
    the speed work of issue 12 (``benchmarks/fast_baseline.py``, a frozen copy, at its own
    default chunk of 2,048 unless ``--baseline-chunk``): the ratio and how many walls differ.
(b) The way "Can AI scaling continue through 2030?" solved it: a Python loop over draws, and for
    each draw ``scipy.optimize.brentq`` on log10 compute for each wall.  The predicate is the
    same plan model on the same plan grids (``dm_plan_grid`` with the number of microbatches
    optimized for every plan by ``best_plan_over_m`` -- no coarse stage, no shortlist --,
    ``small_scale_plan_grid``, ``latency_plan_grid``), compiled once with ``jax.jit`` for a
    single draw; brentq calls it per evaluation.  This is the realistic
    "SciPy per draw" baseline: the arithmetic of each call is the same as one draw's share of the
    vectorized call, plus one dispatch per evaluation.  It runs on K draws and its cost per draw
    is extrapolated to N.

Both give the same walls on the loop draws up to the root finders' resolution, except where the
utilization curve is not monotone in compute (bisection and Brent's method may then stop at
different crossings); the script prints how many agree within 0.05 dex.

``--regime realistic``: the realistic regime's fast path (``fast_realistic_walls``) against its
frozen pre-issue-23 copy (``benchmarks/realistic_fast_baseline.py``) on the same draws, and the
full realistic search per draw (``find_walls(regime="realistic")``) as the loop: on the shortlist
for ``--loop-draws`` draws, on every launchable shape for ``--full-draws``.

Last line: ``speedup=<x> draws_per_s=<y> vs_baseline=<z> baseline_draws_per_s=<w>`` (y =
vectorized draws per second, x = y over the loop's, z = y over the frozen baseline's).

Every search runs its chunks in one thread here (``WALLCAST_CHUNK_THREADS=1`` unless set): the
loop is single-threaded, and the figures in BENCHMARKS.md compare algorithms on one core
(``benchmarks/chunk_threads.py`` measures what the helper threads add).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("WALLCAST_CHUNK_THREADS", "1")  # one core, as the loop (docstring)

import numpy as np

from forecast.config.runtime import init_jax  # isort: skip

init_jax()  # float64 before any JAX array is made (the frozen baseline builds some at import)

from fast_baseline import baseline_fast_walls  # isort: skip  # noqa: E402  (benchmarks/ on sys.path)
import jax  # isort: skip  # noqa: E402
import jax.numpy as jnp  # isort: skip  # noqa: E402
from scipy.optimize import brentq  # isort: skip  # noqa: E402

from forecast.model.fast import (  # isort: skip  # noqa: E402
    _SCAN,
    _evaluate,
    dm_plan_grid,
    fast_walls,
    latency_plan_grid,
    small_scale_plan_grid,
)
from forecast.model.params import Assumptions, Hardware  # isort: skip  # noqa: E402
from forecast.model.plan import best_plan_over_m, plan_constants  # isort: skip  # noqa: E402
from forecast.model.scaling import model_shape  # isort: skip  # noqa: E402
from forecast.model.search import UTILIZATION_THRESHOLD, PlanGrid  # isort: skip  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/support
from support.validation import comparison_draws  # isort: skip  # noqa: E402

# flops, hbm_bandwidth, hbm_capacity, scaleup_bandwidth, scaleup_domain_size, scaleout_bandwidth
LO, HI = 20.0, 40.0
XTOL = 1e-3  # dex, the fast path's resolution is ~1e-3 (latency) and ~3e-3 (data movement)


def take(x, sl):
    return type(x)(*(v[sl] for v in x))


# ----------------------------------------------------------------------------- per-draw loop

_GRIDS = tuple(
    PlanGrid(*(jnp.asarray(g) for g in grid))
    for grid in (dm_plan_grid(), small_scale_plan_grid(), latency_plan_grid())
)


def _lift(hw, a):
    """One draw's scalars as shape-(1,) arrays, as ``_walls`` lays them out."""
    hw = Hardware(*(jnp.asarray(v, dtype=jnp.float64)[None] for v in hw))
    a = Assumptions(*(jnp.asarray(v, dtype=jnp.float64)[None] for v in a))
    return hw, a


@jax.jit
def _lat_ok(hw, a, x):
    hw, a = _lift(hw, a)
    g = _GRIDS[2]
    constants = plan_constants(hw, a, g.tp, g.two_d)
    return jnp.any(_evaluate(hw, a, jnp.reshape(x, (1,)), g, constants).feasible)


@jax.jit
def _dm_util(hw, a, x):
    """Best utilization over every data-movement plan, m optimized per plan (no shortlist)."""
    hw, a = _lift(hw, a)
    shape = model_shape(jnp.reshape(x, (1, 1)), a)
    g = _GRIDS[0]
    res, _ = best_plan_over_m(hw, a, shape, g.tp[None, :], g.pp[None, :], g.two_d[None, :])
    return jnp.max(res.utilization)


@jax.jit
def _small(hw, a):
    hw, a = _lift(hw, a)
    hw = Hardware(*(v[..., None] for v in hw))
    a = Assumptions(*(v[..., None] for v in a))
    g = _GRIDS[1]
    shape = model_shape(_SCAN[None, :, None], a)
    res, _ = best_plan_over_m(hw, a, shape, g.tp, g.pp, g.two_d)
    u = jnp.max(res.utilization, axis=-1)[0]
    return jnp.max(u), jnp.asarray(_SCAN)[jnp.argmax(u)]


def loop_walls(hw: Hardware, a: Assumptions, threshold: float = UTILIZATION_THRESHOLD):
    """Both walls of one draw by ``scipy.optimize.brentq`` on the single-draw predicates."""

    def lat_sign(x):
        return 1.0 if bool(_lat_ok(hw, a, x)) else -1.0

    if lat_sign(LO) < 0:
        lat = -np.inf
    elif lat_sign(HI) > 0:
        lat = np.inf
    else:
        lat = brentq(lat_sign, LO, HI, xtol=XTOL)

    u_small, x0 = (float(v) for v in _small(hw, a))
    if u_small <= 0.0:
        return -np.inf, lat
    level = threshold * u_small

    def dm_margin(x):
        return float(_dm_util(hw, a, x)) - level

    top = lat if np.isfinite(lat) else HI
    if dm_margin(top) >= 0.0:
        dm = top if np.isfinite(lat) else np.inf
    elif dm_margin(x0) < 0.0:
        dm = x0  # where the fast path's bisection collapses too
    else:
        dm = brentq(dm_margin, x0, top, xtol=XTOL)
    return dm, lat


# ----------------------------------------------------------------------------- main


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:  # noqa: C901 - one script, its steps in order
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--draws", type=int, default=20_000)
    p.add_argument("--loop-draws", type=int, default=200)
    p.add_argument("--chunk", type=int, default=256, help="fast_walls chunk size")
    p.add_argument(
        "--baseline-chunk", type=int, default=2048, help="chunk of the pre-issue-12 fast path"
    )
    p.add_argument("--seed", type=int, default=2030)
    p.add_argument(
        "--full-draws",
        type=int,
        default=0,
        help="also compare this many draws with the full plan search (find_walls, ~1 s a draw)",
    )
    p.add_argument(
        "--regime",
        choices=("paper", "realistic"),
        default="paper",
        help="realistic: fast_realistic_walls against its frozen pre-issue-23 copy and the full "
        "realistic search (find_walls) per draw",
    )
    args = p.parse_args()
    if args.regime == "realistic":
        return main_realistic(args)
    n, k = args.draws, min(args.loop_draws, args.draws)

    print(f"cpu: {_cpu_model()}; jax devices: {jax.devices()}")
    hw, a = comparison_draws(n, args.seed)

    # (a) vectorized, new and baseline.  Compile each on the shape its timed call will use.
    def timed(walls, chunk):
        warm = min(n, chunk)
        t0 = time.perf_counter()
        walls(take(hw, slice(0, warm)), take(a, slice(0, warm)), chunk=chunk)
        t_compile = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = walls(hw, a, chunk=chunk)
        return out, time.perf_counter() - t0, t_compile

    (dm_fast, lat_fast), t_vec, t_compile = timed(fast_walls, args.chunk)
    (dm_base, lat_base), t_base, t_compile_base = timed(baseline_fast_walls, args.baseline_chunk)
    vec_rate = n / t_vec
    base_rate = n / t_base
    print(
        f"vectorized fast_walls: {n} draws in {t_vec:.2f} s -> {vec_rate:,.0f} draws/s "
        f"(chunk {args.chunk}; first call incl. compilation {t_compile:.1f} s)"
    )
    print(
        f"baseline (pre-issue-12 fast path): {n} draws in {t_base:.2f} s -> {base_rate:,.0f} "
        f"draws/s (chunk {args.baseline_chunk}; compilation {t_compile_base:.1f} s); "
        f"new/baseline = {vec_rate / base_rate:.2f}x"
    )
    for name, new, old in (("data-movement", dm_fast, dm_base), ("latency", lat_fast, lat_base)):
        same_inf = np.isinf(new) & np.isinf(old) & (new == old)
        with np.errstate(invalid="ignore"):
            diff = np.where(same_inf, 0.0, np.abs(new - old))
        print(
            f"  {name} walls, new vs baseline: {np.count_nonzero(diff)} of {n} differ, "
            f"largest difference {np.nanmax(diff):.2g} dex"
        )

    # (b) per-draw loop: compile the single-draw predicates first.
    hw0 = tuple(float(v[0]) for v in hw)
    a0 = tuple(float(v[0]) for v in a)
    t0 = time.perf_counter()
    loop_walls(Hardware(*hw0), Assumptions(*a0))
    t_compile_loop = time.perf_counter() - t0
    calls = {"n": 0}
    t0 = time.perf_counter()
    dm_loop = np.empty(k)
    lat_loop = np.empty(k)
    for i in range(k):
        h_i = Hardware(*(float(v[i]) for v in hw))
        a_i = Assumptions(*(float(v[i]) for v in a))
        dm_loop[i], lat_loop[i] = loop_walls(h_i, a_i)
        calls["n"] += 1
    t_loop = time.perf_counter() - t0
    loop_rate = k / t_loop
    print(
        f"per-draw loop (brentq on jit single-draw predicates): {k} draws in {t_loop:.2f} s -> "
        f"{loop_rate:,.1f} draws/s (compile {t_compile_loop:.1f} s); extrapolated to {n} "
        f"draws: {n / loop_rate:,.0f} s"
    )

    def agree(x, y, tol):
        both_inf = np.isinf(x) & np.isinf(y) & (x == y)
        with np.errstate(invalid="ignore"):
            return both_inf | (np.abs(x - y) <= tol)

    ok_dm = agree(dm_fast[:k], dm_loop, 0.05)
    ok_lat = agree(lat_fast[:k], lat_loop, 0.05)
    print(
        f"agreement within 0.05 dex on the {k} loop draws: latency wall {ok_lat.sum()}/{k}, "
        f"data-movement wall {ok_dm.sum()}/{k}"
    )
    for i in np.flatnonzero(~(ok_dm & ok_lat))[:10]:
        print(
            f"  draw {i}: dm fast {dm_fast[i]:.3f} loop {dm_loop[i]:.3f}; "
            f"lat fast {lat_fast[i]:.3f} loop {lat_loop[i]:.3f}"
        )

    if args.full_draws:
        from forecast.model.search import find_walls

        nf = min(args.full_draws, n)
        dm_full = np.empty(nf)
        lat_full = np.empty(nf)
        t0 = time.perf_counter()
        for i in range(nf):
            w = find_walls(
                Hardware(*(float(v[i]) for v in hw)), Assumptions(*(float(v[i]) for v in a))
            )
            dm_full[i], lat_full[i] = w.data_movement_wall_log10_flop, w.latency_wall_log10_flop
        t_full = time.perf_counter() - t0
        ok_dm = agree(dm_fast[:nf], dm_full, 0.05)
        ok_lat = agree(lat_fast[:nf], lat_full, 0.05)
        print(
            f"agreement with the full search (find_walls, {t_full:.0f} s) within 0.05 dex on "
            f"{nf} draws: data-movement wall {ok_dm.sum()}/{nf} ({ok_dm.mean():.1%}), "
            f"latency wall {ok_lat.sum()}/{nf} ({ok_lat.mean():.1%})"
        )
        for i in np.flatnonzero(~(ok_dm & ok_lat))[:20]:
            print(
                f"  draw {i}: dm fast {dm_fast[i]:.3f} full {dm_full[i]:.3f}; "
                f"lat fast {lat_fast[i]:.3f} full {lat_full[i]:.3f}"
            )

    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    speedup = vec_rate / loop_rate
    print(f"peak RSS: {rss_mib:,.0f} MiB")
    print(f"speedup=vectorized/loop={speedup:,.0f}x (targets: >=100x, >=20,000 draws/s)")
    print(
        f"speedup={speedup:.1f} draws_per_s={vec_rate:.0f} "
        f"vs_baseline={vec_rate / base_rate:.2f} baseline_draws_per_s={base_rate:.0f}"
    )


def main_realistic(args) -> None:
    """The realistic regime: ``fast_realistic_walls`` against its frozen pre-issue-23 copy
    (``benchmarks/realistic_fast_baseline.py``) on the same draws in this process, and against
    the full realistic search (``find_walls(regime="realistic")``, the definition of both walls)
    per draw: on the shortlist for ``--loop-draws`` draws (the per-draw loop, timed) and on the
    whole launchable grid for ``--full-draws`` (~5-30 s a draw)."""
    from realistic_fast_baseline import fast_realistic_walls as baseline_realistic_walls

    from forecast.model.realistic_fast import fast_realistic_walls, shortlist_grid
    from forecast.model.search import find_walls

    n, k = args.draws, min(args.loop_draws, args.draws)
    print(f"cpu: {_cpu_model()}; jax devices: {jax.devices()}; regime realistic")
    hw, a = comparison_draws(n, args.seed)

    def timed(walls):
        t0 = time.perf_counter()
        walls(take(hw, slice(0, min(n, 16))), take(a, slice(0, min(n, 16))))  # compile
        t_compile = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = walls(hw, a)
        return out, time.perf_counter() - t0, t_compile

    new, t_new, c_new = timed(fast_realistic_walls)
    old, t_old, c_old = timed(baseline_realistic_walls)
    new_rate, old_rate = n / t_new, n / t_old
    print(f"fast_realistic_walls: {n} draws in {t_new:.2f} s -> {new_rate:,.0f} draws/s "
          f"(first call incl. compilation {c_new:.1f} s)")  # fmt: skip
    print(f"baseline (pre-issue-23 realistic fast path): {n} draws in {t_old:.2f} s -> "
          f"{old_rate:,.0f} draws/s (compilation {c_old:.1f} s); new/baseline = "
          f"{new_rate / old_rate:.2f}x")  # fmt: skip

    def gaps(x, y):
        same_inf = np.isinf(x) & np.isinf(y) & (x == y)
        with np.errstate(invalid="ignore"):
            return np.where(same_inf, 0.0, np.abs(x - y))

    def against(label: str, ref) -> None:
        """The new walls of the first draws against ``ref`` (data-movement, latency arrays)."""
        m = ref[0].size
        for i, name in enumerate(("data-movement", "latency")):
            g = gaps(new[i][:m], ref[i])
            print(f"  {name} walls against {label}: {np.count_nonzero(g)} of {m} differ, "
                  f"{np.mean(g <= 0.01):.2%} within 0.01 dex, largest {np.nanmax(g):.3g} dex")  # fmt: skip

    def walls_of(results):
        fields = ("data_movement_wall_log10_flop", "latency_wall_log10_flop")
        return tuple(np.array([getattr(w, f) for w in results]) for f in fields)

    against("the frozen baseline", old[:2])

    grid = shortlist_grid()
    k = max(k, 1)  # the loop's rate is the last line's speedup: at least one draw
    draw = [(Hardware(*(float(v[i]) for v in hw)), Assumptions(*(float(v[i]) for v in a)))
            for i in range(max(k, min(args.full_draws, n)))]  # fmt: skip
    find_walls(*draw[0], regime="realistic", grid=grid)  # compile
    t0 = time.perf_counter()
    loop = [find_walls(*draw[i], regime="realistic", grid=grid) for i in range(k)]
    loop_rate = k / (time.perf_counter() - t0)
    against("the full search on the shortlist", walls_of(loop))
    print(f"per-draw loop (find_walls, realistic, the shortlist): {loop_rate:.2f} draws/s")
    if args.full_draws:
        nf = min(args.full_draws, n)
        t0 = time.perf_counter()
        full = [find_walls(*draw[i], regime="realistic") for i in range(nf)]
        t_full = time.perf_counter() - t0
        against(f"the full search on every launchable shape ({t_full:.0f} s)", walls_of(full))
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"peak RSS: {rss_mib:,.0f} MiB")
    print(
        f"speedup={new_rate / loop_rate:.1f} draws_per_s={new_rate:.0f} "
        f"vs_baseline={new_rate / old_rate:.2f} baseline_draws_per_s={old_rate:.0f}"
    )


if __name__ == "__main__":
    main()
