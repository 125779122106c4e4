"""Sobol indices before -> after issue 12, side by side in one run: every input from its prior
(before) against the fitted inputs from the posterior (after), same inputs, N and seed.

With ``--forecast PATH`` it analyses a published forecast of the joint model. Without, it builds a
stand-in posterior first: the hardware and frontier-compute trends (``support.fits.fit_trends``,
tests/support/fits.py) and the four laws of ``forecast.stats.scaling_laws`` each fitted alone
(``forecast.analyses.law_holdout.fit_law``) to the tables of ``data/`` (in the joint model they
are separate likelihoods, so each law's posterior is the same up to the priors the joint model
gives them). It prints, per target, the top inputs with both total indices and
their 95 % bootstrap intervals (markdown), the median interval width of the leading indices, and
the time per basis. ``--step-check D`` also compares hit years with walls every 2, 3 and 4 years
on D prior draws (the interpolation error of a coarser wall grid).

Run: .venv/bin/python scripts/sensitivity_before_after.py [--forecast PATH] [--samples 256]
     [--wall-year-step 4] [--step-check 300] [--save-posterior tree.nc]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TOP = 8


def stand_in_forecast(path: Path, chains: int, draws: int) -> None:
    """Fit the trends and the four laws alone; write a forecast-shaped tree with their draws."""
    import jax
    import xarray as xr

    from forecast.analyses.law_holdout import fit_law
    from forecast.config.paths import default_priors_path
    from forecast.config.runtime import init_jax
    from forecast.data.evidence import load_model_shapes, load_scaleup_domains
    from forecast.data.hardware import load_frontier_runs, load_hardware
    from forecast.priors import load_priors
    from forecast.stats.scaling_laws import (
        batch_law_model,
        batch_table,
        depth_law_model,
        depth_table,
        domain_growth_model,
        domain_table,
        utilization_law_model,
        utilization_table,
    )
    from forecast.stats.trends import trend_priors_from_prior_set

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/support
    from support.fits import fit_trends

    init_jax()
    prior_set = load_priors(default_priors_path())
    t0 = time.perf_counter()
    trend = fit_trends(
        load_hardware(),
        load_frontier_runs(),
        trend_priors_from_prior_set(prior_set),
        rng_key=jax.random.PRNGKey(0),
        num_chains=chains,
        num_warmup=draws,
        num_samples=draws,
    )
    post = trend["posterior"].to_dataset()
    print(f"trends fitted ({time.perf_counter() - t0:.0f} s)", flush=True)
    shapes, domains = load_model_shapes(), load_scaleup_domains()
    laws = {
        "depth": (depth_law_model, depth_table(shapes)),
        "batch": (batch_law_model, batch_table(shapes)),
        "utilization": (utilization_law_model, utilization_table(shapes)),
        "domain": (domain_growth_model, domain_table(domains)),
    }
    provenance = {}
    from forecast.priors.registry import FITTED_INPUTS

    for law, (model, table) in laws.items():
        t0 = time.perf_counter()
        fit = fit_law(
            model,
            table,
            jax.random.PRNGKey(1),
            num_chains=chains,
            num_warmup=draws,
            num_samples=draws,
        )
        for name, value in fit.samples.items():
            if value.ndim == 2:
                post[name] = (("chain", "draw"), value)
        for key, fitted in FITTED_INPUTS.items():
            if fitted.law == law:
                provenance[key] = {
                    "kind": "fitted",
                    "law": law,
                    "table": table.table,
                    "rows": len(table),
                    "prior_source": prior_set[key].source,
                }
        print(
            f"{law} law fitted to {len(table)} rows ({time.perf_counter() - t0:.0f} s; max R-hat "
            f"{fit.rhat_max():.3f}, {fit.divergences} divergences)",
            flush=True,
        )
    fc = xr.Dataset({"hit_year": (("draw",), np.zeros(1))})
    tree = xr.DataTree.from_dict({"/posterior": post, "/forecast": fc})
    tree.attrs.update(
        id="stand-in",
        priors_text=default_priors_path().read_text(),
        priors_name="baseline",
        input_provenance=json.dumps({"baseline": provenance}),
    )
    tree.to_netcdf(path, engine="h5netcdf")


def step_check(n_draws: int) -> None:
    """Hit years with walls every 2, 3, 4 years against every year, on prior draws."""
    from forecast.analyses.sensitivity import data_anchors, evaluate_targets, input_keys
    from forecast.config.paths import default_priors_path
    from forecast.data.hardware import load_hardware
    from forecast.priors import load_priors

    prior_set = load_priors(default_priors_path())
    anchors = data_anchors(load_hardware(), prior_set)
    u = np.random.default_rng(7).random((n_draws, len(input_keys(prior_set))))
    draws = prior_set.sample_from_uniforms(u, input_keys(prior_set))
    ref, _ = evaluate_targets(draws, anchors, wall_year_step=1)
    for step in (2, 3, 4):
        t0 = time.perf_counter()
        got, _ = evaluate_targets(draws, anchors, wall_year_step=step)
        seconds = time.perf_counter() - t0
        for target in ("data_movement_hit_year", "latency_hit_year"):
            d = np.abs(got[target] - ref[target])
            print(
                f"step {step}: {target} |diff| vs every year: median {np.median(d):.3f}, "
                f"p95 {np.quantile(d, 0.95):.3f}, max {d.max():.3f} yr ({seconds:.0f} s)"
            )


def laws_only(path: Path, run, seed: int):
    """The fitted laws from the posterior, the trends from their priors (same inputs, N, seed)."""
    from forecast import store
    from forecast.analyses import sensitivity

    with store.open_forecast(path) as tree:
        basis = sensitivity.posterior_basis(tree, run.prior_set, trends=False)
        anchors = sensitivity.forecast_anchors(tree)
    settings = run.result.settings
    res = sensitivity.run_sensitivity(
        basis,
        anchors,
        n=settings["samples"],
        seed=seed,
        wall_year_step=settings["wall_year_step"],
        keys=list(run.result.inputs),
    )
    print(f"laws-only basis: {res.settings['seconds']:.0f} s")
    return res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forecast", type=Path, help="a published forecast (joint model)")
    parser.add_argument("--samples", type=int, default=None, help="Sobol base samples N")
    parser.add_argument("--wall-year-step", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chains", type=int, default=2, help="stand-in fits: chains")
    parser.add_argument("--draws", type=int, default=500, help="stand-in fits: draws per chain")
    parser.add_argument("--save-posterior", type=Path, help="keep the stand-in tree here")
    parser.add_argument("--step-check", type=int, default=0, help="prior draws for the check")
    parser.add_argument(
        "--attribution",
        action="store_true",
        help="also a third basis: the laws from the posterior, the trends from their priors",
    )
    parser.add_argument("--save-results", type=Path, help="write the indices here (NetCDF)")
    args = parser.parse_args()

    from forecast.jobs import analyse_job
    from forecast.queries.analyses import comparison_rows

    path = args.forecast
    if path is None:
        path = args.save_posterior or Path(tempfile.mkdtemp()) / "forecast.nc"
        stand_in_forecast(path, args.chains, args.draws)
    kwargs = {}
    if args.samples:
        kwargs["samples"] = args.samples
    if args.wall_year_step:
        kwargs["wall_year_step"] = args.wall_year_step
    run = analyse_job.sensitivity(
        path, seed=args.seed, compare_prior=True, store=False, progress=print, **kwargs
    )
    after, before = run.result, run.prior_result
    results = {"prior": before, "posterior": after}
    if args.attribution:
        results["laws_only"] = laws_only(path, run, args.seed)
    if args.save_results:
        import xarray as xr

        from forecast.analyses.sensitivity import sensitivity_dataset

        xr.DataTree.from_dict(
            {f"/{name}": sensitivity_dataset(res) for name, res in results.items()}
        ).to_netcdf(args.save_results, engine="h5netcdf")
    print(
        f"\nN = {after.settings['samples']}, walls every {after.settings['wall_year_step']} "
        f"years, {after.settings['evaluations']} evaluations per basis: before "
        f"{before.settings['seconds']:.0f} s, after {after.settings['seconds']:.0f} s "
        f"(total with reading {run.seconds:.0f} s)"
    )
    print("groups: " + json.dumps(after.groups))
    rows = comparison_rows(run.dataset, run.prior_dataset)
    for target in after.targets:
        print(f"\n**{target}**\n")
        print(
            "| input | after from | total before [95%] | total after [95%] | rank before → after |"
        )
        print("|---|---|---|---|---|")
        for r in [r for r in rows if r["target"] == target][:TOP]:
            lo, hi = r["total_prior_ci"]
            plo, phi = r["total_posterior_ci"]
            print(
                f"| {r['input']} | {r['kind']} | {r['total_prior']:.2f} [{lo:.2f}, {hi:.2f}] | "
                f"{r['total_posterior']:.2f} [{plo:.2f}, {phi:.2f}] | "
                f"{r['rank_prior']} → {r['rank_posterior']} |"
            )
    batch = "scaling.batch_tokens_2024"
    print("\nSpread of each target and the 2024 batch level's share (total index x variance):")
    for t, target in enumerate(after.targets):
        parts = []
        for name, res in results.items():
            sd = float(np.sqrt(res.variance[t]))
            total = float(res.indices["total"][t, res.inputs.index(batch)])
            parts.append(f"{name}: sd {sd:.2f}, batch total {total:.2f} = {total * sd**2:.2f} var")
        print(f"  {target}: " + "; ".join(parts))
    for name, res in (("before", before), ("after", after)):
        widths = []
        for t in range(len(res.targets)):
            top = np.argsort(-res.indices["total"][t])[:3]
            widths += list(res.indices["total_high"][t, top] - res.indices["total_low"][t, top])
            widths += list(
                res.indices["first_order_high"][t, top] - res.indices["first_order_low"][t, top]
            )
        print(
            f"{name}: 95% interval width of the top-3 indices per target (total and first "
            f"order): median {np.median(widths):.3f}, max {np.max(widths):.3f}"
        )
    if args.step_check:
        step_check(args.step_check)


if __name__ == "__main__":
    main()
