"""The realistic regime's fast path (forecast.model.realistic_fast).

Two separate claims, tested separately:

* the budgets it evaluates read the walls as the full search reads its curve: on the same shapes
  (the shortlist), the fast path's walls are the full search's within its bisection resolution;
* the shortlist holds the shapes that win: the H100's walls on the shortlist are the full grid's
  (``tests/model/test_realistic.py`` compares them on the full grid; the rate over random draws is
  in BENCHMARKS.md and docs/validation.md).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.hardware import MORE_IS_BETTER

from forecast.model import Assumptions, Hardware
from forecast.model.realistic import LaunchGrid, launch_grid
from forecast.model.realistic_fast import (
    COST_CARRY,
    fast_realistic_cost,
    fast_realistic_curves,
    fast_realistic_utilization,
    fast_realistic_walls,
    shortlist_grid,
)
from forecast.model.search import find_walls

H100 = Hardware(9.89e14, 3.35e12, 8e10, 4.5e11, 8.0, 5e10)
GB200 = Hardware(2.5e15, 8.0e12, 1.86e11, 9.0e11, 72.0, 5e10)
TPU_V5P = Hardware(4.59e14, 2.765e12, 9.5e10, 6.0e11, 8960.0, 6.25e9)
RESOLUTION_DEX = 0.003  # the full search's refinement grid (0.002) plus the bisection's (0.001)


def test_the_shortlist_is_launchable_shapes_of_the_full_grid():
    short, full = shortlist_grid(), launch_grid()
    rows = set(zip(*(np.asarray(x, dtype=float) for x in full), strict=True))
    mine = list(zip(*(np.asarray(x, dtype=float) for x in short), strict=True))
    assert len(set(mine)) == len(mine)  # no duplicates
    assert all(r in rows for r in mine)
    # it keeps every kind of option the full grid has
    assert set(np.unique(short.cp)) > {1.0}
    assert set(np.unique(short.virtual_stages)) > {1.0}
    assert set(np.unique(short.recompute)) == {0.0, 1.0}
    assert short.two_d.any() and (~short.two_d).any()
    assert 50 < short.tp.size < full.tp.size // 20


CASES = {
    "H100": (H100, Assumptions()),
    "GB200, shallow models, FP8": (
        GB200._replace(flops=2 * GB200.flops),
        Assumptions(layer_exponent=0.21, bytes_per_number=1.0),
    ),
    "TPU v5p, 180 days, small batch": (
        TPU_V5P,
        Assumptions(duration_s=180 * 86_400.0, batch_tokens_ref=2e7),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fast_path_reads_the_walls_as_the_full_search(case):
    """Same shapes (the shortlist), same walls: the full search's 513 budgets against the fast
    path's ~130."""
    hw, a = CASES[case]
    g = shortlist_grid()
    full = find_walls(hw, a, regime="realistic", grid=g)
    dm, lat, umax = fast_realistic_walls(hw, a, grid=g)
    # the maximum is a plateau a few 1e-7 high (the small-scale plans all compute-bound): the
    # fast path may take its value a few grid points away from the full search's
    assert float(umax) == pytest.approx(full.max_utilization, rel=1e-5)
    assert float(umax) <= full.max_utilization
    assert abs(float(dm) - full.data_movement_wall_log10_flop) <= RESOLUTION_DEX
    assert abs(float(lat) - full.latency_wall_log10_flop) <= RESOLUTION_DEX
    # numbers, not just agreement: the walls lie where the realistic regime puts them
    assert 26.0 < float(dm) < float(lat) < 33.0


def test_the_screen_keeps_the_walls_of_every_shape_searched():
    """The per-budget screen (all nine microbatch candidates only for the 64 best-ranked shapes)
    gives the walls of the unscreened path, and a maximum that is an exact plan's (never above)."""
    cases = list(CASES.values())
    hw = Hardware(*(np.array([h[i] for h, _ in cases]) for i in range(len(Hardware._fields))))
    a = Assumptions(*(np.array([x[i] for _, x in cases]) for i in range(len(Assumptions._fields))))
    screened = np.stack(fast_realistic_walls(hw, a))
    every = np.stack(fast_realistic_walls(hw, a, screen_keep=0))
    np.testing.assert_allclose(screened[:2], every[:2], atol=1e-9)
    assert (screened[2] <= every[2]).all()
    np.testing.assert_allclose(screened[2], every[2], rtol=1e-6)


