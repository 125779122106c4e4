"""The ``realistic`` regime's plan search: the best plan a run could launch, per compute budget.

Plans are those of :mod:`forecast.model.launch`: every power-of-two tp (1D no wider than the
attention heads, 2D meshes whose side is no wider), pipelines of every whole number of stages up to
16 and deeper ones of ``q`` layers per chunk (:data:`CHUNK_LAYERS`, :func:`pipeline_parallel`),
microbatches of ``k = 1, 2, 4, ..., 64`` whole sequences or of one sequence split over
``cp = 2, 4, ..., 64`` context-parallel ranks, full recomputation or not, and the interleaved 1F1B
schedule with ``v = 1, 2, 4`` virtual stages (its microbatches a multiple of ``pp``).  The model
is the compute-optimal one of the budget with whole layers and heads of 128
(:func:`model_for_budget`): a pipeline of up to 16 stages trains the depth law's layers (rounded;
where ``pp v`` does not divide them the stages are uneven and the slowest, holding
``ceil(L / (pp v))`` layers per chunk, sets the pace); a deeper one of ``q`` layers per chunk has
``pp = round(L / (q v))`` stages and trains the ``pp q v`` layers it divides, within ``q v / 2``
of the law's (at most 3 %), as runs choose a depth their pipeline divides.  The deep pipelines
follow the law's depth as the budget grows, so no wall sits where a fixed pipeline stops dividing
it.

With the microbatch fixed (``b = k S / cp`` tokens per rank) every piece of the step time and of
the memory is affine in the number of microbatches ``m`` (the plan model's pieces, with the
data-parallel all-reduce's latency taken at ``m = 1``, its largest), and utilization grows with
``m`` (the bubble is amortized), so the best ``m`` is the largest whole number that meets the
deadline, the memory and ``dp >= 1``: a closed form, no inner search.  ``dp`` is then
``floor(B / (m k S))`` (the batch never exceeds the critical batch); since that rounding can only
lose less than one replica's ``m k S`` tokens, the deadline is met against that smaller batch,
still affine in ``m``, so a better accelerator never gets a smaller ``m``.  The plan is evaluated
exactly at its batch (deadline and memory checked; one group of microbatches fewer where the
larger optimizer shard of the rounded ``dp`` misses by a hair) as
:func:`forecast.model.evaluate.evaluate_plan` evaluates a given plan: the search's plan at a wall
gives the same utilization there (tested).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from forecast.model.launch import (
    HEAD_DIM,
    KV_HEADS,
    launch_constants,
    launch_terms_at,
)
from forecast.model.params import Assumptions, Hardware
from forecast.model.plan import expert_parallel, step_pieces, step_time, with_microbatches
from forecast.model.scaling import (
    ModelShape,
    critical_batch_tokens,
    layers_for_params,
    params_for_flop,
)

MAX_LOG2_SEQUENCES = 6  # up to 64 whole sequences per microbatch
MAX_LOG2_CONTEXT = 6  # up to 64 context-parallel ranks (Llama 3 used 16 for 128k contexts)
VIRTUAL_STAGES = (1.0, 2.0, 4.0)


class LaunchGrid(NamedTuple):
    """Flattened launchable plan shapes (one entry per shape); ``m`` and ``dp`` are chosen per
    budget, and so is ``pp`` where the shape gives layers per chunk instead."""

    tp: np.ndarray
    pp: np.ndarray  # pipeline stages; 0 where ``chunk_layers`` sets them per budget
    chunk_layers: np.ndarray  # q: pp = round(L / (q v)) at a model of L layers; 0 where pp is given
    two_d: np.ndarray
    cp: np.ndarray
    sequences: np.ndarray  # k, whole sequences per microbatch (per cp group)
    virtual_stages: np.ndarray
    recompute: np.ndarray  # 0.0 or 1.0


PIPELINE_STAGES: tuple[float, ...] = tuple(float(p) for p in range(1, 17))
"""Pipelines given by their depth: every whole number of stages from 1 to 16 (GPT-3-era runs used
8 or 16 stages, BLOOM 12, Llama 3.1 405B 16)."""

CHUNK_LAYERS: tuple[float, ...] = (
    1.0,
    2.0,
    3.0,
    4.0,
    5.0,
    6.0,
    7.0,
    8.0,
    10.0,
    12.0,
    16.0,
    24.0,
    32.0,
)
"""Pipelines deeper than :data:`PIPELINE_STAGES`, given by the layers ``q`` of each of their
``v`` chunks per stage: ``pp = round(L / (q v))`` stages over a model of ``pp q v`` layers
(Megatron-Turing NLG 530B ran 105 layers over 35 stages of 3); the stages follow the law's depth as the budget grows."""


