"""Per-law NumPyro likelihoods for the scaling, utilization and domain-size inputs.

Four laws, each a pure NumPyro model of arrays (no I/O) plus the helpers that build its arrays
from the evidence tables; fitting one law alone with NUTS and checking it on held-out rows is
:mod:`forecast.analyses.law_holdout`. The joint model (:mod:`forecast.stats.joint`) calls the
same model functions, with the fitted parameters' priors taken from the prior file (the
``priors`` overrides); ``docs/evidence.md`` states and justifies each observation model. All
logarithms are base 10 ("dex").

Depth law (dense models of ``model_shapes.csv``)::

    log10 L[i] = log10 L_ref + alpha * log10(N[i] / N_ref) + e[i],     e[i] ~ Normal(0, sigma_L)

with ``N_ref = 4.05e11`` (the pivot of :func:`forecast.model.scaling.layers_for_params`).

Batch law (runs of ``model_shapes.csv`` with a published final batch and a training compute)::

    log10 B_crit(C) = log10 B_2024 + beta * log10(C / C_ref) + delta_moe * moe
    log10 B[i]      = log10 B_crit(C[i]) - s[i] + e[i],  s[i] ~ HalfNormal(tau),  e[i] ~ Normal(0, sigma)

The batch a lab used is at or below the critical batch (it may stay below for its own reasons:
hardware, stability, habit), so the observation is the latent ceiling minus a non-negative
shortfall, plus a small reporting noise. Marginalising the shortfall gives a skew-normal
(:class:`NormalBelowCeiling`), so no per-run latent enters NUTS. ``C_ref = 6 x 20 x (5.6e11)^2 =
3.76e25`` FLOP is the Chinchilla-optimal compute of ``scaling.batch_reference_params`` = 5.6e11,
so ``B_2024`` is ``scaling.batch_tokens_2024`` and, with C = 120 N^2, ``scaling.batch_exponent``
(on N) is ``2 beta``. MoE runs enter by their compute (6 x active parameters x tokens) with an
offset ``delta_moe`` of their own, so that a few sparse runs cannot set the dense level alone.

Utilization (runs with a published MFU)::

    log10 MFU[i] = log10 u_max - s[i] + e[i],   s[i] ~ HalfNormal(tau_u),   e[i] ~ Normal(0, sigma_u)

MFU at scale is at or below the small-scale maximum ``training.max_utilization``.

Domain growth (flagship switched NVIDIA systems of ``scaleup_domains.csv``, by availability)::

    log10 D[i] = log10 D_2024 + g * (year[i] - 2024) + e[i],   e[i] ~ Normal(0, sigma_D)

One module for the four laws: each law is a model and the builder of its arrays, and the four
share the table and observation helpers; one law per module would be four small modules
importing one shared one, with no reader gain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd
from jax.scipy.special import log_ndtr
from jax.scipy.stats import norm
from numpyro.distributions import constraints
from numpyro.distributions.util import promote_shapes, validate_sample

from forecast.model.params import LAYER_REFERENCE_PARAMS, LAYERS_AT_REFERENCE

DEPTH_REFERENCE_PARAMS = LAYER_REFERENCE_PARAMS
"""N_ref of the depth law: 4.05e11 parameters (Llama 3.1 405B), as ``scaling.layer_reference_params``."""
BATCH_REFERENCE_PARAMS = 5.6e11
"""``scaling.batch_reference_params``: Chinchilla-optimal N of a 3.8e25 FLOP run."""
TOKENS_PER_PARAM = 20.0
"""``scaling.tokens_per_param`` (Hoffmann et al. 2022), so C = 6 N D = 120 N^2."""
BATCH_REFERENCE_FLOP = 6.0 * TOKENS_PER_PARAM * BATCH_REFERENCE_PARAMS**2
"""C_ref = 3.7632e25 FLOP: the compute at which the critical batch is ``B_2024``."""
DOMAIN_REFERENCE_YEAR = 2024.0


class NormalBelowCeiling(dist.Distribution):
    """``x = ceiling - s + e`` with ``s ~ HalfNormal(shortfall_scale)``, ``e ~ Normal(0, noise_scale)``.

    The marginal of ``x`` is skew-normal with location ``ceiling``, scale
    ``omega = hypot(noise_scale, shortfall_scale)`` and shape ``-shortfall_scale / noise_scale``::

        p(x) = 2 / omega * phi(z) * Phi(-(shortfall_scale / noise_scale) * z),   z = (x - ceiling) / omega

    Values above the ceiling are penalised like a Normal of scale ``noise_scale``; values below it
    only as far as the shortfall scale makes them unlikely.
    """

    arg_constraints = {
        "ceiling": constraints.real,
        "noise_scale": constraints.positive,
        "shortfall_scale": constraints.positive,
    }
    support = constraints.real
    reparametrized_params = ["ceiling", "noise_scale", "shortfall_scale"]

    def __init__(self, ceiling, noise_scale, shortfall_scale, *, validate_args=None):
        self.ceiling, self.noise_scale, self.shortfall_scale = promote_shapes(
            ceiling, noise_scale, shortfall_scale
        )
        batch_shape = jax.lax.broadcast_shapes(
            jnp.shape(ceiling), jnp.shape(noise_scale), jnp.shape(shortfall_scale)
        )
        super().__init__(batch_shape=batch_shape, validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        k_short, k_noise = jax.random.split(key)
        shape = sample_shape + self.batch_shape
        shortfall = jnp.abs(jax.random.normal(k_short, shape)) * self.shortfall_scale
        noise = jax.random.normal(k_noise, shape) * self.noise_scale
        return self.ceiling - shortfall + noise

    @validate_sample
    def log_prob(self, value):
        omega = jnp.hypot(self.noise_scale, self.shortfall_scale)
        z = (value - self.ceiling) / omega
        shape = self.shortfall_scale / self.noise_scale
        return math.log(2.0) - jnp.log(omega) + norm.logpdf(z) + log_ndtr(-shape * z)

    @property
    def mean(self):
        return self.ceiling - self.shortfall_scale * math.sqrt(2.0 / math.pi)

    @property
    def variance(self):
        return self.noise_scale**2 + self.shortfall_scale**2 * (1.0 - 2.0 / math.pi)


class LawData(NamedTuple):
    """Arrays one law is fitted to (a JAX pytree).

    ``x``: the predictor (log10 N / N_ref, log10 C / C_ref, years since 2024; zeros when the law
    has none); ``y``: the log10 response; ``moe``: 1.0 for mixture-of-experts rows, else 0.0.
    """

    x: Any
    y: Any
    moe: Any


@dataclass(frozen=True)
class LawTable:
    """A law's arrays with the provenance of every row."""

    data: LawData
    names: tuple[str, ...]
    groups: tuple[str, ...]
    """Source of each row (its first ``source_url``): rows of one paper share a group."""
    table: str
    selection: str

    def __len__(self) -> int:
        return len(self.names)


