"""Run the trend models: NUTS, conversion to an ArviZ DataTree, convergence gate, predictive draws.

The models themselves are pure and live in :mod:`forecast.trends`. Everything here takes an explicit
``jax.random.PRNGKey``; the same key gives bit-identical posterior arrays.

JAX setup: :func:`fit_trends` switches JAX to float64 (``jax_enable_x64``) so that log10 values
around 25 and the summed log density do not carry float32's ~7-digit rounding. That is a
process-wide JAX setting; call :func:`init_jax` once at program start to make it explicit.
Chains run ``"vectorized"`` on CPU by default. Measured on this project's 2-core machine
(shared with other jobs, so noisy), 4 chains x (1000 warm-up + 1000 draws), NUTS alone:
vectorized 14-15 s, sequential 27-30 s; the whole :func:`fit_trends` (including ~5-10 s of JAX
compilation, posterior predictive and conversion) took 11-26 s. No extra host devices are needed;
:func:`init_jax` can still set ``numpyro.set_host_device_count`` for
``chain_method="parallel"``, which only works before JAX first initialises its backend.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable
from functools import partial
from typing import Any

import arviz as az
import jax
import numpy as np
import numpyro  # noqa: F401  (a plain import first: see below)
import pandas as pd
import xarray as xr
from numpyro.infer import MCMC, NUTS, Predictive

from forecast.errors import WallcastError
from forecast.tracing import exclusive
from forecast.trends import (
    METRICS,
    FrontierObservations,
    HardwareObservations,
    TrendPriors,
    frontier_observations,
    resolve_intercepts,
    trend_model,
    trend_observations,
)

# Import-order note: ``import arviz`` registers a *lazy* ``numpyro`` module; a first
# ``from numpyro.infer import ...`` after it leaves ``numpyro.infer.initialization`` unbound, and
# ``az.from_numpyro`` then fails with AttributeError. A plain ``import numpyro`` first avoids it.

__all__ = [
    "ESS_BULK_PER_CHAIN",
    "ConvergenceError",
    "check_convergence",
    "convergence_report",
    "enable_x64",
    "fit_observations",
    "fit_trends",
    "init_jax",
    "observations_from_datatree",
    "posterior_draws",
    "posterior_predictive",
    "prior_predictive",
    "priors_from_datatree",
]

PREDICTIVE_SITES = ("log10_value", "log10_compute")
"""Likelihood sites of :func:`forecast.trends.trend_model`."""

# Dims of the sites when a hardware slope is fixed: ``slope`` is then a deterministic site, whose
# dims ArviZ does not infer from the ``metric`` plate, and explicit dims replace the inferred ones.
_FIXED_SLOPE_DIMS = {
    "slope": ["metric"],
    "slope_sampled": ["metric"],
    "intercept": ["metric"],
    "sigma": ["metric"],
    "log10_value": ["obs"],
    "log10_compute": ["run"],
}


class ConvergenceError(WallcastError):
    """MCMC did not converge: R-hat too high, bulk ESS too low, or divergent transitions.

    Attributes
    ----------
    parameter : str or None
        Worst parameter of the first failing diagnostic, with coordinates (``slope[flops]``);
        ``None`` for divergences.
    diagnostic : str
        ``"r_hat"``, ``"ess_bulk"`` or ``"divergences"``.
    value : float
        Value of that diagnostic.
    failures : list of tuple
        Every failing check as ``(diagnostic, parameter, value, threshold)``.
    chains, draws : int or None
        Size of the run (chains x draws per chain), when known.
    hint : str
        Which run option fixes it (the message ends with it).
    """

    def __init__(
        self,
        failures: list[tuple[str, str | None, float, float]],
        *,
        chains: int | None = None,
        draws: int | None = None,
    ) -> None:
        self.failures = failures
        self.diagnostic, self.parameter, self.value, _ = failures[0]
        self.chains, self.draws = chains, draws
        parts = []
        for diagnostic, parameter, value, threshold in failures:
            if diagnostic == "divergences":
                parts.append(f"{int(value)} divergent transitions (max {int(threshold)})")
            elif diagnostic == "r_hat":
                parts.append(f"r_hat of {parameter} is {value:.4g} (max {threshold:g})")
            else:
                per_chain = (
                    f" = {threshold / chains:g} per chain x {chains} chains"
                    if chains and threshold == ESS_BULK_PER_CHAIN * chains
                    else ""
                )
                parts.append(
                    f"ess_bulk of {parameter} is {value:.4g} (min {threshold:g}{per_chain})"
                )
        self.hint = _convergence_hint({f[0] for f in failures}, chains, draws)
        message = "MCMC did not converge: " + "; ".join(parts)
        super().__init__(f"{message}; {self.hint}" if self.hint else message)


def _convergence_hint(diagnostics: set[str], chains: int | None, draws: int | None) -> str:
    """What to change: more draws (R-hat, ESS), more chains (ESS), or another seed (divergences)."""
    now_draws = f" (now {draws})" if draws else ""
    now_chains = f" (now {chains})" if chains else ""
    if "ess_bulk" in diagnostics or "r_hat" in diagnostics:
        hint = f"increase --draws{now_draws} or --chains{now_chains}"
        if "divergences" in diagnostics:
            hint += "; divergent transitions: check the priors, or try another --seed"
        return hint
    if "divergences" in diagnostics:
        return (
            "divergent transitions: check the priors (a very narrow or very wide prior), "
            f"or increase --draws{now_draws} (and warm-up) or try another --seed"
        )
    return ""


# --------------------------------------------------------------------------------------------
# JAX setup
# --------------------------------------------------------------------------------------------


def enable_x64() -> None:
    """Switch JAX to float64 (process-wide; idempotent)."""
    jax.config.update("jax_enable_x64", True)


def init_jax(
    *,
    x64: bool = True,
    host_device_count: int | None = None,
    compilation_cache_dir: str | None = None,
) -> None:
    """Set up JAX for the trend fits; call once at program start, before any JAX computation.

    Parameters
    ----------
    x64 : bool
        Enable float64.
    host_device_count : int, optional
        Call ``numpyro.set_host_device_count`` (only useful for ``chain_method="parallel"``;
        it has no effect once JAX has initialised its CPU backend).
    compilation_cache_dir : str, optional
        Turn on JAX's persistent compilation cache there. Compiling NUTS dominates short fits
        (about 5-15 s on 2 CPU cores); a refit on identical data and settings then reuses the
        compiled program.
    """
    if compilation_cache_dir is not None:
        jax.config.update("jax_compilation_cache_dir", str(compilation_cache_dir))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if host_device_count is not None:
        numpyro.set_host_device_count(host_device_count)
    if x64:
        enable_x64()


# --------------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------------


def _data_hash(hardware: HardwareObservations, frontier: FrontierObservations) -> str:
    digest = hashlib.sha256()
    for array in (*hardware, *frontier):
        arr = np.asarray(array)
        if arr.dtype.kind in "OUS":
            digest.update("\x1f".join(map(str, arr.tolist())).encode())
        else:
            digest.update(np.ascontiguousarray(arr, dtype=float).tobytes())
    return digest.hexdigest()


def _constant_data(hardware: HardwareObservations, frontier: FrontierObservations) -> xr.Dataset:
    return xr.Dataset(
        {
            "hardware_year": ("obs", np.asarray(hardware.years, dtype=float)),
            "hardware_metric_index": ("obs", np.asarray(hardware.metric_index, dtype=np.int64)),
            "frontier_year": ("run", np.asarray(frontier.years, dtype=float)),
            "frontier_is_speculative": ("run", np.asarray(frontier.is_speculative, dtype=bool)),
        },
        coords={"obs": np.asarray(hardware.names), "run": np.asarray(frontier.names)},
    )


def fit_trends(
    hardware_df: pd.DataFrame,
    frontier_df: pd.DataFrame,
    priors: TrendPriors,
    *,
    rng_key: jax.Array,
    num_chains: int = 4,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    chain_method: str = "vectorized",
    target_accept_prob: float = 0.9,
    progress_bar: bool = False,
) -> xr.DataTree:
    """Fit the hardware and frontier-compute trends with NUTS; return one DataTree.

    Selects the rows with :func:`forecast.trends.trend_observations` (shipped flagships) and
    :func:`forecast.trends.frontier_observations` (RECORD runs since 2018 with an estimate), then
    calls :func:`fit_observations`. Both models run as one NumPyro model with two independent
    likelihoods (:func:`forecast.trends.trend_model`), so one NUTS run gives one posterior.

    Parameters
    ----------
    hardware_df : pandas.DataFrame
        ``forecast.hardware.load_hardware()``.
    frontier_df : pandas.DataFrame
        ``forecast.hardware.load_frontier_runs()``.
    priors : TrendPriors
        ``intercept_loc=None`` centres the hardware intercepts on the data.
    rng_key : jax.random.PRNGKey
        Split into the MCMC key and the posterior-predictive key.
    num_chains, num_warmup, num_samples : int
        NUTS settings.
    chain_method : {"vectorized", "sequential", "parallel"}
        How chains run; ``"vectorized"`` is fastest on CPU.
    target_accept_prob : float
        NUTS target acceptance.
    progress_bar : bool
        Show NumPyro's progress bar.

    Returns
    -------
    xarray.DataTree
        See :func:`fit_observations`.
    """
    return fit_observations(
        trend_observations(hardware_df),
        frontier_observations(frontier_df),
        priors,
        rng_key=rng_key,
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        chain_method=chain_method,
        target_accept_prob=target_accept_prob,
        progress_bar=progress_bar,
    )


@exclusive
def fit_observations(
    hardware: HardwareObservations,
    frontier: FrontierObservations,
    priors: TrendPriors,
    *,
    rng_key: jax.Array,
    num_chains: int = 4,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    chain_method: str = "vectorized",
    target_accept_prob: float = 0.9,
    progress_bar: bool = False,
) -> xr.DataTree:
    """Fit :func:`forecast.trends.trend_model` to prepared observations (see :func:`fit_trends`).

    Returns
    -------
    xarray.DataTree
        Groups ``posterior``, ``sample_stats``, ``log_likelihood``, ``posterior_predictive``,
        ``observed_data`` and ``constant_data``; dims ``metric`` (named by
        :data:`forecast.trends.METRICS`), ``obs`` ("accelerator|metric") and ``run`` (model name).
        ``attrs`` hold the data-resolved priors, model config, data hash, PRNG key, code version
        and the wall time of sampling plus conversion (``fit_seconds``).
    """
    enable_x64()
    if len(hardware.years) == 0 or len(frontier.years) == 0:
        raise ValueError(
            f"nothing to fit: {len(hardware.years)} hardware observations, "
            f"{len(frontier.years)} frontier runs"
        )
    priors = resolve_intercepts(priors, hardware.log10_values, hardware.metric_index)
    mcmc_key, ppc_key = jax.random.split(rng_key)

    start = time.perf_counter()
    mcmc = MCMC(
        NUTS(
            partial(trend_model, hardware, frontier, priors), target_accept_prob=target_accept_prob
        ),
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        chain_method=chain_method,
        progress_bar=progress_bar,
    )
    mcmc.run(mcmc_key)
    samples = mcmc.get_samples()
    predictive = Predictive(
        partial(trend_model, hardware, frontier, priors, observed=False), posterior_samples=samples
    )(ppc_key)
    predictive = {k: np.asarray(v) for k, v in predictive.items() if k in PREDICTIVE_SITES}
    dt = az.from_numpyro(
        mcmc,
        posterior_predictive=predictive,
        log_likelihood=True,
        coords={"metric": list(METRICS), "obs": hardware.names, "run": frontier.names},
        dims=_FIXED_SLOPE_DIMS if any(priors.fixed_slopes) else None,
    )
    elapsed = time.perf_counter() - start

    dt["constant_data"] = _constant_data(hardware, frontier)
    from forecast import __version__

    dt.attrs.update(
        {
            "model": "forecast.trends.trend_model",
            "priors": json.dumps(priors.to_dict()),
            "model_config": json.dumps(
                {
                    "num_chains": num_chains,
                    "num_warmup": num_warmup,
                    "num_samples": num_samples,
                    "chain_method": chain_method,
                    "target_accept_prob": target_accept_prob,
                }
            ),
            "data_hash": _data_hash(hardware, frontier),
            "rng_key": json.dumps(np.asarray(jax.random.key_data(rng_key)).tolist()),
            "code_version": __version__,
            "fit_seconds": float(elapsed),
        }
    )
    return dt


# --------------------------------------------------------------------------------------------
# Reading a fit back
# --------------------------------------------------------------------------------------------


def posterior_draws(dt: xr.DataTree, group: str = "posterior") -> dict[str, np.ndarray]:
    """Posterior variables with ``chain`` and ``draw`` flattened into a leading sample axis."""
    ds = dt[group].to_dataset()
    out = {}
    for name, var in ds.data_vars.items():
        stacked = var.stack(sample=("chain", "draw")).transpose("sample", ...)
        out[str(name)] = np.asarray(stacked.values)
    return out


def priors_from_datatree(dt: xr.DataTree) -> TrendPriors:
    """The (data-resolved) :class:`TrendPriors` a fit was run with."""
    return TrendPriors.from_dict(json.loads(dt.attrs["priors"]))


def observations_from_datatree(
    dt: xr.DataTree,
) -> tuple[HardwareObservations, FrontierObservations]:
    """The observations a fit was run on (from ``observed_data`` and ``constant_data``)."""
    const = dt["constant_data"].to_dataset()
    obs = dt["observed_data"].to_dataset()
    hardware = HardwareObservations(
        years=const["hardware_year"].values,
        log10_values=obs["log10_value"].values,
        metric_index=const["hardware_metric_index"].values.astype(np.int32),
        names=np.asarray(const["obs"].values).astype(str),
    )
    frontier = FrontierObservations(
        years=const["frontier_year"].values,
        log10_flop=obs["log10_compute"].values,
        is_speculative=const["frontier_is_speculative"].values.astype(bool),
        names=np.asarray(const["run"].values).astype(str),
    )
    return hardware, frontier


# --------------------------------------------------------------------------------------------
# Predictive draws
# --------------------------------------------------------------------------------------------


@exclusive
def prior_predictive(
    priors: TrendPriors,
    hardware: HardwareObservations | None,
    frontier: FrontierObservations | None,
    *,
    rng_key: jax.Array,
    num_samples: int = 1000,
) -> dict[str, np.ndarray]:
    """Draws of parameters and of ``log10_value``/``log10_compute`` from the prior.

    ``hardware``/``frontier`` give the inputs (years, metric index, speculative flag); their
    observed values are ignored, except that hardware values centre the intercepts when
    ``priors.intercept_loc`` is ``None``.

    Returns
    -------
    dict
        Site name -> array with a leading sample axis of length ``num_samples``.
    """
    enable_x64()
    if hardware is not None:
        priors = resolve_intercepts(priors, hardware.log10_values, hardware.metric_index)
    draws = Predictive(
        partial(trend_model, hardware, frontier, priors, observed=False), num_samples=num_samples
    )(rng_key)
    return {k: np.asarray(v) for k, v in draws.items()}


@exclusive
def posterior_predictive(
    dt: xr.DataTree,
    hardware: HardwareObservations | None = None,
    frontier: FrontierObservations | None = None,
    *,
    rng_key: jax.Array,
) -> dict[str, np.ndarray]:
    """Posterior-predictive draws at new (or, by default, the fitted) inputs.

    Parameters
    ----------
    dt : xarray.DataTree
        Output of :func:`fit_trends`.
    hardware, frontier : observations, optional
        Inputs to predict at, e.g. announced parts from
        ``trend_observations(df, statuses=("announced",))``. If both are ``None``, the fit's own
        inputs are used.
    rng_key : jax.random.PRNGKey

    Returns
    -------
    dict
        ``log10_value`` (sample, obs) and/or ``log10_compute`` (sample, run).
    """
    enable_x64()
    if hardware is None and frontier is None:
        hardware, frontier = observations_from_datatree(dt)
    samples = posterior_draws(dt)
    draws = Predictive(
        partial(trend_model, hardware, frontier, priors_from_datatree(dt), observed=False),
        posterior_samples=samples,
    )(rng_key)
    return {k: np.asarray(v) for k, v in draws.items() if k in PREDICTIVE_SITES}


# --------------------------------------------------------------------------------------------
# Convergence gate
# --------------------------------------------------------------------------------------------


ESS_BULK_PER_CHAIN = 100
"""Minimum bulk ESS per chain: Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-
normalization, folding, and localization: an improved R-hat for assessing convergence of MCMC",
Bayesian Analysis 16(2), doi:10.1214/20-BA1221, recommend bulk and tail ESS > 100 per chain (400
for their default of 4 chains) together with R-hat < 1.01."""


def _worst(
    ds: xr.Dataset, *, largest: bool, skip: dict[str, np.ndarray] | None = None
) -> tuple[str, float]:
    """Label (``name[coord,...]``) and value of the worst entry; NaN counts as worst.

    ``skip`` maps a variable name to a boolean mask of entries to leave out.
    """
    best_label, best_value, best_key = "", float("nan"), -math.inf
    for name, var in ds.data_vars.items():
        values = np.asarray(var.values, dtype=float)
        if values.size == 0:
            continue
        key = np.where(np.isnan(values), np.inf, values if largest else -values)
        if skip and str(name) in skip:
            key = np.where(skip[str(name)], -math.inf, key)
        flat = int(np.argmax(key))
        if key.flat[flat] <= best_key:
            continue
        best_key = float(key.flat[flat])
        best_value = float(values.flat[flat])
        idx = np.unravel_index(flat, values.shape)
        labels = [str(var[dim].values[i]) for dim, i in zip(var.dims, idx, strict=True)]
        best_label = f"{name}[{','.join(labels)}]" if labels else str(name)
    return best_label, best_value


def _fixed_entries(dt: xr.DataTree, names: list[str] | None) -> dict[str, np.ndarray]:
    """Per posterior variable, the entries equal in every chain and draw (fixed by their prior).

    A parameter with a fixed value (``forecast.trends``: prior scale 0) is a deterministic site;
    it has no R-hat or ESS (both NaN), so the gate leaves it out. A sampled parameter is never
    identical across independently initialised chains.
    """
    post = dt["posterior"].to_dataset()
    out = {}
    for name, var in post.data_vars.items():
        if names is not None and name not in names:
            continue
        values = np.asarray(var.transpose("chain", "draw", ...).values)
        out[str(name)] = np.all(values == values[:1, :1], axis=(0, 1))
    return out


def convergence_report(
    dt: xr.DataTree, *, var_names: Iterable[str] | None = None
) -> dict[str, Any]:
    """Worst R-hat, worst bulk ESS (with parameter labels), the divergence count, the run size
    (``chains``, ``draws``) and the ``fixed`` parameters left out (constant in every draw)."""
    names = list(var_names) if var_names is not None else None
    with np.errstate(divide="ignore", invalid="ignore"):  # fixed entries: 0/0, left out below
        rhat = az.rhat(dt, var_names=names)
        ess = az.ess(dt, var_names=names, method="bulk")
    rhat_ds = rhat.to_dataset() if isinstance(rhat, xr.DataTree) else rhat
    ess_ds = ess.to_dataset() if isinstance(ess, xr.DataTree) else ess
    fixed = _fixed_entries(dt, names)
    rhat_name, rhat_value = _worst(rhat_ds, largest=True, skip=fixed)
    ess_name, ess_value = _worst(ess_ds, largest=False, skip=fixed)
    divergences = 0
    if "sample_stats" in dt.children and "diverging" in dt["sample_stats"].data_vars:
        divergences = int(dt["sample_stats"]["diverging"].values.sum())
    post = dt["posterior"]
    return {
        "r_hat": (rhat_name, rhat_value),
        "ess_bulk": (ess_name, ess_value),
        "divergences": divergences,
        "chains": int(post.sizes["chain"]),
        "draws": int(post.sizes["draw"]),
        "fixed": sorted(name for name, mask in fixed.items() if mask.any()),
    }


def check_convergence(
    dt: xr.DataTree,
    rhat_max: float = 1.01,
    ess_bulk_min: float | None = None,
    *,
    max_divergences: int = 0,
    var_names: Iterable[str] | None = None,
) -> None:
    """Raise :class:`ConvergenceError` unless every posterior parameter converged.

    Checks rank-normalised split R-hat <= ``rhat_max`` and bulk ESS >= ``ess_bulk_min`` for every
    entry of every posterior variable (``az.rhat``/``az.ess``), and at most ``max_divergences``
    divergent transitions. ``ess_bulk_min`` None follows the run's size:
    :data:`ESS_BULK_PER_CHAIN` (100) x the number of chains, after Vehtari et al. (2021), i.e.
    400 for 4 chains. Entries fixed by their prior (equal in every draw) are left out. The message
    names the worst parameter with its coordinates (e.g. ``r_hat of slope[flops] is 1.2 (max
    1.01)``) for each failing diagnostic, and ends with the run option that fixes it; NaN counts
    as failing.
    """
    report = convergence_report(dt, var_names=var_names)
    chains, draws = report["chains"], report["draws"]
    if ess_bulk_min is None:
        ess_bulk_min = ESS_BULK_PER_CHAIN * chains
    failures: list[tuple[str, str | None, float, float]] = []
    if report["divergences"] > max_divergences:
        failures.append(("divergences", None, float(report["divergences"]), float(max_divergences)))
    name, value = report["r_hat"]
    if not value <= rhat_max:  # NaN fails
        failures.append(("r_hat", name, value, rhat_max))
    name, value = report["ess_bulk"]
    if not value >= ess_bulk_min:
        failures.append(("ess_bulk", name, value, float(ess_bulk_min)))
    if failures:
        raise ConvergenceError(failures, chains=chains, draws=draws)
