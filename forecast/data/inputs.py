"""A run's inputs, loaded and validated together: the five data tables, the base prior file and
the scenario overlays laid on it (:func:`load_inputs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from forecast.config import paths
from forecast.config.errors import WallcastError
from forecast.data.evidence import load_model_shapes, load_scaleup_domains
from forecast.data.hardware import data_hash, load_frontier_runs, load_hardware
from forecast.data.training_runs import load_training_runs
from forecast.priors import PriorSet, load_overlay, load_priors


@dataclass(frozen=True)
class Inputs:
    """Everything a forecast depends on, loaded and validated."""

    hardware: pd.DataFrame
    frontier_runs: pd.DataFrame
    data_hash: str  # SHA-256 over all five tables: a change to any of them refits
    priors: PriorSet
    scenarios: dict[str, PriorSet]  # name -> full prior set (base with overlay), base first
    data_dir: Path | None = None  # folder the tables were read from (recorded at publish time)
    model_shapes: pd.DataFrame | None = None  # data of the depth, batch and utilization laws
    scaleup_domains: pd.DataFrame | None = None  # data of the domain-growth law
    training_runs: pd.DataFrame | None = None  # data of the run-efficiency likelihood


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

    None for a folder or file means the :mod:`forecast.config.paths` default (environment overrides
    included): ``<data>/``, ``<priors>/baseline.toml``, ``<priors>/scenarios/``.
    """
    data_dir = paths.data_dir(data_dir)
    scenario_dir = paths.scenarios_dir() if scenario_dir is None else Path(scenario_dir)
    tables = tuple(data_dir / name for name in paths.DATA_TABLE_FILES)
    for table in tables:
        if not table.is_file():
            names = ", ".join(t.name for t in tables)
            raise WallcastError(
                f"{table}: no such data table (the data folder {data_dir} needs {names}; "
                "set --data-dir or WALLCAST_DATA_DIR)"
            )
    hw_path, fr_path, shapes_path, domains_path, runs_path = tables
    hardware = load_hardware(hw_path)
    frontier = load_frontier_runs(fr_path)
    shapes = load_model_shapes(shapes_path)
    domains = load_scaleup_domains(domains_path)
    runs = load_training_runs(runs_path)
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
        runs,
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
