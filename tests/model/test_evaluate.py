"""A given plan, evaluated (forecast.model.evaluate): the same physics as the plan search, with
whole sequences, whole layers per stage, context parallelism, recomputation and interleaving.

Numbers are derived by hand from the plan model's terms (tests/model/test_model.py) and from
Korthikanti et al. 2022 (activation memory), Narayanan et al. 2021 (interleaved 1F1B) and the
Llama 3 paper (context parallelism by all-gather of K/V), docs/sources.md.
"""

from __future__ import annotations

import math

import pytest

from forecast.model import Assumptions, Hardware, assumptions_with
from forecast.model.evaluate import (
    ParallelPlan,
    RunModel,
    evaluate_plan,
    run_model_for_flop,
)
from forecast.model.plan import best_plan, plan_terms, step_time
from forecast.model.scaling import ModelShape

H100 = Hardware(9.89e14, 3.35e12, 8e10, 4.5e11, 8.0, 5e10)
A = Assumptions()

# A model with whole numbers everywhere: 128 layers of d = 16,384 (128 heads of 128, 8 K/V heads),
# N = 12 L d^2 = 4.12e11, trained on 20 N tokens with a batch of 2,048 x 8,192 tokens.
MODEL = RunModel(
    params=12.0 * 128 * 16384.0**2,
    layers=128,
    d_model=16384.0,
    heads=128,
    kv_heads=8,
    tokens=20.0 * 12.0 * 128 * 16384.0**2,
    global_batch_tokens=2048 * 8192.0,
)
LONG = assumptions_with(duration_days=400.0)  # a deadline this plan meets


def _shape(model: RunModel, batch: float) -> ModelShape:
    return ModelShape(
        model.params, model.tokens, float(model.layers), model.d_model, batch, model.tokens / batch
    )


def test_a_plan_with_whole_numbers_is_the_plan_model():
    """tp 8, pp 16 (8 layers each), dp 128, 16 microbatches of one 8k sequence: the continuous
    plan model at b = 8,192, m = 16 gives the same step time and utilization."""
    plan = ParallelPlan(tp=8, pp=16, dp=128, sequence_length=8192)
    ev = evaluate_plan(H100, LONG, MODEL, plan)
    assert ev.microbatches == 16
    assert ev.global_batch_tokens == 2048 * 8192
    assert ev.layers_per_stage == 8
    assert ev.accelerators == 16384
    shape = _shape(MODEL, 2048 * 8192.0)
    t = plan_terms(H100, LONG, shape, 8.0, 16.0, 16.0, False)
    assert ev.step_time_s == pytest.approx(float(step_time(t, 8192.0)), rel=1e-12)
    util = 6.0 * MODEL.params * 8192.0 * 16 / (16 * 8 * 9.89e14 * ev.step_time_s)
    assert ev.utilization == pytest.approx(util, rel=1e-12)
    # Both see the memory limit: 16 microbatches of 8k tokens in flight need 92.6 GB, so the
    # relaxed search (any microbatch size) takes fewer tokens per microbatch.
    assert not ev.feasible and "GB per accelerator" in ev.reasons[0]
    relaxed = best_plan(H100, LONG, shape, 8.0, 16.0, 16.0, False)
    assert float(relaxed.microbatch_tokens) < 8192.0
    # With 141 GB (H200-class) the plan fits, and the relaxed search does at least as well.
    big = H100._replace(hbm_capacity=1.41e11)
    ev = evaluate_plan(big, LONG, MODEL, plan)
    assert ev.feasible, ev.reasons
    relaxed = best_plan(big, LONG, shape, 8.0, 16.0, 16.0, False)
    assert float(relaxed.utilization) >= ev.utilization - 1e-12


