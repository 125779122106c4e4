"""Benchmark: the realistic fast path's walls with the collective latency's old and new logarithms.

    .venv/bin/python benchmarks/realistic_log2_ab.py [--draws 64] [--rounds 4]

``forecast.model.plan.collective_latency`` once took three float64 logarithms per collective
(log2 r, log2 k and log2 of the group r k); it now takes two (the group's is their sum).  This
compiles the realistic fast path's walls twice in one process, once with a frozen copy of the old
formula patched in and once with the module's own, then times the two alternately, ``--rounds``
times each on ``--draws`` draws (the first 10 held-out conditions of
``benchmarks/realistic_fast.py``, repeated), so that both see the same machine load.

Last line: ``old_ms=<a> new_ms=<b> ratio=<a/b> same_walls=<bool>`` (milliseconds a draw, the
fastest round of each).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from forecast.config.runtime import init_jax  # isort: skip

init_jax()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import forecast.model.plan as plan  # noqa: E402
import forecast.model.realistic_fast as rf  # noqa: E402
from forecast.model.realistic import LaunchGrid  # noqa: E402
from forecast.model.search import UTILIZATION_THRESHOLD  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from realistic_fast import conditions, stack  # noqa: E402


def old_collective_latency(ranks_in_domain, domains, a, passes=2.0):
    """``plan.collective_latency`` before 2026-12-03 (frozen copy)."""
    group = ranks_in_domain * domains
    filled = jnp.log2(ranks_in_domain) * a.intra_domain_hop_s + jnp.log2(domains) * (
        a.inter_domain_hop_s
    )
    spread = jnp.log2(group) * a.inter_domain_hop_s
    return a.allreduce_base_latency_s + passes * jnp.minimum(filled, spread)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=64)
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args(argv)
    conds = conditions(10, 7)
    hw, a = stack([conds[i % len(conds)] for i in range(args.draws)])
    g = LaunchGrid(*(jnp.asarray(x) for x in rf.shortlist_grid()))
    threshold = (jnp.float64(UTILIZATION_THRESHOLD),)
    new_latency = plan.collective_latency
    fns, walls = {}, {}
    for name, latency in (("old", old_collective_latency), ("new", new_latency)):
        plan.collective_latency = latency  # read when the function below is traced
        # a new function object each time: jax.jit caches traces by the function it wraps
        fn = jax.jit(lambda *z: rf._walls_chunk.__wrapped__(*z))  # noqa: B023
        walls[name] = rf._by_draw(fn, hw, a, threshold, g)  # compiles
        fns[name] = fn
    plan.collective_latency = new_latency
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(args.rounds):
        for name, fn in fns.items():
            t = time.perf_counter()
            rf._by_draw(fn, hw, a, threshold, g)
            times[name].append((time.perf_counter() - t) / args.draws * 1e3)
    same = all(
        np.allclose(o, n, rtol=0, atol=1e-9, equal_nan=True)
        for o, n in zip(walls["old"], walls["new"], strict=True)
    )
    for name, ts in times.items():
        print(f"{name}: {min(ts):.1f} ms a draw (fastest), {np.median(ts):.1f} ms (median)")
    old, new = min(times["old"]), min(times["new"])
    print(f"old_ms={old:.1f} new_ms={new:.1f} ratio={old / new:.2f} same_walls={same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
