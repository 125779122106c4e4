"""Benchmark: the planner (``wallcast plan`` search form, ``/v1/plan``) over a forecast's draws.

Times :func:`forecast.analyses.planner.plan_answer` for one accelerator and one budget at
``--draws`` posterior draws (target, issue 24: under 2 s for 500 draws on 2 cores), after one
warm-up call that pays the compilation, and the per-draw physics alone
(:func:`forecast.model.planner.best_plans`: one budget and the 15 small-scale budgets per draw).
Last line: ``planner_s=<x> physics_s=<y> draws=<n> draws_per_s=<z>``.

Usage: ``python benchmarks/planner.py [--forecast PATH] [--draws 500] [--repeat 3]``
(default: outputs/latest; make one with ``wallcast run``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forecast", type=Path, default=None, help="default: outputs/latest")
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--accelerator", default="NVIDIA H100 SXM5")
    parser.add_argument("--flop", type=float, default=1e28)
    args = parser.parse_args()

    from forecast.analyses.planner import plan_answer
    from forecast.store.reader import load_forecast, resolve_forecast_path

    path = resolve_forecast_path(args.forecast)
    tree = load_forecast(path)
    settings = dict(
        accelerators=[args.accelerator], training_flop=args.flop, draws=args.draws, tree=tree
    )
    t0 = time.perf_counter()
    plan_answer(path, **settings)
    print(f"first call (compiles): {time.perf_counter() - t0:.1f} s")
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        answer = plan_answer(path, **settings)
        times.append(time.perf_counter() - t0)
    row = answer["accelerators"][0]
    print(
        f"{row['accelerator']}, {args.flop:g} FLOP, {answer['draws']} draws: utilization "
        f"{row['utilization']['median']:.3f}, P(feasible) {row['feasible_probability']:.2f}"
    )

    from forecast.analyses.accelerator_walls import select_accelerators
    from forecast.analyses.posterior_walls import input_draws, today_assumptions
    from forecast.model import accelerators as acc_model
    from forecast.model.planner import best_plans

    fin = tree["forecast_inputs"].to_dataset().isel(scenario=0)
    draws, _ = input_draws(fin, args.draws)
    a = today_assumptions(draws, duration_days=90.0, bytes_per_number=2.0)
    (acc,) = select_accelerators([args.accelerator])
    hw, _ = acc_model.hardware_from_accelerator(acc, "bf16")
    physics = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        best_plans(hw, a, 28.0)
        physics.append(time.perf_counter() - t0)
    planner_s, physics_s = statistics.median(times), statistics.median(physics)
    print(
        f"planner_s={planner_s:.2f} physics_s={physics_s:.2f} draws={answer['draws']} "
        f"draws_per_s={answer['draws'] / planner_s:.0f}"
    )


if __name__ == "__main__":
    main()
