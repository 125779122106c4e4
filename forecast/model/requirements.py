"""What a frontier accelerator would need for a run to stay inside both walls: the inverse question.

For each draw (its accelerator, assumptions and budget) and each *lever* alone (one hardware or
network property scaled by a factor, every other property at its value): the smallest factor at
which the run sits inside both walls -- at or above 80 % of the small-scale best utilization
(inside the data-movement wall, :data:`forecast.model.search.UTILIZATION_THRESHOLD`) and with a
plan that finishes in time (inside the latency wall) -- on the planner's launchable plans
(:func:`forecast.model.planner.best_plans`).

The factor is found by bisection on log10(factor), bracketed by the trend: in
[:data:`LOG10_FACTOR_MIN`, 0] where the trend already suffices, else in [0,
:data:`LOG10_FACTOR_MAX`], to :data:`BISECTION_STEPS` halvings (3 dex / 2^9 < 0.01 dex); +inf
where even the largest factor does not suffice (the lever alone cannot do it), the lower end
where the smallest factor already does (headroom of 100x or more).  Every lever of every draw moves in
one batched plan evaluation per step.  Bisection assumes the predicate holds for every factor
above the crossing: more bandwidth, a bigger domain or a faster hop never slows a plan, but
they also raise the small-scale best the data-movement test is measured against, so the factor
returned is the crossing the bisection found (documented in docs/validation.md).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from forecast.model.params import Assumptions, Hardware
from forecast.model.planner import best_plans
from forecast.model.search import UTILIZATION_THRESHOLD

LOG10_FACTOR_MIN = -2.0
LOG10_FACTOR_MAX = 3.0
BISECTION_STEPS = 9


class Lever(NamedTuple):
    """One property a roadmap can move: the fields it scales (of ``Hardware`` or
    ``Assumptions``) and the direction that helps (+1: more is better; -1: less is better)."""

    name: str
    label: str
    unit: str
    on: str  # "hardware" | "assumptions"
    fields: tuple[str, ...]
    direction: int


LEVERS: tuple[Lever, ...] = (
    Lever("scaleup_domain_size", "scale-up domain size", "accelerators", "hardware",
          ("scaleup_domain_size",), +1),
    Lever("scaleup_bandwidth", "scale-up bandwidth", "bytes/s per direction", "hardware",
          ("scaleup_bandwidth",), +1),
    Lever("scaleout_bandwidth", "scale-out bandwidth", "bytes/s per direction", "hardware",
          ("scaleout_bandwidth",), +1),
    Lever("latency_per_hop", "latency per hop (intra- and inter-domain together)",
          "s (intra-domain hop)", "assumptions", ("intra_domain_hop_s", "inter_domain_hop_s"), -1),
    Lever("hbm_bandwidth", "HBM bandwidth", "bytes/s", "hardware", ("hbm_bandwidth",), +1),
)  # fmt: skip


def inside_walls(hw: Hardware, a: Assumptions, log10_flop) -> tuple[np.ndarray, np.ndarray]:
    """(inside the data-movement wall, inside the latency wall) per draw at its budget."""
    plans = best_plans(hw, a, log10_flop)
    util = np.asarray(plans.utilization, float)
    latency_ok = np.asarray(plans.feasible, bool) & (util > 0)
    small = np.asarray(plans.small_scale_utilization, float)
    return latency_ok & (util >= UTILIZATION_THRESHOLD * small), latency_ok


def scaled(hw: Hardware, a: Assumptions, lever: Lever, factor) -> tuple[Hardware, Assumptions]:
    """``hw`` and ``a`` with the lever's fields improved by ``factor`` (x factor where more is
    better, / factor where less is; a domain stays at least one accelerator)."""
    f = np.asarray(factor, float)
    mult = f if lever.direction > 0 else 1.0 / f
    if lever.on == "hardware":
        changes = {k: np.asarray(getattr(hw, k), float) * mult for k in lever.fields}
        if "scaleup_domain_size" in changes:
            changes["scaleup_domain_size"] = np.maximum(changes["scaleup_domain_size"], 1.0)
        return hw._replace(**changes), a
    changes = {k: np.asarray(getattr(a, k), float) * mult for k in lever.fields}
    return hw, a._replace(**changes)


def _stack(parts: list[tuple[Hardware, Assumptions]], n: int):
    """Concatenate (hw, a) pairs of n draws each into one batch of len(parts) * n draws."""

    def cat(values):
        return np.concatenate([np.broadcast_to(np.asarray(v, float), (n,)) for v in values])

    hws = Hardware(*(cat([p[0][i] for p in parts]) for i in range(len(Hardware._fields))))
    asm = Assumptions(*(cat([p[1][i] for p in parts]) for i in range(len(Assumptions._fields))))
    return hws, asm


def required_log10_factors(
    hw: Hardware,
    a: Assumptions,
    log10_flop,
    levers: tuple[Lever, ...] = LEVERS,
    steps: int = BISECTION_STEPS,
) -> np.ndarray:
    """log10 of the smallest improvement factor per (lever, draw) that puts each draw's run
    inside both walls: +inf where 10^LOG10_FACTOR_MAX is not enough, LOG10_FACTOR_MIN where
    10^LOG10_FACTOR_MIN already is.  ``hw``, ``a``, ``log10_flop`` broadcast to the draws (1-D)."""
    log10_flop = np.asarray(log10_flop, float).ravel()
    n = log10_flop.size
    nl = len(levers)
    budgets = np.tile(log10_flop, nl)

    def check(log10_factor: np.ndarray) -> np.ndarray:  # (nl, n) -> (nl, n) bool
        parts = [scaled(hw, a, lv, 10.0 ** log10_factor[i]) for i, lv in enumerate(levers)]
        hws, asm = _stack(parts, n)
        dm_ok, lat_ok = inside_walls(hws, asm, budgets)
        return (dm_ok & lat_ok).reshape(nl, n)

    zero = np.zeros((nl, n))
    on_trend = check(zero)  # bracket by the trend: [min, 0] where it suffices, else [0, max]
    lo = np.where(on_trend, LOG10_FACTOR_MIN, 0.0)
    hi = np.where(on_trend, 0.0, LOG10_FACTOR_MAX)
    reachable = on_trend | check(np.full((nl, n), LOG10_FACTOR_MAX))
    already = on_trend & check(np.full((nl, n), LOG10_FACTOR_MIN))
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        ok = check(mid)
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    out = np.where(already, LOG10_FACTOR_MIN, hi)
    return np.where(reachable, out, np.inf)
