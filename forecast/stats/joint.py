"""The joint NumPyro model: trends, frontier compute and the scaling laws in one program.

One pure model (:func:`joint_model`, data and priors in, no I/O) holds

* the hardware-trend and frontier-compute models of :func:`forecast.stats.trends.trend_model` (same site
  names, so :func:`forecast.inference.draws.posterior_draws` and :func:`forecast.stats.trends.project` work
  on its posterior unchanged);
* the four laws of :mod:`forecast.stats.scaling_laws`: depth, batch, utilization and domain growth,
  each with its likelihood (``docs/evidence.md`` states and justifies each observation model);
* the run-efficiency likelihood of :mod:`forecast.stats.run_efficiency`: published runs' achieved
  MFU against the step-time model's prediction on each run's own plan;
* the sequence-length law of :mod:`forecast.stats.sequence_length`: published pretraining context
  lengths by year (the realistic regime's sequence input).

The law parameters that the forecast propagates (:data:`forecast.priors.registry.FITTED_INPUTS`)
take their priors from the **base prior file** (:func:`law_priors_from_prior_set`): the file's
distribution of ``scaling.batch_tokens_2024`` is the prior of the batch level, and so on, mapped to
the site's scale (log10 of a level, logit of a fraction, half the batch exponent on N for the
exponent on compute). The nuisance parameters (scatter, shortfall, MoE offset) keep the weakly
informative priors of :mod:`forecast.stats.scaling_laws`. A fixed value in the prior file makes the
parameter a deterministic site: fixed, not fitted.

The other propagated inputs (latencies, network, run length, precision, MoE shape) have no data.
They are the program's **free block** (:func:`free_inputs_model`): one sample site per key with
the prior file's distribution, exactly (:meth:`forecast.priors.distributions.Prior.to_numpyro_exact`,
split and quantile fits included). NUTS runs the program without that block (``free_inputs=None``):
no likelihood touches those sites, so their posterior is their prior and sampling them by MCMC
would only add autocorrelated copies of it. The propagation draws the block with
``numpyro.infer.Predictive`` (:func:`draw_free_inputs`), one independent draw per thinned
posterior draw, the fitted block's values being those posterior draws. Each site has its own
random stream (``fold_in`` of the draw's key by the key's name), so a key a scenario leaves alone
has identical draws in every scenario, whatever else the scenario changes.

:func:`forecast.inference.fit.fit_joint` runs NUTS on it and returns one ArviZ DataTree with
the groups of :func:`forecast.inference.fit.fit_observations` plus ``prior`` (the same variables
drawn from the joint model's priors, no data).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from functools import partial
from typing import Any, NamedTuple

import jax
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd
from numpyro.infer import Predictive

from forecast.config.runtime import exclusive, init_jax
from forecast.priors.distributions import Prior, log10_normal
from forecast.priors.provenance import input_kind
from forecast.priors.registry import PROPAGATED_KEYS
from forecast.stats.run_efficiency import (
    RUN_EFFICIENCY_PARAMETERS,
    RUN_EFFICIENCY_PRIORS,
    RUN_MFU_SITE,
    RunEfficiencyPriors,
    run_efficiency_model,
    run_efficiency_table,
)
from forecast.stats.scaling_laws import (
    BATCH_PRIORS,
    DEPTH_PRIORS,
    DOMAIN_PRIORS,
    UTILIZATION_PRIORS,
    BatchPriors,
    DepthPriors,
    DomainPriors,
    LawData,
    LawTable,
    UtilizationPriors,
    batch_law_model,
    batch_table,
    depth_law_model,
    depth_table,
    domain_growth_model,
    domain_table,
    utilization_law_model,
    utilization_table,
)
from forecast.stats.sequence_length import (
    SEQUENCE_PARAMETERS,
    SEQUENCE_PRIORS,
    SEQUENCE_SITE,
    SequencePriors,
    sequence_law_model,
    sequence_table,
)
from forecast.stats.trends import (
    FrontierObservations,
    HardwareObservations,
    TrendPriors,
    frontier_observations,
    trend_model,
    trend_observations,
)

LAWS: tuple[str, ...] = ("depth", "batch", "utilization", "domain", "run_efficiency", "sequence")

LAW_OBSERVED_SITES: dict[str, str] = {
    "depth": "log10_layers",
    "batch": "log10_batch",
    "utilization": "log10_mfu",
    "domain": "log10_domain",
    "run_efficiency": RUN_MFU_SITE,
    "sequence": SEQUENCE_SITE,
}
"""Likelihood site of each law (its plate is ``<site>_row``)."""

LAW_PARAMETERS: dict[str, tuple[str, ...]] = {
    "depth": ("log10_layers_ref", "layer_exponent", "depth_noise_dex", "layers_at_reference"),
    "batch": (
        "log10_batch_2024",
        "batch_compute_exponent",
        "moe_batch_offset_dex",
        "batch_shortfall_dex",
        "batch_noise_dex",
        "batch_tokens_2024",
        "batch_exponent",
    ),
    "utilization": (
        "logit_max_utilization",
        "mfu_shortfall_dex",
        "mfu_noise_dex",
        "max_utilization",
    ),
    "domain": (
        "log10_domain_2024",
        "domain_growth_dex_per_year",
        "domain_noise_dex",
        "domain_size_2024",
        "domain_growth_per_year",
    ),
    "run_efficiency": RUN_EFFICIENCY_PARAMETERS,
    "sequence": SEQUENCE_PARAMETERS,
}
"""Posterior variables of each law: sample sites, then deterministic sites in model units."""


class LawPrior(NamedTuple):
    """How a prior key of the base file becomes the prior of a law's sample site."""

    law: str
    field: str  # the override field of the law's priors NamedTuple
    site: str  # the sample site it is the prior of
    scale: str  # "log10", "logit" or "linear"
    factor: float = 1.0  # linear scale only: site = factor x key


