"""Energy and money of a run (forecast.model.run_cost): reference numbers worked by hand from
[cottier2024]'s method, and the invariants of the price and trend laws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from forecast.model import run_cost


def test_energy_of_a_million_h100_hours():
    # 1e6 GPU-hours x 700 W x (10.2 kW / 8 / 700 W = 1.8214 server ratio, DGX H100) x 0.75 average
    # power x PUE 1.1 = 1e6 x 700 x 1.8214 x 0.75 x 1.1 W h = 1051.9 MWh
    ratio = 10.2e3 / 8 / 700
    got = run_cost.energy_mwh(1e6, 700.0, ratio, 0.75, 1.1)
    assert got == pytest.approx(1e6 * 10.2e3 / 8 * 0.75 * 1.1 / 1e6)
    assert got == pytest.approx(1051.9, abs=0.1)


def test_facility_power_of_a_100k_h100_cluster():
    # 1e5 GPUs x 700 W x 1.8214 x PUE 1.1 = 140.25 MW (at full server TDP)
    got = run_cost.facility_power_mw(1e5, 700.0, 10.2e3 / 8 / 700, 1.1)
    assert got == pytest.approx(140.25)


def test_money_is_hours_times_price():
    assert run_cost.money_usd(np.array([1e6, 2e6]), 2.5) == pytest.approx([2.5e6, 5e6])


def test_listed_range_is_the_90_percent_interval():
    got = run_cost.price_from_interval90(2.45, 12.29, np.array([0.05, 0.5, 0.95]))
    assert got == pytest.approx([2.45, np.sqrt(2.45 * 12.29), 12.29], rel=1e-9)
    # one listing: a point value
    assert run_cost.price_from_interval90(10.6, 10.6, np.array([0.01, 0.99])) == pytest.approx(10.6)


def test_trends_return_the_reference_at_its_year_and_fall_after():
    ref = dict(ref_peak_16bit_flops=9.89e14, ref_tdp_w=700.0, ref_year=2022.7)
    assert run_cost.trend_power_w(9.89e14, 2022.7, growth=1.4, **ref) == pytest.approx(700.0)
    # twice the FLOP/s two years later at 1.4x/yr efficiency: 700 x 2 / 1.96 W
    assert run_cost.trend_power_w(2 * 9.89e14, 2024.7, growth=1.4, **ref) == pytest.approx(
        700 * 2 / 1.96
    )
    price = dict(ref_peak_16bit_flops=9.89e14, ref_price_usd_per_hour=5.0, ref_price_year=2025.2)
    assert run_cost.trend_price_usd_per_hour(9.89e14, 2025.2, growth=1.4, **price) == pytest.approx(
        5.0
    )
    assert run_cost.trend_price_usd_per_hour(9.89e14, 2027.2, growth=1.4, **price) == pytest.approx(
        5.0 / 1.96
    )


@given(
    u=st.floats(0.001, 0.999),
    v=st.floats(0.001, 0.999),
    low=st.floats(0.1, 50),
    spread=st.floats(1.0, 20),
)
def test_price_grows_with_its_probability_and_stays_positive(u, v, low, spread):
    a, b = sorted((u, v))
    pa, pb = run_cost.price_from_interval90(low, low * spread, np.array([a, b]))
    assert 0 < pa <= pb * (1 + 1e-12)


@given(
    years=st.floats(0, 20),
    growth=st.floats(1.01, 3.0),
    flops=st.floats(1e13, 1e17),
)
def test_later_accelerators_draw_less_per_flop_and_cost_less_per_flop(years, growth, flops):
    now = run_cost.trend_power_w(flops, 2024.0, 1e15, 700.0, 2024.0, growth)
    later = run_cost.trend_power_w(flops, 2024.0 + years, 1e15, 700.0, 2024.0, growth)
    assert later <= now * (1 + 1e-12)
    p_now = run_cost.trend_price_usd_per_hour(flops, 2025.0, 1e15, 4.0, 2025.0, growth)
    p_later = run_cost.trend_price_usd_per_hour(flops, 2025.0 + years, 1e15, 4.0, 2025.0, growth)
    assert p_later <= p_now * (1 + 1e-12)