def _first_source(url: str) -> str:
    return url.split(";")[0].strip()


def _table(df: pd.DataFrame, x, y, moe, name_col: str, table: str, selection: str) -> LawTable:
    data = LawData(
        x=np.asarray(x, dtype=np.float64),
        y=np.asarray(y, dtype=np.float64),
        moe=np.asarray(moe, dtype=np.float64),
    )
    return LawTable(
        data=data,
        names=tuple(str(n) for n in df[name_col]),
        groups=tuple(_first_source(u) for u in df["source_url"]),
        table=table,
        selection=selection,
    )


def depth_table(shapes: pd.DataFrame) -> LawTable:
    """Dense models with a published depth: x = log10(N / 4.05e11), y = log10 layers."""
    rows = shapes.loc[(shapes["architecture"] == "dense") & shapes["layers"].notna()]
    return _table(
        rows,
        np.log10(rows["total_params"] / DEPTH_REFERENCE_PARAMS),
        np.log10(rows["layers"]),
        np.zeros(len(rows)),
        "model",
        "data/model_shapes.csv",
        "dense models with layers",
    )


def batch_table(shapes: pd.DataFrame) -> LawTable:
    """Runs with a final batch and a training compute: x = log10(C / C_ref), y = log10 batch."""
    rows = shapes.loc[shapes["batch_size_tokens"].notna() & shapes["training_compute_flop"].notna()]
    return _table(
        rows,
        np.log10(rows["training_compute_flop"] / BATCH_REFERENCE_FLOP),
        np.log10(rows["batch_size_tokens"]),
        (rows["architecture"] == "moe").astype(float),
        "model",
        "data/model_shapes.csv",
        "models with batch_size_tokens and training_compute_flop (dense and MoE)",
    )


