"""The convergence gate: R-hat, bulk and tail ESS and divergences over every fitted parameter; a
fit that fails is refused (:class:`ConvergenceError`) before anything is propagated or published.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import arviz as az
import numpy as np
import xarray as xr

from forecast.config.errors import WallcastError


class ConvergenceError(WallcastError):
    """MCMC did not converge: R-hat too high, bulk ESS too low, or divergent transitions.

    Attributes
    ----------
    parameter : str or None
        Worst parameter of the first failing diagnostic, with coordinates (``slope[flops]``);
        ``None`` for divergences.
    diagnostic : str
        ``"r_hat"``, ``"ess_bulk"`` or ``"divergences"``.
    value : float
        Value of that diagnostic.
    failures : list of tuple
        Every failing check as ``(diagnostic, parameter, value, threshold)``.
    chains, draws : int or None
        Size of the run (chains x draws per chain), when known.
    hint : str
        Which run option fixes it (the message ends with it).
    summary : str
        The failing checks in words, without the hint.
    extended_from : int or None
        Draws per chain of an earlier, narrowly refused run of the same chains that this run
        (twice as long) continued; its refusal is ``first_refusal`` (a summary).
    """

    def __init__(
        self,
        failures: list[tuple[str, str | None, float, float]],
        *,
        chains: int | None = None,
        draws: int | None = None,
        extended_from: int | None = None,
        first_refusal: str | None = None,
    ) -> None:
        self.failures = failures
        self.diagnostic, self.parameter, self.value, _ = failures[0]
        self.chains, self.draws = chains, draws
        self.extended_from, self.first_refusal = extended_from, first_refusal
        parts = []
        for diagnostic, parameter, value, threshold in failures:
            if diagnostic == "divergences":
                parts.append(f"{int(value)} divergent transitions (max {int(threshold)})")
            elif diagnostic == "r_hat":
                # five digits: 1.0104 must not read as the limit 1.01
                parts.append(f"r_hat of {parameter} is {value:.5g} (max {threshold:g})")
            else:
                per_chain = (
                    f" = {threshold / chains:g} per chain x {chains} chains"
                    if chains and threshold == ESS_BULK_PER_CHAIN * chains
                    else ""
                )
                parts.append(
                    f"ess_bulk of {parameter} is {value:.4g} (min {threshold:g}{per_chain})"
                )
        self.summary = "; ".join(parts)
        message = "MCMC did not converge: " + self.summary
        if extended_from is None:
            self.hint = _convergence_hint({f[0] for f in failures}, chains, draws)
        else:
            message += (
                f" at {draws} draws per chain: the same chains run twice as long after a "
                f"narrow refusal at {extended_from} ({first_refusal})"
            )
            now_chains = f" (now {chains})" if chains else ""
            self.hint = (
                f"increase --draws beyond {draws} or --chains{now_chains}, or try another --seed "
                f"(this seed with --draws {extended_from} repeats this run)"
            )
            if "divergences" in {f[0] for f in failures}:
                self.hint += "; divergent transitions: check the priors"
        super().__init__(f"{message}; {self.hint}" if self.hint else message)


def _rebuild_convergence_error(cls, failures, chains, draws):
    """Rebuilds a :class:`ConvergenceError` pickled before :class:`WallcastError` pickled every
    subclass (a failed task's result Prefect stored then refers to this function)."""
    return cls(failures, chains=chains, draws=draws)


def _convergence_hint(diagnostics: set[str], chains: int | None, draws: int | None) -> str:
    """What to change: more draws (R-hat, ESS), more chains (ESS), or another seed (divergences)."""
    now_draws = f" (now {draws})" if draws else ""
    now_chains = f" (now {chains})" if chains else ""
    if "ess_bulk" in diagnostics or "r_hat" in diagnostics:
        hint = f"increase --draws{now_draws} or --chains{now_chains}, or lengthen --warmup"
        if "divergences" in diagnostics:
            hint += "; divergent transitions: check the priors, or try another --seed"
        return hint
    if "divergences" in diagnostics:
        return (
            "divergent transitions: check the priors (a very narrow or very wide prior), "
            f"or increase --draws{now_draws} or --warmup, or try another --seed"
        )
    return ""


ESS_BULK_PER_CHAIN = 100
"""Minimum bulk ESS per chain: Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-
normalization, folding, and localization: an improved R-hat for assessing convergence of MCMC",
Bayesian Analysis 16(2), doi:10.1214/20-BA1221, recommend bulk and tail ESS > 100 per chain (400
for their default of 4 chains) together with R-hat < 1.01."""


def _worst(
    ds: xr.Dataset, *, largest: bool, skip: dict[str, np.ndarray] | None = None
) -> tuple[str, float]:
    """Label (``name[coord,...]``) and value of the worst entry; NaN counts as worst.

    ``skip`` maps a variable name to a boolean mask of entries to leave out.
    """
    best_label, best_value, best_key = "", float("nan"), -math.inf
    for name, var in ds.data_vars.items():
        values = np.asarray(var.values, dtype=float)
        if values.size == 0:
            continue
        key = np.where(np.isnan(values), np.inf, values if largest else -values)
        if skip and str(name) in skip:
            key = np.where(skip[str(name)], -math.inf, key)
        flat = int(np.argmax(key))
        if key.flat[flat] <= best_key:
            continue
        best_key = float(key.flat[flat])
        best_value = float(values.flat[flat])
        idx = np.unravel_index(flat, values.shape)
        labels = [str(var[dim].values[i]) for dim, i in zip(var.dims, idx, strict=True)]
        best_label = f"{name}[{','.join(labels)}]" if labels else str(name)
    return best_label, best_value


def _fixed_entries(dt: xr.DataTree, names: list[str] | None) -> dict[str, np.ndarray]:
    """Per posterior variable, the entries equal in every chain and draw (fixed by their prior).

    A parameter with a fixed value (``forecast.stats.trends``: prior scale 0) is a deterministic site;
    it has no R-hat or ESS (both NaN), so the gate leaves it out. A sampled parameter is never
    identical across independently initialised chains.
    """
    post = dt["posterior"].to_dataset()
    out = {}
    for name, var in post.data_vars.items():
        if names is not None and name not in names:
            continue
        values = np.asarray(var.transpose("chain", "draw", ...).values)
        out[str(name)] = np.all(values == values[:1, :1], axis=(0, 1))
    return out


#: A refusal this close to the limits is a run too short for its chains' luck, not a sampler that
#: cannot explore: R-hat at most this many times as far above 1 as the gate's limit (1.02 for
#: the default 1.01) ...
NEAR_MISS_RHAT_FACTOR = 2.0
#: ... and bulk ESS at least this share of the gate's minimum, with no divergent transition.
NEAR_MISS_ESS_SHARE = 0.5


def near_miss(error: ConvergenceError) -> bool:
    """Whether the same chains run twice as long can be expected to pass the gate: no divergent
    transition (a longer run does not remove a region NUTS cannot integrate), R-hat at most
    :data:`NEAR_MISS_RHAT_FACTOR` times as far above 1 as the gate's limit (1.02) and bulk ESS at
    least :data:`NEAR_MISS_ESS_SHARE` of its minimum.

    The gate's statistics vary from run to run: at the default 4 x 1,000 draws, the worst R-hat of
    the same fit ranged 1.004-1.012 between instruction sets of one CPU (a chain that visits the
    batch law's slow tail once more or less; BENCHMARKS.md, "Convergence gate margin"). Doubling
    the draws halves that noise; a run far from the limits (a chain stuck elsewhere, the 4 x 50
    runs of the tests) is refused at once."""
    for diagnostic, _, value, threshold in error.failures:
        if diagnostic == "r_hat":
            if not value - 1.0 <= NEAR_MISS_RHAT_FACTOR * (threshold - 1.0):  # NaN: not near
                return False
        elif diagnostic == "ess_bulk":
            if not value >= NEAR_MISS_ESS_SHARE * threshold:
                return False
        else:  # divergences, or a check this function does not know
            return False
    return True


def convergence_report(
    dt: xr.DataTree, *, var_names: Iterable[str] | None = None
) -> dict[str, Any]:
    """Worst R-hat, worst bulk ESS (with parameter labels), the divergence count, the run size
    (``chains``, ``draws``) and the ``fixed`` parameters left out (constant in every draw)."""
    names = list(var_names) if var_names is not None else None
    with np.errstate(divide="ignore", invalid="ignore"):  # fixed entries: 0/0, left out below
        rhat = az.rhat(dt, var_names=names)
        ess = az.ess(dt, var_names=names, method="bulk")
    rhat_ds = rhat.to_dataset() if isinstance(rhat, xr.DataTree) else rhat
    ess_ds = ess.to_dataset() if isinstance(ess, xr.DataTree) else ess
    fixed = _fixed_entries(dt, names)
    rhat_name, rhat_value = _worst(rhat_ds, largest=True, skip=fixed)
    ess_name, ess_value = _worst(ess_ds, largest=False, skip=fixed)
    divergences = 0
    if "sample_stats" in dt.children and "diverging" in dt["sample_stats"].data_vars:
        divergences = int(dt["sample_stats"]["diverging"].values.sum())
    post = dt["posterior"]
    return {
        "r_hat": (rhat_name, rhat_value),
        "ess_bulk": (ess_name, ess_value),
        "divergences": divergences,
        "chains": int(post.sizes["chain"]),
        "draws": int(post.sizes["draw"]),
        "fixed": sorted(name for name, mask in fixed.items() if mask.any()),
    }


def check_convergence(
    dt: xr.DataTree,
    rhat_max: float = 1.01,
    ess_bulk_min: float | None = None,
    *,
    max_divergences: int = 0,
    var_names: Iterable[str] | None = None,
) -> None:
    """Raise :class:`ConvergenceError` unless every posterior parameter converged.

    Checks rank-normalised split R-hat <= ``rhat_max`` and bulk ESS >= ``ess_bulk_min`` for every
    entry of every posterior variable (``az.rhat``/``az.ess``), and at most ``max_divergences``
    divergent transitions. ``ess_bulk_min`` None follows the run's size:
    :data:`ESS_BULK_PER_CHAIN` (100) x the number of chains, after Vehtari et al. (2021), i.e.
    400 for 4 chains. Entries fixed by their prior (equal in every draw) are left out. The message
    names the worst parameter with its coordinates (e.g. ``r_hat of slope[flops] is 1.2 (max
    1.01)``) for each failing diagnostic, and ends with the run option that fixes it; NaN counts
    as failing.
    """
    report = convergence_report(dt, var_names=var_names)
    chains, draws = report["chains"], report["draws"]
    if ess_bulk_min is None:
        ess_bulk_min = ESS_BULK_PER_CHAIN * chains
    failures: list[tuple[str, str | None, float, float]] = []
    if report["divergences"] > max_divergences:
        failures.append(("divergences", None, float(report["divergences"]), float(max_divergences)))
    name, value = report["r_hat"]
    if not value <= rhat_max:  # NaN fails
        failures.append(("r_hat", name, value, rhat_max))
    name, value = report["ess_bulk"]
    if not value >= ess_bulk_min:
        failures.append(("ess_bulk", name, value, float(ess_bulk_min)))
    if failures:
        raise ConvergenceError(failures, chains=chains, draws=draws)
