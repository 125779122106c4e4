"""The forecast job as plain functions: load -> fit -> propagate each scenario -> assemble.

The steps are :func:`load_inputs` (:mod:`forecast.data.inputs`), :func:`fit`
(:mod:`forecast.inference.fit`), :func:`propagate_scenario` (:mod:`forecast.inference.propagate`)
and :func:`assemble` (here), with :func:`fit_key` (and :func:`forecast.store.inputs_fingerprint`) for caching and
skipping: this module is the job's one interface, which the Prefect flow wraps step by step as
tasks. No step writes outside what it returns (:func:`forecast.store.publish_forecast`
publishes). Folders default to the resolvers of :mod:`forecast.config.paths`.
"""

from __future__ import annotations

import json

import pandas as pd
import xarray as xr

from forecast.data.inputs import Inputs, load_inputs, scenario_path
from forecast.inference.fit import fit, fit_key
from forecast.inference.propagate import propagate_scenario, thinning_step
from forecast.priors.provenance import input_provenance, provenance_json
from forecast.store.attrs import provenance_attrs
from forecast.store.schema import build_tree

__all__ = [
    "Inputs",
    "assemble",
    "fit",
    "fit_key",
    "load_inputs",
    "propagate_scenario",
    "scenario_path",
]


def assemble(
    inputs: Inputs,
    fit_tree: xr.DataTree,
    scenario_results: dict[str, tuple[xr.Dataset, xr.Dataset]],
    *,
    seed: int,
    chains: int,
    draws: int,
    years: list[float] | None = None,
    code: str | None = None,
    propagate_draws: int | None = None,
    run_fingerprint: str | None = None,
    regime: str = "paper",
) -> tuple[xr.DataTree, str]:
    """One DataTree with a ``scenario`` dimension and full provenance; returns (tree, id).

    ``years`` is the requested grid (None: the default), ``code`` the code hash (None: this
    process's :func:`forecast.store.identity.code_hash`), ``propagate_draws`` the thinning target
    and ``regime`` the plans searched (also the root attribute ``regime``); all enter the run
    fingerprint and the id (``run_fingerprint``: already computed by the caller with
    :func:`forecast.store.inputs_fingerprint`, for the same inputs and settings). The root
    attribute ``input_provenance`` says, per scenario and propagated key, whether its draws were
    fitted, prior, fixed or a scenario's.
    """
    names = list(scenario_results)
    forecast = xr.concat(
        [scenario_results[n][0] for n in names], dim=pd.Index(names, name="scenario")
    )
    sampled = xr.concat(
        [scenario_results[n][1] for n in names], dim=pd.Index(names, name="scenario")
    )
    attrs = provenance_attrs(
        inputs,
        names,
        seed=seed,
        chains=chains,
        draws=draws,
        years=years,
        code=code,
        propagate_draws=propagate_draws,
        run_fingerprint=run_fingerprint,
        regime=regime,
    )
    posterior_vars = set(fit_tree["posterior"].data_vars)
    law_rows = json.loads(fit_tree.attrs.get("law_rows", "{}"))
    provenance = input_provenance({n: inputs.scenarios[n] for n in names}, posterior_vars, law_rows)
    attrs["input_provenance"] = provenance_json(provenance)
    attrs["propagated_draws_per_chain"] = int(forecast.sizes["draw"])
    attrs["propagation_thinning"] = thinning_step(chains, draws, propagate_draws)
    return build_tree(fit_tree, forecast, sampled, attrs), attrs["id"]
