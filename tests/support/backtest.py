"""Backtest results with chosen values, for the tests of the backtest dataset and of the report's
backtest sections (no fit)."""

from __future__ import annotations

import numpy as np

from forecast.analyses.backtest import CURVE_PROBS, PROBS
from forecast.analyses.frontier_backtest import FrontierOriginResult


def frontier_result(origin: int, observed, median, covered80, n_train: int = 5):
    """A FrontierOriginResult with chosen values; coverage of 50/95% set equal to 80%'s."""
    observed, median = np.asarray(observed, float), np.asarray(median, float)
    covered = np.tile(np.asarray(covered80, bool), (len(PROBS), 1))
    n = observed.size
    return FrontierOriginResult(
        origin=origin,
        train_start=2018.0,
        n_train=n_train,
        names=np.array([f"run{i}" for i in range(n)]),
        years=np.full(n, origin + 1.0),
        is_speculative=np.zeros(n, bool),
        observed=observed,
        median=median,
        lower=np.tile(median - 0.5, (len(PROBS), 1)),
        upper=np.tile(median + 0.5, (len(PROBS), 1)),
        covered=covered,
        curve_covered=np.tile(np.asarray(covered80, bool), (len(CURVE_PROBS), 1)),
        pit=np.full(n, 0.5),
        log_density=np.zeros(n),
        growth_median=4.5,
        growth_lower=4.0,
        growth_upper=5.0,
        sigma_median=0.3,
        rhat_max=1.001,
        divergences=0,
        fit_seconds=0.1,
        settings={"chains": 2, "warmup": 50, "draws": 50, "seed": 0},
    )