LAW_PRIOR_KEYS: dict[str, LawPrior] = {
    "scaling.layers_at_reference": LawPrior(
        "depth", "log10_layers_ref", "log10_layers_ref", "log10"
    ),
    "scaling.layer_exponent": LawPrior("depth", "exponent", "layer_exponent", "linear"),
    "scaling.batch_tokens_2024": LawPrior("batch", "log10_batch", "log10_batch_2024", "log10"),
    # the exponent on compute is half the exponent on N: C = 120 N^2 on the compute-optimal path
    "scaling.batch_exponent": LawPrior(
        "batch", "exponent", "batch_compute_exponent", "linear", 0.5
    ),
    "training.max_utilization": LawPrior(
        "utilization", "logit_max", "logit_max_utilization", "logit"
    ),
    "hardware.scaleup_domain_size_growth_per_year": LawPrior(
        "domain", "growth", "domain_growth_dex_per_year", "log10"
    ),
}
"""Each fitted prior key: the law site whose prior it sets, and on which scale."""

_LN10 = math.log(10.0)
_Z90 = 1.2815515655446004


def _logit(x: float) -> float:
    return math.log(x / (1.0 - x))


def site_prior(prior: Prior, scale: str, factor: float = 1.0) -> Any:
    """The prior file's distribution of a key, as the prior of a site on ``scale``.

    Exact where the family maps to a NumPyro distribution on that scale: a log-normal is a Normal
    in log10, a log-uniform a Uniform in log10, a logit-normal a Normal in logit, a normal scaled
    by ``factor`` a Normal; any other family on a linear scale is ``prior.to_numpyro()`` scaled.
    Split and piecewise (quantile) fits, and other families on log10/logit scales, become the
    nearest Normal on that scale: same median, same 10-90 % width (as :meth:`Prior.to_numpyro`).
    A fixed value returns a number (the site becomes deterministic).
    """
    p = prior.params
    if prior.is_point:
        value = p["value"]
        return {"log10": math.log10, "logit": _logit, "linear": lambda v: factor * v}[scale](value)
    if scale == "log10":
        if prior.dist == "lognormal":
            return dist.Normal(math.log(p["median"]) / _LN10, p["sigma"] / _LN10)
        if prior.dist == "loguniform":
            return dist.Uniform(math.log10(p["low"]), math.log10(p["high"]))
        loc, sd = log10_normal(*(prior.quantile(q) for q in (0.1, 0.5, 0.9)))
        return dist.Normal(loc, sd)
    if scale == "logit":
        if prior.dist == "logitnormal":
            return dist.Normal(_logit(p["median"]), p["sigma"])
        lo, mid, hi = (_logit(prior.quantile(q)) for q in (0.1, 0.5, 0.9))
        return dist.Normal(mid, (hi - lo) / (2.0 * _Z90))
    if scale != "linear":
        raise ValueError(f"unknown scale {scale!r}")
    base = prior.to_numpyro()
    if isinstance(base, dist.Normal):
        return dist.Normal(factor * base.loc, factor * base.scale)
    if factor == 1.0:
        return base
    return dist.TransformedDistribution(base, dist.transforms.AffineTransform(0.0, factor))