def utilization_table(shapes: pd.DataFrame) -> LawTable:
    """Runs with a published model-FLOP utilization: y = log10 MFU (x unused)."""
    rows = shapes.loc[shapes["utilization_mfu"].notna()]
    return _table(
        rows,
        np.zeros(len(rows)),
        np.log10(rows["utilization_mfu"]),
        (rows["architecture"] == "moe").astype(float),
        "model",
        "data/model_shapes.csv",
        "models with utilization_mfu",
    )


def domain_table(
    domains: pd.DataFrame,
    *,
    vendors: Sequence[str] = ("NVIDIA",),
    roles: Sequence[str] = ("flagship",),
    topologies: Sequence[str] = ("switched",),
) -> LawTable:
    """Systems with an availability date: x = year - 2024, y = log10 domain size.

    The default selection is the switched flagship systems of NVIDIA, the frontier accelerator's
    family: HGX A100 and H100 (8), GB200 and GB300 NVL72 (72), Vera Rubin (72 packages) and
    Rubin Ultra (144 packages). Tori (TPU pods, Trainium) grow differently and are not in it.
    """
    keep = (
        domains["vendor"].isin(vendors)
        & domains["role"].isin(roles)
        & domains["topology"].isin(topologies)
        & domains["available_year"].notna()
    )
    rows = domains.loc[keep]
    return _table(
        rows,
        rows["available_year"] - DOMAIN_REFERENCE_YEAR,
        np.log10(rows["domain_size"]),
        np.zeros(len(rows)),
        "system",
        "data/scaleup_domains.csv",
        f"vendor in {list(vendors)}, role in {list(roles)}, topology in {list(topologies)}, "
        "with an availability date",
    )


class DepthPriors(NamedTuple):
    """Normal priors on log10 L_ref and alpha, HalfNormal on the scatter (dex).

    Centres: Sevilla et al. (2024), "Can AI scaling continue through 2030?" (Epoch AI), L = 0.088
    N^0.27, i.e. 119.8 layers at N_ref. Scales are wide (their 80 % range of alpha, 0.21-0.33,
    is about +-0.05) so that the data decide.
    """

    log10_layers_ref_loc: float = math.log10(LAYERS_AT_REFERENCE)
    log10_layers_ref_scale: float = 0.3
    exponent_loc: float = 0.27
    exponent_scale: float = 0.15
    noise_scale: float = 0.2
    log10_layers_ref: Any = None
    """Override of the ``log10_layers_ref`` prior (a distribution, or a number: fixed)."""
    exponent: Any = None
    """Override of the ``layer_exponent`` prior."""


