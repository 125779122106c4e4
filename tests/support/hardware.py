"""Shared facts of the property tests about hardware and run length."""

from __future__ import annotations

MORE_IS_BETTER = (
    "hbm_bandwidth",
    "scaleup_bandwidth",
    "scaleout_bandwidth",
    "hbm_capacity",
    "scaleup_domain_size",
    "duration_s",
)
"""Fields (of ``Hardware`` or ``Assumptions``) whose increase never lowers either wall, in either
regime: every plan's step time falls or its memory room grows.  FLOP/s is not among them (faster
chips alone can lower a wall, the paper's point)."""