class LawPriors(NamedTuple):
    """Priors of the laws (the fitted keys' entries set from the base prior file)."""

    depth: DepthPriors = DEPTH_PRIORS
    batch: BatchPriors = BATCH_PRIORS
    utilization: UtilizationPriors = UTILIZATION_PRIORS
    domain: DomainPriors = DOMAIN_PRIORS
    run_efficiency: RunEfficiencyPriors = RUN_EFFICIENCY_PRIORS
    sequence: SequencePriors = SEQUENCE_PRIORS


def law_priors_from_prior_set(prior_set: Any) -> LawPriors:
    """:class:`LawPriors` whose fitted parameters take the priors of ``prior_set``'s base file.

    A scenario overlay that sets a fitted key does not change the fit (its distribution replaces
    the posterior at propagation instead), so the base set of a scenario is used.
    """
    base = getattr(prior_set, "base", None) or prior_set
    laws: dict[str, Any] = dict(LawPriors()._asdict())
    for key, where in LAW_PRIOR_KEYS.items():
        override = site_prior(base[key], where.scale, where.factor)
        laws[where.law] = laws[where.law]._replace(**{where.field: override})
    return LawPriors(**laws)


def law_prior_record(prior_set: Any) -> dict[str, dict[str, Any]]:
    """The base prior file's entries of the fitted keys (JSON-able; for attrs and cache keys)."""
    base = getattr(prior_set, "base", None) or prior_set
    return {
        key: {"dist": base[key].dist, "params": dict(base[key].params), "site": where.site}
        for key, where in LAW_PRIOR_KEYS.items()
    }


class JointData(NamedTuple):
    """Everything the joint model is fitted to."""

    hardware: HardwareObservations
    frontier: FrontierObservations
    depth: LawData
    batch: LawData
    utilization: LawData
    domain: LawData
    run_efficiency: LawData
    sequence: LawData


def law_tables(
    shapes: pd.DataFrame, domains: pd.DataFrame, predicted_runs: pd.DataFrame
) -> dict[str, LawTable]:
    """The rows of each law (``forecast.stats.scaling_laws`` selections and the evaluated runs of
    :func:`forecast.stats.run_efficiency.run_efficiency_table`), by law name."""
    return {
        "depth": depth_table(shapes),
        "batch": batch_table(shapes),
        "utilization": utilization_table(shapes),
        "domain": domain_table(domains),
        "run_efficiency": run_efficiency_table(predicted_runs),
        "sequence": sequence_table(shapes),
    }


