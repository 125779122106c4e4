"""Benchmark: the realistic fast path's later stages on carried shapes, against the whole grid.

    .venv/bin/python benchmarks/realistic_carry.py [--conditions 1000] [--frontier 1000]
        [--seed 31] [--carry 3] [--repeats 2]

After the scan, :func:`forecast.model.realistic_fast._walls_one` refines the maximum, bisects the
latency bracket, searches the dip window and bisects the crossing.  With ``carry`` it searches
those budgets on the shapes that won at the scan budgets around them (``carry + 1`` each) and
confirms each decision that places a wall on the whole grid, searching the stage again on the
whole grid where a confirmation fails; ``carry=0`` searches every stage on the whole grid (the
path before).  Both run in this process on the same conditions (random accelerators and
assumptions of ``benchmarks/realistic_fast.py``, and ``--frontier`` (draw, year) pairs of the
published forecast), alternately ``--repeats`` times each after compilation.  Agreement: the
share of conditions whose walls are within 0.01 dex of the whole-grid path's (infinite walls
must match exactly) and the largest gaps.

Last line: ``speedup=<x> dm_within_0.01=<p> lat_within_0.01=<q> conditions=<n>``.
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path

import numpy as np

from forecast.config.runtime import init_jax  # isort: skip

init_jax()

sys.path.insert(0, str(Path(__file__).parent))
from realistic_fast import conditions, frontier_conditions, time_variants  # noqa: E402
from realistic_screen import gaps, wall_agreement  # noqa: E402

from forecast.model.realistic_fast import shortlist_grid  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conditions", type=int, default=1000)
    p.add_argument("--frontier", type=int, default=1000)
    p.add_argument("--seed", type=int, default=31)
    p.add_argument("--carry", type=int, default=3)
    p.add_argument(
        "--every", type=int, default=None, help="the scan's anchors (default: the path's)"
    )
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    n_shapes = shortlist_grid().tp.size
    print(f"# {platform.processor() or platform.machine()}, shortlist {n_shapes}")
    conds = conditions(args.conditions, args.seed) + frontier_conditions(args.frontier, args.seed)
    n = len(conds)
    name, carried = f"carry {args.carry}", {"carry": args.carry}
    if args.every is not None:
        name, carried = (
            f"{name}, anchors every {args.every}",
            carried | {"scan_full_every": args.every},
        )
    variants = {"whole grid": {"carry": 0}, name: carried}
    out, best = time_variants(conds, variants, args.repeats)
    base, new = out["whole grid"], out[name]
    t_base, t_new = (best[k] / n * 1e3 for k in variants)
    print(f"conditions: {args.conditions} random + {n - args.conditions} frontier")
    print(f"whole grid after the scan: {t_base:.2f} ms a condition (best of {args.repeats})")
    print(f"{name}: {t_new:.2f} ms a condition")
    shares = wall_agreement(base, new, conds)
    # where they differ, which is the whole grid's without the screen (the screen can miss a
    # plan that a carried shape, given every microbatch candidate, finds)
    differ = np.flatnonzero((gaps(base[0], new[0]) > 0.01) | (gaps(base[1], new[1]) > 0.01))
    if differ.size:
        from realistic_fast import stack

        from forecast.model.realistic_fast import fast_realistic_walls

        ref = fast_realistic_walls(*stack([conds[i] for i in differ]), screen_keep=0, carry=0)
        for k, i in enumerate(differ):
            print(
                f"  {conds[i][0]}: whole grid {base[0][i]:.4f} / {base[1][i]:.4f}, {name} "
                f"{new[0][i]:.4f} / {new[1][i]:.4f}, unscreened {ref[0][k]:.4f} / {ref[1][k]:.4f}"
            )
    du = new[2] - base[2]
    print(
        f"max utilization: identical {np.mean(du == 0):.2%}, lower {np.mean(du < 0):.2%}, "
        f"higher {np.mean(du > 0):.2%}, largest |difference| {np.abs(du).max():.2e}"
    )
    print(
        f"speedup={t_base / t_new:.2f} dm_within_0.01={shares[0]:.4f} "
        f"lat_within_0.01={shares[1]:.4f} conditions={n}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