@pytest.mark.parametrize("chunk", [3, 9])
def test_the_scan_that_stops_past_the_latency_wall_gives_the_whole_scans_walls(chunk):
    """The scan in chunks from the bottom, stopping at the latency wall's bracket (``_scan``),
    reads the same walls and small-scale maximum as all 81 budgets at once: the cases above, a
    one-day run (latency wall 10^27.4: the scan stops after a third of its budgets) and a
    ten-year run on a part with near-zero latencies and vast bandwidths (latency wall 10^36.9:
    nearly every chunk) (benchmarks/realistic_scan.py: 1,000 of 1,000 conditions identical)."""
    fast = GB200._replace(
        scaleout_bandwidth=1e13, scaleup_bandwidth=1e14, hbm_bandwidth=1e15, hbm_capacity=1e13
    )
    tiny = dict(kernel_latency_s=1e-9, allreduce_base_latency_s=1e-9)
    tiny |= dict(intra_domain_hop_s=1e-10, inter_domain_hop_s=1e-10)
    cases = [*CASES.values()]
    cases.append((H100, Assumptions(duration_s=86_400.0)))
    cases.append((fast, Assumptions(duration_s=3650 * 86_400.0, **tiny)))
    hw = Hardware(*(np.array([h[i] for h, _ in cases]) for i in range(len(Hardware._fields))))
    a = Assumptions(*(np.array([x[i] for _, x in cases]) for i in range(len(Assumptions._fields))))
    whole = np.stack(fast_realistic_walls(hw, a, scan_chunk=0))
    chunked = np.stack(fast_realistic_walls(hw, a, scan_chunk=chunk))
    np.testing.assert_array_equal(chunked, whole)
    assert np.isfinite(whole[:2]).all()
    assert whole[1, -2] < 27.5 and whole[1, -1] > 36.5  # the two ends the scan stops at


def test_the_utilization_curve_is_the_costs_utilization():
    """``fast_realistic_utilization`` (the stored utilization curves) is the utilization of
    ``fast_realistic_cost`` without its shortest-run bisection: the same numbers, 0 past the
    latency wall, and the small-scale maximum's level where the curve peaks."""
    budgets = np.array([[22.0, 25.0, 28.0, 31.0, 34.0, 38.0]])
    hw = Hardware(*(np.full((1, 1), v) for v in H100))
    util = fast_realistic_utilization(hw, Assumptions(), budgets)
    cost_util, _ = fast_realistic_cost(hw, Assumptions(), budgets)
    np.testing.assert_array_equal(util, cost_util)
    assert util.shape == budgets.shape
    assert util[0, -1] == 0.0 and util[0, 1] > 0.3  # infeasible at 1e38; near u_max at 1e25
    _, lat, u_max = fast_realistic_walls(H100, Assumptions())
    assert np.all(util[budgets > lat] == 0.0) and util.max() <= u_max + 1e-12


