"""Reference values of the data-movement model, each with its source.

Sources: [P] Erdil & Schneider-Joseph, "Data movement limits to frontier model training",
arXiv 2411.01137 (2024) and its Epoch blog version; [R] Sevilla et al., "Can AI scaling continue
through 2030?" (Epoch AI, 2024).  Hardware figures come from ``data/hardware.csv``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from support.validation import H100_SXM5

from forecast.data.hardware import get_accelerator, load_hardware
from forecast.model import Assumptions, Hardware, assumptions_with
from forecast.model.latency import latency_wall_flop, latency_wall_params
from forecast.model.plan import best_plan, plan_terms, step_time
from forecast.model.scaling import (
    critical_batch_tokens,
    flop_for_params,
    layers_for_params,
    model_shape,
    params_for_flop,
)
from forecast.model.search import _curve, find_walls, utilization_curve

# Per-direction SI figures of data/hardware.csv (checked against the table below).
H100 = H100_SXM5
A100 = Hardware(3.12e14, 2.039e12, 8e10, 3e11, 8.0, 2.5e10)


def _walls(hw: Hardware, a: Assumptions | None = None) -> tuple[float, float]:
    w = find_walls(hw, a)
    return w.data_movement_wall_log10_flop, w.latency_wall_log10_flop


@pytest.fixture(scope="module")
def h100_walls():
    return find_walls(H100)


@pytest.fixture(scope="module")
def a100_walls():
    return find_walls(A100)


# ----------------------------------------------------------------------------- hardware table


@pytest.mark.parametrize(
    ("name", "expected"), [("H100 SXM5", H100), ("A100 SXM4 80GB", A100)], ids=["H100", "A100"]
)
def test_reference_hardware_matches_table(name, expected):
    acc = get_accelerator(load_hardware(), name)
    got = (
        acc.flops_16bit,
        acc.hbm_bandwidth,
        acc.hbm_capacity,
        acc.scaleup_bandwidth,
        acc.scaleup_domain_size,
        acc.scaleout_bandwidth,
    )
    assert got == pytest.approx(tuple(expected), rel=1e-12)


# ----------------------------------------------------------------------------- headline anchors


def test_h100_baseline_walls_match_paper(h100_walls):
    """[P]: utilization starts to fall near 1e28 (abstract; blog 2e28), latency wall near 1e31
    (abstract; blog 2e31) for a 3-month run on H100s.  Accept a factor ~3 either side."""
    dm = h100_walls.data_movement_wall_log10_flop
    lat = h100_walls.latency_wall_log10_flop
    assert math.log10(3e27) <= dm <= math.log10(6e28), dm
    assert math.log10(3e30) <= lat <= math.log10(6e31), lat
    assert dm < lat
    # The wall is read at 80 % of the small-scale maximum ([S]); the plan there sits at it.
    # (0.7 less the optimizer step and the last gradient bucket, < 0.1 % at small scale)
    assert h100_walls.max_utilization == pytest.approx(0.7, rel=1e-3)
    assert h100_walls.plan_at_wall["utilization"] == pytest.approx(0.8 * 0.7, rel=0.02)


def test_a100_data_movement_wall_above_h100(h100_walls, a100_walls):
    """[P] blog: H100's efficient scale is lower than A100's (FLOP/s grew faster than memory and
    network bandwidth).  Nothing in the model forces this; it follows from the table's numbers."""
    assert a100_walls.data_movement_wall_log10_flop > h100_walls.data_movement_wall_log10_flop


@pytest.mark.parametrize(
    "override",
    [{"batch_exponent": 0.45}],
    ids=["batch_exponent_0.45"],
)
def test_faster_batch_scaling_pushes_both_walls_out(h100_walls, override):
    """[P]: more aggressive batch-size scaling pushes both limits out (0.36 -> 0.45)."""
    dm, lat = _walls(H100, assumptions_with(**override))
    assert dm > h100_walls.data_movement_wall_log10_flop + 0.05
    assert lat > h100_walls.latency_wall_log10_flop + 0.05


@pytest.mark.parametrize(
    ("override", "min_latency_shift_dex"),
    [({"layer_exponent": 0.21}, 0.2), ({"layers_ref": 59.9}, 0.3)],
    ids=["layer_exponent_0.21", "layers_ref_halved"],
)
def test_shallower_models_push_the_latency_wall_out(h100_walls, override, min_latency_shift_dex):
    """[P]: shorter and fatter models push the latency limit out (fewer serial layers per step).

    The latency wall, at ~4e14 parameters, moves +0.37 and +0.55 dex (measured).
    """
    _, lat = _walls(H100, assumptions_with(**override))
    assert lat > h100_walls.latency_wall_log10_flop + min_latency_shift_dex


