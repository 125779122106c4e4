"""The sequence-length law: the training context of published models, by year.

The realistic plan regime (:mod:`forecast.model.realistic`) cuts microbatches out of whole
sequences (or one sequence over context-parallel ranks), so the sequence length is an input of its
walls.  Published pretraining context lengths (``sequence_length`` of ``data/model_shapes.csv``:
512 for GPT-1 in 2018, 2,048 for GPT-3 to LLaMA, 4,096-8,192 for Llama 2-3 and DeepSeek, 32,768
for Gemma 3 and DBRX) grow with the year; the observation model is::

    log10 S[i] ~ Normal(log10 S_2024 + g (year[i] - 2024), sigma_S)

Priors: ``log10 S_2024`` ~ Normal(log10 8192, 0.5): Llama 3's 8k, a factor of 3 either way.
``g`` ~ Normal(0, 0.2) dex a year: no growth expected a priori, so growth is fitted only if the
data show it. ``sigma_S`` ~ HalfNormal(0.3 dex): labs pick powers of two a factor of 2-4 apart
in the same year.  Long-context extension stages after pretraining (Llama 3.1's 128k) are not in
the table's column, which holds the length most of the tokens were trained at.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd

from forecast.stats.scaling_laws import LawData, LawTable, _observe, _table

SEQUENCE_REFERENCE_YEAR = 2024.0
SEQUENCE_SITE = "log10_sequence"
"""The law's observed site (its plate is ``log10_sequence_row``)."""

SEQUENCE_PARAMETERS: tuple[str, ...] = (
    "log10_sequence_2024",
    "sequence_growth_dex_per_year",
    "sequence_noise_dex",
    "sequence_length_2024",
    "sequence_growth_per_year",
)
"""Posterior variables of the law: sample sites, then deterministic sites in model units."""


class SequencePriors(NamedTuple):
    """Priors of the sequence-length law (dex); the module docstring gives the reasons."""

    log10_level_loc: float = math.log10(8192.0)
    log10_level_scale: float = 0.5
    growth_loc: float = 0.0
    growth_scale: float = 0.2
    noise_scale: float = 0.3


SEQUENCE_PRIORS = SequencePriors()


def sequence_table(shapes: pd.DataFrame) -> LawTable:
    """Models with a published sequence length and date: x = year - 2024, y = log10 length."""
    rows = shapes.loc[shapes["sequence_length"].notna() & shapes["year"].notna()]
    return _table(
        rows,
        rows["year"] - SEQUENCE_REFERENCE_YEAR,
        np.log10(rows["sequence_length"].astype(float)),
        (rows["architecture"] == "moe").astype(float),
        "model",
        "data/model_shapes.csv",
        "models with sequence_length and date (dense and MoE)",
    )


def sequence_law_model(
    data: LawData, priors: SequencePriors = SEQUENCE_PRIORS, mask: Any = None, observed: bool = True
) -> None:
    """log10 S ~ Normal(log10 S_2024 + g (year - 2024), sigma_S)."""
    level = numpyro.sample(
        "log10_sequence_2024", dist.Normal(priors.log10_level_loc, priors.log10_level_scale)
    )
    growth = numpyro.sample(
        "sequence_growth_dex_per_year", dist.Normal(priors.growth_loc, priors.growth_scale)
    )
    noise = numpyro.sample("sequence_noise_dex", dist.HalfNormal(priors.noise_scale))
    numpyro.deterministic("sequence_length_2024", 10.0**level)
    numpyro.deterministic("sequence_growth_per_year", 10.0**growth)
    _observe(SEQUENCE_SITE, dist.Normal(level + growth * data.x, noise), data, mask, observed)


def sequence_length_trend(year, log10_sequence_2024, growth_dex_per_year):
    """The law's typical sequence length (tokens) in ``year`` (arrays broadcast): the trend
    without the scatter, for one posterior draw or many."""
    x = jnp.asarray(year, dtype=jnp.float64) - SEQUENCE_REFERENCE_YEAR
    return 10.0 ** (jnp.asarray(log10_sequence_2024) + jnp.asarray(growth_dex_per_year) * x)
