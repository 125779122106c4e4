"""One given parallel plan, evaluated: utilization, step time and its parts, memory, feasibility.

The plan search of the ``paper`` regime (:mod:`forecast.model.search`,
:mod:`forecast.model.fast`) relaxes a plan to continuous quantities (microbatches of any number of
tokens, fractional data-parallel degrees and layers per stage).  This module evaluates a plan as a
run would launch it: whole sequences per microbatch (or an explicit ``cp``), whole layers per
stage, integer degrees, and optionally full recomputation and interleaving, with the terms of
:func:`forecast.model.launch.launch_terms` (the plan model's physics, :mod:`forecast.model.plan`).
``dp`` replicas of ``tp x pp x cp`` accelerators each run ``m`` microbatches per step, so the
global batch is ``dp m k S`` tokens.  A mixture of experts spreads each layer's experts over
``ep`` of the ``dp x cp`` ranks that hold the same weights (expert parallelism inside data
parallelism, as Megatron-LM and DeepSeek-V3 lay it out): ``experts / ep`` experts per rank.

Utilization is model FLOP utilization: ``6 N`` FLOP per token (recomputation and attention not
counted) over the accelerators' peak.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp

from forecast.config.runtime import require_x64
from forecast.model.launch import HEAD_DIM, KV_HEADS, launch_terms
from forecast.model.params import SECONDS_PER_DAY, Assumptions, Hardware
from forecast.model.plan import (
    expert_parallel,
    exposed_gradient_sync,
    plan_constants,
    step_time,
    terms_at,
)
from forecast.model.scaling import ModelShape, model_shape


class RunModel(NamedTuple):
    """The model a plan trains: sizes of a dense (or MoE, through ``Assumptions``) transformer."""

    params: float  # N, active parameters
    layers: int
    d_model: float
    heads: int
    kv_heads: int
    tokens: float  # D, training tokens
    global_batch_tokens: float  # what the critical-batch law allows (a plan may use less)

    @property
    def kv_dim(self) -> float:
        """Width of the keys (= of the values) per layer: ``kv_heads`` heads of ``d_model/heads``."""
        return self.d_model * self.kv_heads / self.heads


def run_model_for_flop(log10_flop: float, a: Assumptions, layers: int | None = None) -> RunModel:
    """The compute-optimal model of the scaling laws for a budget, with whole layers (the depth
    law's, rounded, or ``layers``: the depth a launchable plan gave it, whole layers per stage)
    and heads, as :func:`forecast.model.realistic.model_for_budget`."""
    shape = model_shape(log10_flop, a)
    layers = max(1, round(float(shape.layers))) if layers is None else int(layers)
    params = float(shape.params)
    # width from N = (4 + 8 k) L d^2 at the whole layer count; heads of HEAD_DIM
    d_model = math.sqrt(params / ((4.0 + 8.0 * float(a.moe_active_experts)) * layers))
    heads = max(1, round(d_model / HEAD_DIM))
    return RunModel(
        params=params,
        layers=layers,
        d_model=d_model,
        heads=heads,
        kv_heads=min(KV_HEADS, heads),
        tokens=float(shape.tokens),
        global_batch_tokens=float(shape.batch_tokens),
    )


class ParallelPlan(NamedTuple):
    """A plan as a run launches it; every degree is a whole number."""

    tp: int
    pp: int
    dp: int
    sequence_length: int
    microbatch_sequences: int = 1
    cp: int = 1
    two_d: bool = False  # 2D tensor parallelism on a sqrt(tp) x sqrt(tp) mesh
    recompute: bool = False  # full activation recomputation
    virtual_stages: int = 1  # interleaved 1F1B chunks per pipeline rank
    microbatches: int | None = None  # per replica and step; None: as many as the batch allows
    ep: int | None = None  # expert-parallel ranks (inside dp x cp); None: one expert per rank

    @property
    def accelerators(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def microbatch_tokens(self) -> float:
        """Tokens of a microbatch on one rank: k whole sequences, split over the cp ranks."""
        return self.microbatch_sequences * self.sequence_length / self.cp


class PlanEvaluation(NamedTuple):
    """What a plan achieves; times in seconds, memory in bytes per accelerator."""

    feasible: bool
    reasons: tuple[str, ...]  # why not, in words (empty when feasible)
    utilization: float  # model FLOP utilization (6 N per token) of the peak, while training
    step_time_s: float
    step_breakdown_s: dict  # per step: compute, hbm, tensor, context, pipeline, latency, ...
    bound_by: str  # the resource that sets the time of a layer
    memory_bytes: dict  # weights_and_gradients, optimizer, activations, total, usable
    accelerators: int
    microbatches: int
    global_batch_tokens: float
    steps: float
    run_days: float
    layers_per_stage: float  # whole in the realistic regime; L / pp in the paper's


def _reason_checks(
    model: RunModel, plan: ParallelPlan, a: Assumptions, heads_cap: bool = True
) -> list[str]:
    """Structural reasons a plan cannot run, before any timing (``heads_cap``: tensor
    parallelism no wider than the attention heads and a square 2D mesh; without it, the paper
    regime's relaxation, as its search allows)."""
    reasons = []
    for name in ("tp", "pp", "dp", "cp", "microbatch_sequences", "virtual_stages"):
        if getattr(plan, name) < 1:
            reasons.append(f"{name} must be at least 1")
    if plan.sequence_length < 1:
        reasons.append("sequence length must be at least 1 token")
    if plan.two_d and not heads_cap:  # the paper's relaxation: any tp >= 4 (sqrt(tp) a side)
        if plan.tp < 4:
            reasons.append(f"2D tensor parallelism needs tp >= 4, got {plan.tp}")
    elif plan.two_d:
        g = math.isqrt(plan.tp)
        if g * g != plan.tp or g < 2:
            reasons.append(f"2D tensor parallelism needs a square tp >= 4, got {plan.tp}")
        elif heads_cap and g > model.heads:
            reasons.append(f"a {g} x {g} mesh splits {model.heads} attention heads over {g} ranks")
    elif heads_cap and plan.tp > model.heads:
        reasons.append(
            f"1D tensor parallelism over {plan.tp} ranks exceeds the {model.heads} attention heads"
        )
    if plan.pp * plan.virtual_stages > model.layers:
        reasons.append(
            f"{plan.pp} stages x {plan.virtual_stages} chunks exceed the model's {model.layers} layers"
        )
    if plan.cp > plan.microbatch_sequences * plan.sequence_length:
        reasons.append(f"cp = {plan.cp} splits a microbatch into pieces under one token")
    if plan.virtual_stages > 1 and plan.microbatches is not None and plan.microbatches % plan.pp:
        reasons.append(
            f"the interleaved schedule needs the microbatches ({plan.microbatches}) to be a "
            f"multiple of pp ({plan.pp})"
        )
    experts = float(a.moe_experts)
    ep = float(expert_parallel(a)) if plan.ep is None else float(plan.ep)
    ranks = plan.dp * plan.cp
    if plan.ep is not None and plan.ep < 1:
        reasons.append("ep must be at least 1")
    elif experts <= 1.0 and ep > 1.0:
        reasons.append(f"ep = {ep:g}: a dense model has no experts to spread over ranks")
    elif experts > 1.0:
        if experts % ep:
            reasons.append(
                f"ep = {ep:g} does not divide the {experts:g} experts (whole experts per rank)"
            )
        if ranks < ep:
            one = " (one expert each)" if plan.ep is None else ""
            reasons.append(
                f"{ep:g} expert-parallel ranks{one} need at least as many data-parallel ranks, "
                f"got dp x cp = {ranks}"
            )
        elif plan.ep is not None and ranks % ep:  # the searches ask dp x cp >= ep only
            reasons.append(
                f"ep = {ep:g} does not divide dp x cp = {ranks} (expert groups tile the "
                "data-parallel ranks)"
            )
    return reasons


def evaluate_plan(
    hw: Hardware, a: Assumptions, model: RunModel, plan: ParallelPlan, regime: str = "realistic"
) -> PlanEvaluation:
    """Evaluate one plan for one model on one accelerator (scalars; see the module docstring).

    ``a.duration_s`` is the deadline: the plan is feasible when it fits in memory, respects the
    model's structure (heads, layers) and finishes its ``D / batch`` steps in time.

    ``regime="paper"`` evaluates the plan with the ``paper`` regime's step model instead
    (:func:`forecast.model.plan.terms_at` in its relaxed form, the one the paper-regime walls
    search): each of the ``pp`` stages holds ``L / pp`` layers, fractional where ``pp`` does not
    divide ``L``, and the tensor-parallel degree is not capped by the head count (nor a 2D mesh
    square), as its search allows; that model has
    no context parallelism, recomputation or interleaving (``ValueError`` if the plan asks for
    them).
    """
    require_x64()
    if regime not in ("paper", "realistic"):
        raise ValueError(f"regime must be 'paper' or 'realistic', got {regime!r}")
    if regime == "paper" and (plan.cp != 1 or plan.recompute or plan.virtual_stages != 1):
        raise ValueError(
            "the paper regime's step model has no context parallelism, recomputation or "
            "interleaving; evaluate such a plan in the realistic regime"
        )
    reasons = _reason_checks(model, plan, a, heads_cap=regime != "paper")
    if plan.ep is not None and plan.ep >= 1 and float(a.moe_experts) > 1.0:
        a = a._replace(moe_expert_parallel=float(plan.ep))
    k, seq, cp = plan.microbatch_sequences, plan.sequence_length, plan.cp
    degrees = (plan.tp, plan.pp, plan.dp, cp, k, plan.virtual_stages, seq)
    if min(degrees) < 1:  # nothing to time: a degree or the sequence below one
        return _infeasible(reasons, plan, 0, 0.0, math.inf, 0)
    b = plan.microbatch_tokens
    tokens_per_microbatch_group = k * seq  # one microbatch of one replica (its cp ranks)
    if plan.microbatches is None:
        m = max(1, int(model.global_batch_tokens // (plan.dp * tokens_per_microbatch_group)))
        if plan.virtual_stages > 1 and m >= plan.pp:  # groups of pp (Megatron-LM)
            m -= m % plan.pp
        elif plan.virtual_stages > 1:
            reasons.append(
                f"the interleaved schedule needs at least pp = {plan.pp} microbatches; the batch "
                f"allows {m}"
            )
    else:
        m = int(plan.microbatches)
    batch = float(plan.dp * m * tokens_per_microbatch_group)
    steps = model.tokens / batch
    v = plan.virtual_stages
    chunks = plan.pp * v
    if regime == "paper":  # L / pp layers per stage, however fractional
        layers_per_stage = model.layers / plan.pp
    else:
        layers_per_stage = max(1, math.ceil(model.layers / chunks)) * v  # the slowest stage

    hw = Hardware(*(jnp.asarray(x, dtype=jnp.float64) for x in hw))
    # A replica of the plan model is one rank's share: dp x cp ranks hold the same weights (the
    # gradient all-reduce and the optimizer shards span both), each with b tokens per microbatch.
    shape = ModelShape(
        params=jnp.float64(model.params),
        tokens=jnp.float64(model.tokens),
        layers=jnp.float64(model.layers),
        d_model=jnp.float64(model.d_model),
        batch_tokens=jnp.float64(batch),
        steps=jnp.float64(steps),
    )
    if regime == "paper":
        t = _paper_terms(hw, a, shape, plan, m, layers_per_stage)
    else:
        t = launch_terms(
            hw,
            a,
            shape,
            tp=float(plan.tp),
            pp=float(plan.pp),
            two_d=plan.two_d,
            cp=float(cp),
            virtual_stages=float(v),
            recompute=1.0 if plan.recompute else 0.0,
            kv_dim=model.kv_dim,
            kv_heads=float(model.kv_heads),
            m=float(m),
        )
    tensor, context, sends = t["tensor"], t["context"], t["sends"]

    st = float(step_time(t, b))
    layer = {
        "compute": float(t["arith"]) * b,
        "hbm": float(t["hbm0"] + t["hbm1"] * b),
        "tensor": float(tensor) * b,
        "context": float(context) * b,
        "pipeline": float(sends) * b,
        "latency": float(t["latency"]),
    }
    layer_time = max(
        layer["compute"],
        layer["hbm"],
        max(layer["tensor"] + layer["context"], layer["pipeline"]),
        layer["latency"],
    )
    # what sets the layer's time: tensor and context traffic share the links, so together
    bound = {
        "compute": layer["compute"],
        "hbm": layer["hbm"],
        "tensor": layer["tensor"] + layer["context"],
        "pipeline": layer["pipeline"],
        "latency": layer["latency"],
    }
    bound_by = max(bound, key=lambda key: bound[key])
    if bound_by == "tensor" and layer["context"] > layer["tensor"]:
        bound_by = "context"
    busy = m * layers_per_stage  # layer slots of useful work per step on the slowest stage
    optimizer = float(t["optimizer_per_token"]) * b
    window = (2.0 / 3.0) * layers_per_stage * layer_time
    exposed = float(exposed_gradient_sync(t["dp_sync"], t["grad_buckets"], window))
    bubble = st - busy * layer_time - exposed - optimizer
    breakdown = {key: busy * value for key, value in layer.items()}
    breakdown.update(
        {
            "bubble": bubble,
            "data_parallel": exposed,
            "optimizer": optimizer,
            "layer_time": layer_time,
        }
    )

    weights = float(t["mem_static"])
    optimizer_mem = float(t["mem_optimizer_per_m"]) * m * b
    activations = (
        min(m, plan.pp) * float(t["mem_activation_per_microbatch"])
        + float(t.get("mem_once_per_token", 0.0))
    ) * b
    usable = float(a.memory_fraction * hw.hbm_capacity)
    total = weights + optimizer_mem + activations
    memory = {
        "weights_and_gradients": weights,
        "optimizer": optimizer_mem,
        "activations": activations,
        "total": total,
        "usable": usable,
    }
    run_days = steps * st / SECONDS_PER_DAY
    if total > usable:
        reasons.append(
            f"needs {total / 1e9:.1f} GB per accelerator, {usable / 1e9:.1f} GB usable "
            f"({a.memory_fraction:.0%} of {float(hw.hbm_capacity) / 1e9:.0f} GB)"
        )
    deadline = float(a.duration_s) / SECONDS_PER_DAY
    if run_days > deadline * (1.0 + 1e-12):
        reasons.append(f"takes {run_days:.1f} days, longer than the {deadline:g}-day deadline")
    utilization = 6.0 * model.params * b * m / (plan.pp * plan.tp * float(hw.flops) * st)
    return PlanEvaluation(
        feasible=not reasons,
        reasons=tuple(reasons),
        utilization=utilization,
        step_time_s=st,
        step_breakdown_s=breakdown,
        bound_by=bound_by,
        memory_bytes=memory,
        accelerators=plan.accelerators,
        microbatches=m,
        global_batch_tokens=batch,
        steps=steps,
        run_days=run_days,
        layers_per_stage=layers_per_stage,
    )


def _paper_terms(hw: Hardware, a: Assumptions, shape: ModelShape, plan, m: int, layers) -> dict:
    """The ``paper`` regime's step-time terms of a plan (:func:`forecast.model.plan.terms_at`,
    ``L / pp`` layers per stage), with the per-token slopes of the layer's traffic by kind as
    :func:`forecast.model.launch.launch_terms` returns them (no context traffic)."""
    c = plan_constants(hw, a, float(plan.tp), plan.two_d)
    t = terms_at(c, a, shape, float(plan.pp), float(m))
    t["tensor"] = c["comm_per_d"] * shape.d_model
    t["context"] = jnp.float64(0.0)
    t["sends"] = jnp.where(plan.pp > 1, c["send_per_d"] * shape.d_model / layers, 0.0)
    return t


def _infeasible(reasons, plan, m, batch, steps, layers_per_stage) -> PlanEvaluation:
    return PlanEvaluation(
        feasible=False,
        reasons=tuple(reasons),
        utilization=0.0,
        step_time_s=math.nan,
        step_breakdown_s={},
        bound_by="",
        memory_bytes={},
        accelerators=plan.accelerators,
        microbatches=m,
        global_batch_tokens=batch,
        steps=steps,
        run_days=math.nan,
        layers_per_stage=layers_per_stage,
    )