def test_the_step_is_the_sum_of_its_parts():
    """step = m L_s layer + bubble + exposed sync + optimizer, and the bubble is (pp - 1) / v
    stage slots plus a kernel and a network hop per chunk slot (Narayanan et al. 2021)."""
    for v in (1, 2, 4):
        plan = ParallelPlan(tp=8, pp=16, dp=128, sequence_length=8192, virtual_stages=v)
        ev = evaluate_plan(H100, LONG, MODEL, plan)
        b = ev.step_breakdown_s
        m, lps = ev.microbatches, ev.layers_per_stage
        busy = m * lps * b["layer_time"]
        total = busy + b["bubble"] + b["data_parallel"] + b["optimizer"]
        assert total == pytest.approx(ev.step_time_s, rel=1e-12)
        overhead = (m * v + 15) * (A.kernel_latency_s + A.inter_domain_hop_s)
        assert b["bubble"] == pytest.approx(15 / v * lps * b["layer_time"] + overhead, rel=1e-9)


def test_interleaving_shrinks_the_bubble_and_multiplies_the_sends():
    plain = evaluate_plan(H100, LONG, MODEL, ParallelPlan(8, 16, 128, 8192))
    inter = evaluate_plan(H100, LONG, MODEL, ParallelPlan(8, 16, 128, 8192, virtual_stages=4))
    assert inter.step_breakdown_s["pipeline"] == pytest.approx(
        4.0 * plain.step_breakdown_s["pipeline"], rel=1e-12
    )
    assert inter.step_breakdown_s["bubble"] < 0.3 * plain.step_breakdown_s["bubble"]
    assert inter.utilization > plain.utilization
    # more microbatches in flight: (1 + (pp - 1) / (pp v)) times the activations
    assert inter.memory_bytes["activations"] == pytest.approx(
        plain.memory_bytes["activations"] * (1.0 + 15.0 / 64.0), rel=1e-12
    )


def test_full_recompute_trades_arithmetic_for_memory():
    """Korthikanti et al. 2022: selective recomputation keeps 34 s b h / t bytes per layer, full
    recomputation only the layer input (2 s b h / t) plus one layer's activations while it is
    recomputed; the extra forward pass costs 8 N instead of 6 N FLOP per token."""
    plain = evaluate_plan(H100, LONG, MODEL, ParallelPlan(8, 16, 128, 8192))
    full = evaluate_plan(H100, LONG, MODEL, ParallelPlan(8, 16, 128, 8192, recompute=True))
    assert full.step_breakdown_s["compute"] == pytest.approx(
        plain.step_breakdown_s["compute"] * 8.0 / 6.0, rel=1e-12
    )
    per_layer = 16384.0 * 8192.0 / 8.0  # d b / tp at p = 2 (34 or 2 bytes per token and d)
    in_flight = 16
    assert plain.memory_bytes["activations"] == pytest.approx(
        in_flight * 8 * 34.0 * per_layer, rel=1e-12
    )
    # the recomputed layer's full activations are held once, for one microbatch at a time
    assert full.memory_bytes["activations"] == pytest.approx(
        (in_flight * 8 * 2.0 + 34.0) * per_layer, rel=1e-12
    )
    assert full.utilization < plain.utilization


def test_context_parallel_kv_traffic_by_hand():
    """cp = 2 inside an H100 domain beside tp = 4: per layer the forward all-gathers K and V
    (2 x 8 heads x 128 x p bytes per token, heads over tp) and the backward reduce-scatters their
    gradients, each rank moving (cp - 1) / cp of the gathered cp b tokens at 80 % of NVLink."""
    plan = ParallelPlan(tp=4, pp=16, dp=128, sequence_length=8192, cp=2)
    ev = evaluate_plan(H100, LONG, MODEL, plan)
    b = 8192 / 2
    gathered = 2 * b * 2.0 * (8 * 128) * 2.0 / 4  # cp b tokens x K,V x d_kv x p / tp
    per_layer = 2.0 * gathered * (1.0 / 2.0) / (0.8 * 4.5e11)  # forward + backward
    assert ev.step_breakdown_s["context"] == pytest.approx(
        ev.microbatches * ev.layers_per_stage * per_layer, rel=1e-12
    )
    # and two one-pass collective latencies per layer over 2 ranks of the domain
    no_cp = evaluate_plan(H100, LONG, MODEL, plan._replace(cp=1))
    extra = ev.step_breakdown_s["latency"] - no_cp.step_breakdown_s["latency"]
    per_layer_latency = 2.0 * (6.8e-6 + 1.0 * 0.6e-6)
    assert extra == pytest.approx(
        ev.microbatches * ev.layers_per_stage * per_layer_latency, rel=1e-9
    )
    assert ev.accelerators == 4 * 16 * 128 * 2


