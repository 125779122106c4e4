"""Constants shared by several layers, defined once (standard library only, safe to import anywhere)."""

from __future__ import annotations

__all__ = ["DEFAULT_WALL_YEAR_STEP", "REFERENCE_YEAR"]

#: Year at which trend intercepts are defined: years enter the trend models, the propagation's
#: latency drift and the report's trend chart as ``year - REFERENCE_YEAR``.
REFERENCE_YEAR = 2024.0

#: Walls are computed every this many years of the forecast grid and interpolated between
#: (``wallcast run`` and ``wallcast sensitivity``).
DEFAULT_WALL_YEAR_STEP = 2
