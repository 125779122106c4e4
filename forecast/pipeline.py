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
from forecast.hardware import data_hash, load_frontier_runs, load_hardware
from forecast.priors import PriorSet, load_overlay, load_priors
from forecast.storage import provenance_attrs


@dataclass(frozen=True)
class Inputs:
    """Everything a forecast depends on, loaded and validated."""

    hardware: pd.DataFrame
    frontier_runs: pd.DataFrame
    data_hash: str
    priors: PriorSet
    scenarios: dict[str, PriorSet]  # name -> full prior set (base with overlay), base first
    data_dir: Path | None = None  # folder the tables were read from (recorded at publish time)


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
    hw_path, fr_path = paths.hardware_path(data_dir), paths.frontier_runs_path(data_dir)
    for table in (hw_path, fr_path):
        if not table.is_file():
            raise WallcastError(
                f"{table}: no such data table (the data folder {data_dir} needs "
                f"{hw_path.name} and {fr_path.name}; set --data-dir or WALLCAST_DATA_DIR)"
            )
    hardware = load_hardware(hw_path)
    frontier = load_frontier_runs(fr_path)
    base = load_priors(paths.default_priors_path() if priors_path is None else priors_path)
    base_file = str(base.path) if base.path is not None else "the base prior file"
    return Inputs(
        hardware,
        frontier,
        data_hash(hw_path, fr_path),
        base,
        _scenario_sets(base, base_file, scenarios, scenario_dir),
        data_dir,
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


def fit(
    inputs: Inputs,
    prior_set: PriorSet,
    *,
    chains: int,
    draws: int,
    seed: int,
    warmup: int | None = None,
) -> xr.DataTree:
    """NUTS fit of the hardware and frontier trends, gated on convergence."""
    import jax

    from forecast.inference import check_convergence, fit_trends, init_jax
    from forecast.trends import trend_priors_from_prior_set

    init_jax()
    dt = fit_trends(
        inputs.hardware,
        inputs.frontier_runs,
        trend_priors_from_prior_set(prior_set),
        rng_key=jax.random.PRNGKey(seed),
        num_chains=chains,
        num_warmup=draws if warmup is None else warmup,
        num_samples=draws,
    )
    check_convergence(dt)
    return dt


def scenario_seed(seed: int) -> int:
    """Seed of the prior draws in propagation (common random numbers across scenarios)."""
    return int(zlib.crc32(f"propagate-{seed}".encode()))


def propagate_scenario(
    fit_tree: xr.DataTree,
    prior_set: PriorSet,
    *,
    seed: int,
    years=None,
    wall_year_step: int = DEFAULT_WALL_YEAR_STEP,
) -> tuple[xr.Dataset, xr.Dataset]:
    """Forecast variables and sampled inputs of one scenario (dims chain, draw, ...).

    Walls are computed every ``wall_year_step`` years and interpolated in log10 FLOP between
    (step 2 moves hit years by 0.015 yr at the median and 0.19 yr at the 95th percentile of
    draws against step 1; BENCHMARKS.md); ``wall_year_step=1`` computes every year.
    """
    from forecast.inference import posterior_draws
    from forecast.propagate import (
        DEFAULT_YEARS,
        PROPAGATED_KEYS,
        forecast_dataset,
        inputs_dataset,
        propagate,
    )
    from forecast.trends import project

    years = DEFAULT_YEARS if years is None else np.asarray(years, dtype=float)
    post = fit_tree["posterior"]
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    samples = posterior_draws(fit_tree)
    trends = project(samples, years)
    inputs = prior_set.sample(chains * draws, scenario_seed(seed))
    inputs = {k: inputs[k] for k in PROPAGATED_KEYS}
    result = propagate(trends, inputs, years, wall_year_step)
    return forecast_dataset(result, years, chains, draws), inputs_dataset(inputs, chains, draws)


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
) -> tuple[xr.DataTree, str]:
    """One DataTree with a ``scenario`` dimension and full provenance; returns (tree, id).

    ``years`` is the requested grid (None: the default) and ``code`` the code hash (None: this
    process's :func:`forecast.storage.code_hash`); both enter the run fingerprint and the id.
    """
    names = list(scenario_results)
    forecast = xr.concat(
        [scenario_results[n][0] for n in names], dim=pd.Index(names, name="scenario")
    )
    sampled = xr.concat(
        [scenario_results[n][1] for n in names], dim=pd.Index(names, name="scenario")
    )
    attrs = provenance_attrs(
        inputs, names, seed=seed, chains=chains, draws=draws, years=years, code=code
    )
    return build_tree(fit_tree, forecast, sampled, attrs), attrs["id"]