def test_half_depth_models_push_the_data_movement_wall_out(h100_walls):
    """[P]'s direction, restored by issue 22's fix (b).  At the H100 wall (346 layers, tp 128 2D,
    pp 256) the stage that runs the last backward pass waits for its FP32 gradient all-reduce,
    whose volume is the stage's share N / (pp tp), and pp <= L.  A half-depth model (190 layers)
    can only take pp = 128, but its wider layers let the 2D mesh grow to tp 256 at the same
    tensor traffic per FLOP, so the stage's share stays the same and the thinner pipeline costs
    less: 5.1e28 -> 1.0e29 FLOP (+0.30 dex, measured with the 2D axes oriented, review finding 2).
    Before fix (b) 2D meshes paid 1.5x their traffic, tp could not grow, and half depth pulled the
    wall in (-0.08 dex, issue 11).  The milder exponent 0.21 (299 layers at the wall) keeps pp 256
    and also lets tp grow to 256: +0.36 dex.  Deeper models (exponent 0.33, 438 layers) keep
    tp 128 2D and pp 256 and leave the wall where it is (docs/validation.md section 5)."""
    half = assumptions_with(layers_ref=59.9)
    w = find_walls(H100, half)
    assert w.data_movement_wall_log10_flop > h100_walls.data_movement_wall_log10_flop + 0.15
    shape = model_shape(w.data_movement_wall_log10_flop, half)
    assert w.plan_at_wall["pipeline_parallel"] <= float(shape.layers)
    assert w.plan_at_wall["tensor_parallel"] > h100_walls.plan_at_wall["tensor_parallel"]
    milder = find_walls(H100, assumptions_with(layer_exponent=0.21))
    assert milder.data_movement_wall_log10_flop > h100_walls.data_movement_wall_log10_flop + 0.15
    assert milder.plan_at_wall["tensor_parallel"] > h100_walls.plan_at_wall["tensor_parallel"]
    deeper = find_walls(H100, assumptions_with(layer_exponent=0.33))
    moved = deeper.data_movement_wall_log10_flop - h100_walls.data_movement_wall_log10_flop
    assert abs(moved) < 0.05


def test_closed_form_latency_wall_matches_sevilla():
    """[R]: t_L = 120 us/layer, B = 60M tokens, T = 9 months (274 days) -> ~700T params and
    ~6e31 FLOP; the closed form gives 6.7e14 params and 5.4e31 FLOP."""
    t = 274 * 86_400.0
    fixed_batch = {"batch_exponent": 0.0}  # [R]'s form; the default grows B as the plan model
    n = float(latency_wall_params(120e-6, 60e6, t, **fixed_batch))
    c = float(latency_wall_flop(120e-6, 60e6, t, **fixed_batch))
    assert n == pytest.approx(6.7e14, rel=0.02)
    assert c == pytest.approx(5.4e31, rel=0.02)
    # Consistency: the run exactly fills T at the wall, T = t_L L D / B.
    layers = 0.088 * n**0.27
    assert 120e-6 * layers * 20.0 * n / 60e6 == pytest.approx(t, rel=1e-9)
    assert c == pytest.approx(120.0 * n**2, rel=1e-12)


# ----------------------------------------------------------------------------- scaling relations


@pytest.mark.parametrize("exponent", [0.21, 0.27, 0.33])
def test_depth_law_pivots_at_todays_models(exponent):
    """The layer exponent's range ([R]: 0.21-0.33) changes depth beyond today's models only.

    References: Chinchilla 70B has 80 layers (Hoffmann et al. 2022, Table 4); Llama 3.1 405B has
    126 (Meta 2024, The Llama 3 Herd of Models, Table 3).  [R]'s literal form 0.088 N^0.21 would
    give Chinchilla 17 layers.
    """
    assert float(layers_for_params(4.05e11, layer_exponent=exponent)) == pytest.approx(
        126, rel=0.06
    )
    assert float(layers_for_params(7e10, layer_exponent=exponent)) == pytest.approx(80, rel=0.2)
    # At the central exponent the pivoted law is [R]'s fit itself.
    if exponent == 0.27:
        for n in (1e9, 1e13, 1e15):
            assert float(layers_for_params(n)) == pytest.approx(0.088 * n**0.27, rel=1e-12)
    # Beyond the pivot a larger exponent means a deeper model, below it a shallower one.
    deeper = exponent + 0.01
    assert layers_for_params(1e14, layer_exponent=deeper) > layers_for_params(
        1e14, layer_exponent=exponent
    )
    assert layers_for_params(1e10, layer_exponent=deeper) < layers_for_params(
        1e10, layer_exponent=exponent
    )


