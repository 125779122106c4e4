"""The numbers of docs/evidence.md: each law of forecast.stats.scaling_laws fitted alone on the evidence
tables, then checked on held-out sources.

For every law it prints the fit at the forecast's settings (4 chains x 1000 draws, convergence
figures), the 10/50/90 % posterior quantiles of its parameters, and the held-out coverage of the
80 % predictive interval: leave-one-source-out (every paper held out in turn, one refit each) for
the depth and batch laws. Takes about 45 s on 2 cores (2026-12-07; float64, as the forecast).

Run: .venv/bin/python scripts/evidence_fits.py [--quick]   (--quick: 2 x 300 draws, 5 folds)
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

from forecast.analyses.law_holdout import fit_law, holdout_coverage
from forecast.data.evidence import load_model_shapes, load_scaleup_domains
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

PARAMETERS = {
    "depth": ["layer_exponent", "layers_at_reference", "depth_noise_dex"],
    "batch": [
        "batch_tokens_2024",
        "batch_compute_exponent",
        "batch_exponent",
        "moe_batch_offset_dex",
        "batch_shortfall_dex",
        "batch_noise_dex",
    ],
    "utilization": ["max_utilization", "mfu_shortfall_dex", "mfu_noise_dex"],
    "domain": ["domain_size_2024", "domain_growth_per_year", "domain_noise_dex"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 chains x 300 draws, 5 folds")
    args = parser.parse_args()
    chains, draws = (2, 300) if args.quick else (4, 1000)
    folds = 5 if args.quick else None

    shapes, domains = load_model_shapes(), load_scaleup_domains()
    laws = {
        "depth": (depth_law_model, depth_table(shapes)),
        "batch": (batch_law_model, batch_table(shapes)),
        "utilization": (utilization_law_model, utilization_table(shapes)),
        "domain": (domain_growth_model, domain_table(domains)),
    }
    for name, (model, table) in laws.items():
        fit = fit_law(
            model,
            table,
            jax.random.PRNGKey(0),
            num_chains=chains,
            num_warmup=draws,
            num_samples=draws,
        )
        print(
            f"{name}: {len(table)} rows of {table.table} ({table.selection}); "
            f"{chains} x {draws}: max R-hat {fit.rhat_max():.4f}, "
            f"min bulk ESS {fit.ess_bulk_min():.0f}, {fit.divergences} divergences"
        )
        for p in PARAMETERS[name]:
            q = fit.quantiles(p)
            print(f"  {p:24s} 10/50/90 %: " + " / ".join(f"{v:.4g}" for v in q))
        if name == "domain":
            in_2030 = 10 ** (
                fit.flat("log10_domain_2024") + 6 * fit.flat("domain_growth_dex_per_year")
            )
            q = [float(v) for v in (np.quantile(in_2030, (0.1, 0.5, 0.9)))]
            print("  trend domain in 2030      10/50/90 %: " + " / ".join(f"{v:.4g}" for v in q))
        if name in ("depth", "batch"):
            result = holdout_coverage(model, table, jax.random.PRNGKey(2), folds=folds)
            units = folds or len(set(table.groups))
            print(
                f"  held out ({units} {'folds' if folds else 'sources'}): "
                f"{result.inside.sum()}/{len(table)} = {result.coverage:.0%} inside their 80 % "
                f"interval (max R-hat of the refits {result.max_rhat:.3f}, "
                f"{result.divergences} divergences)"
            )
            outside = result.frame().loc[~result.inside]
            print("  outside: " + ", ".join(outside["name"]))
            below = (outside["observed_log10"] < outside["lower_log10"]).sum()
            print(f"  ({below} below, {len(outside) - below} above their interval)")
        print(flush=True)


if __name__ == "__main__":
    main()
