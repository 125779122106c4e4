"""The settings of a forecast run: their defaults, in one place, and one dataclass
(:class:`RunSettings`) that the CLI builds from its options and the flows from their parameters.

No JAX and no NumPy: the CLI imports this module for every command.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

DEFAULT_CHAINS = 4
DEFAULT_DRAWS = 1000
"""NUTS draws per chain of the joint fit."""
DEFAULT_SEED = 0
DEFAULT_KEEP = 20
"""Published forecasts kept by retention (the one ``latest`` names is never removed)."""

MIN_WARMUP = 2000
"""Warm-up iterations of a fit at least (more when ``draws`` is larger): NUTS adapts its step size
and diagonal mass matrix there. With 1,000 (the warm-up equal to the default draws) one run in
twenty left ``batch_shortfall_dex`` slow enough to be refused by the convergence gate (bulk ESS
271, R-hat 1.012; the law's ceiling and shortfall lie on a ridge); 2,000 passes every measured
run on both instruction sets with margin (BENCHMARKS.md, "Convergence gate margin")."""

DEFAULT_PROPAGATE_DRAWS = 400
"""Posterior draws propagated per scenario by default (evenly thinned from the fit's chains x
draws). The realistic regime, the forecast's default, costs ~9 ms a draw-year on 2 cores (the
paper's ~1 ms): at 400 draws the eight scenarios' propagation took ~5 minutes of wall clock on 2
cores; BENCHMARKS.md section 10 gives the Monte Carlo error of the hit-year quantiles at this
size."""

FIRST_YEAR = 2024
LAST_YEAR = 2045
"""The forecast's year grid runs from FIRST_YEAR to LAST_YEAR, one point per year by default."""


def default_warmup(draws: int) -> int:
    """Warm-up iterations of a fit of ``draws`` draws per chain: ``max(draws, MIN_WARMUP)``."""
    return max(int(draws), MIN_WARMUP)


def forecast_years(step: int = 1) -> list[float] | None:
    """Every ``step``-th year of the default grid and its last year; None for step 1 (the default
    grid itself, which the fingerprint records as None)."""
    if step == 1:
        return None
    years = [float(y) for y in range(FIRST_YEAR, LAST_YEAR + 1, step)]
    if years[-1] != float(LAST_YEAR):
        years.append(float(LAST_YEAR))
    return years


@dataclass(frozen=True)
class RunSettings:
    """Everything a forecast run is told besides its data: where things are, the sampler, the
    grid, retention and reports. Paths are strings (None: the :mod:`forecast.config.paths`
    default); :meth:`flow_parameters` gives the ``refresh-forecast`` flow's parameters."""

    priors: str | None = None
    scenarios: list[str] | None = None
    data_dir: str | None = None
    outputs_dir: str | None = None
    scenario_dir: str | None = None
    chains: int = DEFAULT_CHAINS
    draws: int = DEFAULT_DRAWS
    warmup: int | None = None
    seed: int = DEFAULT_SEED
    years: list[float] | None = None
    keep: int = DEFAULT_KEEP
    reports: bool = True
    propagate_draws: int | None = DEFAULT_PROPAGATE_DRAWS
    regime: str = "realistic"

    def flow_parameters(self) -> dict[str, Any]:
        """The ``refresh-forecast`` flow's parameters (0 propagate draws: all of them)."""
        params = asdict(self)
        params["propagate_draws"] = self.propagate_draws or None
        return params
