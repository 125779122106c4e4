"""Benchmark: the stored utilization curves, one condition a budget against a draw's budgets side
by side (issue 23).

    .venv/bin/python benchmarks/realistic_curves.py [--draws 100] [--repeats 3] [--seed 0]

The forecast's ``accelerator_walls`` group stores, for 7 accelerators, the best launchable plan's
utilization at 111 budgets (10^22 to 10^33 FLOP, 0.1 dex) over 100 posterior draws.  Before,
each (draw, budget) was one condition of :func:`forecast.model.realistic_fast.fast_realistic_utilization`,
which computes the shortlist's budget-independent constants (:func:`forecast.model.realistic._constants`)
for every budget; :func:`~forecast.model.realistic_fast.fast_realistic_curves` computes them once a
draw and evaluates the budgets side by side.  Both run here on the same draws (an H100 with its
FLOP/s x1-2 and HBM bandwidth x1-1.5, random batch exponents, maximum utilizations and sequence
lengths), compiled first and then timed alternately, the best of ``--repeats`` each.

Last line: ``speedup=<x> old_s=<a> new_s=<b> identical=<share> max_rel_diff=<d>``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from forecast.config.runtime import init_jax


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    init_jax()
    from forecast.analyses.posterior_walls import CURVE_LOG10_FLOP_RANGE, CURVE_STEP_LOG10
    from forecast.model.params import Assumptions, Hardware
    from forecast.model.realistic_fast import fast_realistic_curves, fast_realistic_utilization

    rng = np.random.default_rng(args.seed)
    n = args.draws
    hw = Hardware(
        9.89e14 * rng.uniform(1, 2, n),
        3.35e12 * rng.uniform(1, 1.5, n),
        np.full(n, 8e10),
        np.full(n, 4.5e11),
        np.full(n, 8.0),
        np.full(n, 5e10),
    )
    a = Assumptions()._replace(
        max_utilization=rng.uniform(0.5, 0.75, n),
        batch_exponent=rng.uniform(0.3, 0.45, n),
        sequence_length=rng.uniform(4e3, 3.2e4, n),
    )
    lo, hi = CURVE_LOG10_FLOP_RANGE
    budgets = np.round(np.arange(lo, hi + 1e-9, CURVE_STEP_LOG10), 4)

    def per_condition():  # the path before: every (draw, budget) a condition
        return fast_realistic_utilization(
            Hardware(*(v[:, None] for v in hw)),
            Assumptions(*(np.asarray(v)[..., None] if np.ndim(v) == 1 else v for v in a)),
            budgets[None, :],
        )

    def per_draw():
        return fast_realistic_curves(hw, a, budgets)

    variants = {"one condition a budget": per_condition, "budgets side by side": per_draw}
    out = {k: f() for k, f in variants.items()}  # compile
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(args.repeats):
        for k, f in variants.items():
            t0 = time.perf_counter()
            out[k] = f()
            best[k] = min(best[k], time.perf_counter() - t0)
    old, new = out.values()
    t_old, t_new = best.values()
    rel = np.abs(new - old) / np.where(old > 0, old, 1.0)
    print(f"{n} draws x {budgets.size} budgets, best of {args.repeats}")
    for k, t in best.items():
        print(f"{k}: {t:.2f} s ({t / n * 1e3:.1f} ms a draw's curve)")
    print(
        f"speedup={t_old / t_new:.2f} old_s={t_old:.2f} new_s={t_new:.2f} "
        f"identical={np.mean(new == old):.4f} max_rel_diff={rel.max():.1e}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