def test_tensor_parallelism_wider_than_the_kv_heads_replicates_them():
    """tp = 32 over 8 K/V heads: each K/V head lives on 4 ranks, so each rank gathers
    d_kv / 8 per token over the context-parallel group, 4x the d_kv / 32 of sharded heads; at
    tp = 8 (one head per rank) the two counts agree."""
    b = 8192 / 2
    for tp, heads_per_rank in ((8, 1.0), (32, 1.0), (4, 2.0)):
        plan = ParallelPlan(tp=tp, pp=16, dp=32, sequence_length=8192, cp=2)
        ev = evaluate_plan(H100, LONG, MODEL, plan)
        gathered = 2 * b * 2.0 * (heads_per_rank * 128) * 2.0  # cp b x K,V x width x p
        r = min(8.0 / tp, 2.0)  # cp ranks inside the 8-wide NVLink domain beside tp
        w_up, w_out = 0.8 * 4.5e11, 0.8 * 5e10
        # both cp ranks in one domain: NVLink; else (tp fills the domain) the NIC
        per_byte = (1.0 / 2.0) / (w_up if r >= 2.0 else w_out)
        per_layer = 2.0 * gathered * per_byte
        assert ev.step_breakdown_s["context"] == pytest.approx(
            ev.microbatches * ev.layers_per_stage * per_layer, rel=1e-12
        ), tp


@pytest.mark.parametrize(
    ("plan", "reason"),
    [
        (
            ParallelPlan(tp=256, pp=16, dp=8, sequence_length=8192),
            "exceeds the 128 attention heads",
        ),
        (ParallelPlan(tp=8, pp=256, dp=8, sequence_length=8192), "exceed the model's 128 layers"),
        (ParallelPlan(tp=8, pp=32, dp=8, sequence_length=8192, virtual_stages=8), "layers"),
        (ParallelPlan(tp=8, pp=1, dp=128, sequence_length=8192), "GB per accelerator"),
        (ParallelPlan(tp=8, pp=16, dp=2, sequence_length=8192), "longer than the 400-day"),
        (ParallelPlan(tp=8, pp=16, dp=8, sequence_length=8, cp=16), "under one token"),
        (
            ParallelPlan(
                tp=8, pp=16, dp=128, sequence_length=8192, virtual_stages=2, microbatches=8
            ),
            "a multiple of pp",
        ),
    ],
)
def test_infeasible_plans_say_why(plan, reason):
    ev = evaluate_plan(H100, LONG, MODEL, plan)
    assert not ev.feasible
    assert any(reason in r for r in ev.reasons), ev.reasons


def test_the_compute_optimal_model_has_whole_layers_and_heads():
    model = run_model_for_flop(25.58, A)  # 3.8e25 FLOP: N = 5.6e11
    assert isinstance(model.layers, int) and isinstance(model.heads, int)
    assert model.params == pytest.approx(math.sqrt(10**25.58 / 120.0), rel=1e-12)
    assert 12.0 * model.layers * model.d_model**2 == pytest.approx(model.params, rel=1e-12)
    assert model.heads == round(model.d_model / 128)
    assert model.global_batch_tokens == pytest.approx(60e6 * (model.params / 5.6e11) ** 0.36)


def test_a_degree_below_one_is_a_reason_not_a_crash():
    ev = evaluate_plan(H100, LONG, MODEL, ParallelPlan(tp=8, pp=16, dp=0, sequence_length=8192))
    assert not ev.feasible and ev.reasons == ("dp must be at least 1",)
    assert ev.utilization == 0.0


