"""Step time and utilization of one parallel plan, with the best microbatch in closed form.

A plan is data-parallel ``dp`` x pipeline ``pp`` x tensor-parallel ``tp`` (1D Megatron-style with
sequence parallelism, or 2D on a sqrt(tp) x sqrt(tp) mesh) with ``m`` microbatches of ``b`` tokens
per replica and step (structure of Schneider-Joseph's ml_par_sim [E] and Erdil &
Schneider-Joseph 2024 [P]).

Per layer and microbatch, on one accelerator, each phase costs the largest of

* arithmetic   ``6 (N/L) b / (tp H u_max)``;
* HBM          weights read ``weight_reads_per_microbatch`` times (forward and activation-gradient
  matmuls, ``p`` bytes each), the gradient accumulation buffer read and written once (``g``
  bytes each, FP32 by default) plus activation traffic, at ``hbm_efficiency`` of the peak
  bandwidth;
* tensor comm  1D: per layer 4 all-gathers and 4 reduce-scatters of ``b d p`` bytes (sequence
  parallelism, Korthikanti et al. 2022: two of each forward, two backward), i.e. 8 one-pass
  collectives on the 8 serial matmul steps; 2D: all-gathers/reduce-scatters alternating between
  the mesh axes, 8 and 24 ``b d p / g`` per layer on the two (the heavy side on the faster axis),
  the backward pass moving as much as the forward (the weight gradient needs no collective);
  over a **hierarchical** network: inside the scale-up domain at scale-up speed, across domains on
  the accelerator's NIC share;
* pipeline sends of the activation (forward) and its gradient (backward), ``2 b d p / tp`` bytes
  per stage and microbatch on the NIC, spread over the stage's layers;
* latency      ``serial_ops * (kernel + collective latency)``: a switched domain costs log2(r)
  hops, the network log2(domains) hops (:func:`collective_latency`);

because data movement overlaps compute across microbatches [E].  The pipeline runs 1F1B:
``(m + pp - 1)`` slots.  Gradients are complete only when a stage's last backward pass is done,
and stage 0 runs the last backward pass of the step; its gradients are reduced in per-layer
buckets, each launched when the layer's last backward is done, so the data-parallel all-reduce
overlaps at most the rest of that backward pass (:func:`exposed_gradient_sync`), never the
pipeline bubble.  The optimizer step (read and write the optimizer-state shard) follows.  Memory
holds weights and gradients (sharded by pp x tp), optimizer state (also sharded over dp, ZeRO-1)
and the activations of up to ``pp`` microbatches in flight.

The step time is an increasing function of the layer time, and every piece of the layer time is
affine in the microbatch size ``b``, so the step time is a maximum of increasing affine functions
of ``b`` (:func:`step_pieces`).  Utilization grows with ``b`` (weights and latency are amortized)
and the run must finish in time, so the best ``b`` is the largest one that meets the deadline,
the memory limit and dp >= 1: a closed form, no inner search.  The data-parallel degree follows as
``dp = B / (m b)`` (continuous: at these scales rounding is immaterial).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from forecast.model.params import Assumptions, Hardware
from forecast.model.scaling import ModelShape

_INF = jnp.inf


class PlanResult(NamedTuple):
    """Outcome of a plan shape at its best microbatch (arrays broadcast over all inputs)."""

    utilization: jnp.ndarray  # model FLOP utilization vs peak; 0 where infeasible
    feasible: jnp.ndarray  # bool
    microbatch_tokens: jnp.ndarray  # b, tokens per microbatch per replica
    data_parallel: jnp.ndarray  # dp = B / (m b)
    n_accelerators: jnp.ndarray  # dp * pp * tp
    step_time_s: jnp.ndarray


def collective_latency(ranks_in_domain, domains, a: Assumptions, passes=2.0):
    """Latency (s) of one collective: base + passes (log2(r) intra + log2(k) inter).

    ``passes`` = 2 for an all-reduce (reduce then broadcast), 1 for an all-gather, a
    reduce-scatter or an all-to-all.  Inside a switched scale-up domain a tree step is one switch
    traversal, so ``r`` ranks take log2(r) steps (see ``Assumptions``).  The group may instead
    use one rank per domain (r = 1, k = r k): the cheaper layout is taken, so neither a larger
    domain nor a lower hop latency ever costs more.
    """
    # log2(r k) = log2 r + log2 k: one float64 logarithm fewer per collective; measured side by
    # side in one process, the realistic fast path's walls 1.4x faster (BENCHMARKS.md section 6)
    log2_r, log2_k = jnp.log2(ranks_in_domain), jnp.log2(domains)
    filled = log2_r * a.intra_domain_hop_s + log2_k * a.inter_domain_hop_s
    spread = (log2_r + log2_k) * a.inter_domain_hop_s
    return a.allreduce_base_latency_s + passes * jnp.minimum(filled, spread)


def allreduce_latency(ranks_in_domain, domains, a: Assumptions):
    """All-reduce latency (s): :func:`collective_latency` with two passes."""
    return collective_latency(ranks_in_domain, domains, a, 2.0)


def _group_layout(group, domain):
    """Ranks of a group inside one scale-up domain, and the number of domains it spans."""
    r = jnp.minimum(group, domain)
    return r, group / r


def _collective_time_per_byte(r, k, w_up, w_out, passes):
    """Seconds per byte (per accelerator) of a hierarchical collective.

    ``passes`` = 2 for an all-reduce (reduce-scatter + all-gather), 1 for an all-gather or a
    reduce-scatter.  Inside the domain ``(r-1)/r`` of the data crosses scale-up links; across
    domains each accelerator carries ``1/r`` of it on its own NIC share.  The group may also
    use one rank per domain (everything on the NIC): the cheaper layout is taken, so a larger
    domain never costs more.
    """
    filled = (r - 1.0) / r / w_up + (k - 1.0) / k / (r * w_out)
    group = r * k
    spread = (group - 1.0) / group / w_out
    return passes * jnp.minimum(filled, spread)


def expert_parallel(a: Assumptions):
    """The expert-parallel degree: ``a.moe_expert_parallel``, or ``a.moe_experts`` (one expert
    per rank) where it is 0 (the default)."""
    given = (a.moe_experts > 1.0) & (a.moe_expert_parallel > 0.0)  # a dense block: no experts
    return jnp.where(given, a.moe_expert_parallel, a.moe_experts)


def plan_constants(hw: Hardware, a: Assumptions, tp, two_d) -> dict:
    """The parts of :func:`plan_terms` that depend neither on the model nor on ``pp`` or ``m``.

    Per tensor-parallel option and accelerator: costs per unit of the model's size (per active
    parameter of a layer, per ``d_model``, per ``d_model^2``, per gradient), collective
    latencies and group layouts.  The fast path evaluates them once per draw and reuses them at
    every compute budget (:func:`terms_at`); :func:`plan_terms` is the composition of the two.
    """
    tp = jnp.asarray(tp, dtype=jnp.float64)
    two_d = jnp.asarray(two_d, dtype=bool)
    p = a.bytes_per_number
    # Mixture of experts over ep expert-parallel ranks (default ep = experts, one expert per
    # rank): each accelerator holds attention (4 d^2) and experts / ep experts (8 d^2 each), sees
    # b tokens in attention and on average k b tokens in its experts; 1 expert, k = 1 is the
    # dense block (12 d^2).
    experts, active = a.moe_experts, a.moe_active_experts
    ep = expert_parallel(a)
    held_per_d2 = 4.0 + 8.0 * (experts / ep)  # 12 exactly for a dense block or ep = experts
    moe = ep > 1.0  # ep = 1: every expert local, no all-to-all
    w_up = hw.scaleup_bandwidth * a.collective_efficiency
    w_out = hw.scaleout_bandwidth * a.scaleout_multiplier * a.collective_efficiency
    domain = hw.scaleup_domain_size

    g = jnp.sqrt(tp)
    hbm_rate = hw.hbm_bandwidth * a.hbm_efficiency
    act_full = jnp.where(two_d, 12.0 / g, 12.0)

    # 1D with sequence parallelism: per layer 4 all-gathers + 4 reduce-scatters of b d p bytes
    # (one pass each; the volume of 4 all-reduces), one on each of the 8 serial matmul steps.
    r1, k1 = _group_layout(tp, domain)
    comm_1d = 8.0 * p * _collective_time_per_byte(r1, k1, w_up, w_out, 1.0)
    lat_1d = jnp.where(tp > 1.0, collective_latency(r1, k1, a, 1.0), 0.0)
    # 2D: each matmul gathers its input over one axis and reduce-scatters its output over the
    # other, b (d_in + d_out) p / g bytes, and the next matmul's input is sharded on the axis the
    # previous one scattered to, so the axes alternate: QKV gathers d on X and scatters 3d on Y,
    # the output projection gathers d on Y and scatters d on X, the MLP gathers d on X, scatters
    # 4d on Y, gathers 4d on Y and scatters d on X.  Forward: 4 b d p / g on X, 12 on Y.  The
    # backward pass does the same for the activation gradient; the weight gradient multiplies
    # operands already gathered and needs no collective (as in 1D).  So 8 and 24 b d p / g per
    # layer on the two axes, and a run puts the heavy side on its faster axis: axis A fills the
    # domain first, and the orientation is the cheaper of the two.  One pass each.
    ra, ka = _group_layout(g, domain)
    rb = jnp.clip(domain / ra, 1.0, g)
    kb = g / rb
    per_byte_a = _collective_time_per_byte(ra, ka, w_up, w_out, 1.0)
    per_byte_b = _collective_time_per_byte(rb, kb, w_up, w_out, 1.0)
    comm_2d = (
        8.0 * p / g * jnp.minimum(3.0 * per_byte_a + per_byte_b, per_byte_a + 3.0 * per_byte_b)
    )
    lat_2d = jnp.where(
        g > 1.0, collective_latency(ra, ka, a, 1.0) + collective_latency(rb, kb, a, 1.0), 0.0
    )
    comm = jnp.where(two_d, comm_2d, comm_1d)
    latency = a.serial_ops_per_layer * (a.kernel_latency_s + jnp.where(two_d, lat_2d, lat_1d))

    # Expert all-to-all: dispatch and combine, forward and backward, of k b d p / tp bytes per
    # accelerator over the expert group (ep ranks: those sharing a domain first).
    r_ep = jnp.clip(domain / tp, 1.0, ep)
    a2a_per_byte = (r_ep - 1.0) / ep / w_up + (ep - r_ep) / ep / w_out
    comm = comm + jnp.where(moe, 4.0 * active * p / tp * a2a_per_byte, 0.0)
    # Each all-to-all is one pass (every rank sends its share to every other once).
    latency = latency + jnp.where(
        moe, 4.0 * (a.kernel_latency_s + collective_latency(r_ep, ep / r_ep, a, 1.0)), 0.0
    )
    r_dp = jnp.maximum(domain / tp, 1.0)
    return {
        "tp": tp,
        # per active parameter of a layer, per d_model^2, per d_model (s per token)
        "arith_per_layer_param": 6.0 / (tp * hw.flops * a.max_utilization),
        # per microbatch: weights read (p bytes each time), gradient buffer read and written
        "hbm0_per_d2": (a.weight_reads_per_microbatch * p + 2.0 * a.gradient_reduce_bytes)
        * held_per_d2
        / (tp * hbm_rate),
        "held_per_d2": held_per_d2,  # parameters of a layer one (tp = 1) accelerator holds
        # parameters of a layer whose optimizer state a data-parallel group shards: attention
        # (4 d^2) over the dp ranks, each expert (8 d^2) over the dp / ep ranks that hold it, so
        # (4 + 8 E) d^2 / dp per rank whatever ep is (Megatron-LM's distributed optimizer)
        "optimizer_per_d2": 4.0 + 8.0 * experts,
        "expert_parallel": ep,
        "hbm1_per_d": p * (act_full + 60.0 / tp) / hbm_rate,
        "comm_per_d": comm,
        "send_per_d": 2.0 * p / (tp * w_out),  # times d / layers per stage, with a pipeline
        "latency": latency,
        "slot_overhead": a.kernel_latency_s + a.inter_domain_hop_s,  # with a pipeline
        # seconds per gradient of the data-parallel all-reduce (bandwidth part)
        "dp_time_per_gradient": a.gradient_reduce_bytes
        * 2.0
        * jnp.minimum((r_dp - 1.0) / r_dp / w_up + 1.0 / (r_dp * w_out), 1.0 / w_out),
        "dp_r": r_dp,
        "hbm_rate": hbm_rate,
    }


def context_parallel_constants(hw: Hardware, a: Assumptions, tp, cp) -> dict:
    """Per-layer costs of splitting each sequence over ``cp`` context-parallel ranks.

    Attention needs every earlier token's keys and values: per layer the forward pass
    all-gathers K and V over the ``cp`` group and the backward pass reduce-scatters their
    gradients (Megatron-LM's context parallelism, Llama 3's all-gather form: Dubey et al. 2024,
    section 3.3.2).  Per rank with ``b`` tokens of the sequence, the gathered data is
    ``cp b 2 w p`` bytes, ``w`` the rank's K/V width (``d_kv / min(tp, kv_heads)``: heads sharded
    over tp, replicated where the group is wider than the K/V heads; the model's, so applied by
    :func:`forecast.model.launch.launch_terms_at`), ``(cp - 1) / cp`` of it crossing links.
    The group sits beside the tensor-parallel group: it fills the rest of the scale-up domain
    first.  Returns ``comm_per_token_kv_dim`` (s per token and per unit of the rank's K/V width, both
    passes) and ``latency`` (s per layer: two one-pass collectives on the serial path).
    """
    tp = jnp.asarray(tp, dtype=jnp.float64)
    cp = jnp.asarray(cp, dtype=jnp.float64)
    w_up = hw.scaleup_bandwidth * a.collective_efficiency
    w_out = hw.scaleout_bandwidth * a.scaleout_multiplier * a.collective_efficiency
    r = jnp.clip(hw.scaleup_domain_size / tp, 1.0, cp)
    k = cp / r
    per_byte = _collective_time_per_byte(r, k, w_up, w_out, 1.0)
    split = cp > 1.0
    return {
        "comm_per_token_kv_dim": jnp.where(
            split, 2.0 * cp * 2.0 * a.bytes_per_number * per_byte, 0.0
        ),
        "latency": jnp.where(split, 2.0 * collective_latency(r, k, a, 1.0), 0.0),
    }


def terms_at(
    constants: dict, a: Assumptions, shape: ModelShape, pp, m, layers_per_stage=None
) -> dict:
    """:func:`plan_terms` from :func:`plan_constants`, for a model ``shape`` and ``pp``, ``m``.

    Everything here is products and quotients of the model's size with the constants: no
    logarithm or power except the data-parallel all-reduce's domain count (it depends on m).
    ``layers_per_stage``: the slowest stage's layer count of a plan with whole layers per stage
    (:mod:`forecast.model.evaluate`); default ``L / pp``, the continuous relaxation.
    """
    c = constants
    tp = c["tp"]
    pp = jnp.asarray(pp, dtype=jnp.float64)
    p = a.bytes_per_number
    d = shape.d_model
    n_held = c["held_per_d2"] * jnp.square(d)  # parameters per layer held by one (tp = 1) rank
    n_sharded = c["optimizer_per_d2"] * jnp.square(d)  # per layer, sharded over the dp ranks
    piped = pp > 1.0
    whole_layers = layers_per_stage is not None
    if whole_layers:
        layers_per_stage = jnp.asarray(layers_per_stage, dtype=jnp.float64)
    else:
        layers_per_stage = shape.layers / pp
    # Pipeline sends: the activation forward and its gradient backward, b d p / tp bytes each
    # per accelerator (sequence-parallel shards), on the NIC (stages sit in different domains),
    # overlapping compute like the other data movement: a per-layer share of the slot.
    send = jnp.where(piped, c["send_per_d"] * d / layers_per_stage, 0.0)
    # Data-parallel gradient all-reduce at ``gradient_reduce_bytes`` per gradient, in per-layer
    # buckets: replicas sharing a domain reduce there first.  Each bucket pays an all-reduce
    # latency over dp ranks, taken at its largest (dp = B / m, one-token microbatches): an upper
    # bound that keeps the step time affine in b (log2 dp is within ~10 of it at the walls).
    # parameters (and gradients) of the slowest stage on one accelerator; the relaxed form keeps
    # its original order of operations (the fast path's small-scale maximum equals
    # forecast.model.cost's bit for bit, tests/model/test_model_cost.py)
    if whole_layers:
        grad_params = n_held * layers_per_stage / tp
        sharded_params = n_sharded * layers_per_stage / tp
    else:
        grad_params = n_held * shape.layers / (pp * tp)
        sharded_params = n_sharded * shape.layers / (pp * tp)
    terms = {
        "tp": tp,
        "pp": pp,
        "arith": shape.params / shape.layers * c["arith_per_layer_param"],
        "hbm0": c["hbm0_per_d2"] * jnp.square(d),
        "hbm1": c["hbm1_per_d"] * d,
        "comm": jnp.maximum(c["comm_per_d"] * d, send),
        "latency": c["latency"],
        "layers_per_stage": layers_per_stage,
        "slot_overhead": jnp.where(piped, c["slot_overhead"], 0.0),
        "dp_bytes_time": c["dp_time_per_gradient"] * grad_params,
        "dp_r": c["dp_r"],
        "grad_buckets": jnp.maximum(layers_per_stage, 1.0),
        "batch_tokens": shape.batch_tokens,
        # latency constants of the data-parallel all-reduce (its domain count depends on m)
        "dp_latency_base_s": a.allreduce_base_latency_s,
        "dp_latency_intra_s": a.intra_domain_hop_s,
        "dp_latency_inter_s": a.inter_domain_hop_s,
        "mem_static": (p + a.gradient_reduce_bytes) * grad_params,
        # Optimizer step per step and per microbatch token of the m microbatches: the shard of a
        # replica is 1/dp = m b / B of the stage's (attention and all experts') parameters; it
        # reads and writes the optimizer state, reads the gradient, writes the weights.
        "optimizer_per_m": (2.0 * a.optimizer_bytes_per_param + a.gradient_reduce_bytes + p)
        * sharded_params
        / (shape.batch_tokens * c["hbm_rate"]),
        # Memory per microbatch token: optimizer shards grow with m (fewer replicas at a fixed
        # batch), activations with the microbatches in flight, min(m, pp).
        "mem_optimizer_per_m": a.optimizer_bytes_per_param
        * n_sharded
        * (layers_per_stage * pp if whole_layers else shape.layers)
        / (shape.batch_tokens * pp * tp),
        "mem_activation_per_microbatch": layers_per_stage
        * a.activation_bytes_per_token_dim
        * (p / 2.0)
        * d
        / tp,
    }
    return with_microbatches(terms, m)


def plan_terms(hw: Hardware, a: Assumptions, shape: ModelShape, tp, pp, m, two_d):
    """Coefficients of the step-time pieces of a plan (see module docstring).

    Returns a dict of arrays: per-layer arithmetic/HBM/comm slopes (s per token), HBM intercept,
    latency floor per layer, pipeline-slot overhead, data-parallel sync time and memory terms.
    """
    return terms_at(plan_constants(hw, a, tp, two_d), a, shape, pp, m)


def with_microbatches(terms: dict, m) -> dict:
    """Terms of the same plan with ``m`` microbatches per step (the only m-dependent entries)."""
    m = jnp.asarray(m, dtype=jnp.float64)
    out = dict(terms)
    out["m"] = m
    out["mem_per_token"] = (
        terms["mem_optimizer_per_m"] * m
        + jnp.minimum(m, terms["pp"]) * terms["mem_activation_per_microbatch"]
    )
    if "mem_once_per_token" in terms:  # held once, not per microbatch (a recomputed layer)
        out["mem_per_token"] = out["mem_per_token"] + terms["mem_once_per_token"]
    out["optimizer_per_token"] = terms["optimizer_per_m"] * m
    r = terms["dp_r"]
    k = jnp.maximum(terms["batch_tokens"] / (m * r), 1.0)
    lat = Assumptions(
        allreduce_base_latency_s=terms["dp_latency_base_s"],
        intra_domain_hop_s=terms["dp_latency_intra_s"],
        inter_domain_hop_s=terms["dp_latency_inter_s"],
    )
    out["dp_sync"] = terms["dp_bytes_time"] + terms["grad_buckets"] * allreduce_latency(r, k, lat)
    return out


def exposed_gradient_sync(dp_sync, buckets, backward_window):
    """Time the gradient all-reduce adds after stage 0's last backward pass ends.

    ``buckets`` equal buckets of ``dp_sync / buckets`` seconds each are launched as the last
    backward pass (``backward_window`` seconds) finishes each layer and are reduced one after
    another: the last ends ``max(dp_sync / n, dp_sync - window (1 - 1/n))`` after the backward.
    """
    return jnp.maximum(dp_sync / buckets, dp_sync - backward_window * (1.0 - 1.0 / buckets))


def step_pieces(terms: dict) -> list[tuple[jnp.ndarray, jnp.ndarray]]:
    """The step time as ``max`` over 8 affine pieces ``intercept + slope * b``.

    Layer time = max of 4 affine pieces (arithmetic, HBM, comm, latency); the step is
    ``(m + pp - 1) (L_s layer + overhead) + exposed sync(layer) + optimizer``, increasing in the
    layer time, hence the max over pieces of the step at each piece; the exposed sync is itself
    a max of two branches (:func:`exposed_gradient_sync`).  A list of (intercept, slope) pairs,
    so that XLA fuses the elementwise max/min over them without materializing a stacked axis.
    """
    m, pp, lps = terms["m"], terms["pp"], terms["layers_per_stage"]
    n = terms["grad_buckets"]
    d = terms["dp_sync"]
    piece_i = [0.0, terms["hbm0"], 0.0, terms["latency"]]
    piece_s = [terms["arith"], terms["hbm1"], terms["comm"], 0.0]
    if "virtual_stages" in terms:
        # Interleaved 1F1B (Narayanan et al. 2021): each rank runs v chunks of L_s / v layers,
        # so the fill and drain take (pp - 1) chunk slots, the bubble (pp - 1) / v stage slots,
        # and every microbatch crosses v x as many stage boundaries (overheads per chunk slot).
        v = terms["virtual_stages"]
        slots = (m + (pp - 1.0) / v) * lps
        base_i = (m * v + pp - 1.0) * terms["slot_overhead"]
    else:
        slots = (m + pp - 1.0) * lps
        base_i = (m + pp - 1.0) * terms["slot_overhead"]
    window = (2.0 / 3.0) * lps * (1.0 - 1.0 / n)  # backward share of the slot, times (1 - 1/n)
    opt = terms["optimizer_per_token"]
    pieces = []
    for pi, ps in zip(piece_i, piece_s, strict=True):
        pieces.append((base_i + slots * pi + d / n, slots * ps + opt))
        pieces.append((base_i + (slots - window) * pi + d, (slots - window) * ps + opt))
    return pieces


def step_time(terms: dict, b):
    """Step time (s) of a plan at microbatch ``b`` tokens."""
    pieces = step_pieces(terms)
    out = pieces[0][0] + pieces[0][1] * b
    for i, s in pieces[1:]:
        out = jnp.maximum(out, i + s * b)
    return out


def best_plan(hw: Hardware, a: Assumptions, shape: ModelShape, tp, pp, m, two_d) -> PlanResult:
    """Utilization of a plan shape at the largest microbatch that meets deadline and memory."""
    return best_from_terms(hw, a, shape, plan_terms(hw, a, shape, tp, pp, m, two_d))


def best_from_terms(hw: Hardware, a: Assumptions, shape: ModelShape, t: dict) -> PlanResult:
    """:func:`best_plan` from precomputed :func:`plan_terms`."""
    m_, pp_ = t["m"], t["pp"]
    budget = a.duration_s / shape.steps  # seconds per step
    ok = pp_ <= shape.layers
    b_dead = _INF
    for i, s in step_pieces(t):
        # every slope is > 0 except a latency piece without optimizer cost
        ok = ok & (i < budget)
        b_dead = jnp.minimum(
            b_dead, jnp.where(s > 0.0, (budget - i) / jnp.where(s > 0.0, s, 1.0), _INF)
        )
    mem_limit = a.memory_fraction * hw.hbm_capacity
    b_mem = (mem_limit - t["mem_static"]) / t["mem_per_token"]
    # dp = B / (m b) >= 1, and >= the expert-parallel degree (its ranks are data-parallel ranks)
    b = jnp.minimum(jnp.minimum(b_dead, b_mem), shape.batch_tokens / (m_ * expert_parallel(a)))
    feasible = ok & (t["mem_static"] < mem_limit) & (b >= a.min_microbatch_tokens)
    b = jnp.where(feasible, b, a.min_microbatch_tokens)
    st = step_time(t, b)
    util = 6.0 * shape.params * b * m_ / (pp_ * t["tp"] * hw.flops * st)
    dp = shape.batch_tokens / (m_ * b)
    return PlanResult(
        utilization=jnp.where(feasible, util, 0.0),
        feasible=feasible,
        microbatch_tokens=b,
        data_parallel=dp,
        n_accelerators=dp * pp_ * t["tp"],
        step_time_s=st,
    )


_GOLDEN = (5.0**0.5 - 1.0) / 2.0
MAX_LOG2_MICROBATCHES = 20.0


def best_plan_over_m(
    hw: Hardware,
    a: Assumptions,
    shape: ModelShape,
    tp,
    pp,
    two_d,
    iterations: int = 16,
    max_log2_m: float = MAX_LOG2_MICROBATCHES,
) -> tuple[PlanResult, jnp.ndarray]:
    """Best plan over the number of microbatches, and that number.

    ``m`` is continuous in [1, 2^max_log2_m] (like dp, it is a relaxation of an integer) and
    found by golden-section search on log2 m: utilization first rises with m (the pipeline
    bubble (pp - 1)/m shrinks) and then falls (smaller microbatches re-read weights more often;
    fewer replicas shard the optimizer less).  16 steps resolve m to about 0.3 %.  Without a
    pipeline m = 1 is also tried, and the better end kept.
    """
    t = plan_terms(hw, a, shape, tp, pp, 1.0, two_d)

    def util(x):
        return best_from_terms(hw, a, shape, with_microbatches(t, 2.0**x)).utilization

    lo = jnp.zeros(jnp.broadcast_shapes(*(jnp.shape(v) for v in t.values())))
    hi = lo + max_log2_m
    c = hi - _GOLDEN * (hi - lo)
    d = lo + _GOLDEN * (hi - lo)
    uc, ud = util(c), util(d)

    def body(_, state):
        lo, hi, c, d, uc, ud = state
        left = uc >= ud  # maximum in [lo, d]
        lo, hi = jnp.where(left, lo, c), jnp.where(left, d, hi)
        c_new = hi - _GOLDEN * (hi - lo)
        d_new = lo + _GOLDEN * (hi - lo)
        # reuse the surviving point, evaluate the new one
        c2 = jnp.where(left, c_new, d)
        d2 = jnp.where(left, c, d_new)
        x_new = jnp.where(left, c_new, d_new)
        u_new = util(x_new)
        uc2 = jnp.where(left, u_new, ud)
        ud2 = jnp.where(left, uc, u_new)
        return lo, hi, c2, d2, uc2, ud2

    lo, hi, c, d, uc, ud = jax.lax.fori_loop(0, iterations, body, (lo, hi, c, d, uc, ud))
    x = jnp.where(uc >= ud, c, d)
    x = jnp.where(util(jnp.zeros_like(x)) >= jnp.maximum(uc, ud), 0.0, x)
    m = 2.0**x
    return best_from_terms(hw, a, shape, with_microbatches(t, m)), m
