"""Analyses of a published forecast: sensitivity (Sobol), backtests (hardware and frontier-compute
trends), the frozen-hardware reading of the paper, and all together (``analyse``).

The computations live in :mod:`forecast.analyses` (sensitivity, backtest, frontier_backtest,
frozen_hardware); this module decides what they run on (the forecast's priors, posterior
anchors and data folder, or the defaults of :mod:`forecast.config.paths`), attaches their
results as groups of the forecast file and regenerates its reports.  The CLI only calls it.

A forecast is read once per call: :func:`analyse` loads the tree, hands it to each analysis
(``tree=``), writes every group in one :func:`forecast.store.add_groups` call and renders the
reports from the same tree.

A forecast records the data folder it was made from (root attr ``data_dir``); the backtest
refits against that folder, and falls back to :func:`forecast.config.paths.data_dir` for forecasts
published before the attribute existed, or when the folder is gone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from forecast import report, store
from forecast.analyses import backtest as hardware_backtest
from forecast.analyses import frontier_backtest
from forecast.analyses import frozen_hardware as frozen
from forecast.analyses import sensitivity as sens
from forecast.analyses.accelerator_walls import walls_record
from forecast.config import paths
from forecast.config.constants import SENSITIVITY_SAMPLES
from forecast.config.runtime import init_jax
from forecast.data.hardware import load_frontier_runs, load_hardware
from forecast.data.inputs import scenario_path
from forecast.priors import load_overlay, load_priors
from forecast.priors.registry import FITTED_INPUTS, PROPAGATED_KEYS
from forecast.queries import posterior_walls as pw
from forecast.queries.analyses import coverage_rows, frontier_coverage_rows, ranking_rows
from forecast.queries.posterior_walls import wall_log10_flop
from forecast.stats.trends import trend_priors_from_prior_set

Progress = Callable[[str], None]

DEFAULT_SAMPLES = SENSITIVITY_SAMPLES
DEFAULT_BACKTEST_DRAWS = 500


def _quiet(message: str) -> None:
    pass


def _forecast(forecast: str | Path | None, tree: xr.DataTree | None) -> tuple[Path, xr.DataTree]:
    """The forecast's file and its tree: ``tree`` when the caller has read it, else read now."""
    path = store.resolve_forecast_path(forecast)
    return path, (store.load_forecast(path) if tree is None else tree)


@dataclass
class SensitivityRun:
    result: Any  # forecast.analyses.sensitivity.SensitivityResult of the forecast's basis
    dataset: Any  # xarray.Dataset (group 'sensitivity')
    prior_set: Any  # the priors (with the scenario overlay) the inputs not fitted come from
    stored_in: Path | None
    seconds: float
    prior_result: Any = None  # the priors-only comparison (``compare_prior``), else None
    prior_dataset: Any = None  # its xarray.Dataset (group 'sensitivity_prior')
    notes: list[str] = field(default_factory=list)

    @property
    def basis(self) -> str:
        return str(self.result.basis)


