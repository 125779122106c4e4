"""A trend-only NUTS fit (the hardware and frontier models without the laws), used by tests and
scripts that check the trend programs alone.
"""

from __future__ import annotations

import jax
import pandas as pd
import xarray as xr

from forecast.config.settings import DEFAULT_DRAWS
from forecast.inference.fit import fit_observations
from forecast.stats.trends import (
    TrendPriors,
    frontier_observations,
    trend_observations,
)


def fit_trends(
    hardware_df: pd.DataFrame,
    frontier_df: pd.DataFrame,
    priors: TrendPriors,
    *,
    rng_key: jax.Array,
    num_chains: int = 4,
    num_warmup: int = DEFAULT_DRAWS,
    num_samples: int = DEFAULT_DRAWS,
    chain_method: str = "vectorized",
    target_accept_prob: float = 0.9,
    progress_bar: bool = False,
) -> xr.DataTree:
    """Fit the hardware and frontier-compute trends with NUTS; return one DataTree.

    Selects the rows with :func:`forecast.stats.trends.trend_observations` (shipped flagships) and
    :func:`forecast.stats.trends.frontier_observations` (RECORD runs since 2018 with an estimate), then
    calls :func:`fit_observations`. Both models run as one NumPyro model with two independent
    likelihoods (:func:`forecast.stats.trends.trend_model`), so one NUTS run gives one posterior.

    Parameters
    ----------
    hardware_df : pandas.DataFrame
        ``forecast.data.hardware.load_hardware()``.
    frontier_df : pandas.DataFrame
        ``forecast.data.hardware.load_frontier_runs()``.
    priors : TrendPriors
        ``intercept_loc=None`` centres the hardware intercepts on the data.
    rng_key : jax.random.PRNGKey
        Split into the MCMC key and the posterior-predictive key.
    num_chains, num_warmup, num_samples : int
        NUTS settings.
    chain_method : {"vectorized", "sequential", "parallel", "unbatched"}
        How chains run (the trend-model tests' fits keep ``"vectorized"``, the chain method
        their expectations were measured with; the production fits run ``"unbatched"``).
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
