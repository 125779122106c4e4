"""Rolling-origin backtest of the hardware trends: would the method have predicted today's parts?

For each origin (2018, 2020, 2022 by default) the hardware trend model
(:func:`forecast.trends.hardware_trend_model`, Student-t residuals) is fitted with NUTS on the
shipped flagship accelerators released *before* the origin, and every shipped flagship released
at or after it is predicted from the posterior predictive distribution (parameter uncertainty and
Student-t noise, :func:`forecast.inference.posterior_predictive`).  Scores per metric and origin:

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
the ``backtest`` group of a forecast file (dims ``origin``, ``metric``), stored by
:func:`add_backtest`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from forecast.constants import REFERENCE_YEAR
from forecast.tracing import exclusive

__all__ = [
    "CURVE_PROBS",
    "DEFAULT_ORIGINS",
    "FRONTIER_ORIGINS",
    "PROBS",
    "FrontierOriginResult",
    "OriginResult",
    "add_backtest",
    "add_frontier_backtest",
    "backtest_dataset",
    "backtest_origin",
    "coverage_rows",
    "frontier_backtest_dataset",
    "frontier_backtest_origin",
    "frontier_coverage_rows",
    "frontier_split",
    "interval_coverage",
    "mixture_log_density",
    "pit_values",
    "run_backtest",
    "run_frontier_backtest",
    "split_at_origin",
    "student_t_mixture_log_density",
]

DEFAULT_ORIGINS: tuple[int, ...] = (2018, 2020, 2022)
PROBS: tuple[float, ...] = (0.5, 0.8, 0.95)
CURVE_PROBS: tuple[float, ...] = tuple(np.round(np.arange(0.05, 1.0, 0.05), 2).tolist())
"""Nominal levels of the calibration curve (central intervals)."""


# ============================================================================================
# Array layer
# ============================================================================================


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
    from scipy import stats
    from scipy.special import logsumexp

    y = np.asarray(observed, dtype=float)
    m = np.asarray(metric_index, dtype=int)
    t = np.asarray(years, dtype=float) - reference_year
    mu = samples["intercept"][:, m] + samples["slope"][:, m] * t[None, :]
    sigma = samples["sigma"][:, m]
    nu = np.asarray(samples["nu"], dtype=float)[:, None]
    logpdf = stats.t.logpdf(y[None, :], nu, loc=mu, scale=sigma)
    return logsumexp(logpdf, axis=0) - np.log(logpdf.shape[0])


# ============================================================================================
# Fits
# ============================================================================================


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
    import jax

    from forecast.inference import convergence_report, fit_observations

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

    ``priors``: :class:`forecast.trends.TrendPriors` (intercepts are centred on the training
    data).  ``fit_cache`` (a dict) reuses a fit when two origins have the same training rows.
    """
    import jax

    from forecast.inference import posterior_draws, posterior_predictive
    from forecast.trends import METRICS, frontier_observations, trend_observations

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


# ============================================================================================
# Dataset and rows
# ============================================================================================


def backtest_dataset(results: Sequence[OriginResult]) -> xr.Dataset:
    """The ``backtest`` group: summaries (origin, metric) with metric ``all`` pooled, the
    calibration curve (origin, metric, prob) and per held-out value PIT etc. (origin, held_out;
    padded with NaN / empty strings)."""
    from forecast.trends import METRICS

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


def coverage_rows(ds: xr.Dataset) -> list[dict[str, Any]]:
    """One row per (origin, metric) with the coverage numbers (JSON-ready)."""
    rows = []
    for origin in ds["origin"].values:
        for metric in ds["metric"].values:
            s = ds.sel(origin=origin, metric=metric)
            n = int(s["n_held_out"])

            def num(name: str, s=s) -> float | None:
                v = float(s[name])
                return v if np.isfinite(v) else None

            rows.append(
                {
                    "metric": str(metric),
                    "origin": int(origin),
                    "coverage_50": num("coverage_50"),
                    "coverage_80": num("coverage_80"),
                    "coverage_95": num("coverage_95"),
                    "n_held_out": n,
                    "n_train": int(s["n_train"]),
                    "log_score": num("log_score"),
                    "rhat_max": float(s["rhat_max"]),
                }
            )
    return rows


