"""Which uncertain input moves the walls most: variance-based (Sobol) indices and a tornado.

Two layers, as elsewhere in the project:

* **Arrays** (NumPy/SciPy only): :func:`saltelli_design` builds the two scrambled-Sobol base
  matrices A and B and the k "radial" matrices AB_i (A with column i taken from B);
  :func:`sobol_indices` turns the model outputs on them into first-order and total indices with
  the Saltelli et al. (2010) first-order estimator and Jansen's (1999) total-order estimator,
  plus bootstrap confidence intervals (resampling the N base rows).
* **Model** (:func:`run_sensitivity`): the inputs are every propagated input of the scenario
  that is not a point mass, plus the trend slopes (hardware growth rates and frontier-compute
  growth) and the 2024 frontier compute (the 2024 hardware levels are held at the forecast's
  posterior medians, or at a data anchor when no forecast is given).  The targets are the hit
  year and the hit FLOP (log10) of each wall.  One vectorized propagation
  (:func:`forecast.inference.propagate.first_hits`, walls every ``wall_year_step`` years and
  interpolated in between, each draw's searched only until its frontier has reached both: the
  same hit years as :func:`~forecast.inference.propagate.propagate`, from ~60 % of the searches)
  evaluates A, B, every AB_i and the tornado points together.

Two **bases** say where the inputs are drawn from (:class:`Basis`):

* ``posterior`` (:func:`posterior_basis`, the default for a forecast): every input the forecast
  fitted (the laws of :data:`forecast.priors.registry.FITTED_INPUTS` and the trends) from its
  posterior draws, as a quantile prior through p01..p99
  (:func:`forecast.priors.posterior.posterior_prior`); the rest from its prior.  The parameters
  of one law are correlated in the posterior (a level and an exponent); Sobol indices assume
  independent inputs, so each law's inputs are drawn jointly through a Gaussian copula with
  the draws' normal-scores correlation, by a Cholesky (Rosenblatt) transform of independent
  uniforms in the law's order.  The first input of a law then gets its *full* index (its
  effect with the law's other inputs following it along the correlation), the later ones their
  *independent* index (the effect of the part not explained by the earlier ones), after
  Mara, Tarantola & Annoni (2015).  A forecast without the posterior variables (made before
  the joint model) falls back to the priors, with a note;
* ``prior`` (:func:`prior_basis`): every input independently from its prior (what the analysis
  did before the joint model; the "before" of a before -> after comparison).

Never-hit draws: a wall not reached by the last year (2045) has hit year +inf; for the
variance-based indices the year is capped at ``last year + 1`` (2046) and the hit FLOP at the
frontier trend's log10 FLOP in that year.  The share of capped draws is stored per target.

Tornado (one at a time): every input at its median; each input in turn at its 10th and 90th
percentile (a later input of a correlated law: its conditional percentile given the earlier ones
at their medians; an earlier one moves the later ones along); the target value there (with all
other inputs at their medians the model is deterministic, so "the median target" is that single
value).

The result is an :class:`xarray.Dataset` with dims ``target`` and ``input``
(:func:`sensitivity_dataset`); :mod:`forecast.jobs.analyse_job` attaches it to a forecast file
as group ``sensitivity`` (the forecast's own basis) or ``sensitivity_prior`` (the priors-only
comparison; :data:`BASIS_GROUPS`).

One concept: the variance-based (Sobol) sensitivity analysis - its design, estimators, input bases, evaluation and dataset.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import xarray as xr
from scipy import special
from scipy.stats import qmc

from forecast.config.constants import (
    REFERENCE_YEAR,
    SENSITIVITY_SAMPLES,
    SENSITIVITY_WALL_YEAR_STEP,
)
from forecast.config.runtime import init_jax
from forecast.inference.propagate import DEFAULT_YEARS, PROPAGATED_KEYS, WALLS, first_hits
from forecast.priors.posterior import normal_scores_correlation, posterior_prior
from forecast.priors.registry import (
    FITTED_INPUTS,
    FRONTIER_SERIES,
    PARAMETERS,
    TREND_SAMPLED_KEYS,
    growth_key,
    level_key,
)
from forecast.queries.analyses import _METHOD, _strings
from forecast.stats.sequence_length import SEQUENCE_REFERENCE_YEAR
from forecast.stats.trends import METRICS, PRIOR_KEYS, trend_observations

DEFAULT_SAMPLES = SENSITIVITY_SAMPLES
"""Base samples N of ``wallcast sensitivity`` and ``analyse``: N * (k + 2) + 2k + 1 model
evaluations (k = number of inputs); ``--samples 1024`` for intervals half as wide."""

DEFAULT_WALL_YEAR_STEP = SENSITIVITY_WALL_YEAR_STEP
"""Walls every this many years (and the last year), interpolated in between."""

BASES: tuple[str, ...] = ("posterior", "prior")
"""Where the inputs are drawn from: the forecast's posterior where fitted, or the priors only."""

