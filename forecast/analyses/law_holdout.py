"""Exact holdout checks of the four scaling laws: each law refitted alone without one source's rows
(NUTS), and the held-out rows' central predictive intervals checked (:func:`holdout_coverage`);
the stricter companion of the PSIS-LOO checks of :mod:`forecast.inference.loo`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from numpyro.infer import MCMC, Predictive

from forecast.config.runtime import exclusive, init_jax
from forecast.inference.sampler import RaveledNUTS, compiled_nuts, require_finite_energy
from forecast.stats.scaling_laws import (
    BATCH_PRIORS,
    DEPTH_PRIORS,
    DOMAIN_PRIORS,
    UTILIZATION_PRIORS,
    LawData,
    LawTable,
    batch_law_model,
    depth_law_model,
    domain_growth_model,
    utilization_law_model,
)

LawModel = Callable[..., None]

_OBSERVED_SITE: dict[LawModel, str] = {
    depth_law_model: "log10_layers",
    batch_law_model: "log10_batch",
    utilization_law_model: "log10_mfu",
    domain_growth_model: "log10_domain",
}
_DEFAULT_PRIORS: dict[LawModel, NamedTuple] = {
    depth_law_model: DEPTH_PRIORS,
    batch_law_model: BATCH_PRIORS,
    utilization_law_model: UTILIZATION_PRIORS,
    domain_growth_model: DOMAIN_PRIORS,
}


@dataclass(frozen=True)
class LawFit:
    """Posterior draws of one law, grouped by chain (``samples[name].shape[:2] == (chains, draws)``)."""

    samples: dict[str, np.ndarray]
    divergences: int

    def flat(self, name: str) -> np.ndarray:
        """Draws of ``name`` with chains pooled."""
        v = self.samples[name]
        return v.reshape((-1, *v.shape[2:]))

    def quantiles(self, name: str, q: Sequence[float] = (0.1, 0.5, 0.9)) -> np.ndarray:
        return np.quantile(self.flat(name), q, axis=0)

    def rhat_max(self) -> float:
        """Largest rank-normalised split R-hat over the scalar parameters (``az.rhat``)."""
        return max(float(az.rhat(v)) for v in self.samples.values() if v.ndim == 2)

    def ess_bulk_min(self) -> float:
        """Smallest bulk effective sample size over the scalar parameters (``az.ess``)."""
        return min(float(az.ess(v, method="bulk")) for v in self.samples.values() if v.ndim == 2)


@dataclass(frozen=True)
class LawSampler:
    """NUTS settings for one law's model (vectorized chains); :func:`run_masked_fit` runs it.

    Hashable: the key of its one compiled program (:func:`_compiled_fit`), so every refit of the
    same model with the same settings reuses it, whatever the values of the data, priors and
    mask (the program's arguments), as long as their shapes, dtypes and the priors' structure
    (which overrides are None, numbers or distributions) stay the same."""

    model: LawModel
    num_chains: int
    num_warmup: int
    num_samples: int
    target_accept_prob: float

    def mcmc(self) -> MCMC:
        return MCMC(
            RaveledNUTS(self.model, target_accept_prob=self.target_accept_prob),
            num_warmup=self.num_warmup,
            num_samples=self.num_samples,
            num_chains=self.num_chains,
            chain_method="vectorized",
            progress_bar=False,
        )


def law_sampler(
    model: LawModel,
    *,
    num_chains: int,
    num_warmup: int,
    num_samples: int,
    target_accept_prob: float,
) -> LawSampler:
    """NUTS over one law's model, vectorized chains; the data, priors and mask are arguments of
    its compiled program (:func:`run_masked_fit`), so one compilation serves every refit."""
    return LawSampler(model, num_chains, num_warmup, num_samples, target_accept_prob)


@functools.lru_cache(maxsize=16)
def _compiled_fit(sampler: LawSampler) -> Callable:
    """The whole NUTS run of ``sampler`` as one program of (key, data, priors, mask)
    (:func:`~forecast.inference.sampler.compiled_nuts`), cached per sampler: every refit reuses
    it (the reused ``MCMC`` of before compiled each refit's loop again: 5 compilations for a
    test's 5 folds, BENCHMARKS.md section 7; ``benchmarks/law_refits.py`` times it)."""
    return compiled_nuts(sampler.mcmc)


@exclusive
def run_masked_fit(sampler: LawSampler, rng_key, data: LawData, priors, mask) -> LawFit:
    """Run ``sampler`` (from :func:`law_sampler`) on ``data`` with only the rows where ``mask`` is
    true in the likelihood (default: all rows): samples by chain and the divergence count.
    Raises :class:`~forecast.inference.sampler.SamplerStartError` where a chain could not start
    (the log density not finite where it began: inside a compiled program NumPyro cannot say)."""
    data = LawData(*(jnp.asarray(a) for a in data))
    if mask is None:
        mask = jnp.ones(jnp.shape(data.y), dtype=bool)
    samples, diverging, energy = _compiled_fit(sampler)(rng_key, data, priors, jnp.asarray(mask))
    require_finite_energy(energy)
    return LawFit(
        samples={k: np.asarray(v) for k, v in samples.items()},
        divergences=int(np.asarray(diverging).sum()),
    )


def fit_law(
    model: LawModel,
    data: LawData | LawTable,
    rng_key: jax.Array,
    *,
    priors: NamedTuple | None = None,
    mask=None,
    num_chains: int = 2,
    num_warmup: int = 300,
    num_samples: int = 300,
    target_accept_prob: float = 0.9,
) -> LawFit:
    """Fit one law alone with NUTS (chains vectorised); ``mask`` drops rows (False = held out)."""
    init_jax()
    if isinstance(data, LawTable):
        data = data.data
    priors = _DEFAULT_PRIORS[model] if priors is None else priors
    sampler = law_sampler(
        model,
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        target_accept_prob=target_accept_prob,
    )
    return run_masked_fit(sampler, rng_key, data, priors, mask)


@exclusive
def predictive_draws(
    model: LawModel, fit: LawFit, data: LawData, rng_key: jax.Array, priors=None
) -> np.ndarray:
    """Posterior predictive draws of the observed log10 response, shape (draws, rows)."""
    priors = _DEFAULT_PRIORS[model] if priors is None else priors
    latent = {k: fit.flat(k) for k in fit.samples}
    data = LawData(*(jnp.asarray(a) for a in data))
    out = Predictive(model, posterior_samples=latent, parallel=True)(
        rng_key, data, priors, None, False
    )
    return np.asarray(out[_OBSERVED_SITE[model]])


@dataclass(frozen=True)
class HoldoutResult:
    """Held-out check: each row's predictive interval from a fit without its group."""

    names: tuple[str, ...]
    groups: tuple[str, ...]
    observed: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    prob: float
    max_rhat: float
    divergences: int

    @property
    def inside(self) -> np.ndarray:
        return (self.observed >= self.lower) & (self.observed <= self.upper)

    @property
    def coverage(self) -> float:
        return float(self.inside.mean())

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "name": self.names,
                "group": self.groups,
                "observed_log10": self.observed,
                "lower_log10": self.lower,
                "upper_log10": self.upper,
                "inside": self.inside,
            }
        )


