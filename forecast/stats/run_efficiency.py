"""The run-efficiency likelihood: published runs' achieved MFU against the step-time model's
prediction for each run's own plan.

Each row of ``data/training_runs.csv`` that the evaluator can run (dense models with a published
sequence length and batch) has an observed model-FLOP utilization ``u_obs`` and the utilization
``u_pred`` that :func:`forecast.model.evaluate.evaluate_plan` predicts for the run's published
layout (tensor, pipeline, data and context degrees, microbatch, recomputation, interleaving), with
the model's default assumptions (:mod:`forecast.inference.run_predictions` computes it). The
observation model is::

    log10 u_obs ~ Normal(log10 u_pred + log10 e, sigma_run)

``e`` (``software_efficiency``) is the share of the predicted utilization that real software
reaches: 1 means the model predicts the runs without bias; below 1, runs lose time the model does
not charge (kernel efficiency below the assumed ``u_max`` = 0.7, stragglers, checkpointing,
imperfect overlap).  ``sigma_run`` (``run_mfu_noise_dex``) is the run-to-run scatter that remains.
Neither parameter is shared with another likelihood of the joint model, so the joint posterior of
``(e, sigma_run)`` is the posterior of this likelihood alone, and an exact leave-one-run-out refit
needs only this law (:func:`forecast.analyses.published_runs.leave_one_run_out`).

Priors: ``log10 e ~ Normal(0, 0.3)`` (no bias expected; a factor of 2 either way within one
standard deviation, wide enough that a dozen runs decide) and ``sigma_run ~ HalfNormal(0.15 dex)``
(MFU definitions and reporting differ by a few percent; runs of one model on one cluster by up to
~30 %, Narayanan et al. 2021, Table 1).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd

from forecast.stats.scaling_laws import LawData, LawTable, _observe, _table

RUN_MFU_SITE = "log10_run_mfu"
"""The likelihood's observed site (its plate is ``log10_run_mfu_row``)."""

RUN_EFFICIENCY_PARAMETERS: tuple[str, ...] = (
    "log10_software_efficiency",
    "run_mfu_noise_dex",
    "software_efficiency",
)
"""Posterior variables of the law: sample sites, then the deterministic site."""


class RunEfficiencyPriors(NamedTuple):
    """Priors of the run-efficiency law (dex); the module docstring gives the reasons."""

    log10_efficiency_loc: float = 0.0
    log10_efficiency_scale: float = 0.3
    noise_scale: float = 0.15


RUN_EFFICIENCY_PRIORS = RunEfficiencyPriors()


def run_efficiency_table(runs: pd.DataFrame) -> LawTable:
    """Evaluated runs: x = log10 predicted MFU on the run's plan, y = log10 observed MFU.

    ``runs`` has the columns ``run``, ``predicted_mfu``, ``observed_mfu``, ``architecture`` and
    ``source_url`` (:func:`forecast.inference.run_predictions.predicted_runs`); rows without a
    prediction (NaN) are left out.
    """
    rows = runs.loc[runs["predicted_mfu"].notna() & runs["observed_mfu"].notna()]
    return _table(
        rows,
        np.log10(rows["predicted_mfu"].astype(float)),
        np.log10(rows["observed_mfu"].astype(float)),
        (rows["architecture"] == "moe").astype(float),
        "run",
        "data/training_runs.csv",
        "runs the plan evaluator can run (dense, with sequence length and batch)",
    )


def run_efficiency_model(
    data: LawData,
    priors: RunEfficiencyPriors = RUN_EFFICIENCY_PRIORS,
    mask: Any = None,
    observed: bool = True,
) -> None:
    """log10 observed MFU ~ Normal(log10 predicted MFU + log10 e, sigma_run)."""
    log10_efficiency = numpyro.sample(
        "log10_software_efficiency",
        dist.Normal(priors.log10_efficiency_loc, priors.log10_efficiency_scale),
    )
    noise = numpyro.sample("run_mfu_noise_dex", dist.HalfNormal(priors.noise_scale))
    numpyro.deterministic("software_efficiency", 10.0**log10_efficiency)
    _observe(RUN_MFU_SITE, dist.Normal(data.x + log10_efficiency, noise), data, mask, observed)
