"""The forecast job against its stored references (tests/support/reference.py), in what holds on
every machine:

* the deterministic steps (free-block draws, projection, wall search, crossing, assembly) run
  from a stored NUTS posterior and reproduce the stored forecast at rtol 1e-7;
* NUTS itself is checked statistically: a fit made here has the reference posterior's quantiles
  within Monte Carlo error (tolerance from the ESS), never draw for draw.

When a change is meant to move numbers, regenerate the references with
``.venv/bin/python tests/support/reference.py [--quantiles]`` in the same commit and say why.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from support.reference import (
    QUANTILE_RUN,
    QUANTILES_PATH,
    REFERENCE_PATH,
    forecast_from_fit,
    load_fit,
    posterior_quantiles,
    quantile_mismatches,
)

pytestmark = [pytest.mark.slow, pytest.mark.machine_sensitive]


@pytest.fixture(scope="module")
def computed() -> xr.Dataset:
    return forecast_from_fit(load_fit())


@pytest.fixture(scope="module")
def reference() -> xr.Dataset:
    with xr.open_dataset(REFERENCE_PATH, engine="h5netcdf") as ds:
        return ds.load()


@pytest.fixture(scope="module")
def reference_quantiles() -> xr.Dataset:
    with xr.open_dataset(QUANTILES_PATH, engine="h5netcdf") as ds:
        return ds.load()


def test_reference_has_every_variable(computed, reference):
    assert set(computed.data_vars) == set(reference.data_vars)
    assert set(computed.dims) == set(reference.dims)


def test_forecast_from_the_stored_posterior_equals_reference(computed, reference):
    for name in reference.data_vars:
        got, want = computed[name], reference[name]
        assert got.dims == want.dims, name
        for dim in want.dims:
            if dim in want.coords:
                np.testing.assert_array_equal(got[dim].values, want[dim].values, err_msg=name)
        g, w = got.values, want.values
        if g.dtype.kind in "fc":
            # infinities (a wall not hit by the last year) must match exactly
            np.testing.assert_array_equal(np.isinf(g), np.isinf(w), err_msg=name)
            finite = np.isfinite(w)
            np.testing.assert_allclose(g[finite], w[finite], rtol=1e-7, atol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_reference_is_not_degenerate(reference):
    """The reference must exercise both walls: some draws hit each wall, and hit years vary."""
    hy = reference["hit_year"]
    for wall in ("data_movement", "latency"):
        v = hy.sel(wall=wall).values
        assert np.isfinite(v).mean() > 0.3, wall
        assert np.nanstd(np.where(np.isfinite(v), v, np.nan)) > 0.3, wall


def test_nuts_fit_matches_the_reference_posterior_within_monte_carlo_error(
    published_forecast, reference_quantiles
):
    """The session's published forecast was fitted by NUTS on this machine (4 x 1000 draws, the
    default): every parameter's 5/50/95 % quantiles agree with the long reference run's within
    MCSE_TOLERANCE combined Monte Carlo standard errors."""
    with xr.open_datatree(published_forecast, engine="h5netcdf") as dt:
        posterior = dt["posterior"].to_dataset().load()
    got = posterior_quantiles(posterior)
    assert set(got.data_vars) == set(reference_quantiles.data_vars)
    assert quantile_mismatches(got, reference_quantiles) == []


def test_the_quantile_check_catches_a_shifted_posterior(reference_quantiles):
    """A posterior shifted by a fifth of its standard deviation in one parameter fails the check
    (so the check can fail); the reference agrees with itself."""
    ref = reference_quantiles
    assert quantile_mismatches(ref, ref) == []
    name = "layer_exponent"
    sd = float(ref[name].sel(quantile=0.95) - ref[name].sel(quantile=0.05)) / (2 * 1.645)
    # the error of a fit of the fixture's size: ESS about 2.5x smaller than the reference's
    fit = ref.copy()
    fit[f"{name}__mcse"] = ref[f"{name}__mcse"] * np.sqrt(2.5)
    fit[name] = ref[name] + 0.2 * sd
    mismatches = quantile_mismatches(fit, ref)
    assert mismatches and all(m.startswith(name) for m in mismatches)


def test_reference_quantiles_come_from_a_long_converged_run(reference_quantiles):
    assert reference_quantiles.attrs["chains"] == QUANTILE_RUN["chains"]
    assert reference_quantiles.attrs["draws"] == QUANTILE_RUN["draws"]
    mcse = [reference_quantiles[v] for v in reference_quantiles.data_vars if v.endswith("__mcse")]
    assert len(mcse) > 20
    # Monte Carlo error small against the posterior's spread: ESS in the thousands
    name = "layer_exponent"
    spread = float(
        reference_quantiles[name].sel(quantile=0.95) - reference_quantiles[name].sel(quantile=0.05)
    )
    assert float(reference_quantiles[f"{name}__mcse"].sel(quantile=0.5)) < 0.02 * spread