def holdout_coverage(
    model: LawModel,
    table: LawTable,
    rng_key: jax.Array,
    *,
    priors: NamedTuple | None = None,
    prob: float = 0.8,
    by: str = "group",
    folds: int | None = None,
    num_chains: int = 2,
    num_warmup: int = 200,
    num_samples: int = 200,
) -> HoldoutResult:
    """Leave-one-out (``by="row"``) or leave-one-source-out (``by="group"``) coverage.

    For each held-out row or source, refits the law without it (a mask, so NUTS compiles once)
    and records the central ``prob`` posterior predictive interval of its rows. Holding out a
    whole paper at once is the stricter test: a family trained by one lab (the eight Pythia sizes
    with one batch) says little about itself. ``folds=K`` pools the held-out units into K folds
    (unit j, in order of first appearance, goes to fold j mod K): K refits instead of one per unit.
    """
    if by not in ("row", "group"):
        raise ValueError(f"by must be 'row' or 'group', got {by!r}")
    init_jax()  # float64, as every fit of the project (a script may not have called it)
    priors = _DEFAULT_PRIORS[model] if priors is None else priors
    keys = np.arange(len(table)).astype(str) if by == "row" else np.asarray(table.groups)
    if folds is not None:
        order = {key: j % folds for j, key in enumerate(dict.fromkeys(keys.tolist()))}
        keys = np.asarray([str(order[key]) for key in keys.tolist()])
    sampler = law_sampler(
        model,
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        target_accept_prob=0.9,
    )
    n = len(table)
    lower, upper = np.full(n, np.nan), np.full(n, np.nan)
    max_rhat, divergences = 1.0, 0
    tail = (1.0 - prob) / 2.0
    for k, key in enumerate(dict.fromkeys(keys.tolist())):
        held = keys == key
        fit_key, pred_key = jax.random.split(jax.random.fold_in(rng_key, k))
        fit = run_masked_fit(sampler, fit_key, table.data, priors, ~held)
        max_rhat = max(max_rhat, fit.rhat_max())
        divergences += fit.divergences
        draws = predictive_draws(model, fit, table.data, pred_key, priors)[:, held]
        lower[held] = np.quantile(draws, tail, axis=0)
        upper[held] = np.quantile(draws, 1.0 - tail, axis=0)
    return HoldoutResult(
        names=table.names,
        groups=table.groups,
        observed=np.asarray(table.data.y),
        lower=lower,
        upper=upper,
        prob=prob,
        max_rhat=max_rhat,
        divergences=divergences,
    )