def launch_grid(
    max_log2_tp: int = 18,
    pipeline_stages: tuple[float, ...] = PIPELINE_STAGES,
    chunk_layers: tuple[float, ...] = CHUNK_LAYERS,
) -> LaunchGrid:
    """Every launchable shape: tp a power of two (2D from a 2 x 2 mesh), pipelines of
    ``pipeline_stages`` stages or of ``chunk_layers`` layers per chunk (deeper than the largest of
    ``pipeline_stages``; :func:`pipeline_parallel`), microbatch options ``(k, cp)`` with one of the
    two equal to 1, v in ``VIRTUAL_STAGES`` (v > 1 only with a pipeline), with and without full
    recomputation."""
    tp_1d = 2.0 ** np.arange(0, max_log2_tp + 1)
    tp_2d = 2.0 ** np.arange(2, max_log2_tp + 1, 2)  # square meshes: g = 2, 4, ..., 2^(max/2)
    tps = np.concatenate([tp_1d, tp_2d])
    layouts = np.concatenate([np.zeros(tp_1d.size, bool), np.ones(tp_2d.size, bool)])
    pipes = [(float(p), 0.0) for p in pipeline_stages] + [(0.0, float(q)) for q in chunk_layers]
    micro = [(2.0**j, 1.0) for j in range(MAX_LOG2_SEQUENCES + 1)]
    micro += [(1.0, 2.0**j) for j in range(1, MAX_LOG2_CONTEXT + 1)]
    rows = []
    for ti in range(tps.size):
        for pp, q in pipes:
            for k, cp in micro:
                for v in VIRTUAL_STAGES:
                    if v > 1.0 and pp == 1.0:
                        continue
                    for rc in (0.0, 1.0):
                        rows.append((tps[ti], pp, q, layouts[ti], cp, k, v, rc))
    cols = list(zip(*rows, strict=True))
    return LaunchGrid(
        tp=np.asarray(cols[0]),
        pp=np.asarray(cols[1]),
        chunk_layers=np.asarray(cols[2]),
        two_d=np.asarray(cols[3], dtype=bool),
        cp=np.asarray(cols[4]),
        sequences=np.asarray(cols[5]),
        virtual_stages=np.asarray(cols[6]),
        recompute=np.asarray(cols[7]),
    )


def pipeline_parallel(grid: LaunchGrid, law_layers):
    """Stages and depth of every shape of ``grid`` for a budget whose depth law gives
    ``law_layers`` (whole), and whether the shape is one to search.

    A pipeline given by its stages trains the law's depth (uneven stages where ``pp v`` does not
    divide it); one given by ``q`` layers per chunk has ``pp = round(L / (q v))`` stages and trains
    ``pp q v`` layers, the nearest depth it divides (within ``q v / 2`` layers of the law's, a few
    per cent where it counts: only pipelines deeper than every one the grid gives by its stages).
    Returns ``(pp, layers, distinct)``."""
    q = jnp.where(grid.chunk_layers > 0, grid.chunk_layers, 1.0)
    per_stage = q * grid.virtual_stages
    by_chunk = jnp.maximum(jnp.round(law_layers / per_stage), 1.0)
    given = grid.pp > 0
    pp = jnp.where(given, grid.pp, by_chunk)
    layers = jnp.where(given, law_layers, by_chunk * per_stage)
    distinct = given | (pp > jnp.max(grid.pp))
    return pp, layers, distinct


