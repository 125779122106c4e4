"""Priors over the model's parameters, read from TOML files and validated.

The package has four modules:

* :mod:`~forecast.priors.registry`: every known parameter key with its unit, domain and role
  (trend prior or propagated input); every key list of the project derives from it;
* :mod:`~forecast.priors.distributions`: the distribution maths (quantile / interval / named /
  fixed forms, domains and transforms, sampling by inverse CDF, usability checks);
* :mod:`~forecast.priors.parsing`: TOML text -> :class:`PriorSet`, with errors naming file, key and
  line (:func:`loads`; :func:`load_priors` / :func:`load_overlay` read a path);
* :mod:`~forecast.priors.priorset`: :class:`PriorSet`, lookup, overlays and reproducible sampling.

See ``priors/README.md`` for the file format. No jax/numpyro import happens at import time.
"""

from forecast.priors.distributions import DISTRIBUTIONS, InvalidPrior, Prior, log10_normal
from forecast.priors.parsing import (
    PriorError,
    Problem,
    default_priors_path,
    load_overlay,
    load_priors,
    loads,
    parse_prior,
)
from forecast.priors.priorset import PriorSet
from forecast.priors.registry import (
    PARAMETERS,
    PROPAGATED_KEYS,
    RETIRED_KEYS,
    TREND_KEYS,
    TREND_SAMPLED_KEYS,
    ParameterSpec,
    growth_key,
    keys_with_role,
    level_key,
)

__all__ = [
    "DISTRIBUTIONS",
    "PARAMETERS",
    "PROPAGATED_KEYS",
    "RETIRED_KEYS",
    "TREND_KEYS",
    "TREND_SAMPLED_KEYS",
    "InvalidPrior",
    "ParameterSpec",
    "Prior",
    "PriorError",
    "PriorSet",
    "Problem",
    "default_priors_path",
    "growth_key",
    "keys_with_role",
    "level_key",
    "load_overlay",
    "load_priors",
    "loads",
    "log10_normal",
    "parse_prior",
]
