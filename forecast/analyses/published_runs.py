"""Published runs, each evaluated on its own plan: the step-time model against real runs.

* :func:`run_records`: each row of ``data/training_runs.csv`` with the model's predicted MFU on
  the run's published plan (:func:`forecast.inference.run_predictions.run_record`, nothing
  fitted) and :func:`ratio_summary` of predicted / observed.
* :func:`leave_one_run_out`: the fitted check.  The joint model ties observed to predicted MFU
  through a software-efficiency factor with noise (:mod:`forecast.stats.run_efficiency`); for each
  run, that likelihood is refitted by NUTS on the other runs and the held-out run's MFU is
  predicted, with its 80 % interval.  The factor and the noise are shared with no other likelihood
  of the joint model, so refitting this law alone is the exact leave-one-out of the joint fit (the
  published forecast's ``predictive_checks`` holds its PSIS approximation).
"""

from __future__ import annotations

import statistics
from typing import Any

import jax
import numpy as np
import pandas as pd

from forecast.analyses.law_holdout import law_sampler, run_masked_fit
from forecast.config.runtime import init_jax
from forecast.data.hardware import load_hardware
from forecast.data.training_runs import load_training_runs
from forecast.inference.run_predictions import predicted_runs, run_record
from forecast.stats.run_efficiency import (
    RUN_EFFICIENCY_PRIORS,
    run_efficiency_model,
    run_efficiency_table,
)

LOO_PROBS: tuple[float, float, float] = (0.1, 0.5, 0.9)
"""Quantiles of each held-out run's predictive: the 80 % interval and the median."""


def run_records(names: list[str] | None = None) -> list[dict[str, Any]]:
    """:func:`run_record` of every run of ``data/training_runs.csv`` (or those whose name
    contains one of ``names``), in the table's order."""
    runs = load_training_runs()
    table = load_hardware()
    out = []
    for _, row in runs.iterrows():
        if names and not any(n.lower() in str(row["run"]).lower() for n in names):
            continue
        out.append(run_record(row, table))
    return out


def ratio_summary(records: list[dict[str, Any]]) -> dict[str, float]:
    """Median, minimum and maximum of predicted / observed over the evaluated runs, and how many
    are within 1.5x."""
    ratios = [r["ratio"] for r in records if r["skipped"] is None]
    if not ratios:
        return {"evaluated": 0}
    return {
        "evaluated": len(ratios),
        "median_ratio": statistics.median(ratios),
        "min_ratio": min(ratios),
        "max_ratio": max(ratios),
        "within_1_5x": sum(1 for x in ratios if 1 / 1.5 <= x <= 1.5),
    }


def leave_one_run_out(
    predicted: pd.DataFrame | None = None,
    *,
    draws: int = 1000,
    chains: int = 2,
    seed: int = 0,
) -> pd.DataFrame:
    """Exact leave-one-run-out of the run-efficiency likelihood, one NUTS refit per run.

    ``predicted``: :func:`forecast.inference.run_predictions.predicted_runs` (default: the shipped
    tables).  Returns one row per evaluated run: ``run``, ``observed_mfu``, ``predicted_mfu`` (the
    model's, before fitting), ``loo_median``, ``loo_low`` and ``loo_high`` (10 % and 90 % of the
    held-out posterior predictive of its MFU), ``covered`` (the observed MFU inside that 80 %
    interval), ``loo_ratio`` (``loo_median`` / observed) and ``efficiency_median`` (the software
    efficiency fitted without the run).
    """
    init_jax()
    if predicted is None:
        predicted = predicted_runs(load_training_runs(), load_hardware())
    table = run_efficiency_table(predicted)
    n = len(table)
    if n < 2:
        raise ValueError(f"leave-one-run-out needs at least 2 evaluated runs, got {n}")

    sampler = law_sampler(
        run_efficiency_model,
        num_chains=chains,
        num_warmup=draws,
        num_samples=draws,
        target_accept_prob=0.9,
    )
    key = jax.random.PRNGKey(seed)
    x = np.asarray(table.data.x)
    y = np.asarray(table.data.y)
    rows = []
    for i in range(n):
        mask = np.ones(n, dtype=bool)
        mask[i] = False
        fit_key, noise_key = jax.random.split(jax.random.fold_in(key, i))
        post = run_masked_fit(sampler, fit_key, table.data, RUN_EFFICIENCY_PRIORS, mask).samples
        log_e = np.asarray(post["log10_software_efficiency"], dtype=float).ravel()
        sigma = np.asarray(post["run_mfu_noise_dex"], dtype=float).ravel()
        z = np.asarray(jax.random.normal(noise_key, log_e.shape), dtype=float)
        draws_i = 10.0 ** (x[i] + log_e + sigma * z)
        low, median, high = np.quantile(draws_i, LOO_PROBS)
        observed = 10.0 ** y[i]
        rows.append(
            {
                "run": table.names[i],
                "observed_mfu": float(observed),
                "predicted_mfu": float(10.0 ** x[i]),
                "loo_median": float(median),
                "loo_low": float(low),
                "loo_high": float(high),
                "covered": bool(low <= observed <= high),
                "loo_ratio": float(median / observed),
                "efficiency_median": float(10.0 ** np.median(log_e)),
            }
        )
    return pd.DataFrame(rows)


def loo_summary(loo: pd.DataFrame) -> dict[str, float]:
    """Coverage of the held-out 80 % intervals and how many held-out medians are within 1.5x of
    the observed MFU."""
    ratios = loo["loo_ratio"].to_numpy(dtype=float)
    return {
        "runs": int(len(loo)),
        "coverage_80": float(np.mean(loo["covered"].to_numpy(dtype=bool))),
        "within_1_5x": int(np.sum((ratios >= 1 / 1.5) & (ratios <= 1.5))),
        "median_loo_ratio": float(np.median(ratios)),
    }
