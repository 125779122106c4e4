"""Time the joint NUTS fit and measure the Monte Carlo error of propagating a thinned posterior.

    .venv/bin/python benchmarks/joint_fit.py [--chains 4] [--draws 1000] [--propagate 1000]

1. ``forecast_job.fit`` on the shipped data and priors (joint model, convergence gate): NUTS seconds
   (compilation included) and the whole fit (predictive draws, prior draws, conversion).
2. The baseline scenario propagated with every posterior draw, then the hit-year 10/50/90 %
   quantiles of each wall from (a) all draws, (b) each of the ``k`` disjoint evenly thinned
   subsets of about ``--propagate`` draws (offsets 0..k-1 of every k-th draw), and (c) a bootstrap
   of one thinned subset (200 resamples): the Monte Carlo standard error at the thinned size.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import xarray as xr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--propagate", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from forecast.inference.propagate import thinning_step
    from forecast.jobs import forecast_job

    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    inputs = forecast_job.load_inputs(scenarios=[])
    start = time.perf_counter()
    fit = forecast_job.fit(
        inputs, inputs.priors, chains=args.chains, draws=args.draws, seed=args.seed
    )
    total = time.perf_counter() - start
    print(
        f"joint fit {args.chains} x {args.draws} (+{args.draws} warm-up): NUTS incl. compilation "
        f"{fit.attrs['nuts_seconds']:.1f} s, whole fit {fit.attrs['fit_seconds']:.1f} s, "
        f"forecast_job.fit with the gate {total:.1f} s"
    )

    from forecast.priors.registry import FITTED_INPUTS

    for key, fitted in FITTED_INPUTS.items():
        post = np.quantile(fit["posterior"][fitted.variable].values, [0.1, 0.5, 0.9])
        prior = np.quantile(fit["prior"][fitted.variable].values, [0.1, 0.5, 0.9])
        print(f"{key}: posterior {_fmt(post)}, prior {_fmt(prior)}")

    start = time.perf_counter()
    forecast, _ = forecast_job.propagate_scenario(fit, inputs.priors, seed=args.seed)
    seconds = time.perf_counter() - start
    n_all = forecast.sizes["chain"] * forecast.sizes["draw"]
    print(f"propagated all {n_all} draws in {seconds:.1f} s ({n_all / seconds:.0f} draws/s)")
    step = thinning_step(args.chains, args.draws, args.propagate)
    hit = forecast["hit_year"]
    qs = [0.1, 0.5, 0.9]
    rng = np.random.default_rng(0)
    print(f"thinning: every {step}th draw of each chain -> {n_all // step} draws")
    for wall in hit["wall"].values:
        h = hit.sel(wall=wall)
        full = _quantiles(h.values.ravel(), qs)
        subsets = np.array(
            [_quantiles(h.isel(draw=slice(k, None, step)).values.ravel(), qs) for k in range(step)]
        )
        thinned = h.isel(draw=slice(0, None, step)).values.ravel()
        boot = np.array([_quantiles(rng.choice(thinned, thinned.size), qs) for _ in range(200)])
        print(f"{wall}: hit year 10/50/90 % from all draws {np.round(full, 2).tolist()}")
        print(
            f"  {step} thinned subsets: max |subset - all| "
            f"{np.round(np.abs(subsets - full).max(axis=0), 2).tolist()} yr"
        )
        print(
            f"  bootstrap SE at {thinned.size} draws: {np.round(boot.std(axis=0), 2).tolist()} yr"
        )


def _fmt(values: np.ndarray) -> str:
    return " / ".join(f"{v:.3g}" for v in values)


def _quantiles(values: np.ndarray, qs: list[float]) -> np.ndarray:
    # a wall not hit by the last year is +inf: quantiles past the hit fraction are +inf
    return np.quantile(values, qs)


if __name__ == "__main__":
    xr.set_options(keep_attrs=True)
    main()