def test_draws_are_independent_of_their_neighbours():
    """A draw's walls do not depend on which other draws share its call (chunking, padding)."""
    hw = Hardware(*(np.array([v, 2 * v, v]) for v in H100))
    a = Assumptions(layer_exponent=np.array([0.27, 0.27, 0.3]))
    together = np.stack(fast_realistic_walls(hw, a))
    for i in range(3):
        alone = fast_realistic_walls(
            Hardware(*(x[i] for x in hw)), Assumptions(layer_exponent=a.layer_exponent[i])
        )
        np.testing.assert_array_equal(together[:, i], np.stack(alone))


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    base=st.sampled_from([H100, GB200, TPU_V5P]),
    scale=st.lists(st.floats(0.5, 2.0), min_size=6, max_size=6),
    factor=st.floats(1.0, 4.0),
    layer_exponent=st.floats(0.21, 0.33),
    batch_exponent=st.floats(0.31, 0.41),
)
def test_fast_walls_never_fall_with_better_memory_network_or_time(
    base, scale, factor, layer_exponent, batch_exponent
):
    """As the full search (tests/model/test_model_properties.py): more HBM bandwidth or capacity,
    network bandwidth, a larger domain or a longer run never lower either wall.  One call
    evaluates the base and the six improvements."""
    hw0 = Hardware(
        *(v * s if i != 4 else v for i, (v, s) in enumerate(zip(base, scale, strict=True)))
    )
    a0 = Assumptions(layer_exponent=layer_exponent, batch_exponent=batch_exponent)
    hws, assumptions = [hw0], [a0]
    for field in MORE_IS_BETTER:
        if field in Hardware._fields:
            hws.append(hw0._replace(**{field: getattr(hw0, field) * factor}))
            assumptions.append(a0)
        else:
            hws.append(hw0)
            assumptions.append(a0._replace(**{field: getattr(a0, field) * factor}))
    hw = Hardware(*(np.array([h[i] for h in hws]) for i in range(len(Hardware._fields))))
    a = Assumptions(*(np.array([x[i] for x in assumptions]) for i in range(len(a0))))
    dm, lat, _ = fast_realistic_walls(hw, a)
    for k, field in enumerate(MORE_IS_BETTER, start=1):
        assert dm[k] >= dm[0] - 1e-3 and lat[k] >= lat[0] - 1e-3, (field, dm, lat)


def _assumptions(**fields) -> Assumptions:
    return Assumptions(**{k: float(v) for k, v in fields.items()})


# Conditions on which an earlier form of the carried search (below) placed a wall differently
# from the whole grid (benchmarks/realistic_carry.py, seed 31): each names the mechanism it
# exposed and that the search now handles.
CARRY_CASES = {
    # the utilization curve is jagged at its maximum (0.491, 0.495, 0.483, 0.518, 0.467 at
    # 10^24-10^25): the maximum lies between two anchors that are not the best
    "jagged maximum (MI300X, FLOP/s x40)": (
        Hardware(
            3.962975720433208e16,
            5782944355121.094,
            506165977659.1632,
            250136316913.06882,
            144.0,
            96778155555.24898,
        ),
        _assumptions(
            duration_s=10610875.637939358,
            max_utilization=0.7421598724004221,
            layer_exponent=0.27153902187244766,
            batch_tokens_ref=17270828.25138977,
            batch_exponent=0.43676222780597634,
            scaleout_multiplier=0.7426957591494466,
            kernel_latency_s=6.341427485769253e-06,
            allreduce_base_latency_s=9.582601534051315e-06,
            intra_domain_hop_s=8.455236647692337e-07,
            inter_domain_hop_s=7.046030539743614e-06,
            sequence_length=32768.0,
        ),
    ),
    # the best plan near the maximum is none of the four winners of the budgets either side
    "refinement off the neighbours' winners (TPU v4, FP8)": (
        Hardware(
            9688166220788588.0,
            2122598356470.8867,
            35561204147.988174,
            457332711040.69183,
            8.0,
            60793236043.63856,
        ),
        _assumptions(
            duration_s=8747507.051057242,
            max_utilization=0.6215314960744788,
            bytes_per_number=1.0,
            layer_exponent=0.2897434088946824,
            batch_tokens_ref=133929534.28101759,
            batch_exponent=0.4336406032518175,
            scaleout_multiplier=1.125949705782609,
            kernel_latency_s=3.5792011894107787e-06,
            allreduce_base_latency_s=5.4085706862207325e-06,
            intra_domain_hop_s=4.772268252547704e-07,
            inter_domain_hop_s=3.976890210456421e-06,
            sequence_length=16384.0,
        ),
    ),
    # feasibility has holes inside the latency bracket: a bisection on carried shapes whose
    # last infeasible end the whole grid confirms can still stop early (a frontier draw of 2031)
    "holes in the latency bracket (frontier draw, 2031)": (
        Hardware(
            2.517509838332504e16,
            24921896531060.82,
            1102658416621.3198,
            2900080321946.075,
            712.298530285007,
            142399827797.96814,
        ),
        _assumptions(
            layers_ref=107.42211237249371,
            layer_exponent=0.2664920059748906,
            batch_tokens_ref=22703996.77212938,
            batch_exponent=0.42955351465369357,
            collective_efficiency=0.831882189913253,
            scaleout_multiplier=1.5987642536573445,
            kernel_latency_s=4.961091876173763e-06,
            allreduce_base_latency_s=5.416129721692512e-06,
            intra_domain_hop_s=7.970988866467259e-07,
            inter_domain_hop_s=6.7329722253378375e-06,
            sequence_length=8192.0,
        ),
    ),
}