def add_backtest(forecast_path: str | Path, results: Sequence[OriginResult] | xr.Dataset) -> Path:
    """Store backtest results as group ``backtest`` of a forecast file (atomic replace)."""
    from forecast.storage import add_group

    ds = results if isinstance(results, xr.Dataset) else backtest_dataset(results)
    return add_group(forecast_path, "backtest", ds)


# ============================================================================================
# Frontier training compute
# ============================================================================================

FRONTIER_ORIGINS: tuple[int, ...] = (2016, 2018, 2020, 2022)
"""Origins of the frontier-compute backtest."""

FRONTIER_MIN_TRAIN_RUNS = 3
"""Fewest training records for the forecast's own window (records from
:data:`forecast.trends.FRONTIER_MIN_YEAR`); an origin with fewer trains on every earlier record."""

FRONTIER_INTERCEPT_SCALE_DEX = 2.0
"""Standard deviation (dex) of the backtest's intercept prior, centred on the training records
(the forecast's prior on the 2024 level is itself a measurement of the held-out years)."""


def _take(obs: Any, mask: np.ndarray) -> Any:
    return type(obs)(*(np.asarray(a)[mask] for a in obs))


def frontier_split(frontier_df: pd.DataFrame, origin: float) -> tuple[Any, Any, float]:
    """Training records, held-out records and the first year of the training window.

    Training: RECORD runs (with a compute estimate) published before ``origin`` and from
    :data:`forecast.trends.FRONTIER_MIN_YEAR` on, the forecast's own selection; when that leaves
    fewer than :data:`FRONTIER_MIN_TRAIN_RUNS` (origins up to 2019), every record before the
    origin: what a forecaster then had, from the faster pre-2018 regime.  Held out: every record
    published at or after the origin.
    """
    from forecast.trends import FRONTIER_MIN_YEAR, frontier_observations

    records = frontier_observations(frontier_df, min_year=-np.inf)
    years = np.asarray(records.years, dtype=float)
    before = years < origin
    window = before & (years >= FRONTIER_MIN_YEAR)
    start = FRONTIER_MIN_YEAR
    if int(window.sum()) < FRONTIER_MIN_TRAIN_RUNS:
        window = before
        start = float(years[before].min()) if before.any() else float("nan")
    return _take(records, window), _take(records, years >= origin), start


def frontier_backtest_priors(priors: Any, train: Any) -> Any:
    """The forecast's frontier priors (slope, noise, Student-t tail, speculative inflation) with
    the intercept pivoted at the training records' median year and given a weak prior
    (:data:`FRONTIER_INTERCEPT_SCALE_DEX`) centred on their median log10 compute."""
    import dataclasses

    return dataclasses.replace(
        priors,
        reference_year=float(np.median(train.years)),
        frontier_intercept_loc=float(np.median(train.log10_flop)),
        frontier_intercept_scale=FRONTIER_INTERCEPT_SCALE_DEX,
    )


def student_t_mixture_log_density(
    observed: np.ndarray, loc: np.ndarray, scale: np.ndarray, nu: float | np.ndarray
) -> np.ndarray:
    """``log (1/S) sum_s t_nu_s(y | loc_s, scale_s)`` per observation; ``loc``, ``scale``
    (sample, obs), ``nu`` a number or per draw (sample,).  Units: per dex."""
    return truncated_student_t_mixture_log_density(observed, loc, scale, nu, -np.inf)