class BudgetModel(NamedTuple):
    """The compute-optimal model of a budget with whole layers and heads (arrays)."""

    shape: ModelShape  # layers whole, d_model from N = (4 + 8 k) L d^2, the critical batch
    heads: jnp.ndarray
    kv_dim: jnp.ndarray  # keys' width per layer (= values'), kv_heads heads of HEAD_DIM
    kv_heads: jnp.ndarray


def model_for_budget(log10_flop, a: Assumptions, layers=None) -> BudgetModel:
    """:func:`forecast.model.scaling.model_shape` with whole layers and heads of 128: ``layers``
    (default: the depth law's, rounded; a pipeline that does not divide them has uneven stages,
    the slowest holding ``ceil(L / (pp v))`` layers per chunk), the width from ``N`` at that
    depth."""
    flop = 10.0 ** jnp.asarray(log10_flop, dtype=jnp.float64)
    n = params_for_flop(flop, a.tokens_per_param)
    tokens = a.tokens_per_param * n
    if layers is None:
        law = layers_for_params(n, a.layers_ref, a.layer_ref_params, a.layer_exponent)
        layers = jnp.maximum(jnp.round(law), 1.0)
    layers = jnp.asarray(layers, dtype=jnp.float64)
    d_model = jnp.sqrt(n / ((4.0 + 8.0 * a.moe_active_experts) * layers))
    heads = jnp.maximum(jnp.round(d_model / HEAD_DIM), 1.0)
    kv_heads = jnp.minimum(KV_HEADS, heads)
    batch = critical_batch_tokens(n, a.batch_tokens_ref, a.batch_ref_params, a.batch_exponent)
    shape = ModelShape(n, tokens, layers, d_model, batch, tokens / batch)
    return BudgetModel(shape, heads, d_model * kv_heads / heads, kv_heads)


class LaunchResult(NamedTuple):
    """The best launchable plan per budget (arrays over budgets)."""

    utilization: jnp.ndarray  # 0 where no plan is feasible
    feasible: jnp.ndarray
    index: jnp.ndarray  # into the grid
    pipeline_parallel: jnp.ndarray  # pp, whole (the grid's, or from its chunk layers)
    layers: jnp.ndarray  # the depth of the plan's model
    microbatches: jnp.ndarray  # m, whole
    data_parallel: jnp.ndarray  # dp, whole (replicas of tp x pp x cp accelerators)
    step_time_s: jnp.ndarray


def _constants(hw: Hardware, a: Assumptions, g: LaunchGrid) -> dict:
    return launch_constants(hw, a, tp=g.tp, two_d=g.two_d, cp=g.cp, recompute=g.recompute)


class MicrobatchChoice(NamedTuple):
    """Every plan of the grid at one budget, before its microbatch count is chosen."""

    at_microbatches: Callable  # m (array over plans) -> (utilization, m, dp, step time)
    top: jnp.ndarray  # m from the closed-form bounds (memory, deadline, batch), whole units
    memory_dp: jnp.ndarray  # fewest replicas whose optimizer shard fits beside pp microbatches
    unit: jnp.ndarray  # m is a multiple of it (pp for the interleaved schedule, else 1)
    batch_microbatches: jnp.ndarray  # most microbatches of b cp tokens the critical batch holds
    batch_tokens: jnp.ndarray  # the critical batch (per plan: its model's depth)
    microbatch_tokens: jnp.ndarray  # b, tokens per microbatch per rank
    ok: jnp.ndarray
    pipeline_parallel: jnp.ndarray
    layers: jnp.ndarray