def _stacked(cases):
    hw = Hardware(*(np.array([h[i] for h, _ in cases]) for i in range(len(Hardware._fields))))
    a = Assumptions(*(np.array([x[i] for _, x in cases]) for i in range(len(Assumptions._fields))))
    return hw, a


def test_carried_stages_give_the_whole_grids_walls():
    """The search that evaluates the whole grid only at every second scan budget and confirms
    every decision that places a wall (``carry``) gives the walls of the search on the whole grid
    at every stage (``carry=0``), bit for bit: the cases above, where each mechanism once failed,
    and the scan's two extreme ends (benchmarks/realistic_carry.py: 2,000 of 2,000 held-out
    conditions identical; measured, not guaranteed: ``_unless``).  The small-scale maximum is
    read on carried shapes and may differ (1.3 % of those conditions, by up to 1.5 %, either way:
    each is an exact plan's)."""
    fast = GB200._replace(
        scaleout_bandwidth=1e13, scaleup_bandwidth=1e14, hbm_bandwidth=1e15, hbm_capacity=1e13
    )
    tiny = dict(kernel_latency_s=1e-9, allreduce_base_latency_s=1e-9)
    tiny |= dict(intra_domain_hop_s=1e-10, inter_domain_hop_s=1e-10)
    cases = [*CASES.values(), *CARRY_CASES.values()]
    cases.append((H100, Assumptions(duration_s=86_400.0)))  # the scan stops after a third
    cases.append((fast, Assumptions(duration_s=3650 * 86_400.0, **tiny)))  # it runs to ~10^37
    cases.append((H100._replace(hbm_capacity=1e6), Assumptions()))  # nothing fits anywhere
    hw, a = _stacked(cases)
    carried = np.stack(fast_realistic_walls(hw, a))
    whole = np.stack(fast_realistic_walls(hw, a, carry=0))
    np.testing.assert_array_equal(carried[:2], whole[:2])
    np.testing.assert_allclose(carried[2], whole[2], rtol=2e-3)
    # the walls themselves, so that neither path can agree with the other by being trivial
    assert np.isfinite(whole[:2, :-1]).all() and (whole[0, :-1] < whole[1, :-1]).all()
    assert whole[1, -2] > 36.5 and np.isneginf(whole[:2, -1]).all() and whole[2, -1] == 0.0
    jagged = list(CARRY_CASES).index("jagged maximum (MI300X, FLOP/s x40)") + len(CASES)
    assert whole[0, jagged] == pytest.approx(25.2496, abs=1e-4)


