"""Benchmark: where the realistic fast path's time goes, stage by stage (issue 23, "measure first").

    .venv/bin/python benchmarks/realistic_stages.py [--draws 128] [--seed 0] [--repeats 3]

:func:`forecast.model.realistic_fast._walls_one` runs five stages per draw: the coarse scan (0.25
dex from 1e20 FLOP, in chunks of three budgets, up to the latency wall's bracket), the refinement
of the maximum (``MAX_REFINE_POINTS`` either side), the latency bisection (``LATENCY_STEPS``
sequential budgets), the dip window (``DIP_WINDOW_DEX`` of 0.05-dex points before the scan's
crossing) and the crossing bisection (``CROSSING_STEPS``). Each variant below removes one stage by
setting its module constant before the first compilation, in its own process (the constants are
read when JAX traces), and times ``fast_realistic_walls`` on the same random draws (accelerators
around an H100 scaled by 1-8x, assumptions varied), the best of ``--repeats`` after compiling.
A stage's cost is the base time minus the variant's. The walls of a variant are not the base's:
this measures time only.

Last line: ``base_ms=<a> scan_only_ms=<b>`` per draw.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

VARIANTS = {
    "base": {},
    "no dip window": {"DIP_WINDOW_DEX": 0.05},
    "no latency bisection": {"LATENCY_STEPS": 0},
    "no crossing bisection": {"CROSSING_STEPS": 0},
    "no refinement of the maximum": {"MAX_REFINE_POINTS": 0},
    "scan only": {
        "DIP_WINDOW_DEX": 0.05,
        "LATENCY_STEPS": 0,
        "CROSSING_STEPS": 0,
        "MAX_REFINE_POINTS": 0,
    },
}


def one(settings: dict, draws: int, seed: int, repeats: int) -> float:
    """Milliseconds per draw of ``fast_realistic_walls`` with the module constants ``settings``."""
    from forecast.config.runtime import init_jax

    init_jax()
    import numpy as np

    import forecast.model.realistic_fast as rf
    from forecast.model.params import Assumptions, Hardware

    for name, value in settings.items():
        setattr(rf, name, value)
    rng = np.random.default_rng(seed)
    n = draws
    hw = Hardware(
        9.89e14 * rng.uniform(1, 8, n),
        3.35e12 * rng.uniform(1, 4, n),
        8e10 * rng.uniform(1, 3, n),
        4.5e11 * rng.uniform(1, 4, n),
        8.0 * rng.choice([1, 9], n),
        5e10 * rng.uniform(1, 4, n),
    )
    a = Assumptions()._replace(
        max_utilization=rng.uniform(0.5, 0.75, n), batch_exponent=rng.uniform(0.3, 0.45, n)
    )
    rf.fast_realistic_walls(hw, a)  # compile
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        rf.fast_realistic_walls(hw, a)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3 / n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--variant", help=argparse.SUPPRESS)  # a child process's variant
    args = p.parse_args()
    if args.variant is not None:
        print(one(VARIANTS[args.variant], args.draws, args.seed, args.repeats))
        return
    times = {}
    for name in VARIANTS:
        cmd = [sys.executable, __file__, "--variant", name, "--draws", str(args.draws)]
        cmd += ["--seed", str(args.seed), "--repeats", str(args.repeats)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        times[name] = float(out.strip().splitlines()[-1])
    base = times["base"]
    for name, ms in times.items():
        what = "the four stages after it" if name == "scan only" else "stage"
        share = f"{base - ms:5.2f} ms, {(base - ms) / base:4.0%}"
        cost = "" if name == "base" else f"  ({what}: {share})"
        print(f"{name:<30} {ms:6.2f} ms per draw{cost}")
    print(f"base_ms={base:.2f} scan_only_ms={times['scan only']:.2f}")


if __name__ == "__main__":
    main()