def _microbatch_choice(
    hw: Hardware, a: Assumptions, x, g: LaunchGrid, constants: dict
) -> MicrobatchChoice:
    """The plans of the grid at one budget ``x`` (scalar) and their exact evaluation at any
    microbatch count (``at_microbatches``: 0 where that count is infeasible).

    ``constants``: :func:`_constants` of the grid (they do not depend on the budget)."""
    law_layers = model_for_budget(x, a).shape.layers  # the law's depth, whole layers
    pp, depth, distinct = pipeline_parallel(g, law_layers)
    bm = model_for_budget(x, a, depth)  # each plan's model: a depth its deep pipelines divide
    chunks = pp * g.virtual_stages
    shape, s = bm.shape, a.sequence_length
    b = g.sequences * s / g.cp  # tokens per microbatch per rank
    side = jnp.where(g.two_d, jnp.sqrt(g.tp), g.tp)
    valid = distinct & (side <= bm.heads) & (chunks <= depth) & (g.cp <= s)
    batch = shape.batch_tokens
    budget = a.duration_s / shape.steps  # seconds per step at the critical batch

    t1 = launch_terms_at(
        constants,
        a,
        shape,
        pp=pp,
        virtual_stages=g.virtual_stages,
        kv_dim=bm.kv_dim,
        kv_heads=bm.kv_heads,
        m=1.0,
    )
    ok = valid
    # m changes only the m-dependent entries; the all-reduce latency stays at its largest (m = 1)
    t2 = {**with_microbatches(t1, 2.0), "dp_sync": t1["dp_sync"]}
    # Deadline: st(m) D / used <= T with the whole-replica batch used = floor(B / (m b cp)) m b cp
    # > B - m b cp, so st(m) <= (T / D) (B - m b cp) suffices: affine in m on both sides (the
    # exposed part of the all-reduce shrinks as m grows, so the line through m = 1, 2 is an upper
    # bound; the largest feasible count can lie a group or two above it: :func:`_plans_at`).
    per_token = a.duration_s / shape.tokens  # seconds of the run per training token
    m_dead = jnp.inf
    for (i1, s1), (i2, s2) in zip(step_pieces(t1), step_pieces(t2), strict=True):
        p1 = i1 + s1 * b
        slope = (i2 + s2 * b) - p1  # per extra microbatch
        shrink = slope + per_token * b * g.cp  # the budget shrinks as m rounds dp down
        m_dead = jnp.minimum(
            m_dead,
            jnp.where(shrink > 0.0, (budget - p1 + slope) / jnp.where(shrink > 0, shrink, 1), 0.0),
        )
    limit = a.memory_fraction * hw.hbm_capacity
    room = limit - t1["mem_static"] - t1["mem_once_per_token"] * b
    opt = t1["mem_optimizer_per_m"] * b  # per microbatch
    act = t1["mem_activation_per_microbatch"] * b  # per microbatch in flight
    m_mem = jnp.where(pp * (opt + act) <= room, (room - pp * act) / opt, room / (opt + act))
    ok = ok & (room > 0.0)
    m_batch = batch / (b * jnp.maximum(g.cp, expert_parallel(a)))
    m_top = jnp.floor(jnp.minimum(jnp.minimum(m_dead, m_mem), m_batch) * (1.0 + 1e-12))
    # the interleaved schedule runs microbatches in groups of pp (Megatron-LM requires m to be a
    # multiple of pp); its bubble (pp - 1) / v holds only then
    unit = jnp.where(g.virtual_stages > 1.0, pp, 1.0)
    m_top = jnp.floor(m_top / unit) * unit
    m_batch_whole = jnp.floor(m_batch * (1.0 + 1e-12))
    limit_ok = limit * (1.0 + 1e-12)

    def exact(m, checked: bool = True):
        """The plan at ``m`` microbatches and its own batch (dp rounded down), checked (with
        ``checked=False``, the utilization of every valid shape at ``m``, feasible or not)."""
        m = jnp.maximum(m, unit)
        dp = jnp.maximum(jnp.floor(batch / (m * b * g.cp) * (1.0 + 1e-12)), 1.0)
        used = dp * g.cp * m * b  # the plan's global batch, <= the critical batch
        scale = batch / used  # the optimizer shard is 1 / (dp cp) of the stage's state
        te = with_microbatches(
            {
                **t1,
                "batch_tokens": used,
                "optimizer_per_m": t1["optimizer_per_m"] * scale,
                "mem_optimizer_per_m": t1["mem_optimizer_per_m"] * scale,
            },
            m,
        )
        st = step_time(te, b)
        mem = te["mem_static"] + te["mem_per_token"] * b
        fits = (st * shape.tokens / used <= a.duration_s * (1.0 + 1e-9)) & (mem <= limit_ok)
        util = 6.0 * shape.params * b * m / (pp * g.tp * hw.flops * st)
        whole = jnp.abs(m / unit - jnp.round(m / unit)) < 1e-9
        usable = fits & whole & (m <= m_batch_whole + 0.5) & (m >= 1.0) & ok
        return jnp.where(usable if checked else ok, util, 0.0), m, dp, st

    # Memory in whole replicas: with all pp microbatches in flight the optimizer shard,
    # opt B / (dp b cp) bytes, must fit beside them, so dp >= opt B / (b cp (room - pp act)).
    free = room - pp * act
    memory_dp = jnp.where(
        free > 0.0, jnp.maximum(jnp.ceil(opt * batch / (b * g.cp * free) * (1.0 - 1e-12)), 1.0), 0.0
    )
    return MicrobatchChoice(exact, m_top, memory_dp, unit, m_batch_whole, batch, b, ok, pp, depth)


