"""The latest published forecast's posterior as the propagation sees it, for benchmarks.

:func:`published_trends` thins the posterior to about ``draws`` draws and returns what
:func:`forecast.inference.propagate.propagate` takes for one scenario (the projected trends with
the sequence-length law, and the scenario's propagated inputs): the first half of
:func:`forecast.inference.propagate.propagate_scenario`, without the propagation.
"""

from __future__ import annotations

import numpy as np


def published_trends(draws: int, scenario: str = "baseline", seed: int = 0):
    """``(trends, inputs, years, n)`` for about ``draws`` posterior draws of the latest published
    forecast (raises if none is published), ``n`` the draws kept."""
    import xarray as xr

    from forecast.inference import propagate as prop
    from forecast.inference.draws import posterior_draws
    from forecast.jobs import forecast_job
    from forecast.stats.trends import project
    from forecast.store.reader import load_forecast

    post = load_forecast()["posterior"].to_dataset()
    n_all = post.sizes["chain"] * post.sizes["draw"]
    post = post.isel(draw=slice(None, None, max(n_all // draws, 1)))
    samples = posterior_draws(xr.DataTree.from_dict({"/posterior": post}))
    prior_set = forecast_job.load_inputs(scenarios=[scenario]).scenarios[scenario]
    years = prop.DEFAULT_YEARS
    trends = project(samples, years) | prop.sequence_log10(samples, years)
    n = post.sizes["chain"] * post.sizes["draw"]
    return trends, prop.scenario_inputs(samples, prior_set, n, seed), np.asarray(years), n