BASIS_GROUPS: dict[str, str] = {"posterior": "sensitivity", "prior": "sensitivity_prior"}
"""The forecast-file group that holds the indices of each basis."""

DEFAULT_BOOTSTRAP = 300

TREND_KEYS: tuple[str, ...] = TREND_SAMPLED_KEYS
"""Trend inputs sampled from the priors (the trend fit's own priors) instead of the posterior."""

TARGETS: tuple[str, ...] = (
    "data_movement_hit_year",
    "latency_hit_year",
    "data_movement_hit_log10_flop",
    "latency_hit_log10_flop",
)


def saltelli_design(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Uniform design for Sobol indices: (A, B, AB), shapes (n, k), (n, k), (k, n, k).

    A and B are the two halves of an ``n x 2k`` scrambled Sobol sequence
    (``scipy.stats.qmc.Sobol``); ``AB[i]`` is A with column i replaced by B's.  ``n`` a power of
    two keeps the sequence balanced.  Values lie strictly inside (0, 1).
    """
    if n < 2 or k < 1:
        raise ValueError(f"need n >= 2 and k >= 1, got n={n}, k={k}")
    sampler = qmc.Sobol(d=2 * k, scramble=True, seed=seed)
    m = int(np.log2(n))
    if 2**m == n:
        u = sampler.random_base2(m)
    else:
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


def input_keys(*prior_sets: Any) -> list[str]:
    """Uncertain inputs: the propagated keys, then the trend keys, that are not a point mass in
    at least one of ``prior_sets`` (several: the union, for comparing bases on one design)."""

    def uncertain(key: str) -> bool:
        return any(key in ps and not ps[key].is_point for ps in prior_sets)

    return [k for k in (*PROPAGATED_KEYS, *TREND_KEYS) if uncertain(k)]


def basis_summary(basis: Basis, keys: Sequence[str]) -> str:
    """One line: how many of ``keys`` come from the posterior, and the correlated laws."""
    kinds = [basis.kinds.get(k, "prior") for k in keys]
    parts = [f"{len(keys)} inputs", f"{kinds.count('posterior')} from the posterior"]
    if kinds.count("scenario"):
        parts.append(f"{kinds.count('scenario')} from the scenario")
    parts.append(f"{kinds.count('prior')} from their priors")
    text = ", ".join(parts)
    corr = [
        f"{g} ({', '.join(f'{c:+.2f}' for c in m[np.triu_indices(len(k), 1)])})"
        for g, (k, m) in basis.groups.items()
    ]
    if corr:
        text += "; drawn jointly (normal-scores correlation): " + ", ".join(corr)
    return text


@dataclass(frozen=True)
class Basis:
    """Where the inputs of a sensitivity analysis are drawn from.

    ``prior_set``: each input's marginal distribution (for a fitted input, its posterior as a
    quantile prior).  ``kinds`` / ``sources``: per key, ``"prior"``, ``"posterior"`` or
    ``"scenario"`` (an overlay replaced the fitted posterior) and the distribution's source text.
    ``groups``: per correlated law, its keys in sampling order and the normal-scores correlation
    matrix of their posterior draws (see the module docstring).  ``notes``: fallbacks to say.
    """

    name: str
    prior_set: Any
    kinds: dict[str, str]
    sources: dict[str, str]
    groups: dict[str, tuple[tuple[str, ...], np.ndarray]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def group_of(self, key: str) -> str:
        return next((g for g, (keys, _) in self.groups.items() if key in keys), "")


def prior_basis(prior_set: Any, overridden: Sequence[str] = ()) -> Basis:
    """Every input independently from its prior (``overridden``: keys a scenario overlay set)."""
    kinds = {k: ("scenario" if k in overridden else "prior") for k in prior_set}
    sources = {k: prior_set[k].source for k in prior_set}
    return Basis("prior", prior_set, kinds, sources)


def _provenance(tree: xr.DataTree, scenario: str | None) -> dict[str, dict[str, Any]]:
    """The forecast's ``input_provenance`` entries of ``scenario`` (default: the first)."""
    try:
        prov = json.loads(str(tree.attrs.get("input_provenance") or "{}"))
    except ValueError:
        return {}
    if not isinstance(prov, dict) or not prov:
        return {}
    entry = (
        prov.get(scenario) if scenario in prov else prov.get("baseline", next(iter(prov.values())))
    )
    return entry if isinstance(entry, dict) else {}


