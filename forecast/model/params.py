"""Named parameters of the data-movement model, with defaults and sources.

Everything is SI: seconds, bytes, bytes/s **per direction**, dense FLOP/s.  Both containers are
``NamedTuple`` s, so they are JAX pytrees: every field may be a scalar or an array, and the model
functions broadcast and ``vmap`` over them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from forecast.config.constants import SECONDS_PER_DAY


class Hardware(NamedTuple):
    """One accelerator (or a batch of hypothetical ones) as the model sees it.

    Attributes
    ----------
    flops : peak dense FLOP/s at the training precision (BF16 unless ``bytes_per_number`` says FP8).
    hbm_bandwidth : HBM bytes/s.
    hbm_capacity : HBM bytes.
    scaleup_bandwidth : bytes/s per direction inside the scale-up domain (NVLink, ICI, xGMI).
    scaleup_domain_size : accelerators per scale-up domain (8 for HGX, 72 for NVL72).
    scaleout_bandwidth : bytes/s per direction of the accelerator's share of the scale-out NICs.
    """

    flops: Any
    hbm_bandwidth: Any
    hbm_capacity: Any
    scaleup_bandwidth: Any
    scaleup_domain_size: Any
    scaleout_bandwidth: Any


LAYER_REFERENCE_PARAMS = 4.05e11  # Llama 3.1 405B: the largest dense model with a published depth
LAYERS_AT_REFERENCE = 0.088 * LAYER_REFERENCE_PARAMS**0.27  # [R]'s fit there: 119.8 layers


class Assumptions(NamedTuple):
    """Training assumptions; every field is a named parameter with a default and its source.

    duration_s
        Wall-clock length of the run.  Default 90 days: the 3-month baseline of Erdil &
        Schneider-Joseph (2024), arXiv 2411.01137 [P].
    max_utilization
        Fraction of peak FLOP/s a matmul sustains when nothing else limits it.  0.7: H100 reaches
        ~80 % of spec in the best BF16 matmuls (Bekman, ml-engineering MAMF table), attention,
        norms and optimizer steps take the rest; Llama 3.1 405B reported 38-43 % MFU at scale.
    bytes_per_number
        Bytes per weight/activation in the matmuls: 2 = BF16 (baseline), 1 = FP8.
    tokens_per_param
        Chinchilla ratio D/N = 20 (Hoffmann et al. 2022), so C = 6ND = 120 N^2 [R].
    layers_ref, layer_ref_params, layer_exponent
        Depth L = layers_ref * (N / layer_ref_params)**layer_exponent.  [R] (Sevilla et al. 2024,
        "Can AI scaling continue through 2030?") fits L = 0.088 N^0.27 to the Chinchilla family;
        layers_ref = 0.088 * 4.05e11^0.27 = 119.8 is that fit at Llama 3.1 405B's size (the model
        has 126 layers), so at the central exponent the two forms agree exactly.  The exponent's
        uncertainty (0.21-0.33) pivots around today's largest dense models instead of around
        N = 1: pivoting at 1 would give Chinchilla 70B 17 layers at exponent 0.21 (it has 80).
    batch_tokens_ref, batch_ref_params, batch_exponent
        Critical batch B = batch_tokens_ref * (N / batch_ref_params)**batch_exponent tokens.
        60M tokens in 2024 and exponent 0.36 are [R]'s medians; the reference size 5.6e11 is our
        choice: the Chinchilla-optimal N of a 3.8e25 FLOP run (Llama 3.1 405B scale, 2024).
    collective_efficiency
        Achieved fraction of peak link bandwidth in collectives: 0.8 (8xH100 all-reduce reaches
        ~370 of 450 GB/s, Austin et al. "How to scale your model").
    scaleout_multiplier
        Scale-out bandwidth relative to the table's one-NIC-per-accelerator figure (1.0 = the
        hierarchical baseline; >1 more rails, <1 oversubscribed).  This is the network-topology
        assumption that dominates the data-movement wall (docs/validation.md section 4).
    kernel_latency_s
        Minimum time of one matmul kernel: 4.5 us (A100 measurement cited by [R]).
    allreduce_base_latency_s, intra_domain_hop_s, inter_domain_hop_s
        Latency of one collective over ``r`` ranks in each of ``k`` scale-up domains:
        ``base + passes * (log2(r) * intra + log2(k) * inter)``, ``passes`` = 2 for an all-reduce
        (reduce, then broadcast) and 1 for an all-gather or reduce-scatter.  A scale-up domain is
        *switched* (NVSwitch, ICI torus wrap-around, xGMI full mesh): every rank reaches every
        other in one switch traversal, so a tree or recursive-doubling step costs one hop and a
        collective inside the domain takes log2(r) steps, not a chain of r - 1 hops.  NCCL's
        tuner charges ``(ranks_per_node - 1)`` NVLink hops because its tree runs a *chain* inside
        an 8-GPU node; extrapolating that chain to a 72- or 576-GPU domain gives 40-350 us per
        all-reduce, while NCCL itself switches to NVLS (in-switch reduction) there, whose model
        latency is a constant 25 us for any rank count (Simple protocol).  6.8 / 0.6 / 5.0 us are
        NCCL's LL Tree base, NVLink-hop and network-hop constants (NVIDIA nccl
        src/graph/tuning.cc, https://github.com/NVIDIA/nccl/blob/master/src/graph/tuning.cc).
        Check against measurements: the model gives 8.0 us for a 2-rank all-reduce (measured
        about 6 us on 2x H100 with NVLS, NVIDIA/nccl issue #1259) and 10.4 us for 8 ranks (the
        NCCL chain model: 15 us, ring LL).  A plan may also use fewer ranks of a domain than it
        has (one rank per domain): each collective term takes the cheaper of the two layouts, so
        a larger domain never costs more.
    serial_ops_per_layer
        Serial matmul+collective steps per layer, forward and backward: 8 (4 matmuls x 2) [R].
    weight_reads_per_microbatch
        Times each ``bytes_per_number`` weight is read from HBM per microbatch: 2, the forward
        matmul and the activation-gradient matmul of the backward pass.  The weight-gradient
        matmul reads activations, not weights; its result is added to the gradient buffer, which
        costs a read and a write of ``gradient_reduce_bytes`` per parameter and microbatch
        (Megatron-LM's FP32 ``main_grad`` accumulation).  Weight traffic per parameter and
        microbatch is therefore ``2 p + 2 g`` bytes: 12 at BF16 with FP32 gradients, 10 at FP8.
        [R]'s "4 weight reads" (forward, two backward matmuls, accumulation) counts every
        crossing at ``p`` bytes, 8 bytes at BF16 and 4 at FP8, which undercounts the FP32
        accumulation this model assumes everywhere else (issue 22, fix a).
    hbm_efficiency
        Fraction of peak HBM bandwidth that streaming kernels reach: 0.85.  Jia et al. 2018
        ("Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", arXiv 1804.06826)
        measured 750 of 900 GB/s (83 %) on V100; STREAM-like kernels (BabelStream, Deakin et al.,
        https://github.com/UoB-HPC/BabelStream) reach 80-90 % of the HBM peak on A100/H100/MI250X
        class parts.  Arithmetic runs at ``max_utilization`` and networks at
        ``collective_efficiency``; HBM gets its own factor.
    gradient_reduce_bytes
        Bytes per gradient in the data-parallel reduction and the gradient buffer: 4 (FP32).
        Megatron-LM accumulates and all-reduces gradients in FP32 whenever it trains in BF16
        (``accumulate_allreduce_grads_in_fp32`` is forced on for ``--bf16``, megatron/training/
        arguments.py, https://github.com/NVIDIA/Megatron-LM); 2 = reduce at BF16 (PyTorch FSDP's
        ``reduce_dtype`` = parameter dtype).  Default FP32.
    optimizer_bytes_per_param
        FP32 master weights + Adam moments = 12 bytes/param, sharded over data-parallel ranks
        (ZeRO-1, Rajbhandari et al. 2020).  The optimizer step reads and writes that shard once
        per step (plus the gradient shard and the new weights) at the HBM rate, after the
        gradient reduction.
    activation_bytes_per_token_dim
        Stored activations per token per d_model per layer with selective recomputation and
        sequence parallelism: 34 bytes at 16 bit (Korthikanti et al. 2022), divided by the
        tensor-parallel degree; scaled by bytes_per_number / 2.
    memory_fraction
        Usable share of HBM capacity (the rest: fragmentation, buffers, workspace): 0.9.
    min_microbatch_tokens
        Smallest microbatch a replica can process; 1 token: the latency wall is defined as
        infeasible *at any utilization*, so nothing but the token itself bounds it.
    moe_experts, moe_active_experts
        Mixture of experts: each layer's MLP becomes ``moe_experts`` experts of the dense MLP's
        size, of which ``moe_active_experts`` process each token (top-k routing).  1 and 1 =
        dense (the default).  Parameter count N, compute C = 6 N D and D = 20 N are for the
        *active* parameters (Chinchilla applied to active parameters: a simplification; sparse
        scaling laws differ).  Experts are sharded one per data-parallel rank (expert
        parallelism = moe_experts, so dp >= moe_experts, unless ``moe_expert_parallel`` says
        otherwise); tokens travel to their experts and back by all-to-all (Lepikhin et al. 2020,
        GShard; Fedus et al. 2021, Switch).
    sequence_length
        Tokens per training sequence, used by the ``realistic`` regime only (a microbatch is whole
        sequences or a sequence split over context-parallel ranks, :mod:`forecast.model.launch`):
        8192, the main pre-training context of Llama 3.1 405B (Dubey et al. 2024, "The Llama 3
        Herd of Models", arXiv 2407.21783); the ``paper`` regime's microbatches are any number of
        tokens.
    moe_expert_parallel
        Expert-parallel degree: the ranks one layer's experts are spread over, each holding
        ``moe_experts / moe_expert_parallel`` of them (and the attention), the all-to-all spanning
        that many ranks and the experts' optimizer state sharded over ``dp / moe_expert_parallel``
        replicas (DeepSeek-V3 ran 256 routed experts over 64-way expert parallelism, DeepSeek-AI
        2024, arXiv 2412.19437, section 3.2).  0 (the default) means ``moe_experts``: one expert
        per rank, the searches' layout (:func:`forecast.model.plan.expert_parallel`).
    """

    duration_s: Any = 90.0 * SECONDS_PER_DAY
    max_utilization: Any = 0.7
    bytes_per_number: Any = 2.0
    tokens_per_param: Any = 20.0
    layers_ref: Any = LAYERS_AT_REFERENCE
    layer_ref_params: Any = LAYER_REFERENCE_PARAMS
    layer_exponent: Any = 0.27
    batch_tokens_ref: Any = 60e6
    batch_ref_params: Any = 5.6e11
    batch_exponent: Any = 0.36
    collective_efficiency: Any = 0.8
    scaleout_multiplier: Any = 1.0
    kernel_latency_s: Any = 4.5e-6
    allreduce_base_latency_s: Any = 6.8e-6
    intra_domain_hop_s: Any = 0.6e-6
    inter_domain_hop_s: Any = 5.0e-6
    serial_ops_per_layer: Any = 8.0
    weight_reads_per_microbatch: Any = 2.0
    optimizer_bytes_per_param: Any = 12.0
    activation_bytes_per_token_dim: Any = 34.0
    memory_fraction: Any = 0.9
    min_microbatch_tokens: Any = 1.0
    moe_experts: Any = 1.0
    moe_active_experts: Any = 1.0
    hbm_efficiency: Any = 0.85
    gradient_reduce_bytes: Any = 4.0
    sequence_length: Any = 8192.0
    moe_expert_parallel: Any = 0.0

    @property
    def duration_days(self) -> Any:
        return self.duration_s / SECONDS_PER_DAY


def assumptions_with(**overrides: Any) -> Assumptions:
    """Default assumptions with some fields replaced; ``duration_days`` is accepted too."""
    if "duration_days" in overrides:
        overrides["duration_s"] = overrides.pop("duration_days") * SECONDS_PER_DAY
    return Assumptions()._replace(**overrides)
