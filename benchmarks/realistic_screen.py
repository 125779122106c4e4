"""Benchmark: the realistic fast path with and without its per-budget screen, side by side.

    .venv/bin/python benchmarks/realistic_screen.py [--conditions 1000] [--frontier 1000]
        [--seed 23] [--keep 64] [--repeats 2]

At each budget the screened path (:func:`forecast.model.realistic_fast._best_fn`) evaluates
every shape of the shortlist exactly at its closed-form top microbatch count and gives all nine
microbatch candidates only to the ``--keep`` best-ranked shapes; the unscreened one
(``screen_keep=0``) gives them to all 979.  Both run in this process on the same conditions
(random accelerators and assumptions of ``benchmarks/realistic_fast.py``, and ``--frontier``
(draw, year) pairs of the published forecast), alternately ``--repeats`` times each after
compilation.  Agreement: the share of conditions whose walls are within 0.01 dex of the
unscreened path's (infinite walls must match exactly) and the largest gaps.

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

from forecast.model.realistic_fast import shortlist_grid  # noqa: E402


def gaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| in dex; 0 where both are the same infinity, inf where only one is infinite."""
    both = np.isfinite(a) & np.isfinite(b)
    same = a == b
    with np.errstate(invalid="ignore"):
        return np.where(both, np.abs(a - b), np.where(same, 0.0, np.inf))


def wall_agreement(base, new, conds) -> list[float]:
    """Print, per wall, the share of conditions whose walls are identical, within 0.01 and 0.05
    dex, and the three largest gaps; return the shares within 0.01 dex."""
    shares = []
    for i, wall in enumerate(("data_movement", "latency")):
        g = gaps(base[i], new[i])
        share = float(np.mean(g <= 0.01))
        shares.append(share)
        worst = np.argsort(-np.where(np.isfinite(g), g, 1e9))[:3]
        print(
            f"{wall}: identical {np.mean(g == 0):.2%}, within 0.01 dex {share:.2%}, within 0.05 "
            f"{np.mean(g <= 0.05):.2%}, largest gaps {[round(float(g[j]), 4) for j in worst]} "
            f"({[conds[j][0] for j in worst]})"
        )
    return shares


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conditions", type=int, default=1000)
    p.add_argument("--frontier", type=int, default=1000)
    p.add_argument("--seed", type=int, default=23)
    p.add_argument("--keep", type=int, default=64)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    n_shapes = shortlist_grid().tp.size
    print(f"# {platform.processor() or platform.machine()}, shortlist {n_shapes}")
    conds = conditions(args.conditions, args.seed) + frontier_conditions(args.frontier, args.seed)
    n = len(conds)
    variants = {"all shapes": {"screen_keep": 0}, f"screen {args.keep}": {"screen_keep": args.keep}}
    out, best = time_variants(conds, variants, args.repeats)
    base, new = out["all shapes"], out[f"screen {args.keep}"]
    t_base, t_new = (best[k] / n * 1e3 for k in variants)
    print(f"conditions: {args.conditions} random + {n - args.conditions} frontier")
    print(f"all {n_shapes} shapes: {t_base:.1f} ms a condition (best of {args.repeats})")
    print(f"screen {args.keep}: {t_new:.1f} ms a condition")
    shares = wall_agreement(base, new, conds)
    du = np.abs(base[2] - new[2])
    print(
        f"max utilization: largest difference {du.max():.2e} (screened never above: "
        f"{bool(np.all(new[2] <= base[2] + 1e-12))})"
    )
    print(
        f"speedup={t_base / t_new:.2f} dm_within_0.01={shares[0]:.4f} "
        f"lat_within_0.01={shares[1]:.4f} conditions={n}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