def _fitted_source(key: str, provenance: Mapping[str, Any]) -> str:
    fit = FITTED_INPUTS[key]
    entry = provenance.get(key, {})
    table = str(entry.get("table") or f"data/{fit.table}")
    rows = entry.get("rows")
    rows_text = f"{int(rows)} rows of " if isinstance(rows, (int, float)) else ""
    return f"posterior of the {fit.law} law fitted to {rows_text}{table}"


def _trend_draws(post: xr.Dataset) -> dict[str, tuple[np.ndarray, str, str]]:
    """Trend keys with posterior draws in ``post``: key -> (draws in the key's unit, group, source)."""
    out: dict[str, tuple[np.ndarray, str, str]] = {}
    if "slope" in post and "metric" in post["slope"].dims:
        for metric in post["slope"]["metric"].values:
            try:
                key = growth_key(str(metric))
            except KeyError:
                continue
            draws = 10.0 ** post["slope"].sel(metric=metric).values.ravel()
            out[key] = (
                draws,
                f"trend:{metric}",
                "posterior of the hardware trend fitted to data/hardware.csv",
            )
    source = "posterior of the frontier-compute trend fitted to data/frontier_runs.csv"
    if "frontier_slope" in post:
        draws = 10.0 ** post["frontier_slope"].values.ravel()
        out[growth_key(FRONTIER_SERIES)] = (draws, FRONTIER_SERIES, source)
    if "frontier_intercept" in post:
        draws = 10.0 ** post["frontier_intercept"].values.ravel()
        out[level_key(FRONTIER_SERIES)] = (draws, FRONTIER_SERIES, source)
    return out