def joint_data(
    hardware_df: pd.DataFrame,
    frontier_df: pd.DataFrame,
    shapes_df: pd.DataFrame,
    domains_df: pd.DataFrame,
    predicted_runs_df: pd.DataFrame,
) -> tuple[JointData, dict[str, LawTable]]:
    """The model's arrays from the validated tables (``predicted_runs_df``: the published runs
    with the model's predicted MFU on each run's plan), and each law's table (provenance)."""
    tables = law_tables(shapes_df, domains_df, predicted_runs_df)
    data = JointData(
        trend_observations(hardware_df),
        frontier_observations(frontier_df),
        *(tables[law].data for law in LAWS),
    )
    return data, tables


def _stream(key: str) -> int:
    """A fixed 31-bit number per prior key: the ``fold_in`` datum of its random stream."""
    return zlib.crc32(f"wallcast-free-input:{key}".encode()) & 0x7FFFFFFF


def free_inputs_model(free_inputs: Mapping[str, Any]) -> None:
    """The free block: one sample site per key (its NumPyro distribution), each drawn on its own
    stream derived from one key of the program's seed, so the draws of a key do not depend on
    which other keys the block holds or on the order of the program's other sites."""
    draw_key = numpyro.prng_key()
    for key, distribution in free_inputs.items():
        numpyro.sample(key, distribution, rng_key=jax.random.fold_in(draw_key, _stream(key)))


def joint_model(
    data: JointData | None,
    trend_priors: TrendPriors | None,
    law_priors: LawPriors | None,
    *,
    observed: bool = True,
    free_inputs: Mapping[str, Any] | None = None,
) -> None:
    """Trends, frontier compute, the four laws, the run efficiency and the sequence length
    (independent likelihoods, one posterior), and
    the free block of the inputs no data touches (:func:`free_inputs_model`).

    ``observed=False`` drops every observed value (prior and posterior predictive draws).
    ``free_inputs`` (key -> NumPyro distribution, :func:`free_input_distributions`) adds the free
    block; ``data=None`` leaves out the fitted block (trend and law parameters and likelihoods),
    which is how the propagation draws the free block beside the posterior draws.
    """
    if free_inputs is not None:
        free_inputs_model(free_inputs)
    if data is None:
        return
    trend_model(data.hardware, data.frontier, trend_priors, observed=observed)
    depth_law_model(data.depth, law_priors.depth, None, observed)
    batch_law_model(data.batch, law_priors.batch, None, observed)
    utilization_law_model(data.utilization, law_priors.utilization, None, observed)
    domain_growth_model(data.domain, law_priors.domain, None, observed)
    run_efficiency_model(data.run_efficiency, law_priors.run_efficiency, None, observed)
    sequence_law_model(data.sequence, law_priors.sequence, None, observed)


def free_input_distributions(prior_set: Any, posterior_variables: Any) -> dict[str, Any]:
    """Key -> exact NumPyro distribution of every propagated input that this scenario does not
    take from the posterior (:func:`forecast.priors.provenance.input_kind` "prior", "fixed" or
    "scenario"), in :data:`forecast.priors.registry.PROPAGATED_KEYS` order."""
    return {
        key: prior_set[key].to_numpyro_exact()
        for key in PROPAGATED_KEYS
        if input_kind(key, prior_set, posterior_variables) != "fitted"
    }


@exclusive
def draw_free_inputs(
    prior_set: Any, posterior_variables: Any, n: int, rng_key: jax.Array
) -> dict[str, np.ndarray]:
    """``n`` draws of the joint program's free block (``numpyro.infer.Predictive``, vectorized):
    key -> array (n,). A fixed value is a Delta site: ``n`` copies of it."""
    init_jax()
    free = free_input_distributions(prior_set, posterior_variables)
    if not free:
        return {}
    model = partial(joint_model, None, None, None, observed=False, free_inputs=free)
    draws = Predictive(model, num_samples=int(n), return_sites=list(free), parallel=True)(rng_key)
    return {key: np.asarray(draws[key], dtype=float).reshape(int(n)) for key in free}
