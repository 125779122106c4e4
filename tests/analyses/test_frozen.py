"""The paper's framing (hardware frozen at the H100): hit years in closed form, monotone in the
frontier growth, earlier than the full forecast's, and stored as a group of the forecast file."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from forecast.analyses.frozen_hardware import (
    assumption_overrides,
    frozen_dataset,
    frozen_hit_years,
    scaling_inputs,
)
from forecast.queries.analyses import frozen_summary as summary

YEARS = np.arange(2024.0, 2046.0)


def test_hit_year_is_the_closed_form_of_a_log_linear_run():
    """Run 10^(25.7 + 0.5 (year - 2024)) reaches 1e28.2 after (28.2 - 25.7) / 0.5 = 5 years."""
    got = frozen_hit_years(28.2, np.array([0.5, 0.25]), np.array([25.7, 25.7]), YEARS)
    np.testing.assert_allclose(got, [2029.0, 2034.0])
    # interpolation between grid years is exact for a straight line
    np.testing.assert_allclose(
        frozen_hit_years(28.0, np.array([0.6]), 25.7, YEARS), 2024 + 2.3 / 0.6
    )


def test_hit_year_ends():
    """Already reached in the first year: that year; not reached by the last: +inf."""
    got = frozen_hit_years(25.0, np.array([0.5]), 25.7, YEARS)
    assert got.tolist() == [2024.0]
    assert frozen_hit_years(40.0, np.array([0.5]), 25.7, YEARS).tolist() == [np.inf]


@settings(max_examples=60, deadline=None)
@given(
    wall=st.floats(26.0, 33.0),
    slow=st.floats(0.3, 0.9),
    faster_by=st.floats(0.01, 0.5),
    intercept=st.floats(24.5, 25.9),
)
def test_faster_frontier_growth_reaches_the_frozen_wall_earlier(wall, slow, faster_by, intercept):
    slow_year, fast_year = frozen_hit_years(
        wall, np.array([slow, slow + faster_by]), intercept, YEARS
    )
    assert fast_year <= slow_year
    if np.isfinite(slow_year):  # both reached: strictly earlier
        assert fast_year < slow_year


def test_scaling_inputs_prefer_the_posterior_of_a_fitted_law():
    keys = ["scaling.batch_tokens_2024", "scaling.layer_exponent", "latency.kernel_us"]
    posterior = {"batch_tokens_2024": np.array([[2.0e7, 3.0e7, 4.0e7]])}
    priors = {
        "scaling.batch_tokens_2024": 6e7,
        "scaling.layer_exponent": 0.27,
        "latency.kernel_us": 4.5,
    }
    fitted = {
        "scaling.batch_tokens_2024": "batch_tokens_2024",
        "scaling.layer_exponent": "layer_exponent",
    }
    values, sources = scaling_inputs(keys, posterior, priors, fitted)
    assert values == {
        "scaling.batch_tokens_2024": 3.0e7,
        "scaling.layer_exponent": 0.27,
        "latency.kernel_us": 4.5,
    }
    assert sources["scaling.batch_tokens_2024"] == "posterior:batch_tokens_2024"
    assert sources["scaling.layer_exponent"] == sources["latency.kernel_us"] == "prior"


def _baseline_values(posterior: dict | None = None) -> dict[str, float]:
    """Prior medians of the baseline, or posterior medians of the laws in ``posterior``."""
    from forecast.analyses.frozen_hardware import frozen_keys
    from forecast.config.paths import default_priors_path
    from forecast.priors import load_priors
    from forecast.priors.registry import FITTED_INPUTS, PROPAGATED_KEYS

    prior_set = load_priors(default_priors_path())
    keys = frozen_keys(PROPAGATED_KEYS)
    values, _ = scaling_inputs(
        keys,
        posterior or {},
        {k: float(prior_set[k].median()) for k in keys},
        {k: f.variable for k, f in FITTED_INPUTS.items()},
    )
    return values


def _reference() -> xr.Dataset:
    from support.reference import REFERENCE_PATH

    with xr.open_dataset(REFERENCE_PATH, engine="h5netcdf") as ref:
        return ref.load()


def test_assumptions_are_the_forecasts_mapping_in_2024():
    """Latency in microseconds becomes seconds, with no drift in 2024; the batch law is kept."""
    values = _baseline_values()
    a = assumption_overrides(values)
    assert a["kernel_latency_s"] == pytest.approx(values["latency.kernel_us"] * 1e-6)
    assert a["batch_tokens_ref"] == pytest.approx(values["scaling.batch_tokens_2024"])
    assert a["duration_s"] == pytest.approx(values["training.duration_days"] * 86400)


@pytest.fixture(scope="module")
def h100_walls() -> dict[str, float]:
    """The H100's walls from the walls service at the reference forecast's inputs: posterior
    medians of the laws it fitted (its ``posterior_*`` variables), else baseline prior medians."""
    from forecast.analyses.accelerator_walls import walls_record
    from forecast.analyses.frozen_hardware import FROZEN_ACCELERATOR, WALLS
    from forecast.queries.posterior_walls import wall_log10_flop

    ref = _reference()
    posterior = {
        name.removeprefix("posterior_"): ref[name].values
        for name in ref.data_vars
        if name.startswith("posterior_")
    }
    values = _baseline_values(posterior)
    record = walls_record(
        FROZEN_ACCELERATOR,
        duration_days=values["training.duration_days"],
        assumptions=assumption_overrides(values),
    )
    return {w: wall_log10_flop(record, w) for w in WALLS}


def test_frozen_wall_is_reached_before_the_full_forecasts_median(h100_walls):
    """On the stored reference forecast (baseline): the frozen data-movement wall is reached
    strictly earlier than the full forecast's median hit year.  A property of the model, not of
    the numbers: the forecast's frontier accelerator improves every year (a 72-GPU scale-up
    domain from 2025, bandwidth trends) and its walls rise with it, while the frozen wall stands
    still; the frontier run is the same trend in both, so it meets the standing wall first."""
    ref = _reference()
    slope = ref["posterior_frontier_slope"].values
    intercept = ref["posterior_frontier_intercept"].values
    frozen = frozen_hit_years(h100_walls["data_movement"], slope, intercept, YEARS)
    full = ref["hit_year"].sel(scenario="baseline", wall="data_movement").values
    assert np.median(frozen) < np.median(full)
    # and the H100 wall lies below the forecast's median wall in every year after 2024
    walls = np.log10(ref["wall_flop"].sel(scenario="baseline", wall="data_movement"))
    later = walls.sel(year=walls["year"] > 2024).median(["chain", "draw"]).values
    assert np.all(later > h100_walls["data_movement"])


def test_frozen_group_round_trips_through_a_published_forecast(tmp_path):
    """`analyse_job.frozen_hardware` on a published (synthetic) forecast stores the group; read
    back, its hit years are those of the forecast's frontier posterior at the stored walls."""
    from support.synthetic_forecast import FIRST_ID, synthetic_tree

    from forecast.jobs import analyse_job
    from forecast.queries.headline import load_forecast
    from forecast.store.publisher import publish

    path = publish(synthetic_tree(FIRST_ID, seed=4), tmp_path, FIRST_ID) / "forecast.nc"
    run = analyse_job.frozen_hardware(path)
    assert run.stored_in == path
    with xr.open_dataset(path, group="frozen_hardware", engine="h5netcdf") as back:
        back = back.load()
    xr.testing.assert_allclose(back["hit_year"], run.dataset["hit_year"])
    assert back.attrs["accelerator"] == "NVIDIA H100 SXM5"
    sources = json.loads(back.attrs["input_sources"])
    assert sources["scaling.batch_tokens_2024"] == "prior"  # the synthetic tree fits no law
    fc = load_forecast(path)
    post = fc.tree["posterior"]
    expected = frozen_hit_years(
        float(np.log10(back["wall_flop"].sel(wall="data_movement"))),
        post["frontier_slope"].values,
        post["frontier_intercept"].values,
        fc.forecast["year"].values.astype(float),
    )
    np.testing.assert_allclose(back["hit_year"].sel(wall="data_movement").values, expected)
    s = summary(back, "data_movement")
    assert s["lower"] <= s["median"] <= s["upper"]