def posterior_basis(
    tree: xr.DataTree,
    prior_set: Any,
    *,
    overridden: Sequence[str] = (),
    scenario: str | None = None,
    trends: bool = True,
) -> Basis:
    """Fitted inputs from the forecast's posterior draws, the rest from ``prior_set``.

    Fitted inputs: the keys of :data:`FITTED_INPUTS` that the forecast propagated from its
    posterior (kind ``"fitted"`` in its ``input_provenance`` for ``scenario``, default the
    baseline; without that attribute: a key whose prior is not a fixed value), and
    (``trends``) the trend keys (hardware growth from ``slope``, frontier growth and 2024 level
    from ``frontier_slope`` / ``frontier_intercept``).  ``overridden``: keys a scenario overlay
    sets; they keep the overlay's distribution (kind ``"scenario"``).  A fitted key whose
    variable is missing (a forecast made before the joint model) keeps its prior, with a note.
    The sources of fitted keys cite the law, table and rows of the provenance.
    """
    post = tree["posterior"].to_dataset() if "posterior" in tree.children else xr.Dataset()
    provenance = _provenance(tree, scenario)
    priors = dict(prior_set.priors)
    kinds = {k: ("scenario" if k in overridden else "prior") for k in priors}
    sources = {k: priors[k].source for k in priors}
    members: dict[str, list[tuple[str, np.ndarray]]] = {}
    missing: list[str] = []
    candidates: dict[str, tuple[np.ndarray, str, str]] = {}
    for key, fit in FITTED_INPUTS.items():
        if key not in priors or key in overridden:
            continue
        recorded = provenance.get(key, {}).get("kind")
        if recorded is not None and recorded != "fitted":
            continue  # the forecast propagated this key's prior, fixed value or scenario
        if recorded is None and priors[key].is_point:
            continue  # a fixed value is not fitted (forecast.priors.provenance's rule)
        if fit.variable in post:
            draws = post[fit.variable].values.ravel()
            candidates[key] = (draws, fit.law, _fitted_source(key, provenance))
        else:
            missing.append(fit.variable)
    if trends:
        candidates.update(_trend_draws(post))
    for key, (draws, group, source) in candidates.items():
        if key in overridden or key not in PARAMETERS:
            continue
        priors[key] = posterior_prior(key, draws, source)
        kinds[key], sources[key] = "posterior", source
        members.setdefault(group, []).append((key, draws))
    groups: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}
    for group, items in members.items():
        if len(items) < 2:
            continue
        keys = tuple(k for k, _ in items)
        corr = normal_scores_correlation({k: d for k, d in items})
        groups[group] = (keys, corr)
    notes = ()
    if missing:
        notes = (
            f"this forecast has no posterior of {', '.join(missing)} (made before the joint "
            "model): those inputs are sampled from their priors",
        )
    ordered = {k: priors[k] for k in prior_set}
    ordered.update({k: v for k, v in priors.items() if k not in ordered})
    return Basis("posterior", replace(prior_set, priors=ordered), kinds, sources, groups, notes)


def _correlate(u: np.ndarray, keys: Sequence[str], basis: Basis | None) -> np.ndarray:
    """Map independent uniforms to uniforms with each group's Gaussian-copula correlation.

    For a group (k_1, ..., k_m) with correlation R = L L^T (Cholesky): z = Phi^-1(u) of its
    columns becomes L z, so k_1 follows its own uniform and k_j its conditional distribution
    given k_1..k_{j-1} (a Rosenblatt transform of the Gaussian copula).
    """
    if basis is None or not basis.groups:
        return u
    out = u.copy()
    for group_keys, corr in basis.groups.values():
        cols = [keys.index(k) for k in group_keys if k in keys]
        if len(cols) < 2:
            continue
        idx = [group_keys.index(keys[c]) for c in cols]
        lower = np.linalg.cholesky(corr[np.ix_(idx, idx)] + 1e-12 * np.eye(len(idx)))
        z = special.ndtri(u[:, cols]) @ lower.T
        # the first input keeps its own uniform exactly (row 0 of L is (1, 0, ...))
        out[:, cols[1:]] = np.clip(special.ndtr(z[:, 1:]), 1e-12, 1.0 - 1e-12)
    return out


SEQUENCE_LAW = ("log10_sequence_2024", "sequence_growth_dex_per_year")
"""Posterior variables of the sequence-length law (:mod:`forecast.stats.sequence_length`)."""


def forecast_anchors(tree: xr.DataTree) -> dict[str, float]:
    """2024 log10 level of each hardware metric: posterior medians of a fit or forecast tree."""
    post = tree["posterior"].to_dataset()
    med = post["intercept"].median(dim=("chain", "draw"))
    out = {str(m): float(med.sel(metric=m)) for m in med["metric"].values}
    for name in SEQUENCE_LAW:  # the realistic regime's sequence length (posterior median law)
        if name in post:
            out[name] = float(post[name].median())
    return out


