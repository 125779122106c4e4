"""Leave-one-out predictive checks of every likelihood of the joint model.

For each observed site of :func:`forecast.stats.joint.joint_model` (a hardware spec, a record run, a
model's depth, batch or MFU, a system's domain size, a published run's MFU, a model's sequence length), the LOO-PIT is the probability that a
posterior predictive draw from the model fitted *without that row* falls below the observed value.
It comes from the one joint fit by Pareto-smoothed importance sampling (PSIS-LOO, Vehtari, Gelman &
Gabry 2017, [vehtari2017]; ``arviz_stats.loo_pit``), so no refit is needed. A calibrated
likelihood has uniform LOO-PITs: the central ``p`` interval of the held-out predictive covers the
observed value in a share ``p`` of the rows, which is what :func:`loo_checks` reports. Rows whose
Pareto k exceeds 0.7 have an unreliable importance-sampling estimate (``n_high_pareto_k``); the
exact refits without each row's source (:func:`forecast.analyses.law_holdout.holdout_coverage`,
``scripts/law_holdout.py``) are the stricter check, in ``docs/sensitivity-and-backtest.md``.

Array functions first (:func:`central_coverage`), then the Dataset builder.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import arviz_stats as azs
import numpy as np
import xarray as xr

CHECK_PROBS: tuple[float, ...] = (0.5, 0.8, 0.95)
"""Nominal probabilities of the central intervals whose coverage is reported."""

LIKELIHOODS: dict[str, tuple[str, str]] = {
    "hardware": ("log10_value", "data/hardware.csv"),
    "frontier_compute": ("log10_compute", "data/frontier_runs.csv"),
    "depth": ("log10_layers", "data/model_shapes.csv"),
    "batch": ("log10_batch", "data/model_shapes.csv"),
    "utilization": ("log10_mfu", "data/model_shapes.csv"),
    "domain": ("log10_domain", "data/scaleup_domains.csv"),
    "run_efficiency": ("log10_run_mfu", "data/training_runs.csv"),
    "sequence": ("log10_sequence", "data/model_shapes.csv"),
}
"""Each likelihood of the joint model: its observed site and its table."""

HIGH_PARETO_K = 0.7
"""Pareto k above which a PSIS estimate is unreliable (Vehtari et al. 2024, [vehtari2017])."""


def central_coverage(pit: np.ndarray, probs: Sequence[float] = CHECK_PROBS) -> np.ndarray:
    """Share of PIT values inside each central interval ``[(1 - p) / 2, (1 + p) / 2]``."""
    pit = np.asarray(pit, dtype=float).ravel()
    if pit.size == 0:
        return np.full(len(probs), np.nan)
    return np.asarray([np.mean((pit >= (1 - p) / 2) & (pit <= (1 + p) / 2)) for p in probs])


def loo_checks(tree: xr.DataTree, probs: Sequence[float] = CHECK_PROBS) -> xr.Dataset:
    """Per likelihood of the joint fit in ``tree``: rows, LOO-PIT coverage of the central
    ``probs`` intervals, mean LOO-PIT, and the PSIS reliability (largest Pareto k, rows above
    :data:`HIGH_PARETO_K`). Likelihoods the tree does not hold are left out."""
    names, rows, coverage, pit_mean, k_max, k_high, sites, tables = [], [], [], [], [], [], [], []
    observed = tree["observed_data"] if "observed_data" in tree.children else None
    for name, (site, table) in LIKELIHOODS.items():
        if observed is None or site not in observed.data_vars:
            continue
        with warnings.catch_warnings():  # high Pareto k is reported below, per likelihood
            warnings.simplefilter("ignore", UserWarning)
            pit = np.asarray(azs.loo_pit(tree, var_names=[site])[site], dtype=float).ravel()
            loo = azs.loo(tree, var_name=site, pointwise=True)
        pareto_k = np.asarray(loo.pareto_k, dtype=float).ravel()
        names.append(name)
        sites.append(site)
        tables.append(table)
        rows.append(pit.size)
        coverage.append(central_coverage(pit, probs))
        pit_mean.append(float(np.mean(pit)))
        k_max.append(float(np.max(pareto_k)))
        k_high.append(int(np.sum(pareto_k > HIGH_PARETO_K)))
    ds = xr.Dataset(
        {
            "n_rows": ("likelihood", np.asarray(rows, dtype=np.int64)),
            "loo_coverage": (("likelihood", "prob"), np.asarray(coverage).reshape(-1, len(probs))),
            "loo_pit_mean": ("likelihood", np.asarray(pit_mean)),
            "pareto_k_max": ("likelihood", np.asarray(k_max)),
            "n_high_pareto_k": ("likelihood", np.asarray(k_high, dtype=np.int64)),
            "observed_site": ("likelihood", np.asarray(sites, dtype=str)),
            "table": ("likelihood", np.asarray(tables, dtype=str)),
        },
        coords={"likelihood": names, "prob": list(probs)},
    )
    long_names = {
        "n_rows": "observed rows of the likelihood",
        "loo_coverage": "share of rows inside the central prob interval of their leave-one-out "
        "predictive (PSIS-LOO-PIT)",
        "loo_pit_mean": "mean LOO-PIT (0.5 if unbiased)",
        "pareto_k_max": "largest PSIS Pareto k (above 0.7: that row's estimate is unreliable)",
        "n_high_pareto_k": "rows with Pareto k above 0.7",
        "observed_site": "observed site of the joint model",
        "table": "data table of the rows",
    }
    for var, text in long_names.items():
        ds[var].attrs["long_name"] = text
    ds.attrs["method"] = (
        "PSIS-LOO probability integral transform of each observed row (arviz_stats.loo_pit) "
        "from the joint posterior; coverage of central intervals"
    )
    if "run_efficiency" in names:
        ds = xr.merge([ds, run_loo_intervals(tree)], combine_attrs="override")
    return ds


RUN_SITE = LIKELIHOODS["run_efficiency"][0]


def run_loo_intervals(tree: xr.DataTree, prob: float = 0.8) -> xr.Dataset:
    """Each published run's leave-one-out predictive MFU (PSIS-weighted quantiles of the posterior
    predictive, ``arviz_stats.loo_expectations``): the median and the central ``prob`` interval,
    whether the observed MFU lies inside, and the row's Pareto k. Dim ``log10_run_mfu_row``."""
    probs = [(1 - prob) / 2, 0.5, (1 + prob) / 2]
    with warnings.catch_warnings():  # high Pareto k is reported per row
        warnings.simplefilter("ignore", UserWarning)
        quantiles, _ = azs.loo_expectations(tree, var_name=RUN_SITE, kind="quantile", probs=probs)
        loo = azs.loo(tree, var_name=RUN_SITE, pointwise=True)
    dim = f"{RUN_SITE}_row"
    q = 10.0 ** np.asarray(quantiles.transpose(..., dim), dtype=float).reshape(len(probs), -1)
    observed = 10.0 ** np.asarray(tree["observed_data"][RUN_SITE], dtype=float)
    rows = tree["observed_data"][dim].values
    out = xr.Dataset(
        {
            "run_mfu_observed": (dim, observed),
            "run_mfu_loo_low": (dim, q[0]),
            "run_mfu_loo_median": (dim, q[1]),
            "run_mfu_loo_high": (dim, q[2]),
            "run_mfu_loo_covered": (dim, (q[0] <= observed) & (observed <= q[2])),
            "run_mfu_pareto_k": (dim, np.asarray(loo.pareto_k, dtype=float).ravel()),
        },
        coords={dim: rows},
    )
    texts = {
        "run_mfu_observed": "MFU the published run achieved (data/training_runs.csv)",
        "run_mfu_loo_low": f"{(1 - prob) / 2:.0%} quantile of the run's leave-one-out predictive MFU",
        "run_mfu_loo_median": "median of the run's leave-one-out predictive MFU",
        "run_mfu_loo_high": f"{(1 + prob) / 2:.0%} quantile of the run's leave-one-out predictive MFU",
        "run_mfu_loo_covered": f"observed MFU inside the central {prob:.0%} leave-one-out interval",
        "run_mfu_pareto_k": "PSIS Pareto k of the run (above 0.7: unreliable)",
    }
    for var, text in texts.items():
        out[var].attrs["long_name"] = text
    return out
