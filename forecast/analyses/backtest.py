"""Rolling-origin backtest of the hardware trends: would the method have predicted today's parts?

For each origin (2018, 2020, 2022 by default) the hardware trend model
(:func:`forecast.stats.trends.hardware_trend_model`, Student-t residuals) is fitted with NUTS on the
shipped flagship accelerators released *before* the origin, and every shipped flagship released
at or after it is predicted from the posterior predictive distribution (parameter uncertainty and
Student-t noise, :func:`forecast.inference.draws.posterior_predictive`).  Scores per metric and origin:

* **coverage** of the central 50/80/95% predictive intervals (share of held-out values inside);
* **log score**: mean log predictive density of the held-out values, exact for the model (the
  posterior mixture of Student-t densities, in log10 units, i.e. per dex), higher is better;
* **PIT** values (predictive CDF at the observed value) and a calibration curve (empirical vs
  nominal coverage at 5%..95%) for a calibration plot.

Sparse early data: only two flagships (P100, V100) were released before 2020, so origins 2018
and 2020 share the same training set (metrics with fewer than 3 points are *not* skipped: their
slope comes from its prior, the two points fix the level); the fit is run once and reused.
The trend priors are those of the scenario's PriorSet, which were set in 2025 with knowledge of
the later parts: the backtest tests the noise model and the fitting, not a forecaster who lived
in 2018.  The frontier-compute sub-model is fitted alongside (``fit_observations`` needs it) on
all its runs; it is independent of the hardware posterior and is not scored.

Array functions (:func:`interval_coverage`, :func:`pit_values`, :func:`mixture_log_density`) take
plain arrays; :func:`run_backtest` runs the fits; :func:`backtest_dataset` turns the results into
the ``backtest`` group of a forecast file (dims ``origin``, ``metric``), which
:mod:`forecast.jobs.analyse_job` attaches to the forecast.  The frontier-compute backtest is in
:mod:`forecast.analyses.frontier_backtest`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats
from scipy.special import logsumexp

from forecast.config.constants import REFERENCE_YEAR
from forecast.inference.draws import posterior_draws, posterior_predictive
from forecast.inference.fit import fit_observations
from forecast.inference.gate import convergence_report
from forecast.stats.trends import METRICS, frontier_observations, trend_observations

DEFAULT_ORIGINS: tuple[int, ...] = (2018, 2020, 2022)
PROBS: tuple[float, ...] = (0.5, 0.8, 0.95)
CURVE_PROBS: tuple[float, ...] = tuple(np.round(np.arange(0.05, 1.0, 0.05), 2).tolist())
"""Nominal levels of the calibration curve (central intervals)."""


def interval_coverage(
    draws: np.ndarray, observed: np.ndarray, probs: Sequence[float] = PROBS
) -> np.ndarray:
    """Whether each observation lies in the central ``prob`` interval of its predictive draws.

    Parameters
    ----------
    draws : (sample, obs) predictive draws.
    observed : (obs,) observed values.
    probs : nominal probabilities of the equal-tailed intervals.

    Returns
    -------
    bool array (prob, obs); its mean over ``obs`` is the empirical coverage.
    """
    draws = np.asarray(draws, dtype=float)
    observed = np.asarray(observed, dtype=float)
    probs = np.asarray(probs, dtype=float)
    lo = np.quantile(draws, (1.0 - probs) / 2.0, axis=0)  # (prob, obs)
    hi = np.quantile(draws, (1.0 + probs) / 2.0, axis=0)
    return (observed[None, :] >= lo) & (observed[None, :] <= hi)


def pit_values(draws: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Probability integral transform: share of predictive draws at or below each observation
    (mid-rank for ties).  Calibrated forecasts give uniform PIT values."""
    draws = np.asarray(draws, dtype=float)
    observed = np.asarray(observed, dtype=float)
    below = np.mean(draws < observed[None, :], axis=0)
    equal = np.mean(draws == observed[None, :], axis=0)
    return below + 0.5 * equal


def mixture_log_density(
    observed: np.ndarray,
    years: np.ndarray,
    metric_index: np.ndarray,
    samples: dict[str, np.ndarray],
    reference_year: float = REFERENCE_YEAR,
) -> np.ndarray:
    """Log predictive density of each observation under the posterior Student-t mixture.

    ``log (1/S) sum_s t_{nu_s}(y | a_s[m] + b_s[m] (year - ref), sigma_s[m])`` with the flat
    posterior draws ``slope``, ``intercept``, ``sigma`` (sample, metric) and ``nu`` (sample,).
    Units: log density per dex (log10 units).
    """
    y = np.asarray(observed, dtype=float)
    m = np.asarray(metric_index, dtype=int)
    t = np.asarray(years, dtype=float) - reference_year
    mu = samples["intercept"][:, m] + samples["slope"][:, m] * t[None, :]
    sigma = samples["sigma"][:, m]
    nu = np.asarray(samples["nu"], dtype=float)[:, None]
    logpdf = stats.t.logpdf(y[None, :], nu, loc=mu, scale=sigma)
    return logsumexp(logpdf, axis=0) - np.log(logpdf.shape[0])