def data_anchors(hardware_df: Any, prior_set: Any) -> dict[str, float]:
    """2024 log10 level of each metric without a fit: shipped flagships moved to 2024 along the
    prior-median slope, then the median over parts (a robust stand-in for the posterior median)."""
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

    t = np.asarray(years, dtype=float)[None, :] - REFERENCE_YEAR
    out = {}
    for metric in METRICS:
        slope = np.log10(np.asarray(draws[PRIOR_KEYS[metric]], dtype=float))[:, None]
        out[metric] = anchors[metric] + slope * t
    f_slope = np.log10(np.asarray(draws["frontier.compute_growth_per_year"], dtype=float))
    f_level = np.log10(np.asarray(draws["frontier.compute_2024_flop"], dtype=float))
    out["frontier_compute"] = f_level[:, None] + f_slope[:, None] * t
    if all(name in anchors for name in SEQUENCE_LAW):  # the posterior median law, every draw
        s0, g = (anchors[name] for name in SEQUENCE_LAW)
        x = np.asarray(years, dtype=float) - SEQUENCE_REFERENCE_YEAR
        out["sequence_length"] = np.broadcast_to(s0 + g * x, out["frontier_compute"].shape)
    return out


def evaluate_targets(
    draws: Mapping[str, np.ndarray],
    anchors: Mapping[str, float],
    years: np.ndarray | None = None,
    wall_year_step: int = DEFAULT_WALL_YEAR_STEP,
    regime: str = "paper",
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Targets per draw, capped, and a mask of the capped (never-hit) draws per target.

    ``draws``: every key of :data:`forecast.inference.propagate.PROPAGATED_KEYS` and :data:`TREND_KEYS`
    (sample,).  ``regime``: the plans searched (the realistic regime's sequence length is the
    anchors' posterior median law, :func:`forecast_anchors`, else the model's default).
    """
    years = DEFAULT_YEARS if years is None else np.asarray(years, dtype=float)
    trends = _trends(draws, anchors, years)
    if regime == "paper":
        trends.pop("sequence_length", None)
    inputs = {k: np.asarray(draws[k], dtype=float) for k in PROPAGATED_KEYS}
    # hit years only: each draw's walls searched until its frontier has reached both
    res = first_hits(trends, inputs, years, wall_year_step, regime=regime)
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
    input_p10: np.ndarray  # (input,): the input's value at the tornado's low point
    input_p50: np.ndarray
    input_p90: np.ndarray
    settings: dict[str, Any] = field(default_factory=dict)
    basis: str = "prior"
    input_kind: list[str] = field(default_factory=list)  # prior | posterior | scenario
    input_source: list[str] = field(default_factory=list)
    input_group: list[str] = field(default_factory=list)  # correlated law, "" when alone
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)  # keys, correlation
    notes: list[str] = field(default_factory=list)


def run_sensitivity(
    inputs: Basis | Any,
    anchors: Mapping[str, float],
    *,
    n: int = DEFAULT_SAMPLES,
    seed: int = 0,
    years: np.ndarray | None = None,
    wall_year_step: int = DEFAULT_WALL_YEAR_STEP,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    keys: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    model: Callable[..., tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] | None = None,
    tornado_regime: str = "paper",
) -> SensitivityResult:
    """Sobol indices and tornado of every target with respect to every uncertain input.

    ``inputs``: a :class:`Basis` (:func:`posterior_basis`, :func:`prior_basis`) or a PriorSet
    (its priors, independent).  ``anchors``: 2024 log10 level of each hardware metric
    (:func:`forecast_anchors` or :func:`data_anchors`).  ``keys``: the inputs (default: the
    basis's uncertain ones, :func:`input_keys`); a point mass among them gets indices 0.  ``n``
    base samples cost ``n * (k + 2) + 2k + 1`` propagations.  ``model``: the function of the
    draws to analyse, with :func:`evaluate_targets`'s signature and result (the default).
    ``tornado_regime``: the plans of the tornado's 2k + 1 points (the forecast's own regime: its
    signposts read the tornado); the Sobol indices are always the paper regime's (n (k + 2)
    evaluations; the realistic fast path costs ~9x each).
    """
    init_jax()
    basis = inputs if isinstance(inputs, Basis) else prior_basis(inputs)
    prior_set = basis.prior_set
    keys = input_keys(prior_set) if keys is None else list(keys)
    k = len(keys)
    start = time.perf_counter()
    a, b, ab = saltelli_design(n, k, seed)
    # Tornado rows: all medians, then each input at p10 and at p90.
    tor = np.full((2 * k + 1, k), 0.5)
    for i in range(k):
        tor[1 + 2 * i, i] = 0.1
        tor[2 + 2 * i, i] = 0.9
    u = _correlate(np.concatenate([a, b, ab.reshape(k * n, k), tor]), keys, basis)
    draws = prior_set.sample_from_uniforms(u, keys, fill="median")
    tornado_rows = u.shape[0] - (2 * k + 1)
    if progress:
        progress(f"{k} inputs, {u.shape[0]} model evaluations ...")
    targets, capped = (model or evaluate_targets)(draws, anchors, years, wall_year_step)
    if tornado_regime != "paper":  # the tornado's rows again, in the forecast's own plans
        rows = {kk: np.asarray(v)[tornado_rows:] for kk, v in draws.items()}
        t_targets, t_capped = evaluate_targets(
            rows, anchors, years, wall_year_step, regime=tornado_regime
        )
        targets = {t: np.concatenate([v[:tornado_rows], t_targets[t]]) for t, v in targets.items()}
        capped = {t: np.concatenate([v[:tornado_rows], t_capped[t]]) for t, v in capped.items()}
    names = list(targets)
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
        input_p10=np.array([draws[kk][tornado_rows + 1 + 2 * i] for i, kk in enumerate(keys)]),
        input_p50=np.array([draws[kk][tornado_rows] for kk in keys]),
        input_p90=np.array([draws[kk][tornado_rows + 2 + 2 * i] for i, kk in enumerate(keys)]),
        basis=basis.name,
        input_kind=[basis.kinds.get(kk, "prior") for kk in keys],
        input_source=[basis.sources.get(kk, prior_set[kk].source) for kk in keys],
        input_group=[basis.group_of(kk) for kk in keys],
        groups={
            g: {"keys": list(gk), "normal_scores_correlation": np.round(c, 4).tolist()}
            for g, (gk, c) in basis.groups.items()
        },
        notes=list(basis.notes),
        settings={
            "samples": int(n),
            "evaluations": int(u.shape[0]),
            "seed": int(seed),
            "wall_year_step": int(wall_year_step),
            "indices_regime": "paper",  # the Sobol indices: the paper regime's fast path
            "tornado_regime": str(tornado_regime),  # the tornado and its baseline
            "bootstrap": int(n_bootstrap),
            "seconds": float(elapsed),
            "prior_set": str(getattr(prior_set, "name", "")),
            "basis": basis.name,
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
            "input_kind": ("input", _strings(result.input_kind, len(result.inputs), "prior")),
            "input_source": ("input", _strings(result.input_source, len(result.inputs), "")),
            "input_group": ("input", _strings(result.input_group, len(result.inputs), "")),
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
        "input_p10": "the input at the tornado's low point: its 10th percentile (a later input "
        "of a correlated law: conditional on the earlier ones at their medians)",
        "input_p50": "median of the input's distribution",
        "input_p90": "the input at the tornado's high point: its 90th percentile (as input_p10)",
        "input_kind": "where the input is drawn from: prior, posterior (fitted by the forecast) "
        "or scenario (an overlay replaced the fitted posterior)",
        "input_source": "source of the input's distribution",
        "input_group": "correlated law the input is drawn jointly with ('' when independent)",
    }
    for name, text in desc.items():
        ds[name].attrs["long_name"] = text
    ds.attrs.update(
        {
            **{f"sensitivity_{k}": v for k, v in result.settings.items()},
            "targets_units": "hit_year: calendar year, capped at last year + 1 when not hit; "
            "hit_log10_flop: log10 FLOP, capped at the frontier trend in that year",
            "method": _METHOD[result.basis],
            "sensitivity_groups": json.dumps(result.groups),
            "sensitivity_notes": "; ".join(result.notes),
        }
    )
    return ds