def sensitivity(
    forecast: str | Path | None = None,
    *,
    priors: str | Path | None = None,
    scenario: str | None = None,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    wall_year_step: int | None = None,
    compare_prior: bool = False,
    attach: bool = True,
    tree: xr.DataTree | None = None,
    progress: Progress = _quiet,
) -> SensitivityRun:
    """Sobol indices of the hit years and FLOP.

    With a ``forecast``: anchor the 2024 hardware levels on its posterior, draw the inputs it
    fitted from its posterior (:func:`forecast.analyses.sensitivity.posterior_basis`) and the rest
    from its priors (or ``priors``) and, with ``attach``, write the group ``sensitivity`` into it
    (``tree``: the forecast already read).
    ``compare_prior``: also run the priors-only basis with the same inputs, N and seed (the
    "before"; group ``sensitivity_prior``).  Without a forecast: anchor on the data and draw
    every input from ``priors`` (default: the baseline file).  ``scenario``: an overlay name
    or path on top; the keys it sets keep its distribution.
    """
    start = time.perf_counter()
    path = None
    if forecast is not None or tree is not None:
        path, tree = _forecast(forecast, tree)
    overlay = None if not scenario else load_overlay(scenario_path(scenario))
    overridden = () if overlay is None else tuple(overlay.keys())
    if tree is not None:
        prior_set = store.read_priors(tree.attrs) if priors is None else load_priors(priors)
        if overlay is not None:
            prior_set = prior_set.overlay(overlay)
        anchors = sens.forecast_anchors(tree)
        basis = sens.posterior_basis(
            tree,
            prior_set,
            overridden=overridden,
            scenario=Path(scenario).stem if scenario else None,
        )
    else:
        prior_set = load_priors(paths.default_priors_path() if priors is None else priors)
        anchors = sens.data_anchors(load_hardware(), prior_set)
        if overlay is not None:
            prior_set = prior_set.overlay(overlay)
        basis = sens.prior_basis(prior_set, overridden)
    for note in basis.notes:
        progress(f"note: {note}")
    prior_basis = sens.prior_basis(prior_set, overridden) if compare_prior else None
    keys = sens.input_keys(basis.prior_set)
    if prior_basis is not None:
        keys = sens.input_keys(basis.prior_set, prior_basis.prior_set)
    kwargs = {} if wall_year_step is None else {"wall_year_step": wall_year_step}
    if tree is not None:  # the tornado (the report's signposts) in the forecast's own plans
        kwargs["tornado_regime"] = str(tree.attrs.get("regime", "paper"))
    common = dict(n=samples, seed=seed, keys=keys, progress=progress, **kwargs)
    progress(f"basis {basis.name}: {sens.basis_summary(basis, keys)}")
    result = sens.run_sensitivity(basis, anchors, **common)
    ds = sens.sensitivity_dataset(result)
    prior_result = prior_ds = None
    if prior_basis is not None and basis.name != "prior":
        progress("basis prior (the comparison): every input from its prior")
        prior_result = sens.run_sensitivity(prior_basis, anchors, **common)
        prior_ds = sens.sensitivity_dataset(prior_result)
    stored = None
    if path is not None and attach:
        store.add_groups(path, sensitivity_groups(ds, prior_ds), tree=tree)
        stored = path
    return SensitivityRun(
        result,
        ds,
        prior_set,
        stored,
        time.perf_counter() - start,
        prior_result,
        prior_ds,
        list(basis.notes),
    )


def sensitivity_groups(ds: xr.Dataset, prior_ds: xr.Dataset | None) -> dict[str, xr.Dataset]:
    """The forecast-file groups of a sensitivity run (the comparison only when it ran)."""
    groups = {sens.BASIS_GROUPS["posterior"]: ds}
    if prior_ds is not None:
        groups[sens.BASIS_GROUPS["prior"]] = prior_ds
    return groups


@dataclass
class BacktestRun:
    dataset: Any  # xarray.Dataset (group 'backtest')
    data_dir: Path
    stored_in: Path | None
    seconds: float
    frontier_dataset: Any = None  # xarray.Dataset (group 'frontier_backtest'), None if not run
    frontier_seconds: float = 0.0


def backtest(
    *,
    forecast: str | Path | None = None,
    data_dir: str | Path | None = None,
    priors: str | Path | None = None,
    prior_set: Any = None,
    origins: Sequence[int] | None = None,
    chains: int = 2,
    draws: int = DEFAULT_BACKTEST_DRAWS,
    warmup: int | None = None,
    seed: int = 0,
    frontier: bool = True,
    frontier_origins: Sequence[int] | None = None,
    attach: bool = True,
    progress: Progress = _quiet,
) -> BacktestRun:
    """Rolling-origin backtests of the hardware trends and (``frontier``) of the frontier
    training-compute trend; attached to ``forecast`` when given and ``attach`` (groups
    ``backtest`` and ``frontier_backtest``).

    Data: ``data_dir``, else the folder the forecast was made from, else the resolver's.
    Priors: ``prior_set``, else ``priors``, else the baseline file.
    """
    start = time.perf_counter()
    path = None if forecast is None else store.resolve_forecast_path(forecast)
    if data_dir is not None:
        data = paths.data_dir(data_dir)
    elif path is not None:
        data = store.recorded_data_dir(store.read_attrs(path))
    else:
        data = paths.data_dir()
    if prior_set is None:
        prior_set = load_priors(paths.default_priors_path() if priors is None else priors)
    init_jax()
    frontier_runs = load_frontier_runs(paths.frontier_runs_path(data))
    trend_priors = trend_priors_from_prior_set(prior_set)
    results = hardware_backtest.run_backtest(
        load_hardware(paths.hardware_path(data)),
        frontier_runs,
        trend_priors,
        hardware_backtest.DEFAULT_ORIGINS if origins is None else list(origins),
        chains=chains,
        warmup=draws if warmup is None else warmup,
        draws=draws,
        seed=seed,
        progress=progress,
    )
    ds = hardware_backtest.backtest_dataset(results)
    frontier_ds, frontier_seconds = None, 0.0
    if frontier:
        t0 = time.perf_counter()
        frontier_ds = frontier_backtest.frontier_backtest_dataset(
            frontier_backtest.run_frontier_backtest(
                frontier_runs,
                trend_priors,
                frontier_backtest.FRONTIER_ORIGINS
                if frontier_origins is None
                else list(frontier_origins),
                chains=chains,
                warmup=draws if warmup is None else warmup,
                draws=draws,
                seed=seed,
                progress=progress,
            )
        )
        frontier_seconds = time.perf_counter() - t0
    stored = None
    if path is not None and attach:
        store.add_groups(path, backtest_groups(ds, frontier_ds))
        stored = path
    return BacktestRun(ds, data, stored, time.perf_counter() - start, frontier_ds, frontier_seconds)