def test_chinchilla_compute_relation():
    """C = 6 N D with D = 20 N, so C = 120 N^2 [R]."""
    for n in (1e9, 4.05e11, 1e14):
        assert float(flop_for_params(n)) == pytest.approx(120.0 * n**2, rel=1e-12)
        assert float(params_for_flop(120.0 * n**2)) == pytest.approx(n, rel=1e-12)


def test_model_shape_is_consistent():
    a = Assumptions()
    for log10_c in (24.0, 27.5, 31.0):
        s = model_shape(log10_c, a)
        n = float(s.params)
        assert 120.0 * n**2 == pytest.approx(10.0**log10_c, rel=1e-12)
        assert float(s.tokens) == pytest.approx(20.0 * n, rel=1e-12)
        assert float(s.layers) == pytest.approx(0.088 * n**0.27, rel=1e-12)
        assert float(s.layers) == pytest.approx(float(layers_for_params(n)), rel=1e-12)
        assert 12.0 * float(s.layers) * float(s.d_model) ** 2 == pytest.approx(n, rel=1e-12)
        b = 60e6 * (n / 5.6e11) ** 0.36
        assert float(s.batch_tokens) == pytest.approx(b, rel=1e-12)
        assert float(s.batch_tokens) == pytest.approx(float(critical_batch_tokens(n)), rel=1e-12)
        assert float(s.steps) == pytest.approx(20.0 * n / b, rel=1e-12)


# ----------------------------------------------------------------------------- plan physics

# A small run (1e22 FLOP, N ~ 9e9) on H100, one accelerator per replica: tp = pp = m = 1.
SMALL = 22.0


def _hand_terms(hw: Hardware, a: Assumptions, log10_c: float, m: float = 1.0):
    """Per-layer slopes of a tp = pp = 1 plan with m microbatches, derived by hand from [E] and
    [R] (docs/sources.md)."""
    n = math.sqrt(10.0**log10_c / 120.0)
    layers = 0.088 * n**0.27
    d = math.sqrt(n / (12.0 * layers))
    n_layer = n / layers
    p = a.bytes_per_number
    hbm = hw.hbm_bandwidth * 0.85  # streaming kernels reach ~85 % of peak HBM bandwidth
    arith = 6.0 * n_layer / (hw.flops * a.max_utilization)  # s per token
    # per microbatch: weights read twice (forward, activation gradient) at p bytes, the FP32
    # gradient buffer read and written once (issue 22 fix a): 2 p + 2 x 4 bytes per parameter
    hbm0 = (2.0 * p + 2.0 * 4.0) * n_layer / hbm
    hbm1 = p * d * (12.0 + 60.0) / hbm  # activations, s per token
    # DP gradient all-reduce in FP32 (4 bytes): 8 replicas per NVLink domain reduce first, then
    # the NIC; one bucket per layer, each paying a tree all-reduce latency over B / m ranks at
    # most (8 per domain: log2(8) NVLink hops and log2(B / (8 m)) network hops, both ways).
    w_up = hw.scaleup_bandwidth * 0.8
    w_out = hw.scaleout_bandwidth * 0.8
    batch = 60e6 * (n / 5.6e11) ** 0.36
    bucket_latency = 6.8e-6 + 2.0 * (3.0 * 0.6e-6 + math.log2(batch / (8.0 * m)) * 5.0e-6)
    dp_sync = 4.0 * n * 2.0 * (7.0 / 8.0 / w_up + 1.0 / (8.0 * w_out)) + layers * bucket_latency
    latency = 8.0 * a.kernel_latency_s  # no tensor parallelism: kernels only
    # Optimizer step: read + write 12 B of state, read the 4 B gradient, write the 2 B weight,
    # for this replica's 1/dp = m b / B share of the parameters.
    optimizer_per_token = (2.0 * 12.0 + 4.0 + p) * n * m / (batch * hbm)
    return n, layers, arith, hbm0, hbm1, dp_sync, latency, optimizer_per_token


