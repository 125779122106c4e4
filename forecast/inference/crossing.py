"""When the frontier run reaches a wall: array functions (NumPy only, no JAX).

Layered as in arviz-stats: ``first_crossing`` works on plain arrays (the propagation and the
frozen-hardware analysis pass it NumPy arrays of log10 FLOP per year).
"""

from __future__ import annotations

import numpy as np


def first_crossing(years: np.ndarray, frontier_log10: np.ndarray, wall_log10: np.ndarray):
    """First (fractional) year in which the frontier run reaches the wall.

    Parameters
    ----------
    years : (Y,) increasing years.
    frontier_log10, wall_log10 : (..., Y) log10 FLOP of the largest run and of the wall.

    Returns
    -------
    hit_year, hit_log10_flop, hit : arrays of shape (...,)
        Linear interpolation of the gap ``frontier - wall`` between the last year below and the
        first year at or above the wall; the FLOP is the frontier's at that moment.  A wall
        already reached in the first year gives that year.  Not reached by the last year:
        ``hit`` False, year and FLOP ``+inf`` (explicit, never NaN).
    """
    years = np.asarray(years, dtype=float)
    f = np.asarray(frontier_log10, dtype=float)
    w = np.asarray(wall_log10, dtype=float)
    gap = f - w  # +inf wall -> -inf gap (never hit); -inf wall -> +inf gap (hit at once)
    reached = gap >= 0.0
    hit = reached.any(axis=-1)
    k = np.argmax(reached, axis=-1)  # first index at or above the wall
    km1 = np.maximum(k - 1, 0)
    g0 = np.take_along_axis(gap, km1[..., None], -1)[..., 0]
    g1 = np.take_along_axis(gap, k[..., None], -1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where((k > 0) & np.isfinite(g0) & np.isfinite(g1), g0 / (g0 - g1), 1.0)
    frac = np.clip(np.nan_to_num(frac, nan=1.0), 0.0, 1.0)
    y = np.where(k > 0, years[km1] + frac * (years[k] - years[km1]), years[0])
    f0 = np.take_along_axis(f, km1[..., None], -1)[..., 0]
    f1 = np.take_along_axis(f, k[..., None], -1)[..., 0]
    flop = np.where(k > 0, f0 + frac * (f1 - f0), f1)
    return np.where(hit, y, np.inf), np.where(hit, flop, np.inf), hit
