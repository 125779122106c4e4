"""Frozen copy of the fast path before the speed work (issue 12), the benchmark's baseline.

``forecast/model/fast.py`` and the parts of ``forecast/model/plan.py`` it calls, as of the
commit that measured 714 draws/s on the idle machine (BENCHMARKS.md section 1), so that
``benchmarks/walls.py`` times the old and the new fast path side by side in one process.  Not
used by the forecast; do not edit except to keep it importable.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from forecast.model.params import Assumptions, Hardware
from forecast.model.scaling import ModelShape, model_shape
from forecast.model.search import UTILIZATION_THRESHOLD, PlanGrid

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
    group = ranks_in_domain * domains
    filled = jnp.log2(ranks_in_domain) * a.intra_domain_hop_s + jnp.log2(domains) * (
        a.inter_domain_hop_s
    )
    spread = jnp.log2(group) * a.inter_domain_hop_s
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


def plan_terms(hw: Hardware, a: Assumptions, shape: ModelShape, tp, pp, m, two_d):
    """Coefficients of the step-time pieces of a plan (see module docstring).

    Returns a dict of arrays: per-layer arithmetic/HBM/comm slopes (s per token), HBM intercept,
    latency floor per layer, pipeline-slot overhead, data-parallel sync time and memory terms.
    """
    tp = jnp.asarray(tp, dtype=jnp.float64)
    pp = jnp.asarray(pp, dtype=jnp.float64)
    m = jnp.asarray(m, dtype=jnp.float64)
    two_d = jnp.asarray(two_d, dtype=bool)
    p = a.bytes_per_number
    n_layer = shape.params / shape.layers  # active parameters per layer
    d = shape.d_model
    # Mixture of experts (expert parallelism = number of experts, one expert per dp rank): each
    # accelerator holds attention (4 d^2) and one expert (8 d^2), sees b tokens in attention and
    # on average k b tokens in its expert; 1 expert, k = 1 is the dense block (12 d^2).
    experts, active = a.moe_experts, a.moe_active_experts
    n_held = 12.0 * jnp.square(d)  # parameters per layer held by one (tp = 1) accelerator
    moe = experts > 1.0
    w_up = hw.scaleup_bandwidth * a.collective_efficiency
    w_out = hw.scaleout_bandwidth * a.scaleout_multiplier * a.collective_efficiency
    domain = hw.scaleup_domain_size

    arith = 6.0 * n_layer / (tp * hw.flops * a.max_utilization)

    g = jnp.sqrt(tp)
    hbm_rate = hw.hbm_bandwidth * a.hbm_efficiency
    act_full = jnp.where(two_d, 12.0 / g, 12.0)
    hbm0 = a.weight_reads_per_microbatch * p * n_held / (tp * hbm_rate)
    hbm1 = p * d * (act_full + 60.0 / tp) / hbm_rate

    # 1D with sequence parallelism: per layer 4 all-gathers + 4 reduce-scatters of b d p bytes
    # (one pass each; the volume of 4 all-reduces), one on each of the 8 serial matmul steps.
    r1, k1 = _group_layout(tp, domain)
    comm_1d = 8.0 * p * d * _collective_time_per_byte(r1, k1, w_up, w_out, 1.0)
    lat_1d = jnp.where(tp > 1.0, collective_latency(r1, k1, a, 1.0), 0.0)
    # 2D: per axis, gathers/scatters of 24 b d p / g bytes per layer; axis A fills the domain
    # first.  Each serial step gathers on one axis and scatters on the other (one pass each).
    ra, ka = _group_layout(g, domain)
    rb = jnp.clip(domain / ra, 1.0, g)
    kb = g / rb
    comm_2d = (
        24.0
        * p
        * d
        / g
        * (
            _collective_time_per_byte(ra, ka, w_up, w_out, 1.0)
            + _collective_time_per_byte(rb, kb, w_up, w_out, 1.0)
        )
    )
    lat_2d = jnp.where(
        g > 1.0, collective_latency(ra, ka, a, 1.0) + collective_latency(rb, kb, a, 1.0), 0.0
    )
    comm = jnp.where(two_d, comm_2d, comm_1d)
    latency = a.serial_ops_per_layer * (a.kernel_latency_s + jnp.where(two_d, lat_2d, lat_1d))

    # Expert all-to-all: dispatch and combine, forward and backward, of k b d p / tp bytes per
    # accelerator over the expert group (experts ranks: those sharing a domain first).
    r_ep = jnp.clip(domain / tp, 1.0, experts)
    a2a_per_byte = (r_ep - 1.0) / experts / w_up + (experts - r_ep) / experts / w_out
    comm = comm + jnp.where(moe, 4.0 * active * p * d / tp * a2a_per_byte, 0.0)
    latency = latency + jnp.where(
        moe, 4.0 * (a.kernel_latency_s + allreduce_latency(r_ep, experts / r_ep, a)), 0.0
    )

    layers_per_stage = shape.layers / pp
    slot_overhead = jnp.where(pp > 1.0, a.kernel_latency_s + a.inter_domain_hop_s, 0.0)
    # Pipeline sends: the activation forward and its gradient backward, b d p / tp bytes each
    # per accelerator (sequence-parallel shards), on the NIC (stages sit in different domains),
    # overlapping compute like the other data movement: a per-layer share of the slot.
    send = jnp.where(pp > 1.0, 2.0 * p * d / (tp * w_out) / layers_per_stage, 0.0)
    comm = jnp.maximum(comm, send)

    # Data-parallel gradient all-reduce at ``gradient_reduce_bytes`` per gradient, in per-layer
    # buckets: replicas sharing a domain reduce there first.  Each bucket pays an all-reduce
    # latency over dp ranks, taken at its largest (dp = B / m, one-token microbatches): an upper
    # bound that keeps the step time affine in b (log2 dp is within ~10 of it at the walls).
    grad_params = n_held * shape.layers / (pp * tp)
    r_dp = jnp.maximum(domain / tp, 1.0)
    dp_bytes_time = (
        a.gradient_reduce_bytes
        * grad_params
        * 2.0
        * jnp.minimum((r_dp - 1.0) / r_dp / w_up + 1.0 / (r_dp * w_out), 1.0 / w_out)
    )
    grad_buckets = jnp.maximum(layers_per_stage, 1.0)

    mem_static = (p + a.gradient_reduce_bytes) * grad_params
    terms = {
        "tp": tp,
        "pp": pp,
        "arith": arith,
        "hbm0": hbm0,
        "hbm1": hbm1,
        "comm": comm,
        "latency": latency,
        "layers_per_stage": layers_per_stage,
        "slot_overhead": slot_overhead,
        "dp_bytes_time": dp_bytes_time,
        "dp_r": r_dp,
        "grad_buckets": grad_buckets,
        "batch_tokens": shape.batch_tokens,
        # latency constants of the data-parallel all-reduce (its domain count depends on m)
        "dp_latency_base_s": a.allreduce_base_latency_s,
        "dp_latency_intra_s": a.intra_domain_hop_s,
        "dp_latency_inter_s": a.inter_domain_hop_s,
        "mem_static": mem_static,
        # Optimizer step per step and per microbatch token of the m microbatches: the shard of a
        # replica is 1/dp = m b / B of the stage's parameters (experts: sharded over dp/experts);
        # it reads and writes the optimizer state, reads the gradient, writes the weights.
        "optimizer_per_m": (2.0 * a.optimizer_bytes_per_param + a.gradient_reduce_bytes + p)
        * grad_params
        * experts
        / (shape.batch_tokens * hbm_rate),
        # Memory per microbatch token: optimizer shards grow with m (fewer replicas at a fixed
        # batch), activations with the microbatches in flight, min(m, pp).
        # experts' optimizer state is sharded over dp / experts replicas only
        "mem_optimizer_per_m": a.optimizer_bytes_per_param
        * n_held
        * shape.layers
        * experts
        / (shape.batch_tokens * pp * tp),
        "mem_activation_per_microbatch": layers_per_stage
        * a.activation_bytes_per_token_dim
        * (p / 2.0)
        * d
        / tp,
    }
    return with_microbatches(terms, m)


def with_microbatches(terms: dict, m) -> dict:
    """Terms of the same plan with ``m`` microbatches per step (the only m-dependent entries)."""
    m = jnp.asarray(m, dtype=jnp.float64)
    out = dict(terms)
    out["m"] = m
    out["mem_per_token"] = (
        terms["mem_optimizer_per_m"] * m
        + jnp.minimum(m, terms["pp"]) * terms["mem_activation_per_microbatch"]
    )
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
    slots = (m + pp - 1.0) * lps
    window = (2.0 / 3.0) * lps * (1.0 - 1.0 / n)  # backward share of the slot, times (1 - 1/n)
    base_i = (m + pp - 1.0) * terms["slot_overhead"]
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
    # dp = B / (m b) >= 1, and >= the number of experts (one expert per data-parallel rank)
    b = jnp.minimum(jnp.minimum(b_dead, b_mem), shape.batch_tokens / (m_ * a.moe_experts))
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


BUBBLE_RATIOS = (4.0, 16.0)  # microbatches per max(pp, MIN_COARSE_STAGES) in the coarse stage
MIN_COARSE_STAGES = 4.0  # without a pipeline, gradient accumulation still needs microbatches
SHORTLIST = 6  # plans per budget (ranked by the coarse stage) with m optimized
RANKED_STEPS = 6  # bisection steps that rank every plan (later ones reuse the shortlists)
SCAN_ANCHOR_EVERY = 4  # scan points per ranking of every plan (0.2 dex)
VERIFY_SHORTLIST = 24  # plans that confirm a dip found on the scan's shortlist
VERIFY_ROUNDS = 3  # false alarms dropped per draw
_SCAN = jnp.arange(21.0, 28.01, 0.5)  # budgets scanned for the small-scale maximum
SCAN_STEP_DEX = 0.05  # the full search's grid spacing
DIP_WINDOW_DEX = 1.2  # how far below the bisection's crossing the scan looks for a dip
DIP_STEPS = 6  # bisection steps inside the 0.05-dex bracket of a dip (resolution 1e-3 dex)


def _tp_layouts(max_log2_tp: int = 18) -> tuple[np.ndarray, np.ndarray]:
    """Tensor-parallel options of the full search: 1D from 1, 2D (sqrt x sqrt mesh) from 4."""
    one_d = 2.0 ** np.arange(0, max_log2_tp + 1)
    two_d = 2.0 ** np.arange(2, max_log2_tp + 1)
    layout = np.concatenate([np.zeros(one_d.size, bool), np.ones(two_d.size, bool)])
    return np.concatenate([one_d, two_d]), layout


def dm_plan_grid() -> PlanGrid:
    """(tp, pp, layout) searched for the data-movement wall; ``m`` = 0: chosen per stage."""
    tp, two_d = _tp_layouts()
    ti, pp = np.meshgrid(np.arange(tp.size), 2.0 ** np.arange(0, 13), indexing="ij")
    ti, pp = ti.ravel(), pp.ravel()
    return PlanGrid(tp[ti], pp, np.zeros(ti.size), two_d[ti])


def small_scale_plan_grid() -> PlanGrid:
    """Plans for the small-scale maximum utilization: tp <= 1024 (1D), no pipeline, the number
    of microbatches optimized as in the full search (gradient accumulation amortizes the
    gradient all-reduce, which one microbatch would leave exposed)."""
    tp = 2.0 ** np.arange(0, 11)
    return PlanGrid(tp, np.ones_like(tp), np.ones_like(tp), np.zeros(tp.size, bool))


def latency_plan_grid() -> PlanGrid:
    """Plans for the latency wall: every tp and layout, one microbatch, pp set per budget.

    With one microbatch a step is L layers long whatever pp is; deeper pipelines cut memory and
    gradient traffic per accelerator but add a send per stage.  pp is therefore searched among
    the largest power of two not above L and 2, 4, ..., 64 times less (encoded here as -1 .. -7
    and resolved per budget in ``_evaluate``).  Every tp of the full search, both layouts: near
    the latency wall a wide 1D group (one collective per matmul) can beat a 2D mesh (two).
    """
    tp, two_d = _tp_layouts()
    rows = [PlanGrid(tp, np.full(tp.size, -k), np.ones_like(tp), two_d) for k in range(1, 8)]
    return PlanGrid(*(np.concatenate(parts) for parts in zip(*rows, strict=True)))


def _evaluate(hw, a, log10_flop, grid: PlanGrid):
    """Plans of ``grid`` (explicit m) at each budget; pp <= 0 is resolved per budget."""
    shape = model_shape(log10_flop[..., None], a)
    deepest = jnp.floor(jnp.log2(shape.layers))
    pp = jnp.where(grid.pp > 0, grid.pp, 2.0 ** jnp.maximum(deepest + grid.pp + 1.0, 0.0))
    return best_plan(hw, a, shape, grid.tp, pp, grid.m, grid.two_d)


def _coarse_utilization(hw, a, log10_flop, grid: PlanGrid):
    """(..., plans, len(BUBBLE_RATIOS)) utilization with m = ratio x max(pp, MIN_COARSE_STAGES)."""
    ex = Hardware(*(v[..., None] for v in hw))
    ea = Assumptions(*(v[..., None] for v in a))
    shape = model_shape(log10_flop[..., None, None], ea)
    ratios = jnp.asarray(BUBBLE_RATIOS)
    pp = grid.pp[..., None]
    m = jnp.maximum(pp, MIN_COARSE_STAGES) * ratios
    return best_plan(ex, ea, shape, grid.tp[..., None], pp, m, grid.two_d[..., None]).utilization


def _rank(hw, a, x, grid: PlanGrid, k: int):
    """Indices (..., k) of the ``k`` plans that the coarse stage ranks best at ``x``."""
    coarse = jnp.max(_coarse_utilization(hw, a, x, grid), axis=-1)
    return jax.lax.top_k(coarse, k)[1]


def _exact_utilization(hw, a, x, grid: PlanGrid, idx):
    """Best utilization at ``x`` over the plans ``idx`` (..., k), each with its number of
    microbatches optimized (golden section, as the full search)."""
    tp, pp, td = (jnp.take(g, idx) for g in (grid.tp, grid.pp, grid.two_d))
    shape = model_shape(x[..., None], a)
    res, _ = best_plan_over_m(hw, a, shape, tp, pp, td)
    return jnp.max(res.utilization, axis=-1)


def _bisect_bounds(predicate, lo, hi, iterations):
    """Bracket [lo, hi] of the largest x with predicate(x), for predicates true on [lo, x*]."""

    def body(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        ok = predicate(mid)
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    return jax.lax.fori_loop(0, iterations, body, (lo, hi))


def _bisect(predicate, lo, hi, iterations):
    """Largest x in [lo, hi] with predicate(x) true (midpoint of the final bracket)."""
    lo, hi = _bisect_bounds(predicate, lo, hi, iterations)
    return 0.5 * (lo + hi)


@partial(jax.jit, static_argnames=("iterations",))
def _walls(hw, a, grids, lo, hi, threshold, iterations):
    dm_grid, small_grid, lat_grid = grids
    dims = jnp.broadcast_shapes(*(jnp.shape(x) for x in (*hw, *a)))
    hw = Hardware(*(jnp.broadcast_to(v, dims)[..., None] for v in hw))
    a = Assumptions(*(jnp.broadcast_to(v, dims)[..., None] for v in a))
    lo = jnp.full(dims, lo)
    hi = jnp.full(dims, hi)

    def lat_ok(x):
        return jnp.any(_evaluate(hw, a, x, lat_grid).feasible, axis=-1)

    lat = _bisect(lat_ok, lo, hi, iterations + 2)
    lat = jnp.where(lat_ok(lo), lat, -jnp.inf)
    lat = jnp.where(lat_ok(hi), jnp.inf, lat)

    # Small-scale maximum: scan budgets with simple plans (a scan axis before the plan axis).
    hw_s = Hardware(*(v[..., None] for v in hw))
    a_s = Assumptions(*(v[..., None] for v in a))
    scan = jnp.broadcast_to(_SCAN, (*dims, _SCAN.size))
    shape_s = model_shape(scan[..., None], a_s)
    small, _ = best_plan_over_m(hw_s, a_s, shape_s, small_grid.tp, small_grid.pp, small_grid.two_d)
    u_scan = jnp.max(small.utilization, axis=-1)
    u_small = jnp.max(u_scan, axis=-1)
    level = threshold * u_small
    x0 = jnp.clip(_SCAN[jnp.argmax(u_scan, axis=-1)], lo, hi)
    top = jnp.maximum(jnp.where(jnp.isfinite(lat), lat, hi), x0)

    def ok_with(x, idx):
        return _exact_utilization(hw, a, x, dm_grid, idx) >= level

    def ranked_ok(x):
        idx = _rank(hw, a, x, dm_grid, SHORTLIST)
        return ok_with(x, idx), idx

    # The last crossing of an interval that holds the maximum: bisection on the whole range.
    # The first RANKED_STEPS steps rank every plan at the midpoint; later steps (a bracket of
    # < 0.2 dex) reuse the union of the shortlists ranked at the bracket's two ends.
    _, idx_lo = ranked_ok(x0)
    ok_top, idx_hi = ranked_ok(top)

    def ranked_step(_, state):
        lo, hi, idx_lo, idx_hi = state
        mid = 0.5 * (lo + hi)
        ok, idx = ranked_ok(mid)
        return (
            jnp.where(ok, mid, lo),
            jnp.where(ok, hi, mid),
            jnp.where(ok[..., None], idx, idx_lo),
            jnp.where(ok[..., None], idx_hi, idx),
        )

    lo, hi, idx_lo, idx_hi = jax.lax.fori_loop(
        0, RANKED_STEPS, ranked_step, (x0, top, idx_lo, idx_hi)
    )
    both = jnp.concatenate([idx_lo, idx_hi], axis=-1)
    dm = _bisect(lambda x: ok_with(x, both), lo, hi, iterations + 2 - RANKED_STEPS)
    dm = jnp.where(ok_top, jnp.where(jnp.isfinite(lat), top, jnp.inf), dm)

    # Backward scan for an earlier dip: points dm - j step (j = 1..J), each judged by the union
    # of the shortlists ranked at the two anchors (every SCAN_ANCHOR_EVERY points) around it;
    # keep the earliest point below the level.
    n_scan = int(round(DIP_WINDOW_DEX / SCAN_STEP_DEX))
    finite_dm = jnp.where(jnp.isfinite(dm), dm, top)
    # Scan points on the full search's absolute grid (multiples of 0.05 dex) at and below the
    # crossing, as that search sees the curve: a dip narrower than the grid that falls between
    # two grid points is not seen by either path, so both stay monotone in every input.
    grid0 = jnp.floor(finite_dm / SCAN_STEP_DEX + 1e-9) * SCAN_STEP_DEX + SCAN_STEP_DEX

    n_anchor = n_scan // SCAN_ANCHOR_EVERY + 2
    anchors = jax.lax.map(
        lambda q: _rank(hw, a, grid0 - SCAN_STEP_DEX * SCAN_ANCHOR_EVERY * q, dm_grid, SHORTLIST),
        jnp.arange(n_anchor, dtype=jnp.float64),
    )

    def scan_body(j, below):
        x = grid0 - SCAN_STEP_DEX * j
        q = j // SCAN_ANCHOR_EVERY
        idx = jnp.concatenate([anchors[q], anchors[q + 1]], axis=-1)
        return below.at[..., j].set((x > x0) & ~ok_with(x, idx))

    below = jax.lax.fori_loop(1, n_scan + 1, scan_body, jnp.zeros((*dims, n_scan + 1), dtype=bool))
    steps = jnp.arange(n_scan + 1)

    # A point judged below on a shortlist may be a false alarm (the best plan missed): confirm
    # the earliest one with a longer shortlist, and drop it if that finds a plan above the level.
    def verify(_, state):
        below, confirmed = state
        j = jnp.max(jnp.where(below, steps, 0), axis=-1)
        x = grid0 - SCAN_STEP_DEX * j
        idx = _rank(hw, a, x, dm_grid, VERIFY_SHORTLIST)
        false_alarm = (j > 0) & ~confirmed & ok_with(x, idx)
        below = below & ~(false_alarm[..., None] & (steps == j[..., None]))
        return below, confirmed | ((j > 0) & ~false_alarm)

    below, _ = jax.lax.fori_loop(0, VERIFY_ROUNDS, verify, (below, jnp.zeros(dims, dtype=bool)))
    j_first = jnp.max(jnp.where(below, steps, 0), axis=-1)
    earliest = jnp.where(j_first > 0, grid0 - SCAN_STEP_DEX * j_first, jnp.inf)
    dipped = jnp.isfinite(earliest) & jnp.isfinite(dm)

    lo3 = jnp.maximum(jnp.where(dipped, earliest - SCAN_STEP_DEX, x0), x0)
    hi3 = jnp.where(dipped, earliest, lo3 + SCAN_STEP_DEX)
    idx3 = jnp.concatenate(
        [_rank(hw, a, lo3, dm_grid, SHORTLIST), _rank(hw, a, hi3, dm_grid, SHORTLIST)], axis=-1
    )
    dm_dip = _bisect(lambda x: ok_with(x, idx3), lo3, hi3, DIP_STEPS)
    dm = jnp.where(dipped, dm_dip, dm)

    # x0 is where a plan of the grid (pp = 1, m optimized) reaches u_small >= level, so the
    # curve is above the level there by construction (a shortlist may miss that plan).
    dm = jnp.where(u_small > 0, dm, -jnp.inf)
    dm = jnp.minimum(dm, lat)
    return dm, lat, u_small


def baseline_fast_walls(
    hw: Hardware,
    a: Assumptions | None = None,
    *,
    threshold: float = UTILIZATION_THRESHOLD,
    log10_flop_range: tuple[float, float] = (20.0, 40.0),
    iterations: int = 12,
    chunk: int = 2048,
) -> tuple[np.ndarray, np.ndarray]:
    """(data-movement wall, latency wall) in log10 FLOP for every draw, vectorized.

    Fields of ``hw`` and ``a`` may be scalars or arrays that broadcast to the draws' shape.
    The data-movement level is ``threshold`` times the best utilization of simple plans at
    small scale (1e21..1e28 FLOP).  -inf: not even the smallest budget of the range qualifies;
    +inf: beyond the range.  The data-movement wall never exceeds the latency wall.  The
    latency wall takes ``iterations + 2`` bisection steps on the whole range (1e-3 dex for 14
    steps on 20 dex); the data-movement wall as many, then ``DIP_WINDOW_DEX / SCAN_STEP_DEX``
    scan points and ``DIP_STEPS`` bisection steps inside a dip's bracket.
    """
    a = Assumptions() if a is None else a
    grids = tuple(
        PlanGrid(*(jnp.asarray(x) for x in g))
        for g in (dm_plan_grid(), small_scale_plan_grid(), latency_plan_grid())
    )
    hw = [np.asarray(x, dtype=np.float64) for x in hw]
    av = [np.asarray(x, dtype=np.float64) for x in a]
    dims = np.broadcast_shapes(*(x.shape for x in (*hw, *av)))
    flat_hw = [np.broadcast_to(x, dims).reshape(-1) for x in hw]
    flat_a = [np.broadcast_to(x, dims).reshape(-1) for x in av]
    total = int(np.prod(dims)) if dims else 1
    dm_out = np.empty(total)
    lat_out = np.empty(total)
    lo, hi = log10_flop_range
    for start in range(0, total, chunk):
        stop = min(start + chunk, total)
        pad = chunk - (stop - start) if total > chunk else 0
        sl = [np.pad(x[start:stop], (0, pad), mode="edge") for x in flat_hw]
        sa = [np.pad(x[start:stop], (0, pad), mode="edge") for x in flat_a]
        dm, lat, _ = _walls(Hardware(*sl), Assumptions(*sa), grids, lo, hi, threshold, iterations)
        dm_out[start:stop] = np.asarray(dm)[: stop - start]
        lat_out[start:stop] = np.asarray(lat)[: stop - start]
    return dm_out.reshape(dims), lat_out.reshape(dims)