class BatchPriors(NamedTuple):
    """Priors of the batch law (dex).

    Level: centred on Sevilla et al. (2024)'s 60M tokens in 2024, 1 dex wide (their 80 % range,
    16M-360M, is about +-0.7 dex). Exponent on compute: centred on their alpha_B = 0.36 on N,
    i.e. 0.18 on C = 120 N^2, 0.1 wide. MoE offset: none expected, +-0.3 dex. Shortfall scale:
    HalfNormal(0.5 dex), i.e. labs up to ~10x below the critical batch. Reporting noise:
    LogNormal with median 0.1 dex (90 % within 0.04-0.23 dex): "4M" written for 4,194,304 is
    0.02 dex, a ramp's final batch against its mean up to ~0.3 dex. Kept away from zero, where a
    sharp ceiling would make the posterior a funnel NUTS cannot explore.
    """

    log10_batch_loc: float = math.log10(60e6)
    log10_batch_scale: float = 1.0
    exponent_loc: float = 0.18
    exponent_scale: float = 0.1
    moe_offset_scale: float = 0.3
    shortfall_scale: float = 0.5
    noise_median: float = 0.1
    noise_log_sd: float = 0.5
    log10_batch: Any = None
    """Override of the ``log10_batch_2024`` prior (a distribution, or a number: fixed)."""
    exponent: Any = None
    """Override of the ``batch_compute_exponent`` prior (on compute: half the exponent on N)."""


class UtilizationPriors(NamedTuple):
    """Priors of the utilization law.

    ``logit u_max``: Normal matching ``training.max_utilization`` of priors/baseline.toml (10/50/90 %
    = 0.55/0.70/0.80, from the best BF16 matmuls reaching ~80 % of peak on H100 and B200, Bekman,
    "Machine Learning Engineering", MAMF table). Shortfall: HalfNormal(0.3 dex). Noise:
    LogNormal with median 0.03 dex (90 % within 0.013-0.07 dex): MFU definitions differ by a few
    percent, e.g. whether attention FLOPs count (Chowdhery et al. 2022, PaLM, appendix B).
    """

    logit_max_loc: float = math.log(0.70 / 0.30)
    logit_max_scale: float = (math.log(0.80 / 0.20) - math.log(0.55 / 0.45)) / (
        2 * 1.2815515655446004
    )
    shortfall_scale: float = 0.3
    noise_median: float = 0.03
    noise_log_sd: float = 0.5
    logit_max: Any = None
    """Override of the ``logit_max_utilization`` prior (a distribution, or a number: fixed)."""


class DomainPriors(NamedTuple):
    """Priors of the domain-growth law (dex).

    Level in 2024: centred on 72 (GB200 NVL72), 1 dex wide. Growth: centred on the baseline
    prior's median 1.34x/yr (log10 = 0.127), 0.15 dex/yr wide (1.0x to 1.8x/yr within ~1 sd).
    Scatter: HalfNormal(0.3 dex): domains grow in steps (8 -> 72), not smoothly.
    """

    log10_level_loc: float = math.log10(72.0)
    log10_level_scale: float = 1.0
    growth_loc: float = math.log10(1.34)
    growth_scale: float = 0.15
    noise_scale: float = 0.3
    growth: Any = None
    """Override of the ``domain_growth_dex_per_year`` prior (a distribution, or a number: fixed)."""


DEPTH_PRIORS = DepthPriors()
BATCH_PRIORS = BatchPriors()
UTILIZATION_PRIORS = UtilizationPriors()
DOMAIN_PRIORS = DomainPriors()


def _observe(name: str, fn: dist.Distribution, data: LawData, mask, observed: bool) -> None:
    """The likelihood site ``name`` over the law's rows (plate ``<name>_row``: one plate name per
    law, so that the four laws can share one program and one ArviZ tree)."""
    n = jnp.shape(data.y)[0]
    with (
        numpyro.plate(f"{name}_row", n),
        numpyro.handlers.mask(mask=True if mask is None else mask),
    ):
        numpyro.sample(name, fn, obs=data.y if observed else None)


def _parameter(name: str, override: Any, loc, scale) -> Any:
    """A law parameter: ``Normal(loc, scale)`` by default; ``override`` replaces that prior.

    ``override`` is a NumPyro distribution (the joint model's prior from the prior file, in this
    site's units) or a number (a fixed value: a deterministic site, not sampled).
    """
    if override is None:
        return numpyro.sample(name, dist.Normal(loc, scale))
    if isinstance(override, dist.Distribution):
        return numpyro.sample(name, override)
    return numpyro.deterministic(name, jnp.asarray(override, dtype=float))