def _best_of(at_microbatches: Callable, candidates: list) -> tuple:
    """The candidate (utilization, m, dp, st) of highest utilization, plan by plan (the first of
    equals, in the order of ``candidates``: arrays of microbatch counts over the plans).

    One evaluation vectorized over the candidates, not one per candidate: the compiled program
    holds the plan model once instead of nine times (the realistic walls' program compiles in
    about two thirds of the time).  The same plans are chosen; XLA compiles the vectorized
    evaluation differently, so a utilization or step time can differ from nine separate
    evaluations in the last bit or two (an independent review: 3 and 11 of 192 values)."""
    util, m, dp, st = jax.vmap(at_microbatches)(jnp.stack(candidates))
    first_best = jnp.argmax(util, axis=0)[None]
    return tuple(jnp.take_along_axis(v, first_best, axis=0)[0] for v in (util, m, dp, st))


def _plans_at(hw: Hardware, a: Assumptions, x, g: LaunchGrid, constants: dict):
    """Every plan of the grid at one budget ``x`` (scalar) at its best microbatch count:
    (utilization, feasible, pp, layers, m, dp, st).

    Utilization grows with m, so the best count is the largest feasible one.  The closed-form
    top count bounds the step time by a line in m and checks memory at a continuous dp, so the
    largest feasible count can lie a group below it or one or two above.  Candidates: the top
    count, one group below and two above, and for the replica counts 0-2 below the top count's
    and the fewest (and one more) whose optimizer shard fits, the largest m of each (at a fixed
    dp the deadline, the memory beyond pp in flight and the utilization all favour the largest
    m).  On 3,000 H100 plans at 10^26, 10^28 and 10^30.5 FLOP this finds the count that trying
    every count finds for all but one plan (99.5 % of its utilization); the two candidates it
    replaced (top and one group below) missed it for 7-72 % of the feasible plans (444 of 614 at
    10^26), by up to 44 % of a plan's utilization, 0.1 % of the best plan's
    (``tests/model/test_realistic.py``)."""
    c = _microbatch_choice(hw, a, x, g, constants)
    b, batch = c.microbatch_tokens, c.batch_tokens

    def largest_m_for(dp):
        dp = jnp.maximum(dp, 1.0)
        return jnp.floor(batch / (dp * b * g.cp) * (1.0 + 1e-12) / c.unit) * c.unit

    top_dp = jnp.maximum(jnp.floor(batch / (jnp.maximum(c.top, 1.0) * b * g.cp)), 1.0)
    candidates = [c.top + k * c.unit for k in (-1.0, 0.0, 1.0, 2.0)]
    for dp in (top_dp - 2.0, top_dp - 1.0, top_dp, c.memory_dp, c.memory_dp + 1.0):
        candidates.append(largest_m_for(dp))
    util, m, dp, st = _best_of(c.at_microbatches, candidates)
    ok = c.ok & (util > 0.0)
    return jnp.where(ok, util, 0.0), ok, c.pipeline_parallel, c.layers, m, dp, st