# ----------------------------------------------------------------------------- expert parallelism

MOE = assumptions_with(duration_days=400.0, moe_experts=8.0, moe_active_experts=2.0)
MOE_MODEL = run_model_for_flop(25.0, MOE)  # N = 2.9e11 active, (4 + 8 x 2) L d^2
MOE_PLAN = ParallelPlan(tp=8, pp=8, dp=64, sequence_length=8192)


def test_expert_parallel_of_one_expert_per_rank_is_the_default():
    """ep = experts (one expert per rank) is the layout every search assumes: bit for bit."""
    default = evaluate_plan(H100, MOE, MOE_MODEL, MOE_PLAN)
    explicit = evaluate_plan(H100, MOE, MOE_MODEL, MOE_PLAN._replace(ep=8))
    assert explicit.step_time_s == default.step_time_s
    assert explicit.memory_bytes == default.memory_bytes
    assert explicit.step_breakdown_s == default.step_breakdown_s


def test_fewer_expert_parallel_ranks_hold_more_experts_and_send_less():
    """By hand, tp = 8 filling the 8-GPU domain, so the expert group crosses the NIC only:
    a rank holds attention (4 d^2) and E / ep experts (8 d^2 each) per layer, so its weights and
    gradients grow by (4 + 8 x 8/2) / (4 + 8) = 3 from ep = 8 to ep = 2; the all-to-all moves
    4 k p / tp bytes per token and d_model, (ep - 1) / ep of it over the NIC (GShard's
    dispatch and combine, forward and backward), and none with ep = 1 (every expert local)."""
    evs = {ep: evaluate_plan(H100, MOE, MOE_MODEL, MOE_PLAN._replace(ep=ep)) for ep in (1, 2, 8)}
    w = {ep: ev.memory_bytes["weights_and_gradients"] for ep, ev in evs.items()}
    assert w[2] / w[8] == pytest.approx(36.0 / 12.0, rel=1e-12)
    assert w[1] / w[8] == pytest.approx(68.0 / 12.0, rel=1e-12)
    ev8 = evs[8]
    b = 8192.0
    busy = ev8.microbatches * ev8.layers_per_stage  # layer slots per step, the same plan
    w_out = H100.scaleout_bandwidth * MOE.collective_efficiency
    per_token_and_d = 4.0 * 2.0 * 2.0 / 8.0 / w_out  # 4 k p / tp over the NIC's bandwidth
    for ep in (2, 8):
        extra = evs[ep].step_breakdown_s["tensor"] - evs[1].step_breakdown_s["tensor"]
        expected = busy * b * MOE_MODEL.d_model * per_token_and_d * (ep - 1) / ep
        assert extra == pytest.approx(expected, rel=1e-9), ep
    # optimizer state: attention (4 d^2) sharded over the dp ranks, each expert (8 d^2) over the
    # dp / ep ranks that hold it: (4 + 8 E) d^2 / dp per rank whatever ep is, 12 bytes a
    # parameter, for the m b / B share of a replica (Megatron-LM's distributed optimizer)
    shard = 12.0 * (4.0 + 8.0 * 8.0) * MOE_MODEL.d_model**2 * ev8.layers_per_stage / 8
    expected = shard * ev8.microbatches * b / ev8.global_batch_tokens
    for ev in evs.values():
        assert ev.memory_bytes["optimizer"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("a", "plan", "reason"),
    [
        (MOE, MOE_PLAN._replace(ep=3), "does not divide the 8 experts"),
        (MOE, MOE_PLAN._replace(dp=4), "need at least as many data-parallel ranks"),
        (MOE, MOE_PLAN._replace(dp=12, ep=8), "does not divide dp x cp = 12"),
        (LONG, ParallelPlan(tp=8, pp=16, dp=128, sequence_length=8192, ep=4),
         "a dense model has no experts"),
    ],
)  # fmt: skip
def test_expert_parallel_layouts_that_cannot_run_say_why(a, plan, reason):
    model = MOE_MODEL if a is MOE else MODEL
    ev = evaluate_plan(H100, a, model, plan)
    assert not ev.feasible
    assert any(reason in r for r in ev.reasons), ev.reasons


