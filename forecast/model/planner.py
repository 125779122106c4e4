"""The best launchable plan per draw at one compute budget: the planner's physics.

For each draw (its own hardware and assumptions, and its own budget) the best plan of the
realistic regime's shortlist of shapes (:data:`forecast.model.realistic_shortlist.SHAPES`, the
same plans, microbatch choice and utilization as the realistic fast path,
:mod:`forecast.model.realistic_fast`), with its whole degrees, and the small-scale maximum
utilization the cost multiplier is taken against: the best plan over :data:`SMALL_LOG10_FLOP`
(1e20 to 1e27 FLOP every 0.5 dex), which the walls search refines on a finer grid (so this
maximum can sit a little below the walls search's: a multiplier a little nearer 1).

Pure JAX functions of arrays; :func:`best_plans` runs them in chunks of draws.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from forecast.config.runtime import require_x64
from forecast.model.params import Assumptions, Hardware
from forecast.model.realistic import LaunchGrid, LaunchResult, _constants, _plans_at, plan_dict
from forecast.model.realistic_fast import shortlist_grid

SMALL_LOG10_FLOP = np.round(np.arange(20.0, 27.0001, 0.5), 4)  # 15 budgets
DRAW_CHUNK = 32


class PlanDraws(NamedTuple):
    """The best launchable plan per draw (arrays over draws)."""

    utilization: np.ndarray  # 0 where no plan finishes in time
    feasible: np.ndarray
    index: np.ndarray  # into the grid
    pipeline_parallel: np.ndarray
    layers: np.ndarray
    microbatches: np.ndarray
    data_parallel: np.ndarray
    step_time_s: np.ndarray
    small_scale_utilization: np.ndarray  # the best over SMALL_LOG10_FLOP


def _one(hw: Hardware, a: Assumptions, x, g: LaunchGrid):
    constants = _constants(hw, a, g)
    util, ok, pp, depth, m, dp, st = _plans_at(hw, a, x, g, constants)
    i = jnp.argmax(util)

    def small(xs):
        return jnp.max(_plans_at(hw, a, xs, g, constants)[0])

    u_small = jnp.max(jax.vmap(small)(jnp.asarray(SMALL_LOG10_FLOP)))
    return util[i], jnp.any(ok), i, pp[i], depth[i], m[i], dp[i], st[i], u_small


@jax.jit
def _chunk(hw: Hardware, a: Assumptions, x, g: LaunchGrid):
    return jax.lax.map(lambda z: _one(z[0], z[1], z[2], g), (hw, a, x))


def best_plans(
    hw: Hardware, a: Assumptions, log10_flop, grid: LaunchGrid | None = None
) -> PlanDraws:
    """The best launchable plan of each draw at its budget (log10 FLOP): fields of ``hw``, ``a``
    and ``log10_flop`` broadcast to the draws' shape (1-D)."""
    require_x64()
    g = shortlist_grid() if grid is None else grid
    g = LaunchGrid(*(jnp.asarray(x) for x in g))
    fields = [np.asarray(v, dtype=np.float64) for v in (*hw, *a, log10_flop)]
    shape = np.broadcast_shapes(*(f.shape for f in fields))
    flat = [np.broadcast_to(f, shape).reshape(-1) for f in fields]
    n, nh, na = flat[0].size, len(Hardware._fields), len(Assumptions._fields)
    parts = []
    for start in range(0, n, DRAW_CHUNK):
        part = [f[start : start + DRAW_CHUNK] for f in flat]
        pad = DRAW_CHUNK - part[0].size
        part = [jnp.asarray(np.pad(p, (0, pad), mode="edge")) for p in part]
        res = _chunk(Hardware(*part[:nh]), Assumptions(*part[nh : nh + na]), part[-1], g)
        parts.append([np.asarray(r)[: DRAW_CHUNK - pad] for r in res])
    cols = [np.concatenate(c).reshape(shape) for c in zip(*parts, strict=True)]
    return PlanDraws(*cols)


def plan_of(grid: LaunchGrid, plans: PlanDraws, k: int, sequence_length: float) -> dict:
    """Draw ``k``'s plan in whole numbers (:func:`forecast.model.realistic.plan_dict`, with its
    step time; empty when no plan finishes in time)."""
    if not bool(plans.feasible[k]) or plans.utilization[k] <= 0:
        return {}
    res = LaunchResult(*plans[: len(LaunchResult._fields)])
    a = Assumptions()._replace(sequence_length=float(sequence_length))
    return {**plan_dict(grid, res, k, a), "step_time_s": float(plans.step_time_s[k])}
