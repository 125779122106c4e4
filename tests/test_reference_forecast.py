"""Same seed, data and priors -> the same forecast as the stored reference (issue: refactors
change no number).  When a change is meant to move numbers, regenerate the reference with
``.venv/bin/python tests/reference_forecast.py`` in the same commit and say why."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from reference_forecast import REFERENCE_PATH, small_forecast

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def computed() -> xr.Dataset:
    return small_forecast()


@pytest.fixture(scope="module")
def reference() -> xr.Dataset:
    with xr.open_dataset(REFERENCE_PATH, engine="h5netcdf") as ds:
        return ds.load()


def test_reference_has_every_variable(computed, reference):
    assert set(computed.data_vars) == set(reference.data_vars)
    assert set(computed.dims) == set(reference.dims)


def test_forecast_equals_reference(computed, reference):
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
