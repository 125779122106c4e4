"""Constants shared by several layers, defined once (standard library only, safe to import anywhere)."""

from __future__ import annotations

#: Year at which trend intercepts are defined: years enter the trend models, the propagation's
#: latency drift and the report's trend chart as ``year - REFERENCE_YEAR``.
REFERENCE_YEAR = 2024.0


#: Walls are searched every this many years of the forecast grid (``wallcast run``; above 1, the
#: years between are interpolated; the sensitivity analysis has its own, below). Every year: a
#: draw's walls move 0.1-0.4 dex from one year to the next and not smoothly, so walls
#: interpolated between every 2nd year put the 2025 walls' percentiles 0.45-0.61 dex off (10-25
#: bootstrap standard errors) and single percentiles elsewhere up to 1.07 dex
#: (docs/validation.md section 15, ``benchmarks/year_step.py``).
DEFAULT_WALL_YEAR_STEP = 1


#: Sobol base samples N of ``wallcast sensitivity`` and ``wallcast analyse`` (N (k + 2) + 2k + 1
#: model evaluations for k inputs); sized for ``make run``'s time budget (BENCHMARKS.md
#: section 2, docs/sensitivity-and-backtest.md), ``--samples 1024`` for narrower intervals.
SENSITIVITY_SAMPLES = 256


#: Wall years of the sensitivity analysis: every this many years (and the last), interpolated.
SENSITIVITY_WALL_YEAR_STEP = 4

SECONDS_PER_DAY = 86_400.0
