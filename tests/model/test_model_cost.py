"""``forecast.model.cost`` (vectorized) against the full plan search (``forecast.model.search``).

Draws: :func:`support.validation.comparison_draws` (real accelerators with every rate scaled by
a lognormal factor, assumptions uniform in the prior ranges), as in ``test_model_fast.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.validation import comparison_draws

from forecast.model import Assumptions
from forecast.model.cost import (
    best_utilization,
    cost_multiplier,
    min_run_days,
    small_scale_max_utilization,
)
from forecast.model.params import SECONDS_PER_DAY
from forecast.model.search import find_walls, utilization_curve

N_DRAWS = 5


def _one(x, i):
    return type(x)(*(float(np.broadcast_to(v, (N_DRAWS,))[i]) for v in x))


@pytest.fixture(scope="module")
def draws():
    hw, a = comparison_draws(N_DRAWS, seed=20241104)
    lat = np.array(
        [find_walls(_one(hw, i), _one(a, i)).latency_wall_log10_flop for i in range(N_DRAWS)]
    )
    return hw, a, lat


def test_best_utilization_equals_full_search(draws):
    """Below the latency wall (1 dex and 0.3 dex) the shortlist finds the full search's best."""
    hw, a, lat = draws
    for offset in (1.0, 0.3):
        x = lat - offset
        fast = best_utilization(hw, a, x)
        for i in range(N_DRAWS):
            full = float(
                utilization_curve(_one(hw, i), _one(a, i), np.array([x[i]])).utilization[0]
            )
            assert full > 0
            assert fast[i] == pytest.approx(full, rel=1e-3), (i, offset)


def test_best_utilization_is_zero_past_the_latency_wall(draws):
    hw, a, lat = draws
    assert np.all(best_utilization(hw, a, lat + 0.1) == 0.0)


def test_small_scale_maximum_bounds_the_curve(draws):
    """The reference maximum is what the full search's curve reaches at small scale."""
    hw, a, _ = draws
    umax = small_scale_max_utilization(hw, a)
    for i in range(N_DRAWS):
        curve = utilization_curve(_one(hw, i), _one(a, i), np.arange(21.0, 28.01, 0.5))
        assert float(np.max(curve.utilization)) == pytest.approx(umax[i], rel=2e-3)


def test_min_run_days_inverts_the_latency_wall(draws):
    """At the latency wall of a D-day run, the shortest run is D days (within 1 %)."""
    hw, a, lat = draws
    days = min_run_days(hw, a, lat)
    want = np.broadcast_to(np.asarray(a.duration_s) / SECONDS_PER_DAY, (N_DRAWS,))
    np.testing.assert_allclose(days, want, rtol=0.01)


def test_min_run_days_brackets_full_search_feasibility(draws):
    """The full search finds a plan with 2 % more time than the shortest run, none with 2 % less."""
    hw, a, lat = draws
    x = lat - 0.4
    days = min_run_days(hw, a, x)
    for i in range(N_DRAWS):
        hw_i, a_i = _one(hw, i), _one(a, i)
        for factor, want in ((1.02, True), (0.98, False)):
            a_d = a_i._replace(duration_s=days[i] * factor * SECONDS_PER_DAY)
            got = bool(utilization_curve(hw_i, a_d, np.array([x[i]])).feasible[0])
            assert got is want, (i, factor)


def test_min_run_days_grows_with_compute(draws):
    hw, a, lat = draws
    lo, hi = min_run_days(hw, a, lat - 1.0), min_run_days(hw, a, lat)
    assert np.all(hi > lo)


def test_cost_multiplier_conventions():
    got = cost_multiplier(np.array([0.6, 0.6, 0.6]), np.array([0.3, 0.0, 0.7]))
    np.testing.assert_array_equal(got, [2.0, np.inf, 1.0])


def test_scalar_inputs():
    a = Assumptions()
    days = min_run_days(_one(comparison_draws(N_DRAWS, seed=1)[0], 0), a, 27.0)
    assert np.ndim(days) == 0 and 0 < float(days) < float(a.duration_s) / SECONDS_PER_DAY


def test_wall_search_returns_the_same_small_scale_maximum():
    """The propagation takes the small-scale maximum from ``fast_walls`` instead of computing it
    again: the two are the same plans and budgets, bit for bit, and the walls are unchanged."""
    from support.validation import comparison_draws

    from forecast.model.cost import small_scale_max_utilization
    from forecast.model.fast import fast_walls

    hw, a = comparison_draws(96, 5)
    dm, lat, small = fast_walls(hw, a, small_scale=True)
    np.testing.assert_array_equal(small, small_scale_max_utilization(hw, a))
    dm_only, lat_only = fast_walls(hw, a)
    np.testing.assert_array_equal(dm, dm_only)
    np.testing.assert_array_equal(lat, lat_only)
    assert np.all((small > 0) & (small <= 1))
