"""Pure NumPyro models of the hardware and frontier-compute trends (no I/O, no inference).

Two log-linear trend models live here, plus the pure helpers that turn tables into model inputs and
posterior draws into projections. Running them (NUTS, conversion to a DataTree, convergence checks)
lives in :mod:`forecast.inference.fit`.

Hardware trend (one regression per metric, fitted jointly)::

    log10 y[i] = a[m] + b[m] * (year[i] - 2024) + sigma[m] * eps[i],   eps[i] ~ StudentT(nu)

with ``m`` the metric of observation ``i``. Data are in *long* format: one observation per
(accelerator, metric) that exists, so a missing value (no FP8, no published scale-out bandwidth)
is simply absent rather than imputed.

Frontier compute trend (the largest known training run at each release, 2018 onwards)::

    log10 C[j] = a_f + b_f * (year[j] - 2024) + sigma_f * k[j] * eps[j],   eps[j] ~ StudentT(nu_f)

with ``k[j] = 1`` for Epoch "Confident"/"Likely" rows and ``k[j] = 1 + e`` (``e ~ HalfNormal``) for
"Speculative" rows, so guesses about undisclosed runs get a wider noise than documented ones.

Slopes ``b`` are log10 growth per year: a growth of 1.45x/yr is ``b = log10(1.45) = 0.161``.

Why one module of ~700 lines: the two models, the table-to-array helpers that feed them and the
projection of their draws share one parameterisation (pivot year, slopes in log10/yr, the metric
index); splitting them would spread that parameterisation over several files.

One concept: the hardware-trend and frontier-compute model - its priors, observations, NumPyro program and projection.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd

from forecast.config.constants import REFERENCE_YEAR
from forecast.priors.distributions import log10_normal
from forecast.priors.registry import FRONTIER_SERIES, growth_key, level_key

METRICS: tuple[str, ...] = (
    "flops",
    "hbm_bandwidth",
    "hbm_capacity",
    "scaleup_bandwidth",
    "scaleout_bandwidth",
)
"""Hardware metrics with a trend, in the order of the ``metric`` dimension."""

METRIC_COLUMNS: dict[str, str] = {
    "flops": "peak_dense_16bit_flops",
    "hbm_bandwidth": "hbm_bandwidth_bytes_per_s",
    "hbm_capacity": "hbm_capacity_bytes",
    "scaleup_bandwidth": "scaleup_bandwidth_bytes_per_s",
    "scaleout_bandwidth": "scaleout_bandwidth_bytes_per_s",
}
"""Column of ``forecast.data.hardware.load_hardware()`` holding each metric."""

PRIOR_KEYS: dict[str, str] = {metric: growth_key(metric) for metric in METRICS}
"""PriorSet key of each metric's growth prior (multiplicative, x/yr)."""

FRONTIER_MIN_YEAR = 2018.0
"""First year of the frontier-compute fit: Epoch documents a slope change around 2018."""

_HALFNORMAL_MEDIAN = 0.6744897501960817  # median of HalfNormal(1)


class _PriorLike(Protocol):
    def quantile(self, q: float) -> float: ...

    def median(self) -> float: ...


class _PriorSetLike(Protocol):
    def __getitem__(self, key: str) -> _PriorLike: ...


def _growth_to_slope(p10: float, p50: float, p90: float) -> tuple[float, float]:
    """Normal (loc, scale) on log10 growth from the 10/50/90% quantiles of a growth factor.

    A fixed growth (p10 = p50 = p90) gives scale 0: the slope is fixed in the model.
    """
    return log10_normal(p10, p50, p90)


