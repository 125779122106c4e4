"""The settings of a forecast run: one dataclass (:class:`RunSettings`) built from the CLI's or
the flow's parameters, and the sampler defaults it carries.
"""

from __future__ import annotations

MIN_WARMUP = 2000


"""Warm-up iterations of a fit at least (more when ``draws`` is larger): NUTS adapts its step size
and diagonal mass matrix there. With 1,000 (the warm-up equal to the default draws) one run in
twenty left ``batch_shortfall_dex`` slow enough to be refused by the convergence gate (bulk ESS
271, R-hat 1.012; the law's ceiling and shortfall lie on a ridge); 2,000 passes every measured
run on both instruction sets with margin (BENCHMARKS.md, "Convergence gate margin")."""


def default_warmup(draws: int) -> int:
    """Warm-up iterations of a fit of ``draws`` draws per chain: ``max(draws, MIN_WARMUP)``."""
    return max(int(draws), MIN_WARMUP)


DEFAULT_PROPAGATE_DRAWS = 1000


"""Posterior draws propagated per scenario by default (evenly thinned from the fit's chains x
draws; BENCHMARKS.md gives the Monte Carlo error of the hit-year quantiles at this size)."""