@dataclass
class FrontierOriginResult:
    """Per held-out record results of one origin of the frontier-compute backtest."""

    origin: int
    train_start: float  # first year of the training window
    n_train: int
    names: np.ndarray  # model names of the held-out records
    years: np.ndarray
    is_speculative: np.ndarray
    observed: np.ndarray  # log10 FLOP
    median: np.ndarray
    lower: np.ndarray  # (prob, obs) interval ends for PROBS
    upper: np.ndarray
    covered: np.ndarray  # (prob, obs) bool for PROBS
    curve_covered: np.ndarray  # (curve prob, obs) bool for CURVE_PROBS
    pit: np.ndarray
    log_density: np.ndarray
    growth_median: float  # posterior median growth, x/yr
    growth_lower: float  # 80% interval
    growth_upper: float
    sigma_median: float  # posterior median residual scale, dex
    rhat_max: float
    divergences: int
    fit_seconds: float
    settings: dict[str, Any] = field(default_factory=dict)
    standing_log10_flop: float = float("nan")  # the record the predictive is conditioned above
    nu_median: float = float("nan")  # posterior median Student-t degrees of freedom

    @property
    def error_dex(self) -> np.ndarray:
        """Observed minus predicted median, log10 FLOP (positive: the record came out larger)."""
        return self.observed - self.median

    @property
    def width_80(self) -> np.ndarray:
        """Width of each central 80% predictive interval, dex."""
        i = PROBS.index(0.8)
        return self.upper[i] - self.lower[i]


FRONTIER_SITES = (
    "frontier_slope",
    "frontier_intercept",
    "frontier_sigma",
    "frontier_speculative_extra",
    "frontier_nu",
)


def _frontier_nu(samples: Mapping[str, np.ndarray], priors: Any, draws: np.ndarray) -> np.ndarray:
    """Student-t degrees of freedom per draw: the fitted ``frontier_nu`` or the fixed value."""
    nu = samples.get("frontier_nu", priors.frontier_nu)
    return np.broadcast_to(np.asarray(nu, dtype=float), (draws.shape[0],))


@exclusive
def fit_frontier(
    train: Any, priors: Any, *, chains: int, warmup: int, draws: int, seed: int
) -> tuple[dict[str, np.ndarray], float, int]:
    """NUTS on :func:`forecast.trends.frontier_compute_model`; returns the flat posterior draws,
    the largest split R-hat of its sampled parameters and the divergence count."""
    from functools import partial

    import jax
    from numpyro.diagnostics import split_gelman_rubin
    from numpyro.infer import MCMC, NUTS

    from forecast.inference import enable_x64
    from forecast.trends import frontier_compute_model

    enable_x64()
    model = partial(
        frontier_compute_model, train.years, train.log10_flop, train.is_speculative, priors
    )
    mcmc = MCMC(
        NUTS(model, target_accept_prob=0.9),
        num_warmup=warmup,
        num_samples=draws,
        num_chains=chains,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.PRNGKey(seed), extra_fields=("diverging",))
    by_chain = mcmc.get_samples(group_by_chain=True)
    rhat = 1.0
    if chains > 1:
        for name in FRONTIER_SITES:
            if name in by_chain and float(np.ptp(np.asarray(by_chain[name]))) > 0:
                rhat = max(rhat, float(split_gelman_rubin(np.asarray(by_chain[name]))))
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples().items()}
    return samples, rhat, divergences


def standing_record(frontier_df: pd.DataFrame, origin: float) -> float:
    """log10 FLOP of the largest record run published before ``origin`` (every year, not only
    the fit's window; ``-inf`` when there is none): what any later record must exceed."""
    from forecast.trends import frontier_observations

    records = frontier_observations(frontier_df, min_year=-np.inf)
    before = np.asarray(records.log10_flop, dtype=float)[np.asarray(records.years) < origin]
    return float(before.max()) if before.size else -np.inf


