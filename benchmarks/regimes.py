"""Benchmark: the full plan search in both regimes, side by side in one process (issue 22).

``find_walls(hw, regime="paper")`` searches plans relaxed to continuous quantities (468 plan shapes,
the microbatch count by golden section); ``regime="realistic"`` searches the plans a run can launch
(about 62,000 shapes: tp x 29 pipelines x 13 microbatch sizes (1-64 sequences or 2-64 context-parallel
pieces) x interleaving 1/2/4 x recomputation, the microbatch count the best of nine candidates
around a closed form).  Each search runs once to compile, then ``--repeats`` times; the median wall
time is reported per accelerator.
Last line: ``paper_s=<x> realistic_s=<y> ratio=<y/x>`` (medians over the accelerators).

Usage: ``python benchmarks/regimes.py [--repeats 3] [-a H100 -a GB200 ...]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from forecast.config.runtime import init_jax


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("-a", "--accelerator", action="append", default=None)
    args = ap.parse_args()
    init_jax()
    from forecast.analyses.accelerator_walls import select_accelerators
    from forecast.model.accelerators import hardware_from_accelerator
    from forecast.model.params import Assumptions
    from forecast.model.realistic import launch_grid
    from forecast.model.search import find_walls, plan_grid

    names = args.accelerator or ["H100 SXM5", "A100 SXM4 80GB", "GB200", "TPU v5p"]
    print(f"plan shapes: paper {plan_grid().tp.size}, realistic {launch_grid().tp.size}")
    medians = {"paper": [], "realistic": []}
    for acc in select_accelerators(names):
        hw, _ = hardware_from_accelerator(acc, "bf16")
        row = [acc.name]
        for regime in ("paper", "realistic"):
            find_walls(hw, Assumptions(), regime=regime)  # compile
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                find_walls(hw, Assumptions(), regime=regime)
                times.append(time.perf_counter() - t0)
            medians[regime].append(statistics.median(times))
            row.append(f"{regime} {statistics.median(times):.2f} s")
        print("  ".join(row), flush=True)
    paper, real = statistics.median(medians["paper"]), statistics.median(medians["realistic"])
    print(f"paper_s={paper:.2f} realistic_s={real:.2f} ratio={real / paper:.1f}")


if __name__ == "__main__":
    main()
