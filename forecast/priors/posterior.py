"""Priors built from posterior draws: a fitted input as a distribution that Sobol designs can sample.

A sensitivity analysis maps uniforms through each input's inverse CDF (:meth:`Prior.ppf`). For an
input the joint model fits, that distribution is its posterior: :func:`posterior_prior` turns the
draws into a ``quantile_<family>`` :class:`Prior` with knots at :data:`POSTERIOR_KNOTS` (1 % to
99 %), interpolated linearly in the standard-normal score in the key's transformed space (log for
positive keys, logit for fractions), exactly as a quantile-specified prior file entry is.

:func:`normal_scores_correlation` measures how the draws of several inputs move together (the
Pearson correlation of their normal scores, i.e. the correlation matrix of a Gaussian copula),
which a Sobol design needs to sample correlated posteriors jointly.

NumPy/SciPy only (no JAX): usable by commands that only read a forecast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy import special, stats

from forecast.priors.distributions import Prior
from forecast.priors.registry import PARAMETERS

__all__ = ["POSTERIOR_KNOTS", "normal_scores_correlation", "posterior_prior"]

POSTERIOR_KNOTS: tuple[int, ...] = (1, 2, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 98, 99)
"""Percentiles of the draws kept as knots of a posterior prior (``p01`` ... ``p99``)."""

_FAMILY = {"positive": "quantile_lognormal", "unit_interval": "quantile_logitnormal"}


def posterior_prior(
    key: str,
    draws: np.ndarray | Sequence[float],
    source: str,
    *,
    knots: Sequence[int] = POSTERIOR_KNOTS,
    note: str = "",
) -> Prior:
    """A :class:`Prior` for ``key`` whose quantiles are those of ``draws`` at ``knots`` (percent).

    The family follows the key's domain (``quantile_lognormal``, ``quantile_logitnormal`` or
    ``quantile_normal``). Knots with tied values (draws piled on one value) are merged, keeping
    the first; draws that are all equal give a point mass. Raises ``ValueError`` for an unknown
    key, fewer than 2 draws, non-finite draws or draws outside the key's domain.
    """
    if key not in PARAMETERS:
        raise ValueError(f"unknown prior key {key!r}")
    spec = PARAMETERS[key]
    x = np.asarray(draws, dtype=float).ravel()
    if x.size < 2:
        raise ValueError(f"{key}: need at least 2 posterior draws, got {x.size}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{key}: {int(np.sum(~np.isfinite(x)))} posterior draws are not finite")
    if spec.domain == "positive" and not np.all(x > 0):
        raise ValueError(f"{key}: posterior draws must be > 0 (min {x.min():g})")
    if spec.domain == "unit_interval" and not np.all((x > 0) & (x < 1)):
        raise ValueError(f"{key}: posterior draws must lie in (0, 1) ({x.min():g}..{x.max():g})")
    unit = spec.unit
    if np.all(x == x[0]):
        return Prior(key, "point", {"value": float(x[0])}, source, note, unit=unit, form="value")
    pct = sorted({int(k) for k in knots})
    if pct[0] < 1 or pct[-1] > 99:
        raise ValueError(f"knots must be percentiles in 1..99, got {pct[0]}..{pct[-1]}")
    values = np.quantile(x, np.asarray(pct) / 100.0)
    params: dict[str, float] = {}
    last = -np.inf
    for p, v in zip(pct, values, strict=True):
        if v > last:
            params[f"p{p:02d}"] = float(v)
            last = v
    if len(params) < 2:  # pragma: no cover (x not constant gives 2 distinct extreme knots)
        raise ValueError(f"{key}: posterior draws too concentrated for a quantile prior")
    family = _FAMILY.get(spec.domain, "quantile_normal")
    return Prior(key, family, params, source, note, unit=unit, form="quantiles")


def normal_scores_correlation(columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """Correlation matrix of the normal scores of the columns (same length), in their order.

    Each column is replaced by ``Phi^-1(rank / (n + 1))`` (ties get their mean rank) and the
    Pearson correlation of those scores is returned: the correlation matrix of the Gaussian
    copula that fits the draws, invariant to each column's monotone transforms (log, 10**x).
    A constant column gets zero correlation with the others (and 1 with itself).
    """
    names = list(columns)
    data = [np.asarray(columns[k], dtype=float).ravel() for k in names]
    n = data[0].size if data else 0
    if any(d.size != n for d in data):
        raise ValueError("columns must have the same number of draws")
    k = len(names)
    out = np.eye(k)
    if k < 2 or n < 3:
        return out
    scores = []
    for d in data:
        if np.all(d == d[0]):
            scores.append(np.zeros(n))
            continue
        scores.append(special.ndtri(stats.rankdata(d) / (n + 1.0)))
    z = np.vstack(scores)
    sd = z.std(axis=1)
    for i in range(k):
        for j in range(i + 1, k):
            if sd[i] > 0 and sd[j] > 0:
                r = float(np.mean((z[i] - z[i].mean()) * (z[j] - z[j].mean())) / (sd[i] * sd[j]))
                out[i, j] = out[j, i] = r
    return out
