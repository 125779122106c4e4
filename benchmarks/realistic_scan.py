"""Benchmark: the realistic fast path's scan stopping past the latency wall, against the whole scan.

    .venv/bin/python benchmarks/realistic_scan.py [--conditions 500] [--frontier 500]
        [--seed 31] [--chunk 3] [--repeats 2]

The scan of :func:`forecast.model.realistic_fast._walls_one` evaluates 81 budgets from 1e20 to
1e40 FLOP. With ``scan_chunk`` it evaluates them ``--chunk`` at a time from the bottom and stops
after the chunk holding the first infeasible budget past a feasible one (the latency wall's
bracket); ``scan_chunk=0`` evaluates all 81 (the path before). Both run in this process on the
same conditions (random accelerators and assumptions of ``benchmarks/realistic_fast.py`` and
``--frontier`` (draw, year) pairs of the published forecast), alternately ``--repeats`` times each
after compilation. The walls and the small-scale maximum must be identical (the scan's readings
all stop at that bracket); the script counts the conditions where they are not.

Last line: ``speedup=<x> identical=<k>/<n> new_ms=<a> old_ms=<b>``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from forecast.config.runtime import init_jax  # isort: skip

init_jax()

sys.path.insert(0, str(Path(__file__).parent))
from realistic_fast import compare_two_variants  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conditions", type=int, default=500)
    p.add_argument("--frontier", type=int, default=500)
    p.add_argument("--seed", type=int, default=31)
    p.add_argument("--chunk", type=int, default=3)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    return compare_two_variants(
        args,
        ("whole scan", {"scan_chunk": 0}),
        (f"chunks of {args.chunk}", {"scan_chunk": args.chunk}),
    )


if __name__ == "__main__":
    raise SystemExit(main())
