"""Plans a run can launch: the terms of the ``realistic`` regime, shared by the evaluation of a
given plan (:mod:`forecast.model.evaluate`) and the search over such plans
(:mod:`forecast.model.realistic`).

The ``paper`` regime (:mod:`forecast.model.plan`, :mod:`forecast.model.search`) relaxes a plan to
continuous quantities, as Erdil & Schneider-Joseph (2024) do.  A launched plan has

* microbatches of whole sequences: ``k`` sequences of ``S`` tokens per replica, or one sequence
  split over ``cp`` context-parallel ranks (``b = k S / cp`` tokens per rank), with the K/V
  all-gather (forward) and reduce-scatter (backward) of every layer
  (:func:`forecast.model.plan.context_parallel_constants`);
* whole layers per stage: the model keeps the depth law's layers (rounded) and the slowest of
  ``pp`` stages holds ``ceil(L / (pp v)) v`` of them (uneven stages where ``pp v`` does not divide
  ``L``; Llama 3.1 405B ran 126 layers over 16 stages);
* full activation recomputation as an option (one more forward pass: 8 N FLOP per token instead of
  6 N, its weight reads, tensor collectives and serial steps again; only each layer's input kept,
  plus one layer's activations while it is recomputed; Korthikanti et al. 2022);
* the interleaved 1F1B schedule with ``v`` virtual stages (bubble ``(pp - 1) / v`` stage slots,
  ``v`` times the pipeline sends, ``1 + (pp - 1) / (pp v)`` times the activations in flight;
  Narayanan et al. 2021), for a number of microbatches that is a multiple of ``pp`` (Megatron-LM
  requires it; the bubble formula holds only then).

Every function broadcasts over its array arguments (JAX, float64).
"""

from __future__ import annotations

import jax.numpy as jnp

from forecast.model.params import Assumptions, Hardware
from forecast.model.plan import (
    context_parallel_constants,
    plan_constants,
    terms_at,
    with_microbatches,
)
from forecast.model.scaling import ModelShape

HEAD_DIM = 128  # attention head width of every large published model (Llama 3, Nemotron-4, PaLM)
KV_HEADS = 8  # grouped-query attention: Llama 3 405B and Nemotron-4 340B use 8 K/V heads
FULL_RECOMPUTE_ACTIVATION_BYTES = 2.0
"""Stored activation bytes per token and d_model per layer with full recomputation: the layer's
input only (``2 s b h`` at 16 bit, Korthikanti et al. 2022, section 4), against 34 with selective
recomputation (``Assumptions.activation_bytes_per_token_dim``)."""


def stage_layers(layers, pp, virtual_stages):
    """Layers of the slowest stage: ``ceil(L / (pp v))`` per chunk, ``v`` chunks."""
    return jnp.maximum(jnp.ceil(layers / (pp * virtual_stages)), 1.0) * virtual_stages


def launch_constants(hw: Hardware, a: Assumptions, *, tp, two_d, cp, recompute) -> dict:
    """The budget-independent part of :func:`launch_terms` (as
    :func:`forecast.model.plan.plan_constants`): computed once per plan shape and accelerator."""
    f64 = jnp.float64
    tp, cp = (jnp.asarray(x, dtype=f64) for x in (tp, cp))
    rc = jnp.asarray(recompute, dtype=f64)
    repeat = 1.0 + rc / 2.0  # forward, (recomputed forward), backward: collectives and steps
    a_run = _with_recompute(a, rc)
    c = plan_constants(hw, a_run, tp, two_d)
    cpc = context_parallel_constants(hw, a_run, tp, cp)
    return {
        **c,
        "comm_per_d": c["comm_per_d"] * repeat,
        "context_per_kv_dim": cpc["comm_per_token_kv_dim"] * repeat,
        "context_latency": cpc["latency"] * repeat,
        "recompute": rc,
    }


def _with_recompute(a: Assumptions, rc) -> Assumptions:
    """Assumptions of a plan with (``rc`` = 1) or without full recomputation."""
    return a._replace(
        weight_reads_per_microbatch=a.weight_reads_per_microbatch + rc,
        serial_ops_per_layer=a.serial_ops_per_layer * (1.0 + rc / 2.0),
        activation_bytes_per_token_dim=jnp.where(
            rc > 0.0, FULL_RECOMPUTE_ACTIVATION_BYTES, a.activation_bytes_per_token_dim
        ),
    )


def launch_terms_at(
    constants: dict, a: Assumptions, shape: ModelShape, *, pp, virtual_stages, kv_dim, kv_heads, m
) -> dict:
    """:func:`launch_terms` from :func:`launch_constants`, for a model and ``pp``, ``v``, ``m``.

    ``kv_dim`` is the keys' width per layer, ``kv_heads`` their head count: a tensor-parallel
    group wider than ``kv_heads`` replicates K/V heads, so each rank gathers
    ``kv_dim / min(tp, kv_heads)`` per token over the context-parallel group, not ``kv_dim / tp``.
    """
    c = constants
    f64 = jnp.float64
    pp = jnp.asarray(pp, dtype=f64)
    v = jnp.asarray(virtual_stages, dtype=f64)
    rc = c["recompute"]
    a_run = _with_recompute(a, rc)
    lps = stage_layers(shape.layers, pp, v)
    t = terms_at(c, a_run, shape, pp, m, layers_per_stage=lps)
    t["arith"] = t["arith"] * (6.0 + 2.0 * rc) / 6.0
    tensor = c["comm_per_d"] * shape.d_model
    kv_shards = jnp.minimum(c["tp"], jnp.asarray(kv_heads, dtype=f64))
    context = c["context_per_kv_dim"] * kv_dim / kv_shards  # per rank: its K/V heads' width
    sends = jnp.where(pp > 1.0, c["send_per_d"] * shape.d_model / lps * v, 0.0)
    t["comm"] = jnp.maximum(tensor + context, sends)
    t["latency"] = t["latency"] + c["context_latency"]
    # interleaving keeps 1 + (pp - 1) / (pp v) times the microbatches in flight; the layer being
    # recomputed holds its full activations once more, for one microbatch at a time
    full_layer = (
        a.activation_bytes_per_token_dim * (a.bytes_per_number / 2.0) * shape.d_model / c["tp"]
    )
    act = t["mem_activation_per_microbatch"] * jnp.where(v > 1.0, 1.0 + (pp - 1.0) / (pp * v), 1.0)
    t["mem_activation_per_microbatch"] = act
    t["mem_once_per_token"] = rc * full_layer  # one layer of one microbatch at a time
    t = with_microbatches(t, m)
    t["virtual_stages"] = v
    t["tensor"], t["context"], t["sends"] = tensor, context, sends
    return t


def launch_terms(
    hw: Hardware,
    a: Assumptions,
    shape: ModelShape,
    *,
    tp,
    pp,
    two_d,
    cp,
    virtual_stages,
    recompute,
    kv_dim,
    kv_heads,
    m,
) -> dict:
    """The step-time terms of a launched plan (as :func:`forecast.model.plan.plan_terms`).

    ``shape.layers`` is a whole number and ``shape.batch_tokens`` the plan's global batch;
    ``recompute`` is 0 or 1.  Besides the plan model's terms, returns the per-token slopes of the
    layer's traffic by kind (``tensor``, ``context``, ``sends``) for a breakdown.
    """
    c = launch_constants(hw, a, tp=tp, two_d=two_d, cp=cp, recompute=recompute)
    return launch_terms_at(
        c, a, shape, pp=pp, virtual_stages=virtual_stages, kv_dim=kv_dim, kv_heads=kv_heads, m=m
    )