def test_plan_terms_match_hand_derivation():
    a = Assumptions()
    n, layers, arith, hbm0, hbm1, dp_sync, latency, opt = _hand_terms(H100, a, SMALL)
    t = plan_terms(H100, a, model_shape(SMALL, a), 1.0, 1.0, 1.0, False)
    assert float(t["arith"]) == pytest.approx(arith, rel=1e-12)
    assert float(t["hbm0"]) == pytest.approx(hbm0, rel=1e-12)
    assert float(t["hbm1"]) == pytest.approx(hbm1, rel=1e-12)
    assert float(t["comm"]) == 0.0  # tp = 1: no tensor traffic
    assert float(t["latency"]) == pytest.approx(latency, rel=1e-12)
    assert float(t["slot_overhead"]) == 0.0  # no pipeline
    assert float(t["dp_sync"]) == pytest.approx(dp_sync, rel=1e-12)
    assert float(t["optimizer_per_token"]) == pytest.approx(opt, rel=1e-12)
    assert float(t["layers_per_stage"]) == pytest.approx(layers, rel=1e-12)
    # [R]'s B_MIN = H p / (2 W): for H100 at BF16 ~295 tokens ([R] quotes ~330 at FP8
    # with FP8 FLOP/s and p = 1, which is the same ratio).
    b_min = H100.flops * a.bytes_per_number / (2.0 * H100.hbm_bandwidth)
    assert b_min == pytest.approx(295.2, rel=1e-3)


def _hand_step(layers, layer, dp_sync, opt_per_token, b, m):
    """1F1B without a pipeline: m slots, then the exposed part of the per-layer-bucket sync
    (the last backward pass is 2/3 of the last slot), then the optimizer step."""
    window = (2.0 / 3.0) * layers * layer
    exposed = max(dp_sync / layers, dp_sync - window * (1.0 - 1.0 / layers))
    return m * layers * layer + exposed + opt_per_token * b


def test_small_plan_approaches_max_utilization_with_gradient_accumulation():
    """tp = pp = 1 at 1e22 FLOP: memory allows thousands of tokens per microbatch, far above the
    HBM balance point, so every layer is pure arithmetic.  With one microbatch the FP32 gradient
    all-reduce (0.4 s, 9e9 parameters) is mostly exposed; accumulating 256 microbatches amortizes
    it and utilization approaches max_utilization."""
    a = Assumptions()
    for m, lo, hi in ((1.0, 0.2, 0.4), (256.0, 0.69, 0.7)):
        n, layers, arith, hbm0, hbm1, dp_sync, latency, opt = _hand_terms(H100, a, SMALL, m)
        res = best_plan(H100, a, model_shape(SMALL, a), 1.0, 1.0, m, False)
        b = float(res.microbatch_tokens)
        assert bool(res.feasible)
        assert arith * b > hbm0 + hbm1 * b
        assert arith * b > latency
        step = _hand_step(layers, arith * b, dp_sync, opt, b, m)
        assert float(res.step_time_s) == pytest.approx(step, rel=1e-12)
        util = a.max_utilization * m * layers * arith * b / step
        assert float(res.utilization) == pytest.approx(util, rel=1e-12)
        assert lo < util < hi
        assert float(res.n_accelerators) == pytest.approx(float(res.data_parallel), rel=1e-12)


def test_hbm_balance_microbatch():
    """Arithmetic time equals HBM time at b* = hbm0 / (arith - hbm1): with 2 p + 2 g = 12 bytes
    of weight traffic per parameter, b* = 12 (N/L) / W_eff / (6 (N/L) / (H u) - 72 p d / W_eff)."""
    a = Assumptions()
    n, layers, arith, hbm0, hbm1, dp_sync, latency, opt = _hand_terms(H100, a, SMALL)
    b_star = hbm0 / (arith - hbm1)
    # Close to B_MIN scaled by the weight traffic, u_max and the HBM efficiency:
    # 12 H u / (6 W 0.85) ~ 486 tokens (plus the activation traffic).
    assert 480.0 < b_star < 560.0
    t = plan_terms(H100, a, model_shape(SMALL, a), 1.0, 1.0, 1.0, False)
    layer = arith * b_star
    assert hbm0 + hbm1 * b_star == pytest.approx(layer, rel=1e-12)
    assert float(step_time(t, b_star)) == pytest.approx(
        _hand_step(layers, layer, dp_sync, opt, b_star, 1.0), rel=1e-12
    )
    # Just below b* the weight reads bind: the layer time exceeds the arithmetic time.
    b = 0.5 * b_star
    assert float(step_time(t, b)) == pytest.approx(
        _hand_step(layers, hbm0 + hbm1 * b, dp_sync, opt, b, 1.0), rel=1e-12
    )