def backtest_groups(ds: xr.Dataset, frontier_ds: xr.Dataset | None) -> dict[str, xr.Dataset]:
    """The forecast-file groups of a backtest run (the frontier one only when it ran)."""
    groups = {"backtest": ds}
    if frontier_ds is not None:
        groups["frontier_backtest"] = frontier_ds
    return groups


@dataclass
class FrozenRun:
    dataset: Any  # xarray.Dataset (group 'frozen_hardware')
    stored_in: Path | None
    seconds: float


def frozen_hardware(
    forecast: str | Path | None = None,
    *,
    accelerator: str | None = None,
    attach: bool = True,
    tree: xr.DataTree | None = None,
    progress: Progress = _quiet,
) -> FrozenRun:
    """The paper's framing (:mod:`forecast.analyses.frozen_hardware`): the walls of one accelerator (default H100
    SXM) at the forecast's scaling inputs, and the year the frontier run (posterior of the
    forecast's fitted trend) reaches them; attached as group ``frozen_hardware`` with ``attach``.

    The walls are the accelerator's per posterior draw from the forecast's group
    ``accelerator_walls`` (the numbers the report's table, ``wallcast walls`` and the API show),
    each paired with the same draw's frontier run.  A forecast published before that group: one
    plan search at the posterior medians of the fitted inputs (prior medians of the others).
    """
    start = time.perf_counter()
    path, tree = _forecast(forecast, tree)
    name = accelerator or frozen.FROZEN_ACCELERATOR
    if "accelerator_walls" in tree.children:
        progress(f"frozen hardware: walls of {name} over the forecast's posterior draws")
        ds = _frozen_from_group(tree, name)
    else:  # published before the per-accelerator group: one plan search at the input medians
        ds = _frozen_at_medians(tree, name, progress)
    stored = None
    if attach:
        store.add_groups(path, {"frozen_hardware": ds}, tree=tree)
        stored = path
    return FrozenRun(ds, stored, time.perf_counter() - start)


def _frozen_from_group(tree: xr.DataTree, name: str) -> xr.Dataset:
    """The frozen reading from the group ``accelerator_walls``: the accelerator's walls per
    draw (the numbers every other surface shows) against the same draws' frontier run."""
    group = tree["accelerator_walls"].to_dataset()
    (full_name,) = pw.resolve_names(group, [name]) or (name,)
    if full_name not in pw.accelerator_names(group):
        raise ValueError(f"{name}: not in the forecast's accelerator_walls group")
    scenario = str(group.attrs["scenario"])
    fc = tree["forecast"].to_dataset().sel(scenario=scenario)
    frontier = np.log10(fc["frontier_flop"].transpose("chain", "draw", "year").values)
    frontier = frontier.reshape(-1, frontier.shape[-1])[group["sample_index"].values]
    return frozen.frozen_dataset_from_draws(
        {w: pw.wall_draws(group, full_name, w) for w in frozen.WALLS},
        frontier,
        fc["year"].values.astype(float),
        accelerator=full_name,
        scenario=scenario,
        precision=str(group.attrs["precision"]),
        duration_days=float(group.attrs["duration_days"]),
        forecast_id=str(tree.attrs.get("id", "")),
    )


def _frozen_at_medians(tree: xr.DataTree, name: str, progress: Progress) -> xr.Dataset:
    prior_set = store.read_priors(tree.attrs)
    post = tree["posterior"].to_dataset()
    posterior = {str(k): v.values for k, v in post.data_vars.items()}
    slope = post["frontier_slope"].transpose("chain", "draw").values
    intercept = post["frontier_intercept"].transpose("chain", "draw").values
    years = tree["forecast"]["year"].values.astype(float)
    attrs = dict(tree.attrs)
    keys = frozen.frozen_keys(PROPAGATED_KEYS)
    values, sources = frozen.scaling_inputs(
        keys,
        posterior,
        {k: float(prior_set[k].median()) for k in keys},
        {k: f.variable for k, f in FITTED_INPUTS.items()},
    )
    precision = frozen.precision_name(values["training.bytes_per_number"])
    progress(f"frozen hardware: walls of {name} at the forecast's inputs (plan search)")
    record = walls_record(
        name,
        duration_days=values["training.duration_days"],
        precision=precision,
        hardware=paths.hardware_path(store.recorded_data_dir(attrs)),
        assumptions=frozen.assumption_overrides(values),
    )
    return frozen.frozen_dataset(
        {w: wall_log10_flop(record, w) for w in frozen.WALLS},
        slope,
        intercept,
        years,
        accelerator=record["accelerator"],
        values=values,
        sources=sources,
        scenario="baseline",  # the forecast's base priors, without a scenario overlay
        precision=precision,
        duration_days=values["training.duration_days"],
    )


