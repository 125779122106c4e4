"""Benchmark: what a second core buys on this machine, and whether the wall search's chunks gain
from running side by side (BENCHMARKS.md section 11).

    .venv/bin/python benchmarks/core_throughput.py [--draws 1024] [--spin 30000000]

(a) A pure-Python loop in one process, then in two processes side by side: the throughput of the
    two "cores" together over one (2.0 on two physical cores; about 1.3 on two hyperthreads of
    one, or on an oversubscribed host).
(b) ``forecast.model.fast.fast_walls`` on ``--draws`` random draws (chunks of 256), its chunks one
    after another (``in_draw_chunks`` with ``map_chunks=map``: as shipped before 2026-12-07) and
    in a pool of two threads (JAX releases the GIL while a compiled call runs), alternately, best
    of two; the walls must be identical.  (``benchmarks/chunk_threads.py`` times the shipped
    policy, helper threads borrowed per search, against one thread.)

Last line: ``two_process_throughput=<x> threaded_chunks_speedup=<y> identical=<bool>``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

SPIN = "import time,sys\nt=time.perf_counter();s=0\nfor i in range({n}): s+=i*i\nprint(time.perf_counter()-t)"


def spin_seconds(n: int, copies: int) -> list[float]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SPIN.format(n=n)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(copies)
    ]
    return [float(p.communicate()[0]) for p in procs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=1024)
    parser.add_argument("--spin", type=int, default=30_000_000)
    parser.add_argument("--seed", type=int, default=2030)
    args = parser.parse_args()

    one = spin_seconds(args.spin, 1)[0]
    two = spin_seconds(args.spin, 2)
    throughput = 2 * one / max(two)
    print(f"python loop: one process {one:.2f} s; two side by side {two[0]:.2f} / {two[1]:.2f} s")
    print(f"two processes do {throughput:.2f}x the work of one in the same time")

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from forecast.config.runtime import init_jax

    init_jax()
    from support.validation import comparison_draws

    import forecast.model.fast as fast

    hw, a = comparison_draws(args.draws, args.seed)
    shipped = fast.in_draw_chunks
    pool = ThreadPoolExecutor(2)

    def sequential_chunks(*args, **kwargs):  # the shipped loop, its chunk calls one by one
        return shipped(*args, **kwargs, map_chunks=map)

    def threaded_chunks(*args, **kwargs):  # the shipped loop, its chunk calls on two threads
        return shipped(*args, **kwargs, map_chunks=pool.map)

    fast.fast_walls(hw, a, small_scale=True)  # compile
    times = {"sequential": [], "threads": []}
    results = {}
    for _ in range(2):
        for name, chunks in (("sequential", sequential_chunks), ("threads", threaded_chunks)):
            fast.in_draw_chunks = chunks
            t0 = time.perf_counter()
            results[name] = fast.fast_walls(hw, a, small_scale=True)
            times[name].append(time.perf_counter() - t0)
    fast.in_draw_chunks = shipped
    pool.shutdown()
    seq, thr = min(times["sequential"]), min(times["threads"])
    identical = all(
        np.array_equal(x, y, equal_nan=True)
        for x, y in zip(results["sequential"], results["threads"], strict=True)
    )
    print(f"fast_walls, {args.draws} draws: chunks in turn {seq:.2f} s, two threads {thr:.2f} s")
    print(
        f"two_process_throughput={throughput:.2f} threaded_chunks_speedup={seq / thr:.2f} "
        f"identical={identical}"
    )


if __name__ == "__main__":
    main()