def test_the_shortest_run_on_carried_shapes_is_the_whole_grids():
    """``fast_realistic_cost``: the shortest run's last bisection steps on the best shapes at the
    bracket's feasible end (on them alone with one check at the end where they hold every shape
    feasible there, or with every 'infeasible' checked on the whole grid) give the whole grid's
    shortest run to the bit."""
    cases = [*CASES.values(), *CARRY_CASES.values()]
    hw, a = _stacked(cases)
    budgets = np.array([24.0, 27.0, 29.5, 31.0, 32.5])[:, None]
    hw = Hardware(*(np.broadcast_to(v, (budgets.size, v.size)) for v in hw))
    a = Assumptions(*(np.broadcast_to(v, (budgets.size, v.size)) for v in a))
    x = np.broadcast_to(budgets, hw.flops.shape)
    util0, days0 = fast_realistic_cost(hw, a, x, carry=0)
    # the default, and 2 shapes: where more than 2 are feasible at the bracket's end, every step
    # they call infeasible is checked on the whole grid
    for carry in (COST_CARRY, 2):
        util, days = fast_realistic_cost(hw, a, x, carry=carry)
        np.testing.assert_array_equal(days, days0)
        np.testing.assert_array_equal(util, util0)
    finite = np.isfinite(days) & (days > 0)
    assert finite.sum() >= days.size // 2  # most of them have a shortest run to compare
    assert np.isinf(days[-1]).any() or (days[-1] > days[0]).all()  # larger runs take longer


def test_the_shortest_run_falls_back_where_the_carried_shapes_miss_a_plan(monkeypatch):
    """Where the carried steps and the whole grid's part (here: carried shapes that never fit, so
    every carried step says infeasible), the check at the last infeasible end falls back to the
    checked path: the whole grid's shortest run to the bit.  And the range's ends, evaluated only
    where the first steps never left them: 0 days where a thousandth of a day suffices, +inf
    where nothing fits."""
    import forecast.model.realistic_fast as rf

    hw = Hardware(*(np.full(4, v) for v in H100))
    hw = hw._replace(hbm_capacity=np.array([8e10, 8e10, 8e10, 1e6]))  # the last: nothing fits
    x = np.array([27.0, 30.5, 16.0, 27.0])
    util0, days0 = fast_realistic_cost(hw, Assumptions(), x, carry=0)
    assert np.isfinite(days0[:2]).all() and (days0[:2] > 0).all()
    assert days0[2] == 0.0 and np.isinf(days0[3])
    util, days = fast_realistic_cost(hw, Assumptions(), x)  # the default path's ends
    np.testing.assert_array_equal(days, days0)
    # a program traced anew with carried shapes that never fit (jit's cache keeps the other)
    never = jax.jit(rf._cost_chunk.__wrapped__, static_argnames=("carry", "check_every_step"))
    monkeypatch.setattr(rf, "_subset_best", lambda *_: (jnp.float64(0.0), jnp.bool_(False)))
    g = LaunchGrid(*(jnp.asarray(f) for f in rf.shortlist_grid()))
    util, log10_days = rf._by_draw(
        functools.partial(never, carry=COST_CARRY), hw, Assumptions(), (x,), g
    )
    with np.errstate(over="ignore"):
        days = np.where(np.isneginf(log10_days), 0.0, 10.0**log10_days)
    np.testing.assert_array_equal(days, days0)
    np.testing.assert_array_equal(util, util0)


def test_the_curves_are_the_utilization_at_every_budget():
    """``fast_realistic_curves`` (the stored utilization curves: the grid's constants once a
    draw) gives ``fast_realistic_utilization`` at every (draw, budget), to the last bit or two
    (XLA compiles the budgets side by side differently), past the latency wall included."""
    budgets = np.array([21.0, 24.5, 27.0, 29.3, 31.0, 33.5, 38.0])
    hw = Hardware(*(np.array([v, 3.0 * v, v]) for v in H100))
    a = Assumptions(
        sequence_length=np.array([8192.0, 8192.0, 32768.0]),
        batch_exponent=np.array([0.35, 0.4, 0.3]),
    )
    curves = fast_realistic_curves(hw, a, budgets)
    assert curves.shape == (3, budgets.size)
    one_by_one = fast_realistic_utilization(
        Hardware(*(np.asarray(v)[:, None] for v in hw)),
        Assumptions(*(np.asarray(v)[..., None] if np.ndim(v) == 1 else v for v in a)),
        budgets[None, :],
    )
    np.testing.assert_allclose(curves, one_by_one, rtol=1e-13, atol=0.0)
    assert (curves[:, -1] == 0.0).all() and (curves[:, :3] > 0.2).all()  # 1e38: infeasible
    assert not np.allclose(curves[0], curves[1])  # each draw its own hardware
