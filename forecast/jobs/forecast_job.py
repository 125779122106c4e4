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

from forecast.analyses.posterior_walls import (
    CURVE_ACCELERATORS,
    accelerator_walls_dataset,
    accelerator_walls_digest,
    curve_accelerator_names,
)
from forecast.config import paths
from forecast.data.hardware import data_hash, get_accelerator
from forecast.data.inputs import Inputs, load_inputs, scenario_path
from forecast.inference.fit import fit, fit_key
from forecast.inference.propagate import propagate_scenario, thinning_step
from forecast.priors.provenance import input_provenance, provenance_json
from forecast.store.attrs import provenance_attrs
from forecast.store.schema import build_tree

__all__ = [
    "Inputs",
    "accelerator_walls",
    "accelerator_walls_key",
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
    accelerator_walls: xr.Dataset | None = None,
) -> tuple[xr.DataTree, str]:
    """One DataTree with a ``scenario`` dimension and full provenance; returns (tree, id).

    ``years`` is the requested grid (None: the default), ``code`` the code hash (None: this
    process's :func:`forecast.store.identity.code_hash`), ``propagate_draws`` the thinning target
    and ``regime`` the plans searched (also the root attribute ``regime``); all enter the run
    fingerprint and the id (``run_fingerprint``: already computed by the caller with
    :func:`forecast.store.inputs_fingerprint`, for the same inputs and settings). The root
    attribute ``input_provenance`` says, per scenario and propagated key, whether its draws were
    fitted, prior, fixed or a scenario's.  ``accelerator_walls``: the group of that name
    (:func:`accelerator_walls`), stored with the forecast and stamped with its id.
    """
    names = list(scenario_results)
    forecast = xr.concat(
        [scenario_results[n][0] for n in names],
        dim=pd.Index(names, name="scenario"),
        combine_attrs="override",  # the first scenario's (wall_year_step: the same for all)
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
    attrs["propagation_thinning"] = _thinning(fit_tree, propagate_draws)
    if "wall_year_step" in forecast.attrs:  # also at the root, where readers find the settings
        attrs["wall_year_step"] = int(forecast.attrs["wall_year_step"])
    tree = build_tree(fit_tree, forecast, sampled, attrs)
    if accelerator_walls is not None:
        group = accelerator_walls.copy()
        group.attrs["forecast_id"] = attrs["id"]
        tree["accelerator_walls"] = xr.DataTree(group)
    return tree, attrs["id"]


def accelerator_walls(
    inputs: Inputs,
    fit_tree: xr.DataTree,
    scenario_result: tuple[xr.Dataset, xr.Dataset],
    *,
    chains: int,
    draws: int,
    propagate_draws: int | None = None,
    regime: str = "paper",
    scenario: str | None = None,
) -> xr.Dataset:
    """Both walls of every accelerator of ``inputs.hardware`` over one scenario's propagated
    inputs (``scenario_result`` of :func:`propagate_scenario`; default scenario: the first), 90
    days in BF16: the forecast's group ``accelerator_walls``
    (:func:`forecast.analyses.posterior_walls.accelerator_walls_dataset`)."""
    args, kwargs = _accelerator_walls_call(
        inputs, fit_tree, scenario_result, chains, draws, propagate_draws, regime, scenario
    )
    return accelerator_walls_dataset(*args, **kwargs)


def accelerator_walls_key(
    inputs: Inputs,
    fit_tree: xr.DataTree,
    scenario_result: tuple[xr.Dataset, xr.Dataset],
    *,
    chains: int,
    draws: int,
    propagate_draws: int | None = None,
    regime: str = "paper",
    scenario: str | None = None,
) -> str:
    """The digest of what :func:`accelerator_walls` computes from these same arguments
    (:func:`forecast.analyses.posterior_walls.accelerator_walls_digest`): equal digests, equal
    groups (for the same code)."""
    args, kwargs = _accelerator_walls_call(
        inputs, fit_tree, scenario_result, chains, draws, propagate_draws, regime, scenario
    )
    return accelerator_walls_digest(*args, **kwargs)


def _thinning(fit_tree: xr.DataTree, propagate_draws: int | None) -> int:
    """The thinning step :func:`propagate_scenario` took: from the posterior's own size, which is
    twice the requested draws where the convergence gate had the run extended."""
    post = fit_tree["posterior"]
    return thinning_step(post.sizes["chain"], post.sizes["draw"], propagate_draws)


def _accelerator_walls_call(
    inputs, fit_tree, scenario_result, chains, draws, propagate_draws, regime, scenario
) -> tuple[tuple, dict]:
    """The arguments of :func:`accelerator_walls_dataset` for :func:`accelerator_walls`."""
    table = inputs.hardware
    accs = [get_accelerator(table, str(n)) for n in table["name"].tolist()]
    hardware_file = paths.hardware_path(inputs.data_dir)
    return (scenario_result[1], accs), {
        "curve_names": curve_accelerator_names(table, CURVE_ACCELERATORS),
        "regime": regime,
        "posterior": fit_tree["posterior"].to_dataset(),
        "thinning_step": _thinning(fit_tree, propagate_draws),
        "scenario": scenario or next(iter(inputs.scenarios)),
        "attrs": {
            "hardware_table_hash": data_hash(hardware_file) if hardware_file.is_file() else ""
        },
    }
