"""Leave-one-source-out coverage of the depth and batch laws under the joint model's priors.

The law parameters of the joint model (:func:`forecast.stats.joint.joint_model`) appear in their own
likelihood only, so its posterior factorises: refitting one law alone, with the priors the joint
model gives it (:func:`forecast.stats.joint.law_priors_from_prior_set` on ``priors/baseline.toml``), is
exactly the joint model refitted without the held-out rows. Every source (paper) is held out in
turn, its rows' central 80 % posterior predictive intervals checked (``holdout_coverage``, one
NUTS compilation). Prints coverage, misses and their side; the figures of
``docs/sensitivity-and-backtest.md``. About 20 s on the 2-core machine (2026-12-07).

Run: .venv/bin/python scripts/law_holdout.py [--draws 300]
"""

from __future__ import annotations

import argparse
import time

import jax

from forecast.config import paths
from forecast.data.evidence import load_model_shapes
from forecast.priors import load_priors
from forecast.stats.joint import law_priors_from_prior_set
from forecast.stats.scaling_laws import batch_law_model, batch_table, depth_law_model, depth_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=300, help="warm-up and draws per chain")
    parser.add_argument("--chains", type=int, default=2)
    args = parser.parse_args()
    shapes = load_model_shapes()
    law_priors = law_priors_from_prior_set(load_priors(paths.default_priors_path()))
    laws = {
        "depth": (depth_law_model, depth_table(shapes), law_priors.depth),
        "batch": (batch_law_model, batch_table(shapes), law_priors.batch),
    }
    for name, (model, table, priors) in laws.items():
        start = time.perf_counter()
        result = holdout(model, table, priors, args)
        outside = result.frame().loc[~result.inside]
        below = int((outside["observed_log10"] < outside["lower_log10"]).sum())
        print(
            f"{name}: {len(set(table.groups))} sources, {len(table)} rows of {table.table}: "
            f"{int(result.inside.sum())}/{len(table)} = {result.coverage:.0%} inside their 80 % "
            f"interval; {below} below, {len(outside) - below} above "
            f"(max R-hat of the refits {result.max_rhat:.3f}, {result.divergences} divergences, "
            f"{time.perf_counter() - start:.0f} s)"
        )
        print("  outside: " + ", ".join(outside["name"]), flush=True)


def holdout(model, table, priors, args):
    from forecast.analyses.law_holdout import holdout_coverage

    return holdout_coverage(
        model,
        table,
        jax.random.PRNGKey(2),
        priors=priors,
        by="group",
        num_chains=args.chains,
        num_warmup=args.draws,
        num_samples=args.draws,
    )


if __name__ == "__main__":
    main()
