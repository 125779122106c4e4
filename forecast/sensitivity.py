"""Which uncertain input moves the walls most: variance-based (Sobol) indices and a tornado.

Two layers, as elsewhere in the project:

* **Arrays** (NumPy/SciPy only): :func:`saltelli_design` builds the two scrambled-Sobol base
  matrices A and B and the k "radial" matrices AB_i (A with column i taken from B);
  :func:`sobol_indices` turns the model outputs on them into first-order and total indices with
  the Saltelli et al. (2010) first-order estimator and Jansen's (1999) total-order estimator,
  plus bootstrap confidence intervals (resampling the N base rows).
* **Model** (:func:`run_sensitivity`): the inputs are every prior of the scenario that the
  propagation uses and that is not a point mass, plus the trend slopes (hardware growth rates and
  frontier-compute growth) and the 2024 frontier compute, all sampled from their *priors*
  (the 2024 hardware levels are held at the forecast's posterior medians, or at a data anchor
  when no forecast is given).  The targets are the hit year and the hit FLOP (log10) of each
  wall.  One vectorized propagation (:func:`forecast.propagate.propagate`, walls every
  ``wall_year_step`` years and interpolated in between) evaluates A, B, every AB_i and the
  tornado points together.

Never-hit draws: a wall not reached by the last year (2045) has hit year +inf; for the
variance-based indices the year is capped at ``last year + 1`` (2046) and the hit FLOP at the
frontier trend's log10 FLOP in that year.  The share of capped draws is stored per target.

Tornado (one at a time): every input at its prior median; each input in turn at its 10th and
90th percentile; the target value there (with all other inputs at their medians the model is
deterministic, so "the median target" is that single value).

The result is an :class:`xarray.Dataset` with dims ``target`` and ``input``
(:func:`sensitivity_dataset`), stored in a forecast file as group ``sensitivity`` by
:func:`add_sensitivity` (via :func:`forecast.storage.add_group`, shared with the backtest).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from forecast.constants import DEFAULT_WALL_YEAR_STEP, REFERENCE_YEAR
from forecast.paths import default_priors_path
from forecast.priors.registry import TREND_SAMPLED_KEYS
from forecast.storage import add_group

__all__ = [
    "DEFAULT_SAMPLES",
    "DEFAULT_WALL_YEAR_STEP",
    "SensitivityResult",
    "TARGETS",
    "add_sensitivity",
    "data_anchors",
    "forecast_anchors",
    "input_keys",
    "ranking_rows",
    "run_sensitivity",
    "saltelli_design",
    "sensitivity_dataset",
    "sobol_indices",
]

DEFAULT_SAMPLES = 1024
"""Base samples N of the CLI: N * (k + 2) model evaluations (k = number of inputs)."""

DEFAULT_BOOTSTRAP = 300

TREND_KEYS: tuple[str, ...] = TREND_SAMPLED_KEYS
"""Trend inputs sampled from the priors (the trend fit's own priors) instead of the posterior."""

TARGETS: tuple[str, ...] = (
    "data_movement_hit_year",
    "latency_hit_year",
    "data_movement_hit_log10_flop",
    "latency_hit_log10_flop",
)


# ============================================================================================
# Array layer
# ============================================================================================


def saltelli_design(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Uniform design for Sobol indices: (A, B, AB), shapes (n, k), (n, k), (k, n, k).

    A and B are the two halves of an ``n x 2k`` scrambled Sobol sequence
    (``scipy.stats.qmc.Sobol``); ``AB[i]`` is A with column i replaced by B's.  ``n`` a power of
    two keeps the sequence balanced.  Values lie strictly inside (0, 1).
    """
    from scipy.stats import qmc

    if n < 2 or k < 1:
        raise ValueError(f"need n >= 2 and k >= 1, got n={n}, k={k}")
    sampler = qmc.Sobol(d=2 * k, scramble=True, seed=seed)
    m = int(np.log2(n))
    if 2**m == n:
        u = sampler.random_base2(m)
    else:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # balance warning for n != 2^m
            u = sampler.random(n)
    eps = 1e-12
    u = np.clip(u, eps, 1.0 - eps)
    a, b = u[:, :k], u[:, k:]
    ab = np.repeat(a[None, :, :], k, axis=0)
    for i in range(k):
        ab[i, :, i] = b[:, i]
    return a, b, ab


def _indices(f_a: np.ndarray, f_b: np.ndarray, f_ab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Point estimates along the last axis; f_a, f_b (..., n), f_ab (k, ..., n).

    Outputs are centred on the pooled mean of f_A and f_B first: the first-order estimator's
    expectation does not depend on a shift, but its variance grows with the squared mean
    (hit years near 2030 would otherwise swamp differences of a few years).
    """
    pooled = np.concatenate([f_a, f_b], axis=-1)
    mean = np.mean(pooled, axis=-1, keepdims=True)
    f_a, f_b, f_ab = f_a - mean, f_b - mean, f_ab - mean
    var = np.var(pooled, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        first = np.mean(f_b * (f_ab - f_a), axis=-1) / var
        total = 0.5 * np.mean((f_a - f_ab) ** 2, axis=-1) / var
    return first, total


def sobol_indices(
    f_a: np.ndarray,
    f_b: np.ndarray,
    f_ab: np.ndarray,
    *,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    ci: float = 0.95,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """First-order and total Sobol indices with bootstrap confidence intervals.

    Parameters
    ----------
    f_a, f_b : (n,) model outputs on the base matrices A and B.
    f_ab : (k, n) outputs on AB_i (A with column i from B), see :func:`saltelli_design`.
    n_bootstrap : resamples of the n base rows (0: no intervals, NaN bounds).
    ci : probability of the percentile intervals.

    Returns
    -------
    dict with ``first_order``, ``total`` (k,) and ``first_order_low``/``_high``,
    ``total_low``/``_high`` (k,).  Estimators: first order
    ``mean(f_B (f_ABi - f_A)) / V`` (Saltelli et al. 2010, Table 2 (b)), on outputs centred on
    their pooled mean; total ``mean((f_A - f_ABi)^2) / (2 V)`` (Jansen 1999); ``V`` the variance
    of f_A and f_B pooled.
    A constant output (V = 0) gives NaN.
    """
    f_a = np.asarray(f_a, dtype=float)
    f_b = np.asarray(f_b, dtype=float)
    f_ab = np.asarray(f_ab, dtype=float)
    if f_a.ndim != 1 or f_b.shape != f_a.shape or f_ab.ndim != 2 or f_ab.shape[1] != f_a.size:
        raise ValueError(
            f"expected f_A, f_B (n,) and f_AB (k, n); got {f_a.shape}, {f_b.shape}, {f_ab.shape}"
        )
    first, total = _indices(f_a, f_b, f_ab)
    out = {"first_order": first, "total": total}
    k, n = f_ab.shape
    if n_bootstrap <= 0:
        nan = np.full(k, np.nan)
        out.update(first_order_low=nan, first_order_high=nan, total_low=nan, total_high=nan)
        return out
    rng = np.random.default_rng(seed)
    firsts, totals = [], []
    chunk = max(1, int(4e6 // max(k * n, 1)))  # bound memory: k * chunk * n floats
    for start in range(0, n_bootstrap, chunk):
        idx = rng.integers(0, n, size=(min(chunk, n_bootstrap - start), n))
        fb, tb = _indices(f_a[idx], f_b[idx], f_ab[:, idx])
        firsts.append(fb)
        totals.append(tb)
    fb, tb = np.concatenate(firsts, axis=-1), np.concatenate(totals, axis=-1)  # (k, B)
    lo, hi = (1.0 - ci) / 2.0, (1.0 + ci) / 2.0
    out["first_order_low"], out["first_order_high"] = np.nanquantile(fb, [lo, hi], axis=-1)
    out["total_low"], out["total_high"] = np.nanquantile(tb, [lo, hi], axis=-1)
    return out


# ============================================================================================
# Model layer
# ============================================================================================


def input_keys(prior_set: Any) -> list[str]:
    """Uncertain inputs: propagated priors that are not point masses, then the trend priors."""
    from forecast.propagate import PROPAGATED_KEYS

    keys = [k for k in PROPAGATED_KEYS if k in prior_set and not prior_set[k].is_point]
    keys += [k for k in TREND_KEYS if k in prior_set and not prior_set[k].is_point]
    return keys


def forecast_anchors(tree: xr.DataTree) -> dict[str, float]:
    """2024 log10 level of each hardware metric: posterior medians of a fit or forecast tree."""
    post = tree["posterior"].to_dataset()
    med = post["intercept"].median(dim=("chain", "draw"))
    return {str(m): float(med.sel(metric=m)) for m in med["metric"].values}


def data_anchors(hardware_df: Any, prior_set: Any) -> dict[str, float]:
    """2024 log10 level of each metric without a fit: shipped flagships moved to 2024 along the
    prior-median slope, then the median over parts (a robust stand-in for the posterior median)."""
    from forecast.trends import METRICS, PRIOR_KEYS, trend_observations

    obs = trend_observations(hardware_df)
    out = {}
    for m, metric in enumerate(METRICS):
        sel = obs.metric_index == m
        slope = np.log10(prior_set[PRIOR_KEYS[metric]].median())
        shifted = obs.log10_values[sel] - slope * (obs.years[sel] - REFERENCE_YEAR)
        out[metric] = float(np.median(shifted))
    return out


def _trends(
    draws: Mapping[str, np.ndarray], anchors: Mapping[str, float], years: np.ndarray
) -> dict[str, np.ndarray]:
    from forecast.trends import METRICS, PRIOR_KEYS

    t = np.asarray(years, dtype=float)[None, :] - REFERENCE_YEAR
    out = {}
    for metric in METRICS:
        slope = np.log10(np.asarray(draws[PRIOR_KEYS[metric]], dtype=float))[:, None]
        out[metric] = anchors[metric] + slope * t
    f_slope = np.log10(np.asarray(draws["frontier.compute_growth_per_year"], dtype=float))
    f_level = np.log10(np.asarray(draws["frontier.compute_2024_flop"], dtype=float))
    out["frontier_compute"] = f_level[:, None] + f_slope[:, None] * t
    return out


def evaluate_targets(
    draws: Mapping[str, np.ndarray],
    anchors: Mapping[str, float],
    years: np.ndarray | None = None,
    wall_year_step: int = DEFAULT_WALL_YEAR_STEP,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Targets per draw, capped, and a mask of the capped (never-hit) draws per target.

    ``draws``: every key of :data:`forecast.propagate.PROPAGATED_KEYS` and :data:`TREND_KEYS`
    (sample,).
    """
    from forecast.propagate import DEFAULT_YEARS, PROPAGATED_KEYS, WALLS, propagate

    years = DEFAULT_YEARS if years is None else np.asarray(years, dtype=float)
    trends = _trends(draws, anchors, years)
    inputs = {k: np.asarray(draws[k], dtype=float) for k in PROPAGATED_KEYS}
    res = propagate(trends, inputs, years, wall_year_step)
    cap_year = float(years[-1]) + 1.0
    f_level = np.log10(np.asarray(draws["frontier.compute_2024_flop"], dtype=float))
    f_slope = np.log10(np.asarray(draws["frontier.compute_growth_per_year"], dtype=float))
    cap_flop = f_level + f_slope * (cap_year - REFERENCE_YEAR)
    targets, capped = {}, {}
    for w, wall in enumerate(WALLS):
        hy, hf = res["hit_year"][:, w], res["hit_log10_flop"][:, w]
        never = ~np.isfinite(hy)
        targets[f"{wall}_hit_year"] = np.where(never, cap_year, hy)
        targets[f"{wall}_hit_log10_flop"] = np.where(never, cap_flop, hf)
        capped[f"{wall}_hit_year"] = never
        capped[f"{wall}_hit_log10_flop"] = never
    return {t: targets[t] for t in TARGETS}, {t: capped[t] for t in TARGETS}


@dataclass
class SensitivityResult:
    """Everything :func:`run_sensitivity` computed (arrays indexed target x input)."""

    targets: list[str]
    inputs: list[str]
    indices: dict[str, np.ndarray]  # first_order, total, *_low, *_high: (target, input)
    tornado_low: np.ndarray  # (target, input): target with the input at its 10th percentile
    tornado_high: np.ndarray  # ... at its 90th percentile
    baseline: np.ndarray  # (target,): every input at its median
    capped_fraction: np.ndarray  # (target,): share of never-hit draws capped
    variance: np.ndarray  # (target,)
    input_p10: np.ndarray
    input_p50: np.ndarray
    input_p90: np.ndarray
    settings: dict[str, Any] = field(default_factory=dict)


def run_sensitivity(
    prior_set: Any,
    anchors: Mapping[str, float],
    *,
    n: int = DEFAULT_SAMPLES,
    seed: int = 0,
    years: np.ndarray | None = None,
    wall_year_step: int = DEFAULT_WALL_YEAR_STEP,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    keys: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> SensitivityResult:
    """Sobol indices and tornado of every target with respect to every uncertain input.

    ``anchors``: 2024 log10 level of each hardware metric (:func:`forecast_anchors` or
    :func:`data_anchors`).  ``n`` base samples cost ``n * (k + 2) + 2k + 1`` propagations.
    """
    keys = input_keys(prior_set) if keys is None else list(keys)
    k = len(keys)
    start = time.perf_counter()
    a, b, ab = saltelli_design(n, k, seed)
    # Tornado rows: all medians, then each input at p10 and at p90.
    tor = np.full((2 * k + 1, k), 0.5)
    for i in range(k):
        tor[1 + 2 * i, i] = 0.1
        tor[2 + 2 * i, i] = 0.9
    u = np.concatenate([a, b, ab.reshape(k * n, k), tor])
    draws = prior_set.sample_from_uniforms(u, keys, fill="median")
    if progress:
        progress(f"{k} inputs, {u.shape[0]} model evaluations ...")
    targets, capped = evaluate_targets(draws, anchors, years, wall_year_step)
    names = list(TARGETS)
    out = {
        name: np.empty((len(names), k))
        for name in (
            "first_order",
            "total",
            "first_order_low",
            "first_order_high",
            "total_low",
            "total_high",
        )
    }
    tornado_low = np.empty((len(names), k))
    tornado_high = np.empty((len(names), k))
    baseline = np.empty(len(names))
    capped_fraction = np.empty(len(names))
    variance = np.empty(len(names))
    for t, name in enumerate(names):
        y = targets[name]
        f_a, f_b = y[:n], y[n : 2 * n]
        f_ab = y[2 * n : 2 * n + k * n].reshape(k, n)
        ind = sobol_indices(f_a, f_b, f_ab, n_bootstrap=n_bootstrap, seed=seed + t)
        for key, value in ind.items():
            out[key][t] = value
        tail = y[2 * n + k * n :]
        baseline[t] = tail[0]
        tornado_low[t] = tail[1::2]
        tornado_high[t] = tail[2::2]
        capped_fraction[t] = float(np.mean(capped[name][: 2 * n]))
        variance[t] = float(np.var(np.concatenate([f_a, f_b])))
    elapsed = time.perf_counter() - start
    return SensitivityResult(
        targets=names,
        inputs=keys,
        indices=out,
        tornado_low=tornado_low,
        tornado_high=tornado_high,
        baseline=baseline,
        capped_fraction=capped_fraction,
        variance=variance,
        input_p10=np.array([prior_set[kk].quantile(0.1) for kk in keys]),
        input_p50=np.array([prior_set[kk].median() for kk in keys]),
        input_p90=np.array([prior_set[kk].quantile(0.9) for kk in keys]),
        settings={
            "samples": int(n),
            "evaluations": int(u.shape[0]),
            "seed": int(seed),
            "wall_year_step": int(wall_year_step),
            "bootstrap": int(n_bootstrap),
            "seconds": float(elapsed),
            "prior_set": str(getattr(prior_set, "name", "")),
        },
    )


def sensitivity_dataset(result: SensitivityResult) -> xr.Dataset:
    """The ``sensitivity`` group: dims ``target`` and ``input``."""
    dims = ("target", "input")
    ds = xr.Dataset(
        {
            **{name: (dims, value) for name, value in result.indices.items()},
            "tornado_low": (dims, result.tornado_low),
            "tornado_high": (dims, result.tornado_high),
            "baseline": ("target", result.baseline),
            "capped_fraction": ("target", result.capped_fraction),
            "variance": ("target", result.variance),
            "input_p10": ("input", result.input_p10),
            "input_p50": ("input", result.input_p50),
            "input_p90": ("input", result.input_p90),
        },
        coords={"target": list(result.targets), "input": list(result.inputs)},
    )
    desc = {
        "first_order": "first-order Sobol index (Saltelli 2010 estimator)",
        "total": "total Sobol index (Jansen estimator)",
        "first_order_low": "lower end of the 95% bootstrap interval of first_order",
        "first_order_high": "upper end of the 95% bootstrap interval of first_order",
        "total_low": "lower end of the 95% bootstrap interval of total",
        "total_high": "upper end of the 95% bootstrap interval of total",
        "tornado_low": "target with this input at its 10th percentile, others at their medians",
        "tornado_high": "target with this input at its 90th percentile, others at their medians",
        "baseline": "target with every input at its median",
        "capped_fraction": "share of draws not hitting the wall by the last year (capped)",
        "variance": "variance of the target over the Sobol base samples",
        "input_p10": "10th percentile of the input's prior",
        "input_p50": "median of the input's prior",
        "input_p90": "90th percentile of the input's prior",
    }
    for name, text in desc.items():
        ds[name].attrs["long_name"] = text
    ds.attrs.update(
        {
            **{f"sensitivity_{k}": v for k, v in result.settings.items()},
            "targets_units": "hit_year: calendar year, capped at last year + 1 when not hit; "
            "hit_log10_flop: log10 FLOP, capped at the frontier trend in that year",
            "method": "Sobol indices by Saltelli/Jansen estimators on a scrambled Sobol design; "
            "trend slopes and 2024 frontier compute from their priors, 2024 hardware levels fixed",
        }
    )
    return ds


def ranking_rows(ds: xr.Dataset) -> list[dict[str, Any]]:
    """One row per (target, input), ranked by total index within each target."""
    rows: list[dict[str, Any]] = []
    for target in ds["target"].values:
        sub = ds.sel(target=target)
        order = np.argsort(-np.nan_to_num(sub["total"].values, nan=-np.inf), kind="stable")
        for rank, i in enumerate(order, start=1):
            s = sub.isel(input=int(i))
            rows.append(
                {
                    "target": str(target),
                    "rank": rank,
                    "input": str(s["input"].values),
                    "first_order": float(s["first_order"]),
                    "total": float(s["total"]),
                    "first_order_ci": [float(s["first_order_low"]), float(s["first_order_high"])],
                    "total_ci": [float(s["total_low"]), float(s["total_high"])],
                    "tornado_low": float(s["tornado_low"]),
                    "tornado_high": float(s["tornado_high"]),
                    "baseline": float(sub["baseline"]),
                }
            )
    return rows


# ============================================================================================
# Storing a group in a forecast file
# ============================================================================================


def add_sensitivity(forecast_path: str | Path, result: SensitivityResult | xr.Dataset) -> Path:
    """Store sensitivity results as group ``sensitivity`` of a forecast file (atomic replace)."""
    ds = result if isinstance(result, xr.Dataset) else sensitivity_dataset(result)
    return add_group(forecast_path, "sensitivity", ds)


def _forecast_priors(tree: xr.DataTree) -> Any:
    """The base PriorSet a forecast was made with (from its stored text)."""
    from forecast.priors import load_priors, loads

    text = tree.attrs.get("priors_text")
    path = tree.attrs.get("priors_path")
    if not text:
        return load_priors(path) if path else load_priors(default_priors_path())
    name = f"{tree.attrs.get('priors_name', 'baseline')}.toml"
    return loads(text, name, path=Path(path) if path else None)
