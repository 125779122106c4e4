"""Discrete-event simulator of one 1F1B pipeline step with per-layer gradient buckets.

The oracle for the closed-form step time of :mod:`forecast.model.plan` (tests only).  Each stage
runs the 1F1B order of PipeDream-Flush / Megatron-LM (Narayanan et al. 2021): ``min(pp - s - 1,
m)`` warm-up forwards, then one forward and one backward alternately, then the remaining
backwards.  A forward of microbatch ``i`` on stage ``s`` starts when the stage is free and stage
``s - 1`` has finished that forward; a backward when the stage is free and stage ``s + 1`` has
finished that backward.  Gradients are complete only after a stage's backward of the *last*
microbatch: its layers finish one after another (the backward walks the stage's layers in
reverse), each layer's bucket is launched then, and the stage's buckets are reduced one after
another on its network (a FIFO queue).  The step ends when every stage's reduction and optimizer
step are done.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StageCosts:
    """Seconds per microbatch of one stage, and its gradient reduction."""

    forward_s: float
    backward_s: float
    layers: int  # gradient buckets (one per layer)
    sync_s: float  # all-reduce time of all the stage's gradients (bandwidth part)
    bucket_latency_s: float = 0.0  # latency paid by every bucket's all-reduce
    optimizer_s: float = 0.0  # optimizer step after the last bucket


def one_f_one_b_order(stage: int, stages: int, microbatches: int) -> list[tuple[str, int]]:
    """The 1F1B operation order of one stage: ('F', i) and ('B', i)."""
    warmup = min(stages - stage - 1, microbatches)
    order = [("F", i) for i in range(warmup)]
    f, b = warmup, 0
    while f < microbatches:
        order.append(("F", f))
        f += 1
        order.append(("B", b))
        b += 1
    order.extend(("B", i) for i in range(b, microbatches))
    return order


def simulate_step(stages: list[StageCosts], microbatches: int) -> dict[str, float]:
    """Simulate one step; returns ``step_s``, ``pipeline_s`` (last backward end) and per-stage
    ``sync_end_s`` maxima."""
    pp, m = len(stages), microbatches
    orders = [one_f_one_b_order(s, pp, m) for s in range(pp)]
    pos = [0] * pp
    free = [0.0] * pp
    done: dict[tuple[str, int, int], float] = {}
    last_backward_start = [0.0] * pp
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for s in range(pp):
            if pos[s] >= len(orders[s]):
                continue
            kind, i = orders[s][pos[s]]
            if kind == "F":
                dep = done.get(("F", s - 1, i)) if s > 0 else 0.0
                cost = stages[s].forward_s
            else:
                dep = done.get(("B", s + 1, i)) if s < pp - 1 else done.get(("F", s, i))
                cost = stages[s].backward_s
            if dep is None:
                continue
            start = max(free[s], dep)
            if kind == "B" and i == m - 1:
                last_backward_start[s] = start
            free[s] = start + cost
            done[(kind, s, i)] = free[s]
            pos[s] += 1
            remaining -= 1
            progressed = True
        if not progressed:  # pragma: no cover - 1F1B never deadlocks
            raise RuntimeError("deadlock")
    pipeline_end = max(free)
    ends = []
    for s, c in enumerate(stages):
        queue = last_backward_start[s]
        for k in range(1, c.layers + 1):
            ready = last_backward_start[s] + k * c.backward_s / c.layers
            queue = max(queue, ready) + c.sync_s / c.layers + c.bucket_latency_s
        ends.append(max(queue, free[s]) + c.optimizer_s)
    return {"step_s": float(max(ends)), "pipeline_s": float(pipeline_end)}


def random_stages(rng: np.random.Generator, pp: int, uniform: bool) -> list[StageCosts]:
    """Random stage costs: equal stages (the closed form's case) or each stage its own."""
    layers = int(rng.integers(1, 6))
    if uniform:
        f = float(rng.uniform(0.5, 2.0))
        sync = float(rng.uniform(0.0, 3.0 * f * layers)) * float(rng.integers(0, 2))
        lat = float(rng.uniform(0.0, 0.2))
        opt = float(rng.uniform(0.0, 0.3))
        return [StageCosts(f, 2.0 * f, layers, sync, lat, opt) for _ in range(pp)]
    return [
        StageCosts(
            float(rng.uniform(0.5, 2.0)),
            float(rng.uniform(1.0, 4.0)),
            layers,
            float(rng.uniform(0.0, 6.0)),
            float(rng.uniform(0.0, 0.2)),
            float(rng.uniform(0.0, 0.3)),
        )
        for _ in range(pp)
    ]