def test_the_default_expert_layout_asks_what_the_searches_ask():
    """One expert per rank (no ``ep`` given): dp x cp at least the experts, as the searches
    ask (forecast.model.realistic), not a multiple of them: the searches' plans evaluate."""
    ev = evaluate_plan(H100, MOE, MOE_MODEL, MOE_PLAN._replace(dp=12))
    assert not any("expert" in r for r in ev.reasons), ev.reasons


def test_an_expert_parallel_degree_leaves_a_dense_model_dense():
    """``moe_expert_parallel`` without experts changes nothing (no all-to-all, 12 d^2 a layer)."""
    plan = ParallelPlan(tp=8, pp=16, dp=128, sequence_length=8192)
    dense = evaluate_plan(H100, LONG, MODEL, plan)
    odd = evaluate_plan(H100, LONG._replace(moe_expert_parallel=8.0), MODEL, plan)
    assert odd.step_time_s == dense.step_time_s and odd.memory_bytes == dense.memory_bytes


# ----------------------------------------------------------------------------- the paper regime


def test_the_paper_regime_is_the_relaxed_plan_model_at_the_given_degrees():
    """``regime="paper"``: L / pp layers per stage, however fractional (128 / 12 = 10.67), the
    plan model's relaxed terms (plan_terms) at the plan's b and m; the realistic regime's
    slowest stage holds ceil(128 / 12) = 11 whole layers, so it is slower."""
    plan = ParallelPlan(tp=8, pp=12, dp=128, sequence_length=8192)
    paper = evaluate_plan(H100, LONG, MODEL, plan, regime="paper")
    assert paper.layers_per_stage == pytest.approx(128 / 12, rel=1e-15)
    shape = _shape(MODEL, 2048 * 8192.0)
    t = plan_terms(H100, LONG, shape, 8.0, 12.0, 16.0, False)
    assert paper.step_time_s == pytest.approx(float(step_time(t, 8192.0)), rel=1e-12)
    realistic = evaluate_plan(H100, LONG, MODEL, plan)
    assert realistic.layers_per_stage == 11
    assert realistic.step_time_s > paper.step_time_s
    # a 2D mesh of any tp >= 4 (sqrt(tp) a side), as the paper's search has them
    mesh = ParallelPlan(tp=32, pp=16, dp=32, sequence_length=8192, two_d=True)
    assert not any("2D" in r for r in evaluate_plan(H100, LONG, MODEL, mesh, "paper").reasons)
    assert any("square tp" in r for r in evaluate_plan(H100, LONG, MODEL, mesh).reasons)
    # a tensor-parallel group wider than the heads: the paper's relaxation allows it
    wide = ParallelPlan(tp=256, pp=16, dp=4, sequence_length=8192)
    assert not any(
        "attention heads" in r for r in evaluate_plan(H100, LONG, MODEL, wide, "paper").reasons
    )
    assert any("attention heads" in r for r in evaluate_plan(H100, LONG, MODEL, wide).reasons)


@pytest.mark.parametrize(
    "plan",
    [
        ParallelPlan(tp=8, pp=16, dp=64, sequence_length=8192, cp=2),
        ParallelPlan(tp=8, pp=16, dp=128, sequence_length=8192, recompute=True),
        ParallelPlan(tp=8, pp=16, dp=128, sequence_length=8192, virtual_stages=2),
    ],
)
def test_the_paper_regime_refuses_what_its_step_model_lacks(plan):
    with pytest.raises(ValueError, match="no context parallelism, recomputation or interleaving"):
        evaluate_plan(H100, LONG, MODEL, plan, regime="paper")
