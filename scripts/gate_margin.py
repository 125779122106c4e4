"""Worst R-hat and bulk ESS of the joint fit over seeds (the convergence gate's margin).

    .venv/bin/python scripts/gate_margin.py --priors priors/baseline.toml --seeds 0-9 \
        --chains 4 --draws 1000 --json out.json

Run it once under the default XLA and once with ``XLA_FLAGS=--xla_cpu_max_isa=AVX2`` (another
instruction set: other rounding, other NUTS trajectories) to see the margin on another CPU.
Prints one row per seed: worst R-hat (parameter), worst bulk ESS (parameter), divergences, seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import time


def _seeds(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def _max_quantile_z(posterior) -> float:
    """Largest |fit - reference| / combined MCSE over every parameter's 5/50/95 % quantiles
    (the statistic of tests/inference/test_reference_forecast.py)."""
    import sys
    from pathlib import Path

    import xarray as xr

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from support.reference import QUANTILES_PATH, posterior_quantiles, quantile_z

    ref = xr.open_dataset(QUANTILES_PATH, engine="h5netcdf").load()
    z = quantile_z(posterior_quantiles(posterior), ref)
    return max(float(v.max()) for v in z.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--priors", default=None)
    ap.add_argument("--scenario", default=None, help="a scenario overlay whose fit to measure")
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--reference-quantiles",
        action="store_true",
        help="also the largest z of the fit's quantiles against tests/reference (baseline only)",
    )
    args = ap.parse_args()

    from forecast.inference.gate import convergence_report
    from forecast.jobs import forecast_job

    inputs = forecast_job.load_inputs(
        args.priors, scenarios=[args.scenario] if args.scenario else []
    )
    prior_set = list(inputs.scenarios.values())[-1]
    rows = []
    for seed in _seeds(args.seeds):
        start = time.perf_counter()
        dt = forecast_job.fit(
            inputs,
            prior_set,
            chains=args.chains,
            draws=args.draws,
            seed=seed,
            warmup=args.warmup,
            gate=False,
        )
        seconds = time.perf_counter() - start
        rep = convergence_report(dt)
        row = {
            "seed": seed,
            "r_hat": rep["r_hat"][1],
            "r_hat_parameter": rep["r_hat"][0],
            "ess_bulk": rep["ess_bulk"][1],
            "ess_bulk_parameter": rep["ess_bulk"][0],
            "divergences": rep["divergences"],
            "seconds": round(seconds, 1),
        }
        if args.reference_quantiles:
            row["max_quantile_z"] = _max_quantile_z(dt["posterior"].to_dataset())
        rows.append(row)
        print(
            f"seed {seed:3d}  r_hat {row['r_hat']:.4f} ({row['r_hat_parameter']})  "
            f"ess_bulk {row['ess_bulk']:.0f} ({row['ess_bulk_parameter']})  "
            f"div {row['divergences']}  {seconds:.0f} s"
            + (f"  max z {row['max_quantile_z']:.2f}" if "max_quantile_z" in row else ""),
            flush=True,
        )
    out = {
        "priors": args.priors or "priors/baseline.toml",
        "scenario": args.scenario,
        "chains": args.chains,
        "draws": args.draws,
        "warmup": args.warmup,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "chain_method": json.loads(dt.attrs["model_config"]).get("chain_method"),  # every fit's
        "rows": rows,
        "worst_r_hat": max(r["r_hat"] for r in rows),
        "worst_ess_bulk": min(r["ess_bulk"] for r in rows),
    }
    print(f"worst r_hat {out['worst_r_hat']:.4f}, worst ess_bulk {out['worst_ess_bulk']:.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
