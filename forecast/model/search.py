"""Search over parallel plans, the utilization curve and both walls.

``utilization_curve`` evaluates every plan shape of a grid (tp and pp powers of two, 1D or 2D
tensor parallelism, the number of microbatches optimized per plan by golden-section search) at
every compute budget of a grid, vectorized in chunks of 64 budgets, and keeps the best.  Walls
are read off the curve:

* **data-movement wall**: the compute up to which the best plan's utilization stays at or
  above ``threshold`` (0.8) times the maximum utilization the accelerator reaches at small
  scale, as in Epoch's Distributed Training Interactive Simulator [S]: the first crossing after
  the maximum (discrete plan switches can make the curve recover briefly further out);
* **latency wall**: the largest compute for which any plan meets the deadline at all.

Both are interpolated between grid points (the utilization linearly in log10 compute; the
latency wall by bisection on feasibility), so they vary continuously with the inputs.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from forecast.config.runtime import require_x64
from forecast.model.params import Assumptions, Hardware
from forecast.model.plan import best_plan, best_plan_over_m
from forecast.model.realistic import in_budget_chunks, launch_curve, launch_grid, plan_dict
from forecast.model.scaling import model_shape

DEFAULT_LOG10_FLOP_GRID = np.round(np.arange(20.0, 40.0001, 0.05), 4)
UTILIZATION_THRESHOLD = 0.8


class PlanGrid(NamedTuple):
    """Flattened plan shapes (one entry per shape).

    ``m`` is the number of microbatches; 0 means "optimize it" (golden-section search over a
    continuous m, :func:`forecast.model.plan.best_plan_over_m`).
    """

    tp: np.ndarray
    pp: np.ndarray
    m: np.ndarray
    two_d: np.ndarray


def plan_grid(max_log2_tp: int = 18, max_log2_pp: int = 12) -> PlanGrid:
    """Every tp and pp that is a power of two, both TP layouts; m optimized per plan."""
    tp = 2.0 ** np.arange(0, max_log2_tp + 1)
    pp = 2.0 ** np.arange(0, max_log2_pp + 1)
    two_d = np.array([False, True])
    grids = np.meshgrid(tp, pp, two_d, indexing="ij")
    flat = [g.ravel() for g in grids]
    keep = ~(flat[2] & (flat[0] < 4))  # 2D needs at least a 2x2 mesh
    tp, pp, two_d = (f[keep] for f in flat)
    return PlanGrid(tp, pp, np.zeros_like(tp), two_d)


class Curve(NamedTuple):
    """Best plan at each compute budget."""

    log10_flop: jnp.ndarray  # (C,)
    utilization: jnp.ndarray  # (C,) best utilization, 0 where no plan is feasible
    feasible: jnp.ndarray  # (C,)
    tp: jnp.ndarray
    pp: jnp.ndarray
    m: jnp.ndarray
    two_d: jnp.ndarray
    data_parallel: jnp.ndarray
    microbatch_tokens: jnp.ndarray
    n_accelerators: jnp.ndarray


CURVE_CHUNK = 64  # budgets per compiled call of utilization_curve (in_budget_chunks)


@jax.jit
def _curve(hw: Hardware, a: Assumptions, log10_flop, tp, pp, m, two_d):
    shape = model_shape(log10_flop[:, None], a)
    res, m_best = best_plan_over_m(hw, a, shape, tp[None, :], pp[None, :], two_d[None, :])
    fixed = best_plan(
        hw, a, shape, tp[None, :], pp[None, :], jnp.maximum(m, 1.0)[None, :], two_d[None, :]
    )
    use_fixed = (m > 0)[None, :]
    res = type(res)(*(jnp.where(use_fixed, f, r) for f, r in zip(fixed, res, strict=True)))
    m_all = jnp.where(use_fixed, m[None, :], m_best)
    idx = jnp.argmax(res.utilization, axis=1)

    def take(x):
        return jnp.take_along_axis(jnp.broadcast_to(x, res.utilization.shape), idx[:, None], 1)[
            :, 0
        ]

    return Curve(
        log10_flop=log10_flop,
        utilization=take(res.utilization),
        feasible=jnp.any(res.feasible, axis=1),
        tp=take(tp[None, :]),
        pp=take(pp[None, :]),
        m=take(m_all),
        two_d=take(two_d[None, :]),
        data_parallel=take(res.data_parallel),
        microbatch_tokens=take(res.microbatch_tokens),
        n_accelerators=take(res.n_accelerators),
    )


def utilization_curve(
    hw: Hardware, a: Assumptions | None = None, log10_flop=None, grid: PlanGrid | None = None
) -> Curve:
    """Best achievable utilization (and its plan) at each compute budget (log10 FLOP)."""
    require_x64()
    a = Assumptions() if a is None else a
    log10_flop = DEFAULT_LOG10_FLOP_GRID if log10_flop is None else log10_flop
    grid = plan_grid() if grid is None else grid
    hw = Hardware(*(jnp.asarray(x, dtype=jnp.float64) for x in hw))
    a = Assumptions(*(jnp.asarray(x, dtype=jnp.float64) for x in a))
    g = [jnp.asarray(x) for x in grid]
    # curves of 1, 51, 61 or 513 budgets share one compilation (~1 s each otherwise)
    fields = in_budget_chunks(lambda x: _curve(hw, a, x, *g), log10_flop, CURVE_CHUNK)
    return Curve(*(jnp.asarray(v) for v in fields))


def crossing_log10(log10_flop, values, level, start=None):
    """Where ``values`` (sampled on increasing ``log10_flop``) first drops below ``level``.

    The crossing searched is the first one at or after index ``start`` (default: the first
    point at or above ``level``), i.e. the end of the first run of points at or above
    ``level``; linear interpolation towards the next grid point.  +inf if the run reaches the
    last point, -inf if no point is at or above ``level``.  Works on the last axis.
    """
    x = jnp.asarray(log10_flop)
    v = jnp.asarray(values)
    above = v >= level
    n = v.shape[-1]
    idx = jnp.arange(n)
    first_above = jnp.min(jnp.where(above, idx, n), axis=-1)
    s = first_above if start is None else jnp.maximum(jnp.asarray(start), first_above)
    below_after = (~above) & (idx > s[..., None])
    first_below = jnp.min(jnp.where(below_after, idx, n), axis=-1)
    last = first_below - 1
    k = jnp.clip(last, 0, n - 2)
    v0 = jnp.take_along_axis(v, k[..., None], -1)[..., 0]
    v1 = jnp.take_along_axis(v, (k + 1)[..., None], -1)[..., 0]
    frac = jnp.clip((v0 - level) / jnp.where(v0 > v1, v0 - v1, 1.0), 0.0, 1.0)
    out = x[k] + frac * (x[k + 1] - x[k])
    out = jnp.where(first_below >= n, jnp.inf, out)
    return jnp.where(first_above >= n, -jnp.inf, out)


class Walls(NamedTuple):
    """Both walls of one accelerator and the plan at the data-movement wall."""

    max_utilization: float
    data_movement_wall_log10_flop: float
    latency_wall_log10_flop: float
    plan_at_wall: dict


def walls_from_curve(
    curve: Curve, threshold: float = UTILIZATION_THRESHOLD
) -> tuple[float, float, float]:
    """(max utilization, log10 data-movement wall, log10 latency wall) read off a curve."""
    u = np.asarray(curve.utilization)
    umax = float(u.max())
    dm = float(crossing_log10(curve.log10_flop, u, threshold * umax, start=int(np.argmax(u))))
    lat = float(crossing_log10(curve.log10_flop, np.asarray(curve.feasible, dtype=float), 0.5))
    return umax, dm, lat


REGIMES = ("paper", "realistic")
"""``paper``: plans relaxed to continuous quantities (microbatches of any number of tokens,
fractional degrees and layers per stage), Erdil & Schneider-Joseph's idealization;
``realistic``: plans a run can launch (whole sequences or explicit context parallelism, whole
layers per stage, integer degrees, tp within the heads, recomputation and interleaving as
options; :mod:`forecast.model.realistic`)."""


class _Feasibility(NamedTuple):
    log10_flop: jnp.ndarray
    utilization: jnp.ndarray
    feasible: jnp.ndarray


def regime_curve(hw, a, log10_flop=None, grid=None, regime: str = "paper"):
    """The best plan's utilization and feasibility at the budgets ``log10_flop`` (default
    :data:`DEFAULT_LOG10_FLOP_GRID`) in a plan regime: ``paper`` (:func:`utilization_curve`, a
    :class:`Curve`) or ``realistic`` (:func:`forecast.model.realistic.launch_curve` over
    ``grid``, default every launchable shape); either has ``utilization`` and ``feasible``."""
    if regime == "paper":
        return utilization_curve(hw, a, log10_flop, grid)
    if regime != "realistic":
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    require_x64()
    x = jnp.asarray(DEFAULT_LOG10_FLOP_GRID if log10_flop is None else log10_flop, jnp.float64)
    res = launch_curve(hw, a, x, grid)
    return _Feasibility(x, res.utilization, res.feasible)


def find_walls(
    hw: Hardware,
    a: Assumptions | None = None,
    threshold: float = UTILIZATION_THRESHOLD,
    grid: PlanGrid | None = None,
    log10_flop=None,
    refine: bool = True,
    regime: str = "paper",
) -> Walls:
    """Walls of one accelerator by the full plan search, refined between grid points.

    ``regime``: ``"paper"`` (the continuous relaxation, default) or ``"realistic"`` (plans a
    run can launch; ``grid`` is then a :class:`forecast.model.realistic.LaunchGrid`, default
    every launchable shape, and ``plan_at_wall`` holds whole numbers)."""
    a = Assumptions() if a is None else a
    if regime == "realistic":
        return _find_realistic_walls(hw, a, threshold, log10_flop, refine, grid)
    curve = utilization_curve(hw, a, log10_flop, grid)
    umax, dm, lat = walls_from_curve(curve, threshold)
    if refine and np.isfinite(lat):
        lo, hi = lat - 0.06, lat + 0.06
        fine = utilization_curve(hw, a, np.linspace(lo, hi, 61), grid)
        lat = float(crossing_log10(fine.log10_flop, np.asarray(fine.feasible, dtype=float), 0.5))
    if refine and np.isfinite(dm):
        fine = utilization_curve(hw, a, np.linspace(dm - 0.05, dm + 0.05, 51), grid)
        dm_fine = float(
            crossing_log10(fine.log10_flop, np.asarray(fine.utilization), threshold * umax)
        )
        dm = dm_fine if abs(dm_fine - dm) <= 0.05 else dm
    plan = {}
    if np.isfinite(dm):
        at = utilization_curve(hw, a, np.array([dm]), grid)
        plan = {
            "tensor_parallel": int(at.tp[0]),
            "tensor_parallel_layout": "2D" if bool(at.two_d[0]) else "1D",
            "pipeline_parallel": int(at.pp[0]),
            "microbatches": float(at.m[0]),  # continuous, as the plan uses it
            "data_parallel": float(at.data_parallel[0]),
            "microbatch_tokens": float(at.microbatch_tokens[0]),
            "accelerators": float(at.n_accelerators[0]),
            "utilization": float(at.utilization[0]),
        }
    return Walls(umax, dm, lat, plan)


def _find_realistic_walls(hw, a, threshold, log10_flop, refine, grid=None) -> Walls:
    """:func:`find_walls` in the ``realistic`` regime (the same reading of the curve)."""
    grid = launch_grid() if grid is None else grid
    curve = regime_curve(hw, a, log10_flop, grid, "realistic")
    umax, dm, lat = walls_from_curve(curve, threshold)
    if refine and np.isfinite(lat):
        fine = regime_curve(hw, a, np.linspace(lat - 0.06, lat + 0.06, 61), grid, "realistic")
        lat = float(crossing_log10(fine.log10_flop, np.asarray(fine.feasible, dtype=float), 0.5))
    if refine and np.isfinite(dm):
        fine = regime_curve(hw, a, np.linspace(dm - 0.05, dm + 0.05, 51), grid, "realistic")
        dm_fine = float(
            crossing_log10(fine.log10_flop, np.asarray(fine.utilization), threshold * umax)
        )
        dm = dm_fine if abs(dm_fine - dm) <= 0.05 else dm
    plan = {}
    if np.isfinite(dm):
        # the last budget at or before the wall whose best plan is still above the level
        xs = np.array([dm])
        at = launch_curve(hw, a, xs, grid)
        plan = plan_dict(grid, at, 0, a)
    return Walls(umax, dm, lat, plan)