def depth_law_model(
    data: LawData, priors: DepthPriors = DEPTH_PRIORS, mask=None, observed: bool = True
) -> None:
    """log10 layers ~ Normal(log10 L_ref + alpha log10(N / N_ref), sigma_L); dense models."""
    log10_layers_ref = _parameter(
        "log10_layers_ref",
        priors.log10_layers_ref,
        priors.log10_layers_ref_loc,
        priors.log10_layers_ref_scale,
    )
    exponent = _parameter(
        "layer_exponent", priors.exponent, priors.exponent_loc, priors.exponent_scale
    )
    noise = numpyro.sample("depth_noise_dex", dist.HalfNormal(priors.noise_scale))
    numpyro.deterministic("layers_at_reference", 10.0**log10_layers_ref)
    mu = log10_layers_ref + exponent * data.x
    _observe("log10_layers", dist.Normal(mu, noise), data, mask, observed)


def batch_law_model(
    data: LawData, priors: BatchPriors = BATCH_PRIORS, mask=None, observed: bool = True
) -> None:
    """log10 batch = log10 B_crit(C) - shortfall + noise (:class:`NormalBelowCeiling`)."""
    log10_batch = _parameter(
        "log10_batch_2024", priors.log10_batch, priors.log10_batch_loc, priors.log10_batch_scale
    )
    exponent = _parameter(
        "batch_compute_exponent", priors.exponent, priors.exponent_loc, priors.exponent_scale
    )
    moe_offset = numpyro.sample("moe_batch_offset_dex", dist.Normal(0.0, priors.moe_offset_scale))
    shortfall = numpyro.sample("batch_shortfall_dex", dist.HalfNormal(priors.shortfall_scale))
    noise = numpyro.sample(
        "batch_noise_dex", dist.LogNormal(jnp.log(priors.noise_median), priors.noise_log_sd)
    )
    numpyro.deterministic("batch_tokens_2024", 10.0**log10_batch)
    numpyro.deterministic("batch_exponent", 2.0 * exponent)
    ceiling = log10_batch + exponent * data.x + moe_offset * data.moe
    _observe("log10_batch", NormalBelowCeiling(ceiling, noise, shortfall), data, mask, observed)


def utilization_law_model(
    data: LawData, priors: UtilizationPriors = UTILIZATION_PRIORS, mask=None, observed: bool = True
) -> None:
    """log10 MFU = log10 u_max - shortfall + noise (:class:`NormalBelowCeiling`)."""
    logit_max = _parameter(
        "logit_max_utilization", priors.logit_max, priors.logit_max_loc, priors.logit_max_scale
    )
    shortfall = numpyro.sample("mfu_shortfall_dex", dist.HalfNormal(priors.shortfall_scale))
    noise = numpyro.sample(
        "mfu_noise_dex", dist.LogNormal(jnp.log(priors.noise_median), priors.noise_log_sd)
    )
    max_utilization = numpyro.deterministic("max_utilization", jax.nn.sigmoid(logit_max))
    ceiling = jnp.log10(max_utilization) + 0.0 * data.x
    _observe("log10_mfu", NormalBelowCeiling(ceiling, noise, shortfall), data, mask, observed)


def domain_growth_model(
    data: LawData, priors: DomainPriors = DOMAIN_PRIORS, mask=None, observed: bool = True
) -> None:
    """log10 domain ~ Normal(log10 D_2024 + g (year - 2024), sigma_D)."""
    level = numpyro.sample(
        "log10_domain_2024", dist.Normal(priors.log10_level_loc, priors.log10_level_scale)
    )
    growth = _parameter(
        "domain_growth_dex_per_year", priors.growth, priors.growth_loc, priors.growth_scale
    )
    noise = numpyro.sample("domain_noise_dex", dist.HalfNormal(priors.noise_scale))
    numpyro.deterministic("domain_size_2024", 10.0**level)
    numpyro.deterministic("domain_growth_per_year", 10.0**growth)
    _observe("log10_domain", dist.Normal(level + growth * data.x, noise), data, mask, observed)