def test_infeasible_plans_report_zero_utilization():
    a = Assumptions()
    # 1e27 FLOP (N ~ 2.9e12): weights and gradients of an unsharded replica need ~11 TB.
    big = model_shape(27.0, a)
    res = best_plan(H100, a, big, 1.0, 1.0, 1.0, False)
    assert not bool(res.feasible)
    assert float(res.utilization) == 0.0
    # More pipeline stages than layers is not a plan.
    small = model_shape(SMALL, a)
    res = best_plan(H100, a, small, 1.0, 1024.0, 1024.0, False)
    assert float(small.layers) < 1024.0
    assert not bool(res.feasible)
    assert float(res.utilization) == 0.0
    # A one-day run of 1e31 FLOP is past the latency wall for every plan.
    res = best_plan(
        H100, assumptions_with(duration_days=1.0), model_shape(31.0, a), 64.0, 64.0, 64.0, True
    )
    assert not bool(res.feasible)
    assert float(res.utilization) == 0.0


def test_curves_of_any_length_share_one_compilation_and_agree():
    """The full search runs in chunks of 64 budgets: curves of 513, 51 and 1 budget (as
    find_walls asks for) compile once, and every budget is the same as in the long curve."""
    grid = np.round(np.arange(20.0, 45.6001, 0.05), 4)  # 513 budgets
    full = utilization_curve(H100, Assumptions(), grid)
    shapes = _curve._cache_size()
    part = utilization_curve(H100, Assumptions(), grid[37:88])
    one = utilization_curve(H100, Assumptions(), grid[200])
    assert _curve._cache_size() == shapes  # no new compilation
    assert full.utilization.shape == (513,) and one.utilization.shape == (1,)
    for field in ("utilization", "feasible", "tp", "pp", "m", "data_parallel"):
        np.testing.assert_array_equal(getattr(part, field), getattr(full, field)[37:88])
        np.testing.assert_array_equal(getattr(one, field), getattr(full, field)[200:201])
    assert utilization_curve(H100, Assumptions(), np.array([])).utilization.shape == (0,)
    with pytest.raises(ValueError, match="one-dimensional"):
        utilization_curve(H100, Assumptions(), np.ones((2, 3)))


def test_utilization_curve_small_scale_maximum_is_max_utilization():
    """At small scale the best H100 plan is compute-bound: utilization ~ u_max = 0.7 (less the
    optimizer step and the last gradient bucket, < 0.1 %)."""
    curve = utilization_curve(H100, Assumptions(), np.arange(21.0, 26.01, 0.5))
    u = np.asarray(curve.utilization)
    assert float(u.max()) == pytest.approx(0.7, rel=1e-3)
    assert np.all(u <= 0.7 + 1e-9)
    assert bool(np.all(np.asarray(curve.feasible)))


# ----------------------------------------------------------------------------- mixture of experts


def test_moe_with_one_expert_is_the_dense_model():
    dense = find_walls(H100, Assumptions())
    one = find_walls(H100, Assumptions(moe_experts=1.0, moe_active_experts=1.0))
    assert one.data_movement_wall_log10_flop == pytest.approx(
        dense.data_movement_wall_log10_flop, abs=1e-12
    )
    assert one.latency_wall_log10_flop == pytest.approx(dense.latency_wall_log10_flop, abs=1e-12)


def test_moe_moves_the_walls_apart():
    """64 experts, top-2, same active compute: each accelerator holds attention plus one expert,
    so fewer weight bytes per FLOP (data-movement wall out), but every layer adds four
    all-to-alls on the serial path (latency wall in)."""
    dense = find_walls(H100, Assumptions())
    moe = find_walls(H100, Assumptions(moe_experts=64.0, moe_active_experts=2.0))
    assert moe.data_movement_wall_log10_flop > dense.data_movement_wall_log10_flop + 0.3
    assert moe.latency_wall_log10_flop < dense.latency_wall_log10_flop


def test_moe_needs_one_data_parallel_rank_per_expert():
    a = Assumptions(moe_experts=64.0, moe_active_experts=2.0)
    shape = model_shape(25.0, a)
    res = best_plan(H100, a, shape, 8.0, 8.0, 32.0, False)
    assert bool(res.feasible)
    assert float(res.data_parallel) >= 64.0 - 1e-9
