"""Benchmark: the sensitivity analysis with each draw's walls searched only until its frontier has
reached both (``first_hits``), against every wall-year searched (``propagate``), side by side
(issue 23).

    .venv/bin/python benchmarks/sensitivity_hits.py [--forecast PATH] [--samples 256] [--rounds 2]

Runs ``wallcast analyse``'s Sobol analysis (:func:`forecast.jobs.analyse_job.sensitivity`,
nothing attached to the file) on a published forecast (default: the latest; its posterior basis
and its own regime for the tornado, as ``analyse`` runs it) twice per round: once as shipped and
once with the model evaluating every (draw, wall-year) through
:func:`forecast.inference.propagate.propagate`, what ``evaluate_targets`` called before. The two
take turns; the first round includes compiling (the persistent cache is off, see below). Checks
that the Sobol indices, their intervals, the tornado and the capped shares are identical, and
counts the wall-year searches the shipped model made.

Last line: ``speedup=<best old / best new> identical=<True|False> searched_share=<s>
old_s=<best> new_s=<best>``.
"""

from __future__ import annotations

import argparse
import os
import time
from unittest import mock

os.environ.setdefault("JAX_ENABLE_COMPILATION_CACHE", "false")

import numpy as np  # noqa: E402

from forecast.analyses import sensitivity as sens  # noqa: E402
from forecast.inference import propagate as prop  # noqa: E402
from forecast.jobs import analyse_job  # noqa: E402
from forecast.store.reader import resolve_forecast_path  # noqa: E402

FIELDS = ("tornado_low", "tornado_high", "baseline", "capped_fraction", "variance")


def _every_wall_year(trends, inputs, years, step, *, regime):
    """``evaluate_targets``' model before: every (draw, wall-year) searched."""
    return prop.propagate(
        trends, inputs, years, step, cost=False, regime=regime, paper_beside=False
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--forecast", default=None, help="a forecast.nc (default: the latest)")
    p.add_argument("--samples", type=int, default=sens.DEFAULT_SAMPLES)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args(argv)
    forecast = resolve_forecast_path(args.forecast)
    print(f"forecast {forecast}", flush=True)
    counts = []

    def counted(*a, **k):
        res = prop.first_hits(*a, **k)
        counts.append((int(res["wall_years_searched"]), int(res["wall_years_total"])))
        return res

    best = {"old": np.inf, "new": np.inf}
    results = {}
    for r in range(args.rounds):
        for name in ("old", "new") if r % 2 == 0 else ("new", "old"):
            patched = _every_wall_year if name == "old" else counted
            counts.clear()
            with mock.patch.object(sens, "first_hits", patched):
                t0 = time.perf_counter()
                run = analyse_job.sensitivity(forecast, samples=args.samples, attach=False)
                seconds = time.perf_counter() - t0
            best[name] = min(best[name], seconds)
            results[name] = run.result
            extra = ""
            if name == "new":
                searched, total = map(sum, zip(*counts, strict=True))
                extra = f", {searched} of {total} wall-year searches"
            print(f"round {r + 1} {name}: {seconds:.1f} s{extra}", flush=True)
    old, new = results["old"], results["new"]
    identical = all(
        np.array_equal(old.indices[k], new.indices[k], equal_nan=True) for k in old.indices
    ) and all(np.array_equal(getattr(old, f), getattr(new, f), equal_nan=True) for f in FIELDS)
    share = searched / total
    print(
        f"speedup={best['old'] / best['new']:.2f} identical={identical} "
        f"searched_share={share:.3f} old_s={best['old']:.1f} new_s={best['new']:.1f}"
    )
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
