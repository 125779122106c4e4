"""Where each propagated input of a forecast comes from: fitted, prior, fixed or scenario.

One rule, used by the propagation (which draws to use) and by the published ``input_provenance``
attribute (what the reader is told), so the two cannot disagree. No JAX, no xarray.

For a propagated key and a scenario's prior set:

* ``"scenario"``: a scenario overlay set a key that the joint model fits
  (:data:`forecast.priors.registry.FITTED_INPUTS`); its distribution replaces the fitted posterior
  (a what-if);
* ``"fitted"``: a fitted key whose posterior variable the fit holds and whose base prior is not a
  fixed value: the draws are the joint posterior's;
* ``"fixed"``: the prior is a fixed value (a point mass), fitted key or not;
* ``"prior"``: drawn from its prior (every other propagated key, and a fitted key when the fit
  has no such variable, e.g. a trend-only fit).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any, Literal

from forecast.priors.registry import FITTED_INPUTS, PROPAGATED_KEYS

InputKind = Literal["fitted", "prior", "fixed", "scenario"]


def overrides_fitted(prior_set: Any, key: str) -> bool:
    """Whether ``prior_set`` is a scenario whose overlay replaced the base prior of fitted ``key``."""
    base = getattr(prior_set, "base", None)
    return key in FITTED_INPUTS and base is not None and prior_set[key] != base[key]


def input_kind(key: str, prior_set: Any, posterior_variables: Collection[str]) -> InputKind:
    """Where the propagated draws of ``key`` come from in this scenario (module docstring)."""
    if overrides_fitted(prior_set, key):
        return "scenario"
    if prior_set[key].is_point:
        return "fixed"
    fitted = FITTED_INPUTS.get(key)
    if fitted is not None and fitted.variable in posterior_variables:
        return "fitted"
    return "prior"


def _entry(
    key: str, prior_set: Any, posterior_variables: Collection[str], law_rows: Mapping[str, int]
) -> dict[str, Any]:
    kind = input_kind(key, prior_set, posterior_variables)
    prior = prior_set[key]
    if kind != "fitted":
        return {"kind": kind, "source": prior.source}
    fitted = FITTED_INPUTS[key]
    return {
        "kind": "fitted",
        "law": fitted.law,
        "variable": fitted.variable,
        "table": f"data/{fitted.table}",
        "rows": int(law_rows.get(fitted.law, 0)),
        "prior_source": prior.source,
    }


def input_provenance(
    scenarios: Mapping[str, Any],
    posterior_variables: Collection[str],
    law_rows: Mapping[str, int],
    keys: Collection[str] = PROPAGATED_KEYS,
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{scenario: {prior_key: {"kind": ..., ...}}}`` for every propagated key.

    ``fitted`` entries carry ``law``, ``variable``, ``table`` (``data/model_shapes.csv``), ``rows``
    (rows the law was fitted to) and ``prior_source``; the others carry ``source``.
    """
    return {
        name: {k: _entry(k, ps, posterior_variables, law_rows) for k in keys}
        for name, ps in scenarios.items()
    }


def provenance_json(provenance: Mapping[str, Any]) -> str:
    """The root attribute ``input_provenance``: canonical JSON (keys in insertion order)."""
    return json.dumps(provenance, ensure_ascii=False)