@jax.jit
def _curve(hw: Hardware, a: Assumptions, log10_flop, grid: LaunchGrid) -> LaunchResult:
    constants = _constants(hw, a, grid)

    def one(x):
        util, ok, pp, depth, m, dp, st = _plans_at(hw, a, x, grid, constants)
        i = jnp.argmax(util)
        return LaunchResult(util[i], jnp.any(ok), i, pp[i], depth[i], m[i], dp[i], st[i])

    return jax.lax.map(one, log10_flop)


BUDGET_CHUNK = 64  # budgets per compiled call: one compilation serves every curve length


def in_budget_chunks(evaluate: Callable, log10_flop, chunk: int = BUDGET_CHUNK) -> list:
    """``evaluate(budgets)`` (a jitted curve over a 1-D array of log10 FLOP, returning a tuple of
    arrays over the budgets) for any number of budgets, ``chunk`` at a time (the last chunk
    padded with its last budget), so that curves of every length share one compilation; each
    budget is searched alone.  Returns the fields, trimmed and concatenated (NumPy arrays)."""
    x = np.atleast_1d(np.asarray(log10_flop, dtype=np.float64))
    if x.ndim > 1:
        raise ValueError(f"budgets must be one-dimensional, got shape {x.shape}")
    parts = []
    for start in range(0, max(x.size, 1), chunk):
        part = x[start : start + chunk]
        padded = np.pad(part, (0, chunk - part.size), mode="edge") if part.size else np.zeros(chunk)
        parts.append([np.asarray(v)[: part.size] for v in evaluate(jnp.asarray(padded))])
    return [np.concatenate(v) for v in zip(*parts, strict=True)]


def launch_curve(hw: Hardware, a: Assumptions, log10_flop, grid: LaunchGrid | None = None):
    """Best launchable plan at each budget (log10 FLOP): a :class:`LaunchResult` of arrays
    (in chunks of ``BUDGET_CHUNK`` budgets: :func:`in_budget_chunks`)."""
    grid = launch_grid() if grid is None else grid
    hw = Hardware(*(jnp.asarray(x, dtype=jnp.float64) for x in hw))
    a = Assumptions(*(jnp.asarray(x, dtype=jnp.float64) for x in a))
    g = LaunchGrid(*(jnp.asarray(x) for x in grid))
    return LaunchResult(*in_budget_chunks(lambda x: _curve(hw, a, x, g), log10_flop))


def plan_dict(grid: LaunchGrid, res: LaunchResult, i: int, a: Assumptions) -> dict:
    """The launchable plan of budget ``i`` of a curve, in whole numbers (``plan_at_wall``)."""
    j = int(res.index[i])
    tp, cp = int(grid.tp[j]), int(grid.cp[j])
    pp = int(res.pipeline_parallel[i])
    k = int(grid.sequences[j])
    m, dp = int(res.microbatches[i]), int(res.data_parallel[i])
    s = int(float(a.sequence_length))
    return {
        "layers": int(res.layers[i]),
        "tensor_parallel": tp,
        "tensor_parallel_layout": "2D" if bool(grid.two_d[j]) else "1D",
        "pipeline_parallel": pp,
        "virtual_stages": int(grid.virtual_stages[j]),
        "context_parallel": cp,
        "data_parallel": dp,
        "microbatches": m,
        "microbatch_sequences": k,
        "sequence_length": s,
        "microbatch_tokens": k * s / cp,
        "recompute": bool(grid.recompute[j]),
        "accelerators": tp * pp * cp * dp,
        "global_batch_tokens": dp * m * k * s,
        "utilization": float(res.utilization[i]),
    }
