"""Pareto-smoothed importance sampling (PSIS) in NumPy: log weights and the Pareto k diagnostic.

Vehtari, Simpson, Gelman, Yao and Gabry (2024), *Pareto Smoothed Importance Sampling*, JMLR 25
(arXiv:1507.02646): the largest ``M = min(n / 5, 3 sqrt(n / r_eff))`` raw importance ratios are
replaced by the expected order statistics of a generalized Pareto distribution fitted to them
(the empirical-Bayes fit of Zhang and Stephens 2009, with the weakly informative prior on k
centred at 0.5 that the paper recommends for small tails), capped at the largest raw ratio.  k
above 0.7 means the reweighted estimate is unreliable.  The same algorithm as ArviZ's ``psislw``
(``tests/queries/test_psis.py`` checks them against each other), without importing JAX, so a
what-if answer stays a light read of the stored draws.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

K_THRESHOLD = 0.7
"""Pareto k above which the importance-sampling estimate is unreliable [vehtari2024]."""


def _gpd_fit(x: np.ndarray) -> tuple[float, float]:
    """(k, sigma) of a generalized Pareto fitted to sorted exceedances ``x`` (Zhang & Stephens
    2009, with the prior n*k + 10*0.5 over n + 10)."""
    n = x.size
    m = 30 + int(n**0.5)
    quartile = x[int(n / 4 + 0.5) - 1]
    if quartile <= x[0]:
        return float("nan"), float("nan")
    b = 1.0 - np.sqrt(m / (np.arange(1, m + 1, dtype=float) - 0.5))
    b = b / (3.0 * quartile) + 1.0 / x[-1]
    k_b = np.mean(np.log1p(-b[:, None] * x), axis=1)
    profile = n * (np.log(-b / k_b) - k_b - 1.0)
    w = np.exp(profile - logsumexp(profile))
    keep = w >= 10 * np.finfo(float).eps
    w, b = w[keep] / w[keep].sum(), b[keep]
    b_post = float(np.sum(b * w))
    k = float(np.mean(np.log1p(-b_post * x)))
    sigma = -k / b_post
    k = (n * k + 10 * 0.5) / (n + 10)
    return (float("inf"), float("nan")) if np.isnan(k) else (k, sigma)


def _gpd_quantile(p: np.ndarray, k: float, sigma: float, mu: float) -> np.ndarray:
    if k == 0:
        return mu - sigma * np.log1p(-p)
    return mu + sigma * np.expm1(-k * np.log1p(-p)) / k


def tail_length(n: int, r_eff: float = 1.0) -> int:
    """Draws in the smoothed tail: 3 sqrt(n / r_eff), or n / 5 for small samples."""
    return int(np.floor(3 * (n / r_eff) ** 0.5 if n * r_eff > 225 else n / 5))


def psis_log_weights(log_ratios, r_eff: float = 1.0) -> tuple[np.ndarray, float]:
    """Normalized PSIS log weights of raw log importance ratios (any shape, flattened to draws)
    and the Pareto k of their right tail.  Ratios of -inf (a draw the new distribution excludes)
    stay -inf; with too few finite ratios to fit a tail (fewer than 25), equal weights on them
    and k = +inf."""
    lr = np.asarray(log_ratios, dtype=float)
    shape = lr.shape
    lr = lr.ravel()
    finite = np.isfinite(lr)
    out = np.full(lr.size, -np.inf)
    n = int(finite.sum())
    m = tail_length(n, r_eff)
    if n < 5 or m < 5:  # too few draws to fit a tail: equal weights on the finite ones, k inf
        if n:
            out[finite] = -math.log(n)
        return out.reshape(shape), float("inf")
    w = lr[finite] - np.max(lr[finite])
    order = np.argsort(w, kind="stable")
    tail_idx = order[n - m :]
    tail = w[tail_idx]
    cutoff = w[order[n - m - 1]]
    k = float("inf")
    if tail[-1] - tail[0] > np.finfo(float).tiny:
        k, sigma = _gpd_fit(np.exp(tail) - np.exp(cutoff))
        if np.isfinite(k):
            p = (np.arange(m) + 0.5) / m
            smoothed = np.log(_gpd_quantile(p, k, sigma, np.exp(cutoff)))
            w[tail_idx] = np.minimum(smoothed, tail[-1])
    else:
        k = 0.0  # a flat tail: equal weights are exact
    out[finite] = w - logsumexp(w)
    return out.reshape(shape), k
