"""Benchmark: the realistic cost variables' shortest run, every carried step checked against one
check at the end (issue 23).

    .venv/bin/python benchmarks/realistic_cost.py [--conditions 1000] [--draws 200] [--seed 43]
        [--repeats 2]

:func:`forecast.model.realistic_fast.fast_realistic_cost` bisects the shortest feasible run in
two parts: 6 steps on the whole shortlist, then 18 on the 32 best shapes at the bracket's feasible
end.  Before, every one of those 18 steps the carried shapes called infeasible was checked on the
whole shortlist, and both ends of the range (1e-3 and 1e5 days) were always evaluated
(``check_every_step=True``).  Now, when the carried shapes hold every shape feasible at that end,
the 18 steps run on them alone and only their last infeasible end is checked (a failed check:
the path before), and an end of the range is evaluated only if the first steps never left it.
Both variants run here on the same conditions, compiled first and then timed alternately:

* ``--conditions`` random accelerators and assumptions of ``benchmarks/realistic_fast.py`` at
  random budgets 10^24-10^33 FLOP;
* the latest published forecast's posterior, thinned to about ``--draws`` draws, with the
  baseline's inputs at every wall-year ``propagate`` computes, at the frontier run's own compute
  (as the propagation calls it; none without a published forecast).

Agreement: the share of conditions whose shortest run and utilization are bit-identical.
Last line: ``speedup=<x> identical=<share> conditions=<n>``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from forecast.config.runtime import init_jax  # isort: skip

init_jax()
sys.path.insert(0, str(Path(__file__).resolve().parent))
from realistic_fast import conditions, stack  # noqa: E402

from forecast.model.params import Assumptions, Hardware  # noqa: E402
from forecast.model.realistic_fast import fast_realistic_cost  # noqa: E402


def frontier_draw_years(draws: int):
    """(hw, a, log10 FLOP) of the published forecast's baseline draw-years, flattened (None
    without a published forecast)."""
    from published_draws import published_trends

    from forecast.config.constants import DEFAULT_WALL_YEAR_STEP
    from forecast.inference.propagate import wall_conditions

    try:
        trends, inputs, years, _ = published_trends(draws)
    except Exception as exc:  # noqa: BLE001 - any reason: go on without them
        print(f"no published forecast ({exc}); random conditions only", file=sys.stderr)
        return None
    _, hw, a, idx = wall_conditions(trends, inputs, years, DEFAULT_WALL_YEAR_STEP)

    def flat(v):
        return np.asarray(v).reshape(-1)

    return (
        Hardware(*(flat(v) for v in hw)),
        Assumptions(*(flat(v) for v in a)),
        flat(np.asarray(trends["frontier_compute"])[..., idx]),
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conditions", type=int, default=1000)
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--seed", type=int, default=43)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    hw, a = stack(conditions(args.conditions, args.seed))
    x = rng.uniform(24.0, 33.0, args.conditions)
    sets = {"random": (hw, a, x)}
    frontier = frontier_draw_years(args.draws)
    if frontier is not None:
        sets["frontier draw-years"] = frontier
    variants = {"every step checked": True, "one check at the end": False}
    total_same, total_n, times = 0, 0, dict.fromkeys(variants, 0.0)
    for name, (h, aa, xx) in sets.items():
        out = {}
        for every in variants.values():  # compile
            fast_realistic_cost(h, aa, xx, check_every_step=every)
        best = dict.fromkeys(variants, float("inf"))
        for _ in range(args.repeats):
            for k, every in variants.items():
                t0 = time.perf_counter()
                out[k] = fast_realistic_cost(h, aa, xx, check_every_step=every)
                best[k] = min(best[k], time.perf_counter() - t0)
        (u0, d0), (u1, d1) = out.values()
        same = (u0 == u1) & ((d0 == d1) | (np.isnan(d0) & np.isnan(d1)))
        n = xx.size
        total_same += int(same.sum())
        total_n += n
        for k in variants:
            times[k] += best[k]
        finite = np.isfinite(d0) & (d0 > 0)
        print(
            f"{name}: {n} conditions ({finite.mean():.0%} with a finite shortest run), "
            + ", ".join(f"{k} {best[k] / n * 1e3:.2f} ms" for k in variants)
            + f", identical {same.mean():.2%}"
        )
        for i in np.flatnonzero(~same)[:10]:
            print(
                f"  condition {i}: days {d0[i]:.6g} -> {d1[i]:.6g}, utilization {u0[i]} -> {u1[i]}"
            )
    t_old, t_new = times.values()
    print(f"speedup={t_old / t_new:.2f} identical={total_same / total_n:.4f} conditions={total_n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