@dataclass
class Analysis:
    """What :func:`analyse` did to a forecast."""

    path: Path
    samples: int
    backtest_draws: int
    sensitivity: SensitivityRun
    backtest: BacktestRun
    frozen: FrozenRun | None = None
    reports: dict[str, Path] = field(default_factory=dict)
    reports_seconds: float = 0.0

    @property
    def data_dir(self) -> Path:
        return self.backtest.data_dir

    @property
    def sensitivity_seconds(self) -> float:
        return self.sensitivity.seconds

    @property
    def backtest_seconds(self) -> float:
        return self.backtest.seconds

    @property
    def sensitivity_evaluations(self) -> int:
        return int(self.sensitivity.result.settings["evaluations"])

    def top_drivers(self) -> list[dict]:
        """The input with the largest total index, per target."""
        ranked = ranking_rows(self.sensitivity.dataset)
        return [
            next(r for r in ranked if r["target"] == t) for t in self.sensitivity.result.targets
        ]

    def coverage(self) -> list[dict]:
        """Backtest coverage rows over all metrics, one per origin."""
        return [r for r in coverage_rows(self.backtest.dataset) if r["metric"] == "all"]

    def frontier_coverage(self) -> list[dict]:
        """Frontier-compute backtest rows, one per origin and the pooled one (empty if not run)."""
        ds = self.backtest.frontier_dataset
        return [] if ds is None else frontier_coverage_rows(ds)


def analyse(
    forecast: str | Path | None = None,
    *,
    samples: int = DEFAULT_SAMPLES,
    backtest_draws: int = DEFAULT_BACKTEST_DRAWS,
    compare_prior: bool = False,
    reports: bool = True,
    progress: Progress = _quiet,
) -> Analysis:
    """Sensitivity, backtests and frozen hardware of a published forecast (default: ``latest``),
    attached as groups of its file in one write; then its report and deck are regenerated
    (``reports``).  ``compare_prior``: also the priors-only sensitivity (``sensitivity_prior``)."""
    path, tree = _forecast(forecast, None)
    progress(f"analysing {path}")
    prior_set = store.read_priors(tree.attrs)  # the forecast's own priors
    data_dir = store.recorded_data_dir(dict(tree.attrs))

    def refits() -> tuple[BacktestRun, FrozenRun]:
        progress(
            f"backtest: refitting the hardware and frontier-compute trends ({backtest_draws} "
            "draws per chain)"
        )
        bt = backtest(
            data_dir=data_dir,
            prior_set=prior_set,
            draws=backtest_draws,
            warmup=backtest_draws,
            attach=False,
            progress=lambda m: progress(f"backtest: {m}"),
        )
        return bt, frozen_hardware(path, tree=tree, attach=False, progress=progress)

    # The Sobol run's vectorized walls leave the CPU partly idle; the backtest's NUTS
    # refits and the frozen-hardware plan search are mostly single-threaded: run them beside it.
    # Each part is seeded and independent, so the results do not depend on the interleaving.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="wallcast-refits") as pool:
        refits_future = pool.submit(refits)
        progress(f"sensitivity: Sobol indices, N = {samples} base samples")
        sens_run = sensitivity(
            path,
            tree=tree,
            samples=samples,
            compare_prior=compare_prior,
            attach=False,
            progress=lambda m: progress(f"sensitivity: {m}"),
        )
        bt_run, frozen_run = refits_future.result()
    groups = {
        **sensitivity_groups(sens_run.dataset, sens_run.prior_dataset),
        **backtest_groups(bt_run.dataset, bt_run.frontier_dataset),
        "frozen_hardware": frozen_run.dataset,
    }
    tree = store.add_groups(path, groups, tree=tree)
    progress(f"stored groups {', '.join(repr(g) for g in groups)} in {path}")
    out = Analysis(path, samples, backtest_draws, sens_run, bt_run, frozen_run)
    if reports:
        progress("writing report.html, report.md and deck.pptx")
        t0 = time.perf_counter()
        out.reports = {k: Path(v) for k, v in report.generate_reports(path, tree=tree).items()}
        out.reports_seconds = time.perf_counter() - t0
    return out