def split_at_origin(df: pd.DataFrame, origin: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows released before ``origin`` (training) and at or after it (held out)."""
    year = pd.to_numeric(df["release_year"], errors="coerce")
    return df[year < origin], df[year >= origin]


@dataclass
class OriginResult:
    """Per held-out observation results of one origin."""

    origin: int
    names: np.ndarray  # "accelerator|metric"
    metrics: np.ndarray  # metric name per observation
    years: np.ndarray
    observed: np.ndarray  # log10 values
    median: np.ndarray
    lower: np.ndarray  # (prob, obs) interval ends for PROBS
    upper: np.ndarray
    covered: np.ndarray  # (prob, obs) bool for PROBS
    curve_covered: np.ndarray  # (curve prob, obs) bool for CURVE_PROBS
    pit: np.ndarray
    log_density: np.ndarray
    n_train: dict[str, int]
    rhat_max: float
    rhat_worst: str
    divergences: int
    fit_seconds: float
    settings: dict[str, Any] = field(default_factory=dict)


def _fit(train_obs, frontier_obs, priors, *, chains, warmup, draws, seed):

    dt = fit_observations(
        train_obs,
        frontier_obs,
        priors,
        rng_key=jax.random.PRNGKey(seed),
        num_chains=chains,
        num_warmup=warmup,
        num_samples=draws,
    )
    hw_vars = ["slope", "intercept", "sigma", "nu"]
    return dt, convergence_report(dt, var_names=hw_vars)


def backtest_origin(
    hardware_df: pd.DataFrame,
    frontier_df: pd.DataFrame,
    priors: Any,
    origin: int,
    *,
    chains: int = 2,
    warmup: int = 500,
    draws: int = 500,
    seed: int = 0,
    fit_cache: dict | None = None,
) -> OriginResult:
    """Fit on shipped flagships released before ``origin``; score those released after.

    ``priors``: :class:`forecast.stats.trends.TrendPriors` (intercepts are centred on the training
    data).  ``fit_cache`` (a dict) reuses a fit when two origins have the same training rows.
    """
    train_df, test_df = split_at_origin(hardware_df, origin)
    train = trend_observations(train_df)
    test = trend_observations(test_df)
    if len(train.years) == 0:
        raise ValueError(f"origin {origin}: no shipped flagship released before it")
    key = (tuple(train.names), chains, warmup, draws, seed)
    start = time.perf_counter()
    if fit_cache is not None and key in fit_cache:
        dt, report = fit_cache[key]
    else:
        dt, report = _fit(
            train,
            frontier_observations(frontier_df),
            priors,
            chains=chains,
            warmup=warmup,
            draws=draws,
            seed=seed,
        )
        if fit_cache is not None:
            fit_cache[key] = (dt, report)
    fit_seconds = time.perf_counter() - start
    pred = posterior_predictive(
        dt, hardware=test, frontier=None, rng_key=jax.random.PRNGKey(seed + 1)
    )
    d = pred["log10_value"]  # (sample, obs)
    y = np.asarray(test.log10_values, dtype=float)
    probs = np.asarray(PROBS)
    samples = posterior_draws(dt)
    return OriginResult(
        origin=int(origin),
        names=np.asarray(test.names).astype(str),
        metrics=np.asarray([METRICS[i] for i in test.metric_index]),
        years=np.asarray(test.years, dtype=float),
        observed=y,
        median=np.median(d, axis=0),
        lower=np.quantile(d, (1 - probs) / 2, axis=0),
        upper=np.quantile(d, (1 + probs) / 2, axis=0),
        covered=interval_coverage(d, y, PROBS),
        curve_covered=interval_coverage(d, y, CURVE_PROBS),
        pit=pit_values(d, y),
        log_density=mixture_log_density(y, test.years, test.metric_index, samples),
        n_train={m: int(np.sum(train.metric_index == i)) for i, m in enumerate(METRICS)},
        rhat_max=float(report["r_hat"][1]),
        rhat_worst=str(report["r_hat"][0]),
        divergences=int(report["divergences"]),
        fit_seconds=float(fit_seconds),
        settings={"chains": chains, "warmup": warmup, "draws": draws, "seed": seed},
    )


def run_backtest(
    hardware_df: pd.DataFrame,
    frontier_df: pd.DataFrame,
    priors: Any,
    origins: Sequence[int] = DEFAULT_ORIGINS,
    *,
    chains: int = 2,
    warmup: int = 500,
    draws: int = 500,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> list[OriginResult]:
    """:func:`backtest_origin` for every origin (fits shared between identical training sets)."""
    cache: dict = {}
    out = []
    for origin in origins:
        if progress:
            progress(f"origin {origin}: fitting {chains} chains x {draws} draws ...")
        out.append(
            backtest_origin(
                hardware_df,
                frontier_df,
                priors,
                origin,
                chains=chains,
                warmup=warmup,
                draws=draws,
                seed=seed,
                fit_cache=cache,
            )
        )
    return out


def backtest_dataset(results: Sequence[OriginResult]) -> xr.Dataset:
    """The ``backtest`` group: summaries (origin, metric) with metric ``all`` pooled, the
    calibration curve (origin, metric, prob) and per held-out value PIT etc. (origin, held_out;
    padded with NaN / empty strings)."""
    metrics = [*METRICS, "all"]
    origins = [r.origin for r in results]
    shape = (len(origins), len(metrics))
    cov = {p: np.full(shape, np.nan) for p in PROBS}
    n_held = np.zeros(shape, dtype=np.int64)
    n_train = np.zeros(shape, dtype=np.int64)
    log_score = np.full(shape, np.nan)
    curve = np.full((*shape, len(CURVE_PROBS)), np.nan)
    width = max((len(r.observed) for r in results), default=0)
    per_obs = {
        "pit": np.full((len(origins), width), np.nan),
        "observed": np.full((len(origins), width), np.nan),
        "predicted_median": np.full((len(origins), width), np.nan),
        "release_year": np.full((len(origins), width), np.nan),
        "log_density": np.full((len(origins), width), np.nan),
    }
    obs_name = np.full((len(origins), width), "", dtype=object)
    obs_metric = np.full((len(origins), width), "", dtype=object)
    for o, r in enumerate(results):
        for j, metric in enumerate(metrics):
            sel = np.ones(r.metrics.size, bool) if metric == "all" else r.metrics == metric
            n_held[o, j] = int(sel.sum())
            n_train[o, j] = sum(r.n_train.values()) if metric == "all" else r.n_train.get(metric, 0)
            if sel.any():
                for p_i, p in enumerate(PROBS):
                    cov[p][o, j] = float(np.mean(r.covered[p_i, sel]))
                curve[o, j] = np.mean(r.curve_covered[:, sel], axis=1)
                log_score[o, j] = float(np.mean(r.log_density[sel]))
        n = r.observed.size
        per_obs["pit"][o, :n] = r.pit
        per_obs["observed"][o, :n] = r.observed
        per_obs["predicted_median"][o, :n] = r.median
        per_obs["release_year"][o, :n] = r.years
        per_obs["log_density"][o, :n] = r.log_density
        obs_name[o, :n] = r.names
        obs_metric[o, :n] = r.metrics
    om = ("origin", "metric")
    oh = ("origin", "held_out")
    ds = xr.Dataset(
        {
            **{f"coverage_{round(p * 100)}": (om, cov[p]) for p in PROBS},
            "n_held_out": (om, n_held),
            "n_train": (om, n_train),
            "log_score": (om, log_score),
            "coverage_curve": ((*om, "prob"), curve),
            "rhat_max": ("origin", np.array([r.rhat_max for r in results])),
            "divergences": ("origin", np.array([r.divergences for r in results], dtype=np.int64)),
            **{name: (oh, v) for name, v in per_obs.items()},
            "held_out_name": (oh, obs_name.astype(str)),
            "held_out_metric": (oh, obs_metric.astype(str)),
        },
        coords={
            "origin": origins,
            "metric": metrics,
            "prob": list(CURVE_PROBS),
            "held_out": np.arange(width),
        },
    )
    desc = {
        "coverage_50": "share of held-out values inside the central 50% predictive interval",
        "coverage_80": "share of held-out values inside the central 80% predictive interval",
        "coverage_95": "share of held-out values inside the central 95% predictive interval",
        "n_held_out": "held-out values (shipped flagships released at or after the origin)",
        "n_train": "training values (shipped flagships released before the origin)",
        "log_score": "mean log predictive density of held-out log10 values (per dex)",
        "coverage_curve": "empirical coverage of the central interval of nominal probability prob",
        "rhat_max": "largest split R-hat of the hardware trend parameters",
        "divergences": "divergent NUTS transitions",
        "pit": "predictive CDF at the held-out value (uniform if calibrated)",
        "observed": "held-out log10 value",
        "predicted_median": "median of the predictive draws, log10",
        "release_year": "release year of the held-out accelerator",
        "log_density": "log predictive density of the held-out value (per dex)",
        "held_out_name": "accelerator|metric",
        "held_out_metric": "metric of the held-out value",
    }
    for name, text in desc.items():
        ds[name].attrs["long_name"] = text
    s = results[0].settings if results else {}
    ds.attrs.update(
        {
            "method": "rolling-origin backtest of the hardware trend model (Student-t residuals)",
            "backtest_chains": int(s.get("chains", 0)),
            "backtest_warmup": int(s.get("warmup", 0)),
            "backtest_draws": int(s.get("draws", 0)),
            "backtest_seed": int(s.get("seed", 0)),
        }
    )
    return ds
