"""Today's accelerators over a forecast's posterior inputs (issue 24, "one source of inputs").

The group ``accelerator_walls`` holds each accelerator's walls per draw of the forecast's inputs;
every surface summarizes it through :mod:`forecast.queries.posterior_walls`.  These tests pin:
each draw is the fast path of that draw's inputs (and the full search's, within the fast path's
tolerance); the summaries are the draws' quantiles; the frozen reading pairs each draw's wall with
the same draw's frontier run, and reduces to the old single-wall reading when the wall is fixed.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from forecast.analyses.accelerator_walls import select_accelerators, walls_record
from forecast.analyses.frozen_hardware import frozen_dataset_from_draws, frozen_hit_years
from forecast.analyses.posterior_walls import (
    accelerator_walls_dataset,
    accelerator_walls_digest,
    thin_indices,
    today_assumptions,
)
from forecast.config.paths import default_priors_path
from forecast.model import accelerators as acc_model
from forecast.model.fast import fast_walls
from forecast.priors import load_priors
from forecast.priors.registry import PROPAGATED_KEYS
from forecast.queries import posterior_walls as pw
from forecast.queries.answers import quantiles_with_inf
from forecast.report.hardware_walls import wall_cell

H100 = "NVIDIA H100 SXM5"
A100 = "NVIDIA A100 SXM4 80GB"


def synthetic_inputs(n: int = 6, seed: int = 3) -> xr.Dataset:
    """``forecast_inputs`` of one scenario (1 chain x n draws): the shipped priors' medians, with
    maximum utilization, the 2024 batch and the collective efficiency spread over their priors'
    80% ranges."""
    priors = load_priors(default_priors_path())
    rng = np.random.default_rng(seed)
    values = {k: np.full(n, float(priors[k].median())) for k in PROPAGATED_KEYS}
    for key in ("training.max_utilization", "scaling.batch_tokens_2024"):
        lo, hi = (priors[key].quantile(q) for q in (0.1, 0.9))
        values[key] = rng.uniform(lo, hi, n)
    values["network.collective_efficiency"] = rng.uniform(0.7, 0.9, n)
    return xr.Dataset(
        {k.replace(".", "__"): (("chain", "draw"), v[None, :]) for k, v in values.items()},
        coords={"chain": [0], "draw": np.arange(n)},
    )


@pytest.fixture(scope="module")
def inputs() -> xr.Dataset:
    return synthetic_inputs()


@pytest.fixture(scope="module")
def group(inputs) -> xr.Dataset:
    accs = select_accelerators([H100, A100])
    return accelerator_walls_dataset(inputs, accs, curve_names=[H100], curve_samples=4)


def test_each_draw_is_the_fast_path_of_its_own_inputs(inputs, group):
    draws, _ = pw_input_draws(inputs)
    a = today_assumptions(draws, duration_days=90.0, bytes_per_number=2.0)
    (acc,) = select_accelerators([H100])
    hw, _ = acc_model.hardware_from_accelerator(acc, "bf16")
    dm, lat = fast_walls(hw, a)
    np.testing.assert_array_equal(
        group["wall_log10_flop"].sel(accelerator=H100, wall="data_movement"), dm
    )
    np.testing.assert_array_equal(
        group["wall_log10_flop"].sel(accelerator=H100, wall="latency"), lat
    )
    # the draws differ (the inputs do), so the summary is a distribution
    assert np.ptp(dm) > 0.05


def pw_input_draws(inputs):
    from forecast.analyses.posterior_walls import input_draws

    return input_draws(inputs, None)


def test_a_draw_agrees_with_the_full_search_at_its_inputs(inputs, group):
    """The fast path's wall of one draw is the full search's (``walls_record`` with that draw's
    assumptions) within the fast path's documented tolerance (BENCHMARKS.md section 1: 99.7% of
    draws within 0.05 dex)."""
    draws, _ = pw_input_draws(inputs)
    a = today_assumptions(draws, duration_days=90.0, bytes_per_number=2.0)
    for i in (0, 3):
        overrides = {k: float(np.asarray(v)[i]) for k, v in a._asdict().items() if np.ndim(v)}
        full = walls_record(H100, assumptions=overrides)
        got = group["wall_log10_flop"].sel(accelerator=H100).isel(sample=i)
        assert float(got.sel(wall="data_movement")) == pytest.approx(
            full["data_movement_wall_log10_flop"], abs=0.05
        )
        assert float(got.sel(wall="latency")) == pytest.approx(
            full["latency_wall_log10_flop"], abs=0.05
        )
        assert float(group["max_utilization"].sel(accelerator=H100).isel(sample=i)) == (
            pytest.approx(full["max_utilization"], rel=0.01)
        )


def test_the_digest_names_what_the_group_is_computed_from(inputs, group):
    """Equal digests, equal groups: a forecast that changed only the run's length (which these
    walls fix at 90 days) gets the digest and the group of the one before it (the refresh flow
    then reuses the walls); any input of a kept draw, an accelerator's hardware, the regime or
    the curves asked for change it."""
    accs = select_accelerators([H100, A100])
    kw = dict(curve_names=[H100], curve_samples=4)
    base = accelerator_walls_digest(inputs, accs, **kw)
    longer = inputs.assign(training__duration_days=inputs["training__duration_days"] * 2)
    assert accelerator_walls_digest(longer, accs, **kw) == base
    xr.testing.assert_identical(accelerator_walls_dataset(longer, accs, **kw), group)
    utilization = inputs["training__max_utilization"].copy()
    utilization[0, 2] *= 1.01
    changed = inputs.assign(training__max_utilization=utilization)
    assert accelerator_walls_digest(changed, accs, **kw) != base
    faster = [dataclasses.replace(accs[0], hbm_bandwidth=accs[0].hbm_bandwidth * 2)]
    assert accelerator_walls_digest(inputs, [*faster, accs[1]], **kw) != base
    assert accelerator_walls_digest(inputs, accs, **kw, regime="realistic") != base
    assert accelerator_walls_digest(inputs, accs, curve_names=[A100], curve_samples=4) != base
    assert accelerator_walls_digest(inputs, accs, **kw, duration_days=180.0) != base


def test_record_is_the_draws_summary_and_json_ready(group):
    rec = pw.walls_record(group, H100)
    assert json.loads(json.dumps(rec, allow_nan=False)) == rec
    for wall in ("data_movement", "latency"):
        v = group["wall_log10_flop"].sel(accelerator=H100, wall=wall).values
        med, lo, hi = np.quantile(v, [0.5, 0.1, 0.9])
        assert rec[f"{wall}_wall_log10_flop"] == pytest.approx(med, abs=1e-12)
        assert rec[f"{wall}_wall_flop"] == pytest.approx(10**med, rel=1e-12)
        assert rec[f"{wall}_wall_interval_log10_flop"] == pytest.approx([lo, hi], abs=1e-12)
        assert rec[f"{wall}_wall_beyond_grid_fraction"] == 0.0
    assert rec["assumptions_source"] == "forecast" and rec["draws"] == 6
    assert rec["plan_at_wall"] is None and rec["precision"] == "bf16"
    # the A100 keeps its higher efficient scale over the same draws ([erdil2024])
    a100 = pw.walls_record(group, A100)
    assert a100["data_movement_wall_log10_flop"] > rec["data_movement_wall_log10_flop"]


def test_walls_beyond_the_grid_stay_in_the_quantiles():
    """A draw whose wall is beyond the search grid (+inf) counts in the quantiles and the
    shares; the table prints the open end as '>1e40', the median as a number."""
    v = np.array([28.0, 28.5, 29.0, 29.5, np.inf])
    med, lo, hi = pw.summary(v)
    assert med == 29.0 and math.isinf(hi) and lo == pytest.approx(28.2)
    record = {
        "data_movement_wall_log10_flop": med,
        "data_movement_wall_interval_log10_flop": [lo, None],
        "data_movement_wall_below_grid_fraction": 0.0,
        "note": None,
    }
    assert wall_cell(record, "data_movement") == "1.0e29 (1.6e28 – >1e40)"


def test_curve_record_band_contains_the_median(group):
    c = pw.curve_record(group, H100)
    lo, hi = np.asarray(c["utilization_lower"]), np.asarray(c["utilization_upper"])
    med = np.array([np.nan if u is None else u for u in c["utilization"]])
    ok = ~np.isnan(med)
    assert ok.sum() > 50
    assert np.all(lo[ok] <= med[ok] + 1e-12) and np.all(med[ok] <= hi[ok] + 1e-12)
    assert (
        c["data_movement_wall_log10_flop"]
        == pw.walls_record(group, H100)["data_movement_wall_log10_flop"]
    )
    # past the latency wall of every draw no plan finishes: the median is None there
    top = float(group["wall_log10_flop"].sel(accelerator=H100, wall="latency").max())
    x = np.asarray(c["log10_flop"])
    assert np.isnan(med[x > top + 0.15]).all()


@settings(max_examples=40, deadline=None)
@given(
    wall=st.floats(26.0, 33.0),
    slope=st.floats(0.3, 0.8),
    intercept=st.floats(25.0, 26.5),
)
def test_frozen_reading_with_one_wall_is_the_old_single_wall_reading(wall, slope, intercept):
    """Walls per draw reduce to the single-wall reading when every draw has the same wall: the
    same hit years as :func:`frozen_hit_years` on the same frontier lines."""
    years = np.arange(2024.0, 2046.0)
    slopes = np.full(5, slope) * np.linspace(0.9, 1.1, 5)
    frontier = intercept + slopes[:, None] * (years - 2024.0)
    ds = frozen_dataset_from_draws(
        {"data_movement": np.full(5, wall), "latency": np.full(5, wall + 3)},
        frontier,
        years,
        accelerator="X",
        scenario="baseline",
        precision="bf16",
        duration_days=90.0,
    )
    expected = frozen_hit_years(wall, slopes, np.full(5, intercept), years)
    np.testing.assert_allclose(ds["hit_year"].sel(wall="data_movement"), expected)
    assert float(ds["wall_flop"].sel(wall="data_movement")) == pytest.approx(10**wall)


def test_frozen_reading_pairs_each_draw_with_its_own_wall():
    """A draw with a later wall reaches it later; the stored wall is the draws' median with its
    interval (the per-accelerator table's numbers)."""
    years = np.arange(2024.0, 2046.0)
    walls = np.array([27.0, 28.0, 29.0, 30.0, 31.0])
    frontier = np.broadcast_to(26.0 + 0.5 * (years - 2024.0), (5, years.size))
    ds = frozen_dataset_from_draws(
        {"data_movement": walls, "latency": walls + 3},
        frontier,
        years,
        accelerator="X",
        scenario="baseline",
        precision="bf16",
        duration_days=90.0,
    )
    np.testing.assert_allclose(ds["hit_year"].sel(wall="data_movement"), 2024 + (walls - 26) / 0.5)
    med, lo, hi = quantiles_with_inf(walls, [0.5, 0.1, 0.9])
    assert float(ds["wall_flop"].sel(wall="data_movement")) == pytest.approx(10**med)
    assert float(ds["wall_flop_lower"].sel(wall="data_movement")) == pytest.approx(10**lo)
    assert float(ds["wall_flop_upper"].sel(wall="data_movement")) == pytest.approx(10**hi)


def test_thinning_keeps_evenly_spaced_draws():
    assert thin_indices(10, None).tolist() == list(range(10))
    assert thin_indices(10, 20).tolist() == list(range(10))
    kept = thin_indices(1000, 500)
    assert kept.size == 500 and kept[0] == 0 and kept[-1] == 999
    assert np.all(np.diff(kept) >= 1) and np.diff(kept).max() <= 3


def test_a_forecast_without_the_group_says_how_to_get_one(tmp_path):
    """A forecast published before the group existed: one error line naming the file and the
    two ways on (a new run, or the paper's assumptions)."""
    from forecast.store.schema import write_tree

    path = tmp_path / "forecast.nc"
    write_tree(xr.DataTree(xr.Dataset({"x": ("a", [1.0])})), path)
    with pytest.raises(pw.NoAcceleratorWallsError, match="--assumptions paper"):
        pw.load_group(path)
