"""Propagation in both plan regimes (forecast.inference.propagate, issue 22).

The realistic regime propagates the same draws through the realistic fast path
(forecast.model.realistic_fast), with the sequence length of the posterior's sequence-length law at
each year; the paper regime ignores the sequence length.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.reference import SCENARIOS, SEED, load_fit

from forecast.inference.draws import posterior_draws
from forecast.inference.propagate import (
    first_hits,
    interpolate_years,
    propagate,
    scenario_inputs,
    sequence_log10,
)
from forecast.jobs import forecast_job
from forecast.stats.trends import project

YEARS = np.array([2026.0, 2030.0, 2034.0])
SAMPLES = 6


@pytest.fixture(scope="module")
def draws():
    samples = {k: v[::50][:SAMPLES] for k, v in posterior_draws(load_fit()).items()}
    prior_set = next(iter(forecast_job.load_inputs(scenarios=SCENARIOS).scenarios.values()))
    inputs = scenario_inputs(samples, prior_set, SAMPLES, SEED)
    return samples, inputs


def _run(samples, inputs, regime, sequence_shift_dex=0.0, cost=True):
    trends = project(samples, YEARS)
    seq = sequence_log10(samples, YEARS)
    trends["sequence_length"] = seq["sequence_length"] + sequence_shift_dex
    return propagate(trends, inputs, YEARS, regime=regime, cost=cost)


@pytest.fixture(scope="module")
def both(draws):
    samples, inputs = draws
    return {r: _run(samples, inputs, r) for r in ("paper", "realistic")}


def test_the_sequence_law_is_the_posteriors(draws):
    samples, _ = draws
    seq = sequence_log10(samples, YEARS)["sequence_length"]
    assert seq.shape == (SAMPLES, YEARS.size)
    s0 = np.asarray(samples["log10_sequence_2024"])
    g = np.asarray(samples["sequence_growth_dex_per_year"])
    np.testing.assert_allclose(seq[:, 1], s0 + 6.0 * g)
    # published context lengths: 2k-32k tokens around today
    assert np.all((seq[:, 0] > 3.0) & (seq[:, 0] < 5.0))
    assert sequence_log10({}, YEARS) == {}


PAPER_BESIDE = {"paper_wall_log10_flop", "paper_hit_year", "paper_hit_log10_flop", "paper_hit"}


def test_both_regimes_give_every_forecast_variable(both):
    paper, real = both["paper"], both["realistic"]
    assert set(real) == set(paper) | PAPER_BESIDE
    for key in ("wall_log10_flop", "hit_year", "frontier_utilization", "cost_multiplier"):
        assert real[key].shape == paper[key].shape
    u = real["frontier_utilization"]
    assert np.all((u >= 0.0) & (u <= 1.0))
    assert np.all(real["cost_multiplier"] >= 1.0)
    assert np.all(real["min_run_days"] >= 0.0)
    walls = real["wall_log10_flop"]
    # both walls in the range the realistic regime puts them (docs/validation.md section 10)
    assert np.all((walls > 25.0) & (walls < 36.0))
    assert np.all(walls[..., 0] <= walls[..., 1])  # utilization falls before plans run out
    # the regimes differ: launchable plans are not the paper's relaxation
    assert np.max(np.abs(walls - paper["wall_log10_flop"])) > 0.05


def test_the_realistic_walls_are_the_fast_paths_on_the_frontier_accelerator(draws, both):
    from forecast.inference.propagate import assumptions_from_inputs, frontier_hardware
    from forecast.model.realistic_fast import fast_realistic_walls

    samples, inputs = draws
    trends = project(samples, YEARS)
    hw = frontier_hardware(trends, inputs, YEARS)
    a = assumptions_from_inputs(inputs, YEARS)
    a = a._replace(sequence_length=10.0 ** sequence_log10(samples, YEARS)["sequence_length"])
    dm, lat, _ = fast_realistic_walls(hw, a)
    np.testing.assert_allclose(both["realistic"]["wall_log10_flop"][..., 0], dm)
    np.testing.assert_allclose(both["realistic"]["wall_log10_flop"][..., 1], lat)


def test_longer_sequences_move_only_the_realistic_walls(draws, both):
    samples, inputs = draws
    longer = {
        r: _run(samples, inputs, r, sequence_shift_dex=np.log10(4.0), cost=False) for r in both
    }
    np.testing.assert_array_equal(
        longer["paper"]["wall_log10_flop"], both["paper"]["wall_log10_flop"]
    )
    moved = np.abs(longer["realistic"]["wall_log10_flop"] - both["realistic"]["wall_log10_flop"])
    assert np.max(moved) > 0.01


def test_an_unknown_regime_is_refused(draws):
    samples, inputs = draws
    with pytest.raises(ValueError, match="regime"):
        _run(samples, inputs, "ideal", cost=False)


def test_a_realistic_propagation_holds_the_papers_bound_on_the_same_draws(both):
    """The realistic forecast carries the paper regime's walls and hit years beside its own
    (``paper_*``, issue 22): exactly what a paper propagation of the same draws gives, and
    absent from a paper propagation (nothing to compare with)."""
    paper, real = both["paper"], both["realistic"]
    assert not PAPER_BESIDE & set(paper)
    for key in ("wall_log10_flop", "hit_year", "hit_log10_flop", "hit"):
        np.testing.assert_array_equal(real[f"paper_{key}"], paper[key], err_msg=key)
    # ... and the forecast's own variables are the realistic ones, not the paper's
    assert np.max(np.abs(real["wall_log10_flop"] - real["paper_wall_log10_flop"])) > 0.05


def test_the_forecasts_walls_are_searched_at_every_year():
    """`wallcast run`'s propagation (`propagate_scenario`'s default) searches the walls at every
    year of its grid, none interpolated: a draw's walls move 0.1-0.4 dex from one year to the
    next and not smoothly, so walls interpolated between every 2nd year put the 2025 walls'
    percentiles 0.45-0.61 dex off (benchmarks/year_step.py, docs/validation.md section 15). The
    odd year's walls and costs equal that year propagated alone, on the same draws (the published
    file's attribute: tests/inference/test_forecast.py)."""
    fit = load_fit()
    prior_set = next(iter(forecast_job.load_inputs(scenarios=SCENARIOS).scenarios.values()))
    years = np.array([2024.0, 2025.0, 2026.0])
    kw = {"seed": SEED, "propagate_draws": 8, "regime": "realistic"}
    whole, _ = forecast_job.propagate_scenario(fit, prior_set, years=years, **kw)
    assert whole.attrs["wall_year_step"] == 1
    alone, _ = forecast_job.propagate_scenario(fit, prior_set, years=[2025.0], **kw)
    for name in ("wall_flop", "paper_wall_flop", "frontier_utilization", "min_run_days"):
        np.testing.assert_allclose(
            whole[name].sel(year=2025).values,
            alone[name].isel(year=0).values,
            rtol=1e-7,
            err_msg=name,
        )
    # what step 2 would publish at 2025 (interpolated from 2024 and 2026, as propagate does) is
    # not the search's: the check above can fail
    walls = np.log10(whole["wall_flop"].transpose(..., "year").values)
    step2 = interpolate_years(years, years[[0, 2]], walls[..., [0, 2]])[..., 1]
    moved = np.abs(step2 - walls[..., 1])
    assert np.nanmax(np.where(np.isfinite(moved), moved, np.nan)) > 0.05


