"""The closed-form step time of a plan against a discrete-event 1F1B simulator (tests/support/pipeline_sim.py).

The closed form (``forecast.model.plan.step_time``) charges ``(m + pp - 1)`` pipeline slots plus
the part of the data-parallel gradient all-reduce that the last backward pass of stage 0 cannot
hide (per-layer buckets), plus the optimizer step.  The simulator plays the 1F1B schedule event
by event; on equal stages the two must agree exactly, and on unequal stages the closed form at
the slowest stage's costs must bound the simulated step from above (the schedule is a max-plus
system: no op finishes later when every op is at most as long).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.pipeline_sim import StageCosts, one_f_one_b_order, random_stages, simulate_step

from forecast.model.plan import exposed_gradient_sync, step_time


def closed_form_terms(pp: int, m: int, c: StageCosts) -> dict:
    """Plan terms whose step time at b = 1 is the closed form for equal stages of costs ``c``.

    The model's backward pass is twice its forward pass (4 of the 6 FLOP per parameter and
    token), so the slot is ``forward + backward = 3 forward`` and the layer time is slot / L_s.
    """
    assert c.backward_s == pytest.approx(2.0 * c.forward_s)
    layer = (c.forward_s + c.backward_s) / c.layers
    zero = np.float64(0.0)
    return {
        "m": np.float64(m),
        "pp": np.float64(pp),
        "arith": np.float64(layer),  # s per token at b = 1
        "hbm0": zero,
        "hbm1": zero,
        "comm": zero,
        "latency": zero,
        "layers_per_stage": np.float64(c.layers),
        "slot_overhead": zero,
        "grad_buckets": np.float64(c.layers),
        "dp_sync": np.float64(c.sync_s + c.layers * c.bucket_latency_s),
        "optimizer_per_token": np.float64(c.optimizer_s),
    }


def test_one_f_one_b_order_is_complete_and_ordered():
    for pp in range(1, 6):
        for m in range(1, 9):
            for s in range(pp):
                order = one_f_one_b_order(s, pp, m)
                assert sorted(order) == sorted(
                    [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
                )
                # a backward never precedes its own forward
                assert all(order.index(("F", i)) < order.index(("B", i)) for i in range(m))
                # at most pp - s microbatches in flight (the 1F1B memory bound)
                in_flight = peak = 0
                for kind, _ in order:
                    in_flight += 1 if kind == "F" else -1
                    peak = max(peak, in_flight)
                assert peak <= pp - s


def test_pipeline_without_sync_is_m_plus_pp_minus_1_slots():
    for pp in range(1, 6):
        for m in range(1, 9):
            c = StageCosts(1.0, 2.0, 1, 0.0)
            assert simulate_step([c] * pp, m)["step_s"] == pytest.approx(3.0 * (m + pp - 1))


def test_closed_form_matches_simulator_on_equal_stages():
    """Random pp <= 5, m <= 8, 1-5 layers per stage, forward costs, sync, bucket latency and
    optimizer times: the closed form equals the simulated step to rounding."""
    rng = np.random.default_rng(11)
    for _ in range(300):
        pp, m = int(rng.integers(1, 6)), int(rng.integers(1, 9))
        stages = random_stages(rng, pp, uniform=True)
        sim = simulate_step(stages, m)["step_s"]
        closed = float(step_time(closed_form_terms(pp, m, stages[0]), 1.0))
        assert closed == pytest.approx(sim, rel=1e-12, abs=1e-12), (pp, m, stages[0])


def test_closed_form_bounds_simulator_on_unequal_stages():
    """Each stage its own random costs: the closed form at the slowest costs is an upper bound,
    and it is tight when the slowest stage's costs are given to every stage."""
    rng = np.random.default_rng(12)
    for _ in range(200):
        pp, m = int(rng.integers(1, 6)), int(rng.integers(1, 9))
        stages = random_stages(rng, pp, uniform=False)
        f = max(max(c.forward_s for c in stages), max(c.backward_s for c in stages) / 2.0)
        worst = StageCosts(
            f,
            2.0 * f,
            stages[0].layers,
            max(c.sync_s for c in stages),
            max(c.bucket_latency_s for c in stages),
            max(c.optimizer_s for c in stages),
        )
        sim = simulate_step(stages, m)["step_s"]
        closed = float(step_time(closed_form_terms(pp, m, worst), 1.0))
        assert sim <= closed * (1.0 + 1e-12), (pp, m, stages)
        assert simulate_step([worst] * pp, m)["step_s"] == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize(
    ("dp_sync", "expected"), [(0.0, 7.0), (2.0, 9.0), (11.0 / 3.0, 7.0 + 11.0 / 3.0), (5.0, 12.0)]
)
def test_gradient_sync_does_not_hide_in_the_bubble(dp_sync, expected):
    """Issue 11: arithmetic 1 s per slot, one layer per stage, m = pp = 4.  The old closed form,
    max((m + pp - 1) slot, (m - 2/3) slot + sync), gave 7.0 / 7.0 / 7.003 / 8.33: a sync up to
    the bubble's length was free.  Stage 0's only bucket is ready when its last backward pass
    ends, which ends the pipeline: the whole sync is exposed (the simulator agrees)."""
    t = closed_form_terms(4, 4, StageCosts(1.0 / 3.0, 2.0 / 3.0, 1, dp_sync))
    assert float(step_time(t, 1.0)) == pytest.approx(expected, rel=1e-12)
    sim = simulate_step([StageCosts(1.0 / 3.0, 2.0 / 3.0, 1, dp_sync)] * 4, 4)["step_s"]
    assert sim == pytest.approx(expected, rel=1e-12)


def test_per_layer_buckets_overlap_only_the_last_backward():
    """With L_s layers per stage, the sync hides behind the last backward pass of stage 0 up to
    window (1 - 1/L_s), and never more: the exposed time is max(sync / L_s, sync - that)."""
    window = 2.0  # backward of the last microbatch, 4 layers
    for sync in (0.0, 0.5, 1.0, 1.5, 2.0, 4.0):
        exposed = float(exposed_gradient_sync(sync, 4.0, window))
        assert exposed == pytest.approx(max(sync / 4.0, sync - 1.5))
        stages = [StageCosts(1.0, window, 4, sync)] * 3
        sim = simulate_step(stages, 6)
        assert sim["step_s"] - sim["pipeline_s"] == pytest.approx(exposed, abs=1e-12)