def test_frozen_dataset_layout():
    slope = np.full((2, 3), 0.5)
    ds = frozen_dataset(
        {"data_movement": 28.2, "latency": 31.2},
        slope,
        np.full((2, 3), 25.7),
        YEARS,
        accelerator="X",
        values={"a": 1.0},
        sources={"a": "prior"},
        scenario="baseline",
        precision="bf16",
        duration_days=90.0,
    )
    assert ds["hit_year"].dims == ("chain", "draw", "wall")
    np.testing.assert_allclose(ds["hit_year"].sel(wall="data_movement"), 2029.0)
    np.testing.assert_allclose(ds["hit_year"].sel(wall="latency"), 2035.0)
    np.testing.assert_allclose(ds["wall_flop"], [10**28.2, 10**31.2])
    # the paper's ~1e28 (log10 28.0) is reached (28.0 - 25.7) / 0.5 = 4.6 years after 2024
    np.testing.assert_allclose(ds["paper_wall_hit_year"], 2028.6)


def test_walls_service_refuses_an_unknown_assumption():
    from forecast.analyses.accelerator_walls import WallsInputError, walls_record

    with pytest.raises(WallsInputError, match="unknown assumption fields \\['batch'\\]"):
        walls_record("H100", assumptions={"batch": 6e7})
