"""Draws out of a fit: posterior arrays by site, the trend priors and observations a fit recorded,
and prior and posterior predictive draws of the trend model.
"""

from __future__ import annotations

import json
from functools import partial

import jax
import numpy as np
import xarray as xr
from numpyro.infer import Predictive

from forecast.config.runtime import exclusive, init_jax
from forecast.config.settings import DEFAULT_DRAWS
from forecast.stats.trends import (
    FrontierObservations,
    HardwareObservations,
    TrendPriors,
    resolve_intercepts,
    trend_model,
)

# Dims of the sites when a hardware slope is fixed: ``slope`` is then a deterministic site, whose
# dims ArviZ does not infer from the ``metric`` plate, and explicit dims replace the inferred ones.
PREDICTIVE_SITES = ("log10_value", "log10_compute")
"""The trend model's observed sites that posterior and prior predictive draws keep."""

_FIXED_SLOPE_DIMS = {
    "slope": ["metric"],
    "slope_sampled": ["metric"],
    "intercept": ["metric"],
    "sigma": ["metric"],
    "log10_value": ["obs"],
    "log10_compute": ["run"],
}


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


@exclusive
def prior_predictive(
    priors: TrendPriors,
    hardware: HardwareObservations | None,
    frontier: FrontierObservations | None,
    *,
    rng_key: jax.Array,
    num_samples: int = DEFAULT_DRAWS,
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
    init_jax()
    if hardware is not None:
        priors = resolve_intercepts(priors, hardware.log10_values, hardware.metric_index)
    draws = Predictive(
        partial(trend_model, hardware, frontier, priors, observed=False),
        num_samples=num_samples,
        parallel=True,
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
        A fit (:func:`forecast.inference.fit.fit_observations` or
        :func:`forecast.inference.fit.fit_joint`).
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
    init_jax()
    if hardware is None and frontier is None:
        hardware, frontier = observations_from_datatree(dt)
    samples = posterior_draws(dt)
    draws = Predictive(
        partial(trend_model, hardware, frontier, priors_from_datatree(dt), observed=False),
        posterior_samples=samples,
        parallel=True,
    )(rng_key)
    return {k: np.asarray(v) for k, v in draws.items() if k in PREDICTIVE_SITES}
