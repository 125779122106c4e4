"""Rolling-origin backtest of the frontier training-compute trend: at each origin the trend is
refitted on the record runs known then, and the later records are scored against its
predictive (truncated Student-t: a new record is above the standing one), per origin and pooled.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import jax
import numpy as np
import pandas as pd
import xarray as xr
from numpyro.diagnostics import split_gelman_rubin
from numpyro.infer import MCMC
from scipy import stats
from scipy.special import logsumexp

from forecast.analyses.backtest import CURVE_PROBS, PROBS, interval_coverage, pit_values
from forecast.config.runtime import exclusive, init_jax
from forecast.inference.sampler import RaveledNUTS, compiled_nuts, require_finite_energy
from forecast.stats.trends import FRONTIER_MIN_YEAR, frontier_compute_model, frontier_observations

FRONTIER_ORIGINS: tuple[int, ...] = (2016, 2018, 2020, 2022)
"""Origins of the frontier-compute backtest."""

FRONTIER_MIN_TRAIN_RUNS = 3
"""Fewest training records for the forecast's own window (records from
:data:`forecast.stats.trends.FRONTIER_MIN_YEAR`); an origin with fewer trains on every earlier record."""

FRONTIER_INTERCEPT_SCALE_DEX = 2.0
"""Standard deviation (dex) of the backtest's intercept prior, centred on the training records
(the forecast's prior on the 2024 level is itself a measurement of the held-out years)."""


def _take(obs: Any, mask: np.ndarray) -> Any:
    return type(obs)(*(np.asarray(a)[mask] for a in obs))


def frontier_split(frontier_df: pd.DataFrame, origin: float) -> tuple[Any, Any, float]:
    """Training records, held-out records and the first year of the training window.

    Training: RECORD runs (with a compute estimate) published before ``origin`` and from
    :data:`forecast.stats.trends.FRONTIER_MIN_YEAR` on, the forecast's own selection; when that leaves
    fewer than :data:`FRONTIER_MIN_TRAIN_RUNS` (origins up to 2019), every record before the
    origin: what a forecaster then had, from the faster pre-2018 regime.  Held out: every record
    published at or after the origin.
    """
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
    return dataclasses.replace(
        priors,
        reference_year=float(np.median(train.years)),
        frontier_intercept_loc=float(np.median(train.log10_flop)),
        frontier_intercept_scale=FRONTIER_INTERCEPT_SCALE_DEX,
    )


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


FIT_ROW_BUCKET = 16
"""The training records are padded to a multiple of this many rows (the padding masked out of the
likelihood), so origins with different numbers of records share one compiled NUTS program."""


def _frontier_fit_program(priors: Any, chains: int, warmup: int, draws: int) -> Callable:
    """The whole NUTS run of :func:`frontier_compute_model` under ``priors`` as one program of
    (key, years, log10 FLOP, speculative flags, mask=)
    (:func:`~forecast.inference.sampler.compiled_nuts`): the data are arguments, not constants
    of the program, so every origin (with the same priors and padded size) runs it compiled
    once."""
    return compiled_nuts(
        lambda: MCMC(
            RaveledNUTS(partial(frontier_compute_model, priors=priors), target_accept_prob=0.9),
            num_warmup=warmup,
            num_samples=draws,
            num_chains=chains,
            chain_method="vectorized",
            progress_bar=False,
        )
    )


_compiled_frontier_fit = functools.lru_cache(maxsize=8)(_frontier_fit_program)
""":func:`_frontier_fit_program` cached by its arguments (the priors must be hashable)."""


@exclusive
def fit_frontier(
    train: Any, priors: Any, *, chains: int, warmup: int, draws: int, seed: int
) -> tuple[dict[str, np.ndarray], float, int]:
    """NUTS on :func:`forecast.stats.trends.frontier_compute_model`; returns the flat posterior draws,
    the largest split R-hat of its sampled parameters and the divergence count.

    The model is fitted in coordinates centred on the priors' reference year and intercept
    centre (years minus ``reference_year``, log10 FLOP minus ``frontier_intercept_loc``; the
    intercept's draws shifted back), which is the same posterior exactly, and the records are
    padded to :data:`FIT_ROW_BUCKET` rows: so the origins' priors, which differ only in those two
    centres (:func:`frontier_backtest_priors`), are one program's. (NUTS's random start, uniform
    in (-2, 2) on the unconstrained scale, is now near the data's level, not ~24 dex below it.)
    Raises :class:`~forecast.inference.sampler.SamplerStartError` where a chain could not start."""
    init_jax()
    reference_year, intercept_loc = priors.reference_year, priors.frontier_intercept_loc
    centred = dataclasses.replace(priors, reference_year=0.0, frontier_intercept_loc=0.0)
    n = len(train.years)
    rows = -(-n // FIT_ROW_BUCKET) * FIT_ROW_BUCKET
    padding = (0, rows - n)  # zeros (False) in the padded rows, which the mask leaves out
    years = np.pad(np.asarray(train.years, dtype=float) - reference_year, padding)
    log10_flop = np.pad(np.asarray(train.log10_flop, dtype=float) - intercept_loc, padding)
    is_speculative = np.pad(np.asarray(train.is_speculative, dtype=bool), padding)
    mask = np.arange(rows) < n
    try:
        program = _compiled_frontier_fit(centred, chains, warmup, draws)
    except TypeError:  # priors built in Python with an unhashable field: a program of its own
        program = _frontier_fit_program(centred, chains, warmup, draws)
    by_chain, diverging, energy = program(
        jax.random.PRNGKey(seed), years, log10_flop, is_speculative, mask=mask
    )
    require_finite_energy(energy)  # inside a compiled program NumPyro cannot refuse a start
    by_chain = {k: np.asarray(v) for k, v in by_chain.items()}
    by_chain["frontier_intercept"] = by_chain["frontier_intercept"] + intercept_loc
    rhat = 1.0
    if chains > 1:
        for name in FRONTIER_SITES:
            if name in by_chain and float(np.ptp(by_chain[name])) > 0:
                rhat = max(rhat, float(split_gelman_rubin(by_chain[name])))
    divergences = int(np.asarray(diverging).sum())
    samples = {k: v.reshape((-1, *v.shape[2:])) for k, v in by_chain.items()}
    return samples, rhat, divergences


def standing_record(frontier_df: pd.DataFrame, origin: float) -> float:
    """log10 FLOP of the largest record run published before ``origin`` (every year, not only
    the fit's window; ``-inf`` when there is none): what any later record must exceed."""
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
    loc, scale = np.broadcast_arrays(np.asarray(loc, float), np.asarray(scale, float))
    nu = np.broadcast_to(np.asarray(nu, dtype=float), loc.shape)
    u = rng.uniform(size=loc.shape)
    kept = stats.t.sf((low - loc) / scale, nu) if np.isfinite(low) else np.ones(loc.shape)
    return loc + scale * stats.t.isf(u * kept, nu)


def truncated_student_t_mixture_log_density(
    observed: np.ndarray, loc: np.ndarray, scale: np.ndarray, nu: np.ndarray, low: float
) -> np.ndarray:
    """``log (1/S) sum_s t_nu_s(y | loc_s, scale_s)`` per observation, each draw's Student-t
    conditioned on exceeding ``low`` (its density divided by its probability above ``low``);
    ``loc``, ``scale`` (sample, obs), ``nu`` a number or per draw (sample,).  Units: per dex;
    ``low = -inf``: no bound."""
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
            "(forecast.stats.trends.frontier_compute_model, Student-t residuals with fitted tail "
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