ALL_YEARS = np.arange(2024.0, 2046.0)


@pytest.mark.parametrize("regime", ["paper", "realistic"])
def test_the_first_hits_are_the_propagations_from_fewer_wall_years(draws, regime):
    """`first_hits` (the sensitivity analysis's model, issue 23) gives `propagate`'s hit years,
    FLOP and flags bit for bit, searching a draw's walls only until its frontier has reached
    both: fewer wall-years where the walls are hit early, every one where they are never hit,
    only the first where they are hit at once."""
    samples, inputs = draws
    trends = project(samples, ALL_YEARS)
    if regime == "realistic":
        trends["sequence_length"] = sequence_log10(samples, ALL_YEARS)["sequence_length"]

    def compare(shift_dex: float, step: int):
        shifted = dict(trends, frontier_compute=trends["frontier_compute"] + shift_dex)
        full = propagate(
            shifted, inputs, ALL_YEARS, step, cost=False, regime=regime, paper_beside=False
        )
        hits = first_hits(shifted, inputs, ALL_YEARS, step, regime=regime)
        for key in ("hit_year", "hit_log10_flop", "hit"):
            np.testing.assert_array_equal(hits[key], full[key], err_msg=key)
        return full, int(hits["wall_years_searched"]), int(hits["wall_years_total"])

    wall_years = 7  # 2024, 2028, ..., 2044 and 2045
    full, searched, total = compare(0.0, 4)
    assert total == SAMPLES * wall_years
    assert full["hit"].any() and SAMPLES <= searched < total  # hit by 2036 here: 2040-45 left out
    never, searched, total = compare(-12.0, 4)  # the frontier 12 dex lower: never reached ...
    assert not never["hit"][..., 1].any() and searched == total
    # ... except a realistic data-movement wall below the grid (0 FLOP: no launchable plan once
    # the fitted sequences grow long, docs/validation.md section 15), which any run reaches
    assert regime == "realistic" or not never["hit"].any()
    at_once, searched, _ = compare(12.0, 4)  # 12 dex higher: reached in the first year
    assert at_once["hit"].all() and np.all(at_once["hit_year"] == 2024.0)
    assert searched == SAMPLES
    if regime == "realistic":  # every year searched (propagate interpolates nothing)
        full, searched, total = compare(0.0, 1)
        assert total == SAMPLES * ALL_YEARS.size and searched < total