def truncated_student_t_draws(
    loc: np.ndarray,
    scale: np.ndarray,
    nu: np.ndarray,
    low: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draws of ``loc + scale * t_nu`` conditioned on exceeding ``low`` (inverse CDF through the
    survival function, stable where ``low`` lies far in the lower tail); arrays broadcast
    (sample, obs), ``nu`` (sample, 1) or a number.  ``low = -inf`` is the plain Student-t."""
    from scipy import stats

    loc, scale = np.broadcast_arrays(np.asarray(loc, float), np.asarray(scale, float))
    nu = np.broadcast_to(np.asarray(nu, dtype=float), loc.shape)
    u = rng.uniform(size=loc.shape)
    kept = stats.t.sf((low - loc) / scale, nu) if np.isfinite(low) else np.ones(loc.shape)
    return loc + scale * stats.t.isf(u * kept, nu)


def truncated_student_t_mixture_log_density(
    observed: np.ndarray, loc: np.ndarray, scale: np.ndarray, nu: np.ndarray, low: float
) -> np.ndarray:
    """:func:`student_t_mixture_log_density` of the Student-t conditioned on exceeding ``low``:
    each draw's density divided by its probability above ``low`` (per dex); ``low = -inf``: no
    bound."""
    from scipy import stats
    from scipy.special import logsumexp

    y = np.asarray(observed, dtype=float)[None, :]
    nu = np.asarray(nu, dtype=float)
    nu = nu[:, None] if nu.ndim == 1 else nu
    logpdf = stats.t.logpdf(y, nu, loc=np.asarray(loc), scale=np.asarray(scale))
    if np.isfinite(low):
        logpdf = logpdf - stats.t.logsf((low - np.asarray(loc)) / np.asarray(scale), nu)
        logpdf = np.where(y > low, logpdf, -np.inf)
    return logsumexp(logpdf, axis=0) - np.log(logpdf.shape[0])


def frontier_backtest_origin(
    frontier_df: pd.DataFrame,
    priors: Any,
    origin: int,
    *,
    chains: int = 2,
    warmup: int = 500,
    draws: int = 500,
    seed: int = 0,
) -> FrontierOriginResult:
    """Fit the frontier-compute trend on the records before ``origin`` (:func:`frontier_split`,
    priors :func:`frontier_backtest_priors`); score the later records against their posterior
    predictive draws: parameter uncertainty and Student-t noise with the fitted scale and tail
    weight (widened for Speculative rows, as in the model), **conditioned on exceeding the
    standing record** at the origin (:func:`standing_record`). A record published after the
    origin is by definition larger than every run before it, and a forecaster at the origin
    knows the standing record, so the predictive puts no mass below it
    (:func:`truncated_student_t_draws`). Only that known bound is used: that a later record also
    exceeds the earlier held-out ones is not known at the origin (and simulating the ratchet
    record by record compounds the heavy tail: ``docs/sensitivity-and-backtest.md``)."""
    train, held, start = frontier_split(frontier_df, origin)
    if len(train.years) == 0:
        raise ValueError(f"origin {origin}: no record run published before it")
    if len(held.years) == 0:
        raise ValueError(f"origin {origin}: no record run published at or after it")
    p = frontier_backtest_priors(priors, train)
    t0 = time.perf_counter()
    samples, rhat, divergences = fit_frontier(
        train, p, chains=chains, warmup=warmup, draws=draws, seed=seed
    )
    fit_seconds = time.perf_counter() - t0
    y = np.asarray(held.log10_flop, dtype=float)
    probs = np.asarray(PROBS)
    n = np.asarray(samples["frontier_sigma"]).shape[0]
    slope = np.broadcast_to(np.asarray(samples["frontier_slope"], float), (n,))
    intercept = np.broadcast_to(np.asarray(samples["frontier_intercept"], float), (n,))
    extra = np.asarray(samples["frontier_speculative_extra"], float)
    spec = np.asarray(held.is_speculative, bool)
    loc = intercept[:, None] + slope[:, None] * (np.asarray(held.years)[None, :] - p.reference_year)
    scale = np.asarray(samples["frontier_sigma"], float)[:, None] * np.where(
        spec[None, :], 1.0 + extra[:, None], 1.0
    )
    nu = _frontier_nu(samples, p, loc)[:, None]
    standing = standing_record(frontier_df, origin)
    d = truncated_student_t_draws(loc, scale, nu, standing, np.random.default_rng(seed + 1))
    growth = 10.0 ** np.quantile(slope, [0.5, 0.1, 0.9])
    return FrontierOriginResult(
        origin=int(origin),
        train_start=float(start),
        n_train=len(train.years),
        names=np.asarray(held.names).astype(str),
        years=np.asarray(held.years, dtype=float),
        is_speculative=spec,
        observed=y,
        median=np.median(d, axis=0),
        lower=np.quantile(d, (1 - probs) / 2, axis=0),
        upper=np.quantile(d, (1 + probs) / 2, axis=0),
        covered=interval_coverage(d, y, PROBS),
        curve_covered=interval_coverage(d, y, CURVE_PROBS),
        pit=pit_values(d, y),
        log_density=truncated_student_t_mixture_log_density(y, loc, scale, nu, standing),
        growth_median=float(growth[0]),
        growth_lower=float(growth[1]),
        growth_upper=float(growth[2]),
        sigma_median=float(np.median(samples["frontier_sigma"])),
        rhat_max=float(rhat),
        divergences=int(divergences),
        fit_seconds=float(fit_seconds),
        settings={"chains": chains, "warmup": warmup, "draws": draws, "seed": seed},
        standing_log10_flop=float(standing),
        nu_median=float(np.median(nu)),
    )


def run_frontier_backtest(
    frontier_df: pd.DataFrame,
    priors: Any,
    origins: Sequence[int] = FRONTIER_ORIGINS,
    *,
    chains: int = 2,
    warmup: int = 500,
    draws: int = 500,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> list[FrontierOriginResult]:
    """:func:`frontier_backtest_origin` for every origin."""
    out = []
    for origin in origins:
        if progress:
            progress(f"frontier compute, origin {origin}: fitting {chains} chains x {draws} draws")
        out.append(
            frontier_backtest_origin(
                frontier_df, priors, origin, chains=chains, warmup=warmup, draws=draws, seed=seed
            )
        )
    return out


FRONTIER_POOLED = "pooled"
"""Label of the row that pools every (origin, held-out record) pair."""


def frontier_backtest_dataset(results: Sequence[FrontierOriginResult]) -> xr.Dataset:
    """The ``frontier_backtest`` group: per origin (with a last row ``pooled`` over every
    origin's held-out records) coverage, PIT-based curve, errors, log score and the fit; per
    held-out record (origin, held_out; padded with NaN / empty strings) its values and PIT."""
    labels = [str(r.origin) for r in results] + [FRONTIER_POOLED]
    n_rows = len(labels)
    cov = {p: np.full(n_rows, np.nan) for p in PROBS}
    curve = np.full((n_rows, len(CURVE_PROBS)), np.nan)
    n_held = np.zeros(n_rows, dtype=np.int64)
    n_train = np.zeros(n_rows, dtype=np.int64)
    median_error = np.full(n_rows, np.nan)
    median_abs_error = np.full(n_rows, np.nan)
    log_score = np.full(n_rows, np.nan)
    pit_mean = np.full(n_rows, np.nan)
    width_80 = np.full(n_rows, np.nan)
    i80 = PROBS.index(0.8)

    def fill(i: int, covered, curve_covered, err, log_density, pit, width) -> None:
        n_held[i] = err.size
        if err.size:
            width_80[i] = float(np.median(width))
            for p_i, p in enumerate(PROBS):
                cov[p][i] = float(np.mean(covered[p_i]))
            curve[i] = np.mean(curve_covered, axis=1)
            median_error[i] = float(np.median(err))
            median_abs_error[i] = float(np.median(np.abs(err)))
            log_score[i] = float(np.mean(log_density))
            pit_mean[i] = float(np.mean(pit))

    for i, r in enumerate(results):
        fill(i, r.covered, r.curve_covered, r.error_dex, r.log_density, r.pit, r.width_80)
        n_train[i] = r.n_train
    if results:
        fill(
            n_rows - 1,
            np.concatenate([r.covered for r in results], axis=1),
            np.concatenate([r.curve_covered for r in results], axis=1),
            np.concatenate([r.error_dex for r in results]),
            np.concatenate([r.log_density for r in results]),
            np.concatenate([r.pit for r in results]),
            np.concatenate([r.width_80 for r in results]),
        )
        n_train[-1] = sum(r.n_train for r in results)
    width = max((r.observed.size for r in results), default=0)
    shape = (len(results), width)
    per_obs = {
        k: np.full(shape, np.nan)
        for k in ("pit", "observed", "predicted_median", "lower_80", "upper_80", "year")
    }
    per_obs["log_density"] = np.full(shape, np.nan)
    names = np.full(shape, "", dtype=object)
    speculative = np.zeros(shape, dtype=bool)
    for o, r in enumerate(results):
        n = r.observed.size
        per_obs["pit"][o, :n] = r.pit
        per_obs["observed"][o, :n] = r.observed
        per_obs["predicted_median"][o, :n] = r.median
        per_obs["lower_80"][o, :n] = r.lower[i80]
        per_obs["upper_80"][o, :n] = r.upper[i80]
        per_obs["year"][o, :n] = r.years
        per_obs["log_density"][o, :n] = r.log_density
        names[o, :n] = r.names
        speculative[o, :n] = r.is_speculative

    def per_origin(values: list[float]) -> np.ndarray:
        return np.asarray([*values, np.nan], dtype=float)

    row, oh = ("row",), ("origin", "held_out")
    ds = xr.Dataset(
        {
            **{f"coverage_{round(p * 100)}": (row, cov[p]) for p in PROBS},
            "coverage_curve": ((*row, "prob"), curve),
            "n_held_out": (row, n_held),
            "n_train": (row, n_train),
            "median_error_dex": (row, median_error),
            "median_abs_error_dex": (row, median_abs_error),
            "log_score": (row, log_score),
            "pit_mean": (row, pit_mean),
            "median_width_80_dex": (row, width_80),
            "sigma_median": (row, per_origin([r.sigma_median for r in results])),
            "nu_median": (row, per_origin([r.nu_median for r in results])),
            "standing_record_log10_flop": (
                row,
                per_origin([r.standing_log10_flop for r in results]),
            ),
            "train_start_year": (row, per_origin([r.train_start for r in results])),
            "growth_median": (row, per_origin([r.growth_median for r in results])),
            "growth_lower": (row, per_origin([r.growth_lower for r in results])),
            "growth_upper": (row, per_origin([r.growth_upper for r in results])),
            "rhat_max": (row, per_origin([r.rhat_max for r in results])),
            "divergences": (row, per_origin([float(r.divergences) for r in results])),
            **{name: (oh, v) for name, v in per_obs.items()},
            "held_out_name": (oh, names.astype(str)),
            "held_out_speculative": (oh, speculative),
        },
        coords={
            "row": labels,
            "origin": [r.origin for r in results],
            "prob": list(CURVE_PROBS),
            "held_out": np.arange(width),
        },
    )
    desc = {
        "coverage_50": "share of held-out records inside the central 50% predictive interval",
        "coverage_80": "share of held-out records inside the central 80% predictive interval",
        "coverage_95": "share of held-out records inside the central 95% predictive interval",
        "coverage_curve": "empirical coverage of the central interval of nominal probability prob",
        "n_held_out": "held-out record runs (published at or after the origin)",
        "n_train": "training record runs (published before the origin, in the window)",
        "median_error_dex": "median of observed minus predicted median log10 FLOP (dex)",
        "median_abs_error_dex": "median absolute error of the predicted median (dex)",
        "log_score": "mean log predictive density of held-out log10 FLOP (per dex)",
        "pit_mean": "mean PIT of the held-out records (0.5 if unbiased)",
        "median_width_80_dex": "median width of the central 80% predictive intervals (dex)",
        "sigma_median": "posterior median residual scale of the fit (dex)",
        "nu_median": "posterior median Student-t degrees of freedom of the fit",
        "standing_record_log10_flop": "largest record before the origin, log10 FLOP: the "
        "predictive is conditioned on exceeding it",
        "train_start_year": "first year of the training window (fractional year)",
        "growth_median": "posterior median growth of frontier compute at the origin (x/yr)",
        "growth_lower": "10th percentile of that growth (x/yr)",
        "growth_upper": "90th percentile of that growth (x/yr)",
        "rhat_max": "largest split R-hat of the frontier trend parameters",
        "divergences": "divergent NUTS transitions",
        "pit": "predictive CDF at the held-out record (uniform if calibrated)",
        "observed": "held-out log10 training compute (FLOP)",
        "predicted_median": "median of the predictive draws, log10 FLOP",
        "lower_80": "lower end of the central 80% predictive interval, log10 FLOP",
        "upper_80": "upper end of the central 80% predictive interval, log10 FLOP",
        "year": "publication year of the held-out record (fractional)",
        "log_density": "log predictive density of the held-out record (per dex)",
        "held_out_name": "model name of the held-out record",
        "held_out_speculative": "Epoch confidence 'Speculative' (wider noise in the model)",
    }
    for name, text in desc.items():
        ds[name].attrs["long_name"] = text
    s = results[0].settings if results else {}
    ds.attrs.update(
        {
            "method": "rolling-origin backtest of the frontier training-compute trend "
            "(forecast.trends.frontier_compute_model, Student-t residuals with fitted tail "
            "weight; predictive conditioned on exceeding the standing record at the origin)",
            "pooled_row": FRONTIER_POOLED,
            "intercept_prior_scale_dex": FRONTIER_INTERCEPT_SCALE_DEX,
            "min_train_runs": FRONTIER_MIN_TRAIN_RUNS,
            "backtest_chains": int(s.get("chains", 0)),
            "backtest_warmup": int(s.get("warmup", 0)),
            "backtest_draws": int(s.get("draws", 0)),
            "backtest_seed": int(s.get("seed", 0)),
            "fit_seconds": float(sum(r.fit_seconds for r in results)),
        }
    )
    return ds


def frontier_coverage_rows(ds: xr.Dataset) -> list[dict[str, Any]]:
    """One row per origin, then the pooled row (JSON-ready; missing numbers are None)."""
    rows = []
    for label in ds["row"].values:
        s = ds.sel(row=label)

        def num(name: str, s=s) -> float | None:
            v = float(s[name])
            return v if np.isfinite(v) else None

        rows.append(
            {
                "origin": str(label),
                "n_train": int(s["n_train"]),
                "n_held_out": int(s["n_held_out"]),
                "train_start_year": num("train_start_year"),
                "growth_median": num("growth_median"),
                "coverage_50": num("coverage_50"),
                "coverage_80": num("coverage_80"),
                "coverage_95": num("coverage_95"),
                "median_error_dex": num("median_error_dex"),
                "median_abs_error_dex": num("median_abs_error_dex"),
                "pit_mean": num("pit_mean"),
                "median_width_80_dex": num("median_width_80_dex"),
                "sigma_median": num("sigma_median"),
                "nu_median": num("nu_median"),
                "standing_record_log10_flop": num("standing_record_log10_flop"),
                "log_score": num("log_score"),
                "rhat_max": num("rhat_max"),
            }
        )
    return rows


def add_frontier_backtest(
    forecast_path: str | Path, results: Sequence[FrontierOriginResult] | xr.Dataset
) -> Path:
    """Store the frontier-compute backtest as group ``frontier_backtest`` (atomic replace)."""
    from forecast.storage import add_group

    ds = results if isinstance(results, xr.Dataset) else frontier_backtest_dataset(results)
    return add_group(forecast_path, "frontier_backtest", ds)
