"""Benchmark: where a realistic propagation's time goes, call by call (issue 23, "measure first").

    .venv/bin/python benchmarks/propagation_split.py [--draws 256] [--scenario baseline]

:func:`forecast.inference.propagate.propagate` in the realistic regime makes three calls per
(draw, wall-year): the realistic walls (:func:`forecast.model.realistic_fast.fast_realistic_walls`),
the paper regime's walls beside them (:func:`forecast.model.fast.fast_walls`) and the cost
variables (:func:`forecast.model.realistic_fast.fast_realistic_cost` at the frontier run's
compute).  This runs them on the latest published forecast's posterior, thinned to about
``--draws`` draws, with the scenario's inputs and the wall-years ``propagate`` uses
(``DEFAULT_WALL_YEAR_STEP``: every year since 2026-12-05, every 2nd and the last before), all
wall-years of a draw in one call as ``propagate`` makes them; the second of two rounds is timed
(the first compiles).

Last line: ``realistic_ms=<a> cost_ms=<b> paper_ms=<c> total_ms=<t>`` per draw-year.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from forecast.config.runtime import init_jax


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=256)
    p.add_argument("--scenario", default="baseline")
    args = p.parse_args(argv)
    init_jax()
    from published_draws import published_trends

    from forecast.config.constants import DEFAULT_WALL_YEAR_STEP
    from forecast.inference.propagate import wall_conditions
    from forecast.model.fast import fast_walls
    from forecast.model.realistic_fast import fast_realistic_cost, fast_realistic_walls

    trends, inputs, years, n = published_trends(args.draws, args.scenario)
    _, sub_hw, sub_a, idx = wall_conditions(trends, inputs, years, DEFAULT_WALL_YEAR_STEP)
    frontier = np.asarray(trends["frontier_compute"])[..., idx]
    calls = {
        "realistic": lambda: fast_realistic_walls(sub_hw, sub_a),
        "cost": lambda: fast_realistic_cost(sub_hw, sub_a, frontier),
        "paper": lambda: fast_walls(sub_hw, sub_a, small_scale=True),
    }
    ms: dict[str, float] = {}
    for _ in range(2):  # the first round compiles
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            ms[name] = (time.perf_counter() - t0) * 1e3 / frontier.size
    print(f"{args.scenario}: {n} draws x {idx.size} wall-years = {frontier.size} draw-years")
    for name, v in ms.items():
        print(f"{name}: {v:.2f} ms a draw-year")
    print(
        f"realistic_ms={ms['realistic']:.2f} cost_ms={ms['cost']:.2f} paper_ms={ms['paper']:.2f} "
        f"total_ms={sum(ms.values()):.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
