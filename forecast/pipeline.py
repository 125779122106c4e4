"""The forecast job as plain functions: load -> fit -> propagate each scenario -> assemble.

Each step is usable alone (the Prefect flow wraps each as a task); none of them writes outside
what it returns (:mod:`forecast.storage` publishes).  Folders default to the resolvers of
:mod:`forecast.paths` (``WALLCAST_DATA_DIR``, ``WALLCAST_PRIORS_DIR``), filled here and nowhere else.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from forecast import paths
from forecast.constants import DEFAULT_WALL_YEAR_STEP
from forecast.dataset import build_tree
from forecast.errors import WallcastError
from forecast.evidence import load_model_shapes, load_scaleup_domains
from forecast.hardware import data_hash, load_frontier_runs, load_hardware
from forecast.priors import PriorSet, load_overlay, load_priors
from forecast.priors.registry import FITTED_INPUTS, PROPAGATED_KEYS
from forecast.provenance import input_provenance, provenance_json
from forecast.storage import provenance_attrs

MIN_WARMUP = 2000
"""Warm-up iterations of a fit at least (more when ``draws`` is larger): NUTS adapts its step size
and diagonal mass matrix there. With 1,000 (the warm-up equal to the default draws) one run in
twenty left ``batch_shortfall_dex`` slow enough to be refused by the convergence gate (bulk ESS
271, R-hat 1.012; the law's ceiling and shortfall lie on a ridge); 2,000 passes every measured
run on both instruction sets with margin (BENCHMARKS.md, "Convergence gate margin")."""


def default_warmup(draws: int) -> int:
    """Warm-up iterations of a fit of ``draws`` draws per chain: ``max(draws, MIN_WARMUP)``."""
    return max(int(draws), MIN_WARMUP)


DEFAULT_PROPAGATE_DRAWS = 1000
"""Posterior draws propagated per scenario by default (evenly thinned from the fit's chains x
draws; BENCHMARKS.md gives the Monte Carlo error of the hit-year quantiles at this size)."""


@dataclass(frozen=True)
class Inputs:
    """Everything a forecast depends on, loaded and validated."""

    hardware: pd.DataFrame
    frontier_runs: pd.DataFrame
    data_hash: str  # SHA-256 over all four tables: a change to any of them refits
    priors: PriorSet
    scenarios: dict[str, PriorSet]  # name -> full prior set (base with overlay), base first
    data_dir: Path | None = None  # folder the tables were read from (recorded at publish time)
    model_shapes: pd.DataFrame | None = None  # data of the depth, batch and utilization laws
    scaleup_domains: pd.DataFrame | None = None  # data of the domain-growth law


def scenario_path(name: str, scenario_dir: str | Path | None = None) -> Path:
    """File of a named scenario overlay (or the path of one)."""
    path = Path(name)
    if path.suffix == ".toml" and path.exists():
        return path
    scenario_dir = paths.scenarios_dir() if scenario_dir is None else Path(scenario_dir)
    path = scenario_dir / f"{name}.toml"
    if not path.exists():
        known = sorted(p.stem for p in Path(scenario_dir).glob("*.toml"))
        raise WallcastError(
            f"unknown scenario {name!r}; known: {', '.join(known) or 'none'} (in {scenario_dir})"
        )
    return path


def load_inputs(
    priors_path: str | Path | None = None,
    data_dir: str | Path | None = None,
    scenarios: list[str] | None = None,
    scenario_dir: str | Path | None = None,
) -> Inputs:
    """Load and validate data and priors; ``scenarios`` None means every file in ``scenario_dir``.

    None for a folder or file means the :mod:`forecast.paths` default (environment overrides
    included): ``<data>/``, ``<priors>/baseline.toml``, ``<priors>/scenarios/``.
    """
    data_dir = paths.data_dir(data_dir)
    scenario_dir = paths.scenarios_dir() if scenario_dir is None else Path(scenario_dir)
    tables = (
        paths.hardware_path(data_dir),
        paths.frontier_runs_path(data_dir),
        paths.model_shapes_path(data_dir),
        paths.scaleup_domains_path(data_dir),
    )
    for table in tables:
        if not table.is_file():
            names = ", ".join(t.name for t in tables)
            raise WallcastError(
                f"{table}: no such data table (the data folder {data_dir} needs {names}; "
                "set --data-dir or WALLCAST_DATA_DIR)"
            )
    hw_path, fr_path, shapes_path, domains_path = tables
    hardware = load_hardware(hw_path)
    frontier = load_frontier_runs(fr_path)
    shapes = load_model_shapes(shapes_path)
    domains = load_scaleup_domains(domains_path)
    base = load_priors(paths.default_priors_path() if priors_path is None else priors_path)
    base_file = str(base.path) if base.path is not None else "the base prior file"
    return Inputs(
        hardware,
        frontier,
        data_hash(*tables),
        base,
        _scenario_sets(base, base_file, scenarios, scenario_dir),
        data_dir,
        shapes,
        domains,
    )


def _scenario_sets(
    base: PriorSet, base_file: str, scenarios: list[str] | None, scenario_dir: Path
) -> dict[str, PriorSet]:
    """Base set first, then each overlay laid on it; scenario names are unique and the base
    set's name is reserved (an overlay may not replace it, two overlays may not share a name)."""
    if scenarios is None:
        names = sorted(p.stem for p in scenario_dir.glob("*.toml")) if scenario_dir.is_dir() else []
    else:
        names = scenarios
    sets = {base.name: base}
    origin = {base.name: base_file}
    seen_files: set[Path] = set()
    for name in names:
        if name == base.name:  # `--scenario baseline` selects the base set itself
            continue
        path = scenario_path(name, scenario_dir)
        if path.resolve() in seen_files:  # the same file named twice is one scenario
            continue
        seen_files.add(path.resolve())
        overlay = load_overlay(path)
        if overlay.name in origin:
            what = "the base prior set's name, reserved" if overlay.name == base.name else "taken"
            raise WallcastError(
                f"{path}: scenario name {overlay.name!r} ([meta] name) is {what} by "
                f"{origin[overlay.name]}; give each scenario a unique name"
            )
        origin[overlay.name] = str(path)
        sets[overlay.name] = base.overlay(overlay)
    return sets


def fit_key(prior_set: PriorSet) -> str:
    """Canonical JSON of every prior the fit of ``prior_set`` depends on: the trend priors (a
    scenario may change them) and the base file's priors of the fitted law parameters (a scenario
    that sets a fitted key changes the propagation, not the fit). Scenarios with equal keys share
    one fit."""
    import json

    from forecast.trends import trend_priors_from_prior_set

    base = prior_set.base or prior_set
    laws = {k: {"dist": base[k].dist, "params": dict(base[k].params)} for k in FITTED_INPUTS}
    return json.dumps(
        {"trends": trend_priors_from_prior_set(prior_set).to_dict(), "laws": laws},
        sort_keys=True,
    )


def fit(
    inputs: Inputs,
    prior_set: PriorSet,
    *,
    chains: int,
    draws: int,
    seed: int,
    warmup: int | None = None,
    gate: bool = True,
) -> xr.DataTree:
    """NUTS fit of the joint model (trends, frontier compute, depth, batch, utilization and
    domain laws), gated on convergence over every fitted parameter (``gate=False``: no gate)."""
    import jax

    from forecast.inference import check_convergence, init_jax
    from forecast.joint import fit_joint, joint_data, law_prior_record, law_priors_from_prior_set
    from forecast.trends import trend_priors_from_prior_set

    init_jax()
    shapes = load_model_shapes() if inputs.model_shapes is None else inputs.model_shapes
    domains = load_scaleup_domains() if inputs.scaleup_domains is None else inputs.scaleup_domains
    data, tables = joint_data(inputs.hardware, inputs.frontier_runs, shapes, domains)
    dt = fit_joint(
        data,
        tables,
        trend_priors_from_prior_set(prior_set),
        law_priors_from_prior_set(prior_set),
        rng_key=jax.random.PRNGKey(seed),
        num_chains=chains,
        num_warmup=default_warmup(draws) if warmup is None else warmup,
        num_samples=draws,
        law_prior_source=law_prior_record(prior_set),
    )
    if gate:
        check_convergence(dt)
    return dt


def scenario_seed(seed: int) -> int:
    """Seed of the prior draws in propagation (common random numbers across scenarios)."""
    return int(zlib.crc32(f"propagate-{seed}".encode()))


def thinning_step(chains: int, draws: int, propagate_draws: int | None) -> int:
    """Keep every k-th draw of each chain so that about ``propagate_draws`` draws remain (at least
    that many when the fit has them; ``None``: every draw)."""
    if propagate_draws is None or propagate_draws <= 0:
        return 1
    return max(1, (chains * draws) // int(propagate_draws))


def scenario_inputs(
    samples: dict[str, np.ndarray], prior_set: PriorSet, n: int, seed: int
) -> dict[str, np.ndarray]:
    """Propagated inputs of one scenario, ``n`` draws per key (:mod:`forecast.provenance`).

    Fitted keys hold the joint posterior's draws (``samples``, flattened (chain, draw)); a scenario
    that sets a fitted key draws it from its own distribution instead; every other key is drawn
    from its prior. The non-fitted keys are the joint program's free block, drawn by
    ``numpyro.infer.Predictive`` (:func:`forecast.joint.draw_free_inputs`) from the key of
    :func:`scenario_seed`, one random stream per key: a key a scenario leaves alone has the same
    draws in every scenario.
    """
    import jax

    from forecast.joint import draw_free_inputs

    drawn = draw_free_inputs(prior_set, samples, n, jax.random.PRNGKey(scenario_seed(seed)))
    out = {}
    for key in PROPAGATED_KEYS:
        if key in drawn:
            out[key] = drawn[key]
        else:
            out[key] = np.asarray(samples[FITTED_INPUTS[key].variable], dtype=float)
    return out


def propagate_scenario(
    fit_tree: xr.DataTree,
    prior_set: PriorSet,
    *,
    seed: int,
    years=None,
    wall_year_step: int = DEFAULT_WALL_YEAR_STEP,
    propagate_draws: int | None = None,
) -> tuple[xr.Dataset, xr.Dataset]:
    """Forecast variables and propagated inputs of one scenario (dims chain, draw, ...).

    The walls are deterministic functions of the joint program's draws: the posterior's (trends
    and law parameters) and its free block's (:func:`scenario_inputs`). With
    ``propagate_draws`` the posterior is evenly thinned first (every k-th draw of each chain,
    :func:`thinning_step`); ``draw`` then counts the kept draws.

    Walls are computed every ``wall_year_step`` years and interpolated in log10 FLOP between
    (step 2 moves hit years by 0.015 yr at the median and 0.19 yr at the 95th percentile of
    draws against step 1; BENCHMARKS.md); ``wall_year_step=1`` computes every year.
    """
    from forecast.inference import posterior_draws
    from forecast.propagate import DEFAULT_YEARS, forecast_dataset, inputs_dataset, propagate
    from forecast.trends import project

    years = DEFAULT_YEARS if years is None else np.asarray(years, dtype=float)
    post = fit_tree["posterior"]
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    step = thinning_step(chains, draws, propagate_draws)
    if step > 1:
        fit_tree = xr.DataTree.from_dict(
            {"/posterior": post.to_dataset().isel(draw=slice(None, None, step))}
        )
        draws = fit_tree["posterior"].sizes["draw"]
    samples = posterior_draws(fit_tree)
    trends = project(samples, years)
    inputs = scenario_inputs(samples, prior_set, chains * draws, seed)
    result = propagate(trends, inputs, years, wall_year_step)
    forecast = forecast_dataset(result, years, chains, draws)
    sampled = inputs_dataset(inputs, chains, draws)
    sampled["draw"] = forecast["draw"] = np.arange(0, draws * step, step)
    return forecast, sampled


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
) -> tuple[xr.DataTree, str]:
    """One DataTree with a ``scenario`` dimension and full provenance; returns (tree, id).

    ``years`` is the requested grid (None: the default), ``code`` the code hash (None: this
    process's :func:`forecast.storage.code_hash`) and ``propagate_draws`` the thinning target;
    all enter the run fingerprint and the id. The root attribute ``input_provenance`` says, per
    scenario and propagated key, whether its draws were fitted, prior, fixed or a scenario's.
    """
    import json

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
    )
    posterior_vars = set(fit_tree["posterior"].data_vars)
    law_rows = json.loads(fit_tree.attrs.get("law_rows", "{}"))
    provenance = input_provenance({n: inputs.scenarios[n] for n in names}, posterior_vars, law_rows)
    attrs["input_provenance"] = provenance_json(provenance)
    attrs["propagated_draws_per_chain"] = int(forecast.sizes["draw"])
    attrs["propagation_thinning"] = thinning_step(chains, draws, propagate_draws)
    return build_tree(fit_tree, forecast, sampled, attrs), attrs["id"]