@dataclass(frozen=True)
class TrendPriors:
    """Priors of the hardware and frontier-compute trend models, in log10 units.

    Parameters
    ----------
    slope_loc, slope_scale : tuple of float
        Normal prior on each metric's slope (log10 growth per year), in the order of
        :data:`METRICS`. A scale of 0 fixes the slope at its loc (a point-mass prior: a fixed
        ``value`` in the prior file); the slope is then not sampled (see
        :func:`hardware_trend_model`).
    intercept_loc : tuple of float or None
        Centre of the Normal prior on each metric's log10 value in :data:`REFERENCE_YEAR`. ``None``
        means "take it from the data" (the median log10 value of the metric, see
        :func:`resolve_intercepts`); with :attr:`intercept_scale` = 2 dex the prior is weak either way.
    intercept_scale : float
        Standard deviation of the intercept prior, dex.
    noise_scale : float
        HalfNormal scale of each metric's residual scale ``sigma[m]``, dex.
    nu_shape, nu_rate : float
        Gamma(shape, rate) prior on the Student-t degrees of freedom ``nu`` of the hardware model,
        shared by all metrics. Gamma(2, 0.1) is the prior of Juárez & Steel (2010, JBES): mean 20,
        mode 10, with enough mass below 5 for heavy tails. One ``nu`` pooled over the ~80
        observations of all metrics lets the data say how outlying odd parts are (TPU v6e's HBM,
        TPU DCN bandwidth, the P100's NVLink) instead of fixing it.
    frontier_slope_loc, frontier_slope_scale : float
        Normal prior on the frontier-compute slope (log10 growth per year); scale 0 fixes it.
    frontier_intercept_loc, frontier_intercept_scale : float
        Normal prior on log10 frontier training compute (FLOP) in :data:`REFERENCE_YEAR`; scale 0
        fixes it.
    frontier_noise_scale : float
        HalfNormal scale of the frontier residual scale ``sigma_f``, dex.
    frontier_nu : float or None
        Student-t degrees of freedom of the frontier model. ``None`` (the default) fits it: the
        site ``frontier_nu`` gets the same Gamma(:attr:`nu_shape`, :attr:`nu_rate`) prior as the
        hardware ``nu`` (Juárez & Steel 2010). The ~15 record runs barely move it from that prior,
        so the predictive is a mixture over tail weights rather than one chosen value; a number
        fixes it (a deterministic site). Fixing it at 4, as before 2026-12, made every predictive
        interval heavier-tailed than the records warrant: the frontier backtest's 80 % intervals
        covered 96-98 % of held-out records, and its log score was worse at every origin
        (``docs/sensitivity-and-backtest.md``).
    speculative_inflation_scale : float
        HalfNormal scale of ``e`` in the noise multiplier ``1 + e`` of Epoch "Speculative" rows.
    reference_year : float
        Year at which intercepts are defined.
    """

    slope_loc: tuple[float, ...]
    slope_scale: tuple[float, ...]
    intercept_loc: tuple[float, ...] | None = None
    intercept_scale: float = 2.0
    noise_scale: float = 0.3
    nu_shape: float = 2.0
    nu_rate: float = 0.1
    frontier_slope_loc: float = math.log10(4.5)
    frontier_slope_scale: float = 0.15
    frontier_intercept_loc: float = 25.7
    frontier_intercept_scale: float = 1.0
    frontier_noise_scale: float = 0.5
    frontier_nu: float | None = None
    speculative_inflation_scale: float = 1.0
    reference_year: float = REFERENCE_YEAR
    metrics: tuple[str, ...] = field(default=METRICS)

    def __post_init__(self) -> None:
        n = len(self.metrics)
        for name in ("slope_loc", "slope_scale", "intercept_loc"):
            value = getattr(self, name)
            if value is None:
                continue
            object.__setattr__(self, name, tuple(float(v) for v in value))
            if len(getattr(self, name)) != n:
                raise ValueError(f"TrendPriors.{name} has {len(value)} entries, expected {n}")
        object.__setattr__(self, "metrics", tuple(self.metrics))
        positive = [
            "intercept_scale",
            "noise_scale",
            "nu_shape",
            "nu_rate",
            "frontier_noise_scale",
            "speculative_inflation_scale",
        ]
        if self.frontier_nu is not None:
            positive.append("frontier_nu")
        for name in positive:
            value = float(getattr(self, name))
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"TrendPriors.{name} must be finite and > 0, got {value}")
        # a scale of 0 is a fixed value (a point-mass prior): the parameter is not sampled
        for name in ("frontier_slope_scale", "frontier_intercept_scale"):
            value = float(getattr(self, name))
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"TrendPriors.{name} must be finite and >= 0, got {value}")
        if any(not (s >= 0 and math.isfinite(s)) for s in self.slope_scale):
            raise ValueError(f"TrendPriors.slope_scale must be >= 0, got {self.slope_scale}")

    @classmethod
    def default(cls) -> TrendPriors:
        """Priors from published growth ranges ([hobbhahn2023], [gholami2024], [delsozzo2026],
        [epoch-ml-hardware], [sevilla2024-compute]; keys of ``docs/sources.md``).

        Growth 10/50/90% (x/yr): FLOP/s 1.25/1.45/1.70, HBM bandwidth 1.15/1.27/1.45, HBM
        capacity 1.15/1.30/1.50, scale-up 1.15/1.30/1.50, scale-out 1.15/1.33/1.55, frontier
        compute 3.0/4.5/6.5. Frontier compute in 2024: 1e25/5e25/2e26 FLOP. For runs, prefer
        :func:`trend_priors_from_prior_set` on the project's PriorSet.
        """
        quantiles = {
            "flops": (1.25, 1.45, 1.70),
            "hbm_bandwidth": (1.15, 1.27, 1.45),
            "hbm_capacity": (1.15, 1.30, 1.50),
            "scaleup_bandwidth": (1.15, 1.30, 1.50),
            "scaleout_bandwidth": (1.15, 1.33, 1.55),
        }
        slopes = [_growth_to_slope(*quantiles[m]) for m in METRICS]
        f_loc, f_scale = _growth_to_slope(3.0, 4.5, 6.5)
        i_loc, i_scale = _growth_to_slope(1e25, 5e25, 2e26)
        return cls(
            slope_loc=tuple(s[0] for s in slopes),
            slope_scale=tuple(s[1] for s in slopes),
            frontier_slope_loc=f_loc,
            frontier_slope_scale=f_scale,
            frontier_intercept_loc=i_loc,
            frontier_intercept_scale=i_scale,
        )

    @property
    def fixed_slopes(self) -> tuple[bool, ...]:
        """Per metric: is its slope fixed (prior scale 0)?"""
        return tuple(s == 0 for s in self.slope_scale)

    def slope_prior(self, metric: str) -> tuple[float, float]:
        """(loc, scale) of the Normal prior on ``metric``'s slope."""
        i = self.metrics.index(metric)
        return self.slope_loc[i], self.slope_scale[i]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (for DataTree attrs)."""
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, tuple):
                out[key] = list(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrendPriors:
        """Inverse of :meth:`to_dict`."""
        kwargs = dict(data)
        for key in ("slope_loc", "slope_scale", "intercept_loc", "metrics"):
            if kwargs.get(key) is not None:
                kwargs[key] = tuple(kwargs[key])
        return cls(**kwargs)


def trend_priors_from_prior_set(
    prior_set: _PriorSetLike,
    *,
    intercept_scale: float = 2.0,
    frontier_nu: float | None = None,
    speculative_inflation_scale: float = 1.0,
) -> TrendPriors:
    """Build :class:`TrendPriors` from a ``forecast.priors.PriorSet``.

    Each growth prior (x/yr) becomes a Normal on the log10 slope with
    ``loc = log10(median)`` and ``scale = (log10 q90 - log10 q10) / (2 * 1.2816)``, i.e. the
    lognormal that matches its median and 80% interval; a fixed value gives scale 0, which fixes
    the slope in the model. ``frontier.compute_2024_flop`` is turned
    into the frontier intercept prior the same way. ``hardware.trend_noise_dex`` (residual scatter
    about a trend, dex) sets the HalfNormal scale of the hardware residual scales so that the
    HalfNormal's median equals the prior's median; the frontier noise scale is twice that, as
    estimates of training compute scatter more than datasheet values.

    Parameters
    ----------
    prior_set : PriorSet
        Indexable by key; items have ``.quantile(q)`` and ``.median()``.
    intercept_scale : float
        Standard deviation (dex) of the weak hardware intercept priors, centred on the data.
    frontier_nu : float or None
        Student-t degrees of freedom of the frontier model; ``None`` fits it
        (:attr:`TrendPriors.frontier_nu`).
    speculative_inflation_scale : float
        HalfNormal scale of the extra noise of Speculative rows.

    Returns
    -------
    TrendPriors
    """

    def quantiles(key: str) -> tuple[float, float, float]:
        prior = prior_set[key]
        return (
            float(prior.quantile(0.1)),
            float(prior.median()),
            float(prior.quantile(0.9)),
        )

    def log10_prior(key: str) -> tuple[float, float]:
        try:
            return _growth_to_slope(*quantiles(key))
        except ValueError as e:  # load_priors refuses such priors; this guards other PriorSets
            raise ValueError(f"{key}: {e}") from None

    slopes = [log10_prior(PRIOR_KEYS[m]) for m in METRICS]
    f_loc, f_scale = log10_prior(growth_key(FRONTIER_SERIES))
    i_loc, i_scale = log10_prior(level_key(FRONTIER_SERIES))
    noise_median = float(prior_set["hardware.trend_noise_dex"].median())
    if not noise_median > 0:
        raise ValueError(f"hardware.trend_noise_dex median must be > 0, got {noise_median}")
    noise_scale = noise_median / _HALFNORMAL_MEDIAN
    return TrendPriors(
        slope_loc=tuple(s[0] for s in slopes),
        slope_scale=tuple(s[1] for s in slopes),
        intercept_scale=intercept_scale,
        noise_scale=noise_scale,
        frontier_slope_loc=f_loc,
        frontier_slope_scale=f_scale,
        frontier_intercept_loc=i_loc,
        frontier_intercept_scale=i_scale,
        frontier_noise_scale=2.0 * noise_scale,
        frontier_nu=frontier_nu,
        speculative_inflation_scale=speculative_inflation_scale,
    )


def resolve_intercepts(
    priors: TrendPriors, log10_values: np.ndarray, metric_index: np.ndarray
) -> TrendPriors:
    """Fill ``priors.intercept_loc`` with each metric's median log10 value, if it is ``None``.

    A metric without observations gets the mean of the other metrics' centres (its 2-dex prior
    then carries it). Pure numpy; returns a new :class:`TrendPriors`.
    """
    if priors.intercept_loc is not None:
        return priors
    values = np.asarray(log10_values, dtype=float)
    index = np.asarray(metric_index, dtype=int)
    centres = np.full(len(priors.metrics), np.nan)
    for m in range(len(priors.metrics)):
        sel = values[index == m]
        if sel.size:
            centres[m] = float(np.median(sel))
    if np.all(np.isnan(centres)):
        raise ValueError("no observations to centre the intercept priors on")
    centres[np.isnan(centres)] = float(np.nanmean(centres))
    return TrendPriors(**{**priors.__dict__, "intercept_loc": tuple(centres.tolist())})


class HardwareObservations(NamedTuple):
    """Long-format hardware observations: one row per (accelerator, metric) value."""

    years: np.ndarray
    log10_values: np.ndarray
    metric_index: np.ndarray
    names: np.ndarray  # "accelerator|metric"


class FrontierObservations(NamedTuple):
    """Record frontier training runs used by the compute-trend fit."""

    years: np.ndarray
    log10_flop: np.ndarray
    is_speculative: np.ndarray
    names: np.ndarray


def _require(df: pd.DataFrame, columns: list[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} table lacks columns {missing}")


def trend_observations(
    df: pd.DataFrame,
    *,
    statuses: tuple[str, ...] = ("shipped",),
    flagship_only: bool = True,
) -> HardwareObservations:
    """Select the hardware observations the trend is fitted on, in long format.

    Rows: flagship accelerators (``flagship`` true) whose ``status`` is in ``statuses`` and that
    have a ``release_year``. By default that is shipped parts only; announced parts are left out of
    the fit and can be selected with ``statuses=("announced",)`` for a posterior-predictive check.
    Columns: :data:`METRIC_COLUMNS`; each finite, positive value is one observation.

    Parameters
    ----------
    df : pandas.DataFrame
        Output of ``forecast.data.hardware.load_hardware()``.
    statuses : tuple of str
        Values of ``status`` to keep.
    flagship_only : bool
        Keep only rows with ``flagship`` true.

    Returns
    -------
    HardwareObservations
        ``(years, log10_values, metric_index, names)``, sorted by metric then year.
    """
    _require(df, ["name", "release_year", "status", *METRIC_COLUMNS.values()], "hardware")
    rows = df[df["status"].isin(statuses) & df["release_year"].notna()]
    if flagship_only:
        _require(df, ["flagship"], "hardware")
        rows = rows[rows["flagship"].astype(bool)]
    years, values, index, names = [], [], [], []
    for m, metric in enumerate(METRICS):
        col = pd.to_numeric(rows[METRIC_COLUMNS[metric]], errors="coerce")
        ok = np.isfinite(col.to_numpy(dtype=float)) & (col.to_numpy(dtype=float) > 0)
        sub = rows[ok].assign(_v=col[ok]).sort_values(["release_year", "name"])
        years.append(sub["release_year"].to_numpy(dtype=float))
        values.append(np.log10(sub["_v"].to_numpy(dtype=float)))
        index.append(np.full(len(sub), m, dtype=np.int32))
        names.append(np.array([f"{n}|{metric}" for n in sub["name"]], dtype=object))
    return HardwareObservations(
        years=np.concatenate(years),
        log10_values=np.concatenate(values),
        metric_index=np.concatenate(index),
        names=np.concatenate(names).astype(str),
    )


def frontier_observations(
    df: pd.DataFrame, *, min_year: float = FRONTIER_MIN_YEAR
) -> FrontierObservations:
    """Select the runs the frontier-compute trend is fitted on.

    Keeps RECORD rows (largest known run at release) from ``min_year`` on, with a compute
    estimate. Rationale:

    - **Records only.** The trend we need is that of the *largest* run; the other rows (within
      10x of the record, or top-10 of their year) would pull the intercept down and mix in a
      different population.
    - **2018 onwards.** Epoch documents a slope change around 2018 (about 4x/yr since, faster
      before); a single line through 2012-2025 would mix two regimes.
    - **Censored rows dropped.** Rows with no public estimate (``training_compute_flop`` NaN, 9
      recent flagships) are excluded. The only bound one could put on them, >= 1e25 FLOP, lies
      below the trend line at their dates, so as a censored likelihood term it would carry almost
      no information; dropping them does not bias the slope. (Fitting only up to the last
      estimated record does not understate growth here because the estimated records reach 2025.)

    Parameters
    ----------
    df : pandas.DataFrame
        Output of ``forecast.data.hardware.load_frontier_runs()`` (columns ``record``, ``confidence``,
        ``year``, ``training_compute_flop``, ``model``).
    min_year : float
        First (fractional) year kept.

    Returns
    -------
    FrontierObservations
        ``(years, log10_flop, is_speculative, names)``, sorted by year.
    """
    _require(df, ["model", "year", "record", "confidence", "training_compute_flop"], "frontier")
    compute = pd.to_numeric(df["training_compute_flop"], errors="coerce").to_numpy(dtype=float)
    keep = (
        df["record"].astype(bool).to_numpy()
        & (df["year"].to_numpy(dtype=float) >= min_year)
        & np.isfinite(compute)
        & (compute > 0)
    )
    rows = df[keep].assign(_c=compute[keep]).sort_values("year")
    return FrontierObservations(
        years=rows["year"].to_numpy(dtype=float),
        log10_flop=np.log10(rows["_c"].to_numpy(dtype=float)),
        is_speculative=(rows["confidence"].fillna("").astype(str) == "Speculative").to_numpy(),
        names=rows["model"].astype(str).to_numpy(),
    )


def hardware_trend_model(
    years: jax.Array | np.ndarray,
    log10_values: jax.Array | np.ndarray | None,
    metric_index: jax.Array | np.ndarray,
    n_metrics: int,
    priors: TrendPriors,
) -> None:
    """Per-metric log-linear trend with Student-t residuals (pure NumPyro model).

    Sites: ``slope``, ``intercept``, ``sigma`` (plate ``metric``), ``nu`` (scalar) and the
    likelihood ``log10_value`` (plate ``obs``).

    A fixed slope (``priors.slope_scale`` 0, from a fixed ``value`` in the prior file) is a point
    mass: ``slope`` becomes a deterministic site equal to ``slope_loc`` for the fixed metrics and to
    the latent ``slope_sampled`` for the others (the fixed entries of ``slope_sampled`` are draws
    of a unit normal that nothing depends on). With no fixed slope the model is as above.

    Parameters
    ----------
    years : array (n_obs,)
        Fractional release year of each observation.
    log10_values : array (n_obs,) or None
        Observed log10 values; ``None`` samples them (prior/posterior predictive).
    metric_index : int array (n_obs,)
        Index into :data:`METRICS` of each observation.
    n_metrics : int
        Number of metrics (size of the ``metric`` plate).
    priors : TrendPriors
        With ``intercept_loc`` set (see :func:`resolve_intercepts`).
    """
    if priors.intercept_loc is None:
        raise ValueError("priors.intercept_loc is None; call resolve_intercepts first")
    if n_metrics != len(priors.slope_loc):
        raise ValueError(f"n_metrics={n_metrics} but priors have {len(priors.slope_loc)} metrics")
    years = jnp.asarray(years)
    metric_index = jnp.asarray(metric_index)
    fixed = np.asarray(priors.fixed_slopes)
    slope_loc = jnp.asarray(priors.slope_loc)
    with numpyro.plate("metric", n_metrics):
        if not fixed.any():
            slope = numpyro.sample("slope", dist.Normal(slope_loc, jnp.asarray(priors.slope_scale)))
        else:
            scale = jnp.asarray(np.where(fixed, 1.0, priors.slope_scale))
            sampled = numpyro.sample("slope_sampled", dist.Normal(slope_loc, scale))
            slope = numpyro.deterministic("slope", jnp.where(fixed, slope_loc, sampled))
        intercept = numpyro.sample(
            "intercept", dist.Normal(jnp.asarray(priors.intercept_loc), priors.intercept_scale)
        )
        sigma = numpyro.sample("sigma", dist.HalfNormal(priors.noise_scale))
    nu = numpyro.sample("nu", dist.Gamma(priors.nu_shape, priors.nu_rate))
    mu = intercept[metric_index] + slope[metric_index] * (years - priors.reference_year)
    with numpyro.plate("obs", years.shape[0]):
        numpyro.sample("log10_value", dist.StudentT(nu, mu, sigma[metric_index]), obs=log10_values)


def _normal_or_fixed(name: str, loc: float, scale: float) -> jax.Array:
    """A Normal(loc, scale) sample site, or a deterministic site at ``loc`` when scale is 0."""
    if scale > 0:
        return numpyro.sample(name, dist.Normal(loc, scale))
    return numpyro.deterministic(name, jnp.asarray(loc))


def frontier_compute_model(
    years: jax.Array | np.ndarray,
    log10_flop: jax.Array | np.ndarray | None,
    is_speculative: jax.Array | np.ndarray,
    priors: TrendPriors,
    mask: jax.Array | np.ndarray | None = None,
) -> None:
    """Frontier training-compute trend with Student-t residuals (pure NumPyro model).

    Fit it on :func:`frontier_observations` (RECORD runs from 2018 on, censored rows excluded;
    see there). Speculative rows get noise ``sigma_f * (1 + e)`` with ``e ~ HalfNormal``.

    Sites: ``frontier_slope``, ``frontier_intercept``, ``frontier_sigma``,
    ``frontier_speculative_extra``, ``frontier_nu`` and the likelihood ``log10_compute`` (plate
    ``run``). A slope or intercept whose prior scale is 0 (a fixed value) is a deterministic site
    at its loc; so is ``frontier_nu`` when :attr:`TrendPriors.frontier_nu` is a number.

    Parameters
    ----------
    years : array (n_runs,)
        Fractional publication year.
    log10_flop : array (n_runs,) or None
        Observed log10 training compute; ``None`` samples it.
    is_speculative : bool array (n_runs,)
        Epoch confidence "Speculative".
    priors : TrendPriors
    mask : bool array (n_runs,), optional
        Rows in the likelihood (False: padding, left out); None: every row.
    """
    years = jnp.asarray(years)
    is_speculative = jnp.asarray(is_speculative, dtype=bool)
    slope = _normal_or_fixed(
        "frontier_slope", priors.frontier_slope_loc, priors.frontier_slope_scale
    )
    intercept = _normal_or_fixed(
        "frontier_intercept", priors.frontier_intercept_loc, priors.frontier_intercept_scale
    )
    sigma = numpyro.sample("frontier_sigma", dist.HalfNormal(priors.frontier_noise_scale))
    extra = numpyro.sample(
        "frontier_speculative_extra", dist.HalfNormal(priors.speculative_inflation_scale)
    )
    if priors.frontier_nu is None:
        nu = numpyro.sample("frontier_nu", dist.Gamma(priors.nu_shape, priors.nu_rate))
    else:
        nu = numpyro.deterministic("frontier_nu", jnp.asarray(float(priors.frontier_nu)))
    scale = sigma * jnp.where(is_speculative, 1.0 + extra, 1.0)
    mu = intercept + slope * (years - priors.reference_year)
    masked = contextlib.nullcontext() if mask is None else numpyro.handlers.mask(mask=mask)
    with numpyro.plate("run", years.shape[0]), masked:
        numpyro.sample("log10_compute", dist.StudentT(nu, mu, scale), obs=log10_flop)


def trend_model(
    hardware: HardwareObservations | None,
    frontier: FrontierObservations | None,
    priors: TrendPriors,
    *,
    observed: bool = True,
) -> None:
    """Both trends in one model (two independent likelihoods; one NUTS run, one DataTree).

    Parameters
    ----------
    hardware, frontier : observations or None
        ``None`` leaves that sub-model out.
    priors : TrendPriors
    observed : bool
        ``False`` drops the observed values (prior/posterior predictive at the same inputs).
    """
    if hardware is not None:
        hardware_trend_model(
            hardware.years,
            hardware.log10_values if observed else None,
            hardware.metric_index,
            len(priors.metrics),
            priors,
        )
    if frontier is not None:
        frontier_compute_model(
            frontier.years,
            frontier.log10_flop if observed else None,
            frontier.is_speculative,
            priors,
        )


def project(
    samples: Mapping[str, Any],
    years: Any,
    *,
    reference_year: float = REFERENCE_YEAR,
    rng_key: jax.Array | None = None,
    frontier_nu: float | None = None,
    frontier_speculative: bool = False,
) -> dict[str, np.ndarray]:
    """Evaluate the fitted trends at ``years``.

    Parameters
    ----------
    samples : mapping
        Flat posterior draws: ``slope``/``intercept`` of shape (sample, metric) and optionally
        ``sigma`` (sample, metric), ``nu`` (sample,), and ``frontier_slope``,
        ``frontier_intercept``, ``frontier_sigma``, ``frontier_speculative_extra`` (sample,).
    years : array-like (year,)
        Years to evaluate at.
    reference_year : float
        Year of the intercepts.
    rng_key : jax.random.PRNGKey, optional
        If given, add Student-t residual noise (predictive draws for a *new part* or *new run*);
        otherwise return the mean trend.
    frontier_nu : float or None
        Student-t degrees of freedom of the frontier noise; ``None``: the draws' own
        ``frontier_nu`` (a fitted tail weight), or 4 for draws without one.
    frontier_speculative : bool
        With noise, use the Speculative noise multiplier for the frontier draws.

    Returns
    -------
    dict
        Metric name (and ``"frontier_compute"`` when frontier draws are present) -> log10 values
        of shape (sample, year).
    """
    t = np.atleast_1d(np.asarray(years, dtype=float)) - reference_year
    out: dict[str, np.ndarray] = {}
    keys = (
        jax.random.split(rng_key, len(METRICS) + 1)
        if rng_key is not None
        else [None] * (len(METRICS) + 1)
    )
    if "slope" in samples:
        slope = np.asarray(samples["slope"], dtype=float)
        intercept = np.asarray(samples["intercept"], dtype=float)
        for m, metric in enumerate(METRICS[: slope.shape[-1]]):
            mean = intercept[:, m, None] + slope[:, m, None] * t[None, :]
            if keys[m] is not None:
                sigma = np.asarray(samples["sigma"], dtype=float)[:, m, None]
                nu = np.asarray(samples["nu"], dtype=float)[:, None]
                eps = np.asarray(jax.random.t(keys[m], jnp.asarray(nu), shape=mean.shape))
                mean = mean + sigma * eps
            out[metric] = mean
    if "frontier_slope" in samples:
        slope = np.asarray(samples["frontier_slope"], dtype=float)[:, None]
        intercept = np.asarray(samples["frontier_intercept"], dtype=float)[:, None]
        mean = intercept + slope * t[None, :]
        if keys[-1] is not None:
            scale = np.asarray(samples["frontier_sigma"], dtype=float)[:, None]
            if frontier_speculative:
                scale = scale * (1.0 + np.asarray(samples["frontier_speculative_extra"])[:, None])
            if frontier_nu is None:
                nu = np.asarray(samples.get("frontier_nu", 4.0), dtype=float)
                nu = np.broadcast_to(nu, (mean.shape[0],))[:, None]
            else:
                nu = np.asarray(float(frontier_nu))
            eps = np.asarray(jax.random.t(keys[-1], jnp.asarray(nu), shape=mean.shape))
            mean = mean + scale * eps
        out["frontier_compute"] = mean
    return out
