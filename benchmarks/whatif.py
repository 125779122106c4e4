"""Benchmark: the live what-if (``wallcast whatif``, ``/v1/whatif``), its speed and its accuracy.

1. **Latency** (target, issue 24: p99 under 300 ms): ``GET /v1/whatif`` through the real app
   (FastAPI's test client, in process) for ``--calls`` requests cycling over the changes below,
   after one cold request that reads the forecast's arrays; p50 / p99 / max.
2. **Against real re-runs** (``--rerun``): for each change with k < 0.7, a fresh forecast with
   the changed prior (the refresh flow on the forecast's prior file with that key's table
   replaced, base scenario only, the same data, seed and draws; fitted inputs are refitted) and
   the reweighted medians of both walls' hit year beside the re-run's, with
   the Monte Carlo error of the difference: each median's standard error from its draws
   (sqrt(p(1-p)/n_eff) / density at the median, density from the 40-60 % quantile spread) added
   in quadrature.  Passes when every difference is within 2 standard errors.

Last line: ``whatif_p50_ms=<x> whatif_p99_ms=<y> calls=<n>`` (and ``rerun_within_mc=<k>/<m>``).

Usage: ``python benchmarks/whatif.py [--forecast PATH] [--calls 200] [--rerun]`` (default:
outputs/latest; ``--rerun`` runs the refresh flow: minutes).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np

CHANGES = [
    "scaling.batch_exponent=0.33,0.38,0.43",  # fitted (the batch law)
    "latency.change_per_year=0.92,0.97,1.02",  # drawn from its prior
    "training.max_utilization=0.55,0.65,0.75",  # fitted (the utilization law)
]


def _median_se(values: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """Weighted median and its Monte Carlo standard error."""
    from forecast.queries.whatif import weighted_quantiles

    finite = np.isfinite(values)
    v, w = values[finite], weights[finite] / weights[finite].sum()
    q40, med, q60 = weighted_quantiles(v, w, [0.4, 0.5, 0.6])
    n_eff = 1.0 / np.sum(w**2)
    density = 0.2 / max(q60 - q40, 1e-12)
    return float(med), float(math.sqrt(0.25 / n_eff) / density)


def latency(path: Path, calls: int) -> tuple[float, float, float]:
    from fastapi.testclient import TestClient

    from forecast.service.app import create_app

    client = TestClient(create_app(path.parents[2]))
    t0 = time.perf_counter()
    assert client.get("/v1/whatif", params={"prior": CHANGES[0]}).status_code == 200
    print(f"cold request (reads the arrays): {1000 * (time.perf_counter() - t0):.0f} ms")
    times = []
    for i in range(calls):
        t0 = time.perf_counter()
        r = client.get("/v1/whatif", params={"prior": CHANGES[i % len(CHANGES)]})
        times.append(time.perf_counter() - t0)
        assert r.status_code == 200, r.text
    ms = 1000 * np.asarray(times)
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99)), float(ms.max())


def rerun(path: Path) -> tuple[int, int]:
    from flows.refresh import refresh_forecast
    from forecast.queries.psis import psis_log_weights
    from forecast.queries.whatif import (
        changed_priors_text,
        load_draws,
        parse_change,
        whatif_answer,
    )
    from forecast.store.reader import latest_forecast_path, read_attrs

    attrs = read_attrs(path)
    stored = load_draws(path)
    b = stored.scenarios.index("baseline")
    ok = total = 0
    rows = []
    for change in CHANGES:
        out = whatif_answer([change], path)
        if not out["reliable"]:
            print(f"{change}: k = {out['pareto_k']} > 0.7, not compared")
            continue
        work = Path(tempfile.mkdtemp(prefix="wallcast-whatif-rerun-"))
        priors = work / "priors.toml"
        priors.write_text(changed_priors_text(str(attrs["priors_text"]), [change]))
        t0 = time.perf_counter()
        refresh_forecast(
            priors=str(priors),
            data_dir=str(attrs.get("data_dir") or "") or None,
            outputs_dir=str(work / "outputs"),
            scenarios=[],
            chains=int(attrs["chains"]),
            draws=int(attrs["draws"]),
            seed=int(attrs["seed"]),
            reports=False,
            propagate_draws=int(attrs.get("propagate_draws") or 0) or None,
        )
        print(f"re-run of {change}: {time.perf_counter() - t0:.0f} s")
        fresh = load_draws(latest_forecast_path(work / "outputs"))
        key = out["changes"][0]["key"]
        x = stored.values("baseline", key)
        new, old = parse_change(change).prior, stored.old_prior("baseline", key)
        w = np.exp(psis_log_weights(new.logpdf(x) - old.logpdf(x))[0])
        for j, wall in enumerate(stored.walls):
            m0, _ = _median_se(stored.hit_year[b, :, j], np.ones(w.size))
            m1, se1 = _median_se(stored.hit_year[b, :, j], w)
            vals = fresh.hit_year[0, :, j]
            m2, se2 = _median_se(vals, np.ones_like(vals))
            se = math.hypot(se1, se2)
            ok += abs(m1 - m2) <= 2 * se
            total += 1
            rows.append(
                f"{change} | {wall} | {m0:.2f} | {m1:.2f} ({se1:.2f}) | {m2:.2f} ({se2:.2f}) | "
                f"{(m1 - m2) / se:+.1f} | {out['pareto_k']:.2f}"
            )
    print("change | wall | stored median | reweighted median (se) | re-run median (se) | "
          "diff / se | k")  # fmt: skip
    print("\n".join(rows))
    return ok, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forecast", type=Path, default=None, help="default: outputs/latest")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rerun", action="store_true", help="compare with real re-runs")
    args = parser.parse_args()

    from forecast.store.reader import resolve_forecast_path

    path = resolve_forecast_path(args.forecast)
    p50, p99, worst = latency(path, args.calls)
    line = f"whatif_p50_ms={p50:.1f} whatif_p99_ms={p99:.1f} max_ms={worst:.1f} calls={args.calls}"
    if args.rerun:
        ok, total = rerun(path)
        line += f" rerun_within_mc={ok}/{total}"
    print(line)


if __name__ == "__main__":
    main()
