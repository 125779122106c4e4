"""Analyses of a published forecast: sensitivity (Sobol), backtests (hardware and frontier-compute
trends), the frozen-hardware reading of the paper, and all together (``analyse``).

The computations live in :mod:`forecast.sensitivity`, :mod:`forecast.backtest` and
:mod:`forecast.frozen`; this module
decides what they run on (the forecast's priors, posterior anchors and data folder, or the
defaults of :mod:`forecast.paths`), stores their results as groups of the forecast file
(:func:`forecast.storage.add_group`) and regenerates its reports.  The CLI only calls it.

A forecast records the data folder it was made from (root attr ``data_dir``); the backtest
refits against that folder, and falls back to :func:`forecast.paths.data_dir` for forecasts
published before the attribute existed, or when the folder is gone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forecast import paths, storage
from forecast.constants import SENSITIVITY_SAMPLES

Progress = Callable[[str], None]

DEFAULT_SAMPLES = SENSITIVITY_SAMPLES
DEFAULT_BACKTEST_DRAWS = 500


def _quiet(message: str) -> None:
    pass


def forecast_data_dir(attrs: dict[str, Any]) -> Path:
    """The data folder a forecast was made from (its ``data_dir`` attr), else the resolver's."""
    recorded = str(attrs.get("data_dir") or "")
    if recorded and paths.hardware_path(recorded).exists():
        return Path(recorded)
    return paths.data_dir()


@dataclass
class SensitivityRun:
    result: Any  # forecast.sensitivity.SensitivityResult of the forecast's basis
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
    store: bool = True,
    progress: Progress = _quiet,
) -> SensitivityRun:
    """Sobol indices of the hit years and FLOP.

    With a ``forecast``: anchor the 2024 hardware levels on its posterior, draw the inputs it
    fitted from its posterior (:func:`forecast.sensitivity.posterior_basis`) and the rest from
    its priors (or ``priors``) and, with ``store``, write the group ``sensitivity`` into it.
    ``compare_prior``: also run the priors-only basis with the same inputs, N and seed (the
    "before"; group ``sensitivity_prior``).  Without a forecast: anchor on the data and draw
    every input from ``priors`` (default: the baseline file).  ``scenario``: an overlay name
    or path on top; the keys it sets keep its distribution.
    """
    from forecast import pipeline
    from forecast import sensitivity as sens
    from forecast.priors import load_overlay, load_priors

    start = time.perf_counter()
    path = None if forecast is None else storage.resolve_forecast_path(forecast)
    overlay = None if not scenario else load_overlay(pipeline.scenario_path(scenario))
    overridden = () if overlay is None else tuple(overlay.keys())
    if path is not None:
        with storage.open_forecast(path) as tree:
            prior_set = sens._forecast_priors(tree) if priors is None else load_priors(priors)
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
        from forecast.hardware import load_hardware

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
    if path is not None and store:
        stored = sens.add_sensitivity(path, ds)
        if prior_ds is not None:
            sens.add_sensitivity(path, prior_ds, sens.BASIS_GROUPS["prior"])
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


# ----------------------------------------------------------------------------- backtest


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
    progress: Progress = _quiet,
) -> BacktestRun:
    """Rolling-origin backtests of the hardware trends and (``frontier``) of the frontier
    training-compute trend; stored in ``forecast`` when given (groups ``backtest`` and
    ``frontier_backtest``).

    Data: ``data_dir``, else the folder the forecast was made from, else the resolver's.
    Priors: ``prior_set``, else ``priors``, else the baseline file.
    """
    from forecast import backtest as bt
    from forecast.hardware import load_frontier_runs, load_hardware
    from forecast.inference import init_jax
    from forecast.priors import load_priors
    from forecast.trends import trend_priors_from_prior_set

    start = time.perf_counter()
    path = None if forecast is None else storage.resolve_forecast_path(forecast)
    if data_dir is not None:
        data = paths.data_dir(data_dir)
    elif path is not None:
        data = forecast_data_dir(storage.read_attrs(path))
    else:
        data = paths.data_dir()
    if prior_set is None:
        prior_set = load_priors(paths.default_priors_path() if priors is None else priors)
    init_jax()
    frontier_runs = load_frontier_runs(paths.frontier_runs_path(data))
    trend_priors = trend_priors_from_prior_set(prior_set)
    results = bt.run_backtest(
        load_hardware(paths.hardware_path(data)),
        frontier_runs,
        trend_priors,
        bt.DEFAULT_ORIGINS if origins is None else list(origins),
        chains=chains,
        warmup=draws if warmup is None else warmup,
        draws=draws,
        seed=seed,
        progress=progress,
    )
    ds = bt.backtest_dataset(results)
    frontier_ds, frontier_seconds = None, 0.0
    if frontier:
        t0 = time.perf_counter()
        frontier_ds = bt.frontier_backtest_dataset(
            bt.run_frontier_backtest(
                frontier_runs,
                trend_priors,
                bt.FRONTIER_ORIGINS if frontier_origins is None else list(frontier_origins),
                chains=chains,
                warmup=draws if warmup is None else warmup,
                draws=draws,
                seed=seed,
                progress=progress,
            )
        )
        frontier_seconds = time.perf_counter() - t0
    stored = None
    if path is not None:
        stored = bt.add_backtest(path, ds)
        if frontier_ds is not None:
            bt.add_frontier_backtest(path, frontier_ds)
    return BacktestRun(ds, data, stored, time.perf_counter() - start, frontier_ds, frontier_seconds)


# ----------------------------------------------------------------------------- frozen hardware


@dataclass
class FrozenRun:
    dataset: Any  # xarray.Dataset (group 'frozen_hardware')
    stored_in: Path | None
    seconds: float


def frozen_hardware(
    forecast: str | Path | None = None,
    *,
    accelerator: str | None = None,
    store: bool = True,
    progress: Progress = _quiet,
) -> FrozenRun:
    """The paper's framing (:mod:`forecast.frozen`): the walls of one accelerator (default H100
    SXM) at the forecast's scaling inputs, and the year the frontier run (posterior of the
    forecast's fitted trend) reaches them; stored as group ``frozen_hardware`` with ``store``.

    Inputs: posterior medians of the fitted law parameters where the forecast's ``posterior`` has
    them (``registry.FITTED_INPUTS``), else the prior medians of its priors (the base priors,
    i.e. the baseline scenario).  Hardware: the forecast's data folder's ``hardware.csv``.
    """
    from forecast import frozen
    from forecast import sensitivity as sens
    from forecast.priors.registry import FITTED_INPUTS, PROPAGATED_KEYS
    from forecast.walls import wall_log10_flop, walls_record

    start = time.perf_counter()
    path = storage.resolve_forecast_path(forecast)
    with storage.open_forecast(path) as tree:
        prior_set = sens._forecast_priors(tree)
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
    name = accelerator or frozen.FROZEN_ACCELERATOR
    progress(f"frozen hardware: walls of {name} at the forecast's inputs (plan search)")
    record = walls_record(
        name,
        duration_days=values["training.duration_days"],
        precision=precision,
        hardware=paths.hardware_path(forecast_data_dir(attrs)),
        assumptions=frozen.assumption_overrides(values),
    )
    ds = frozen.frozen_dataset(
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
    stored = storage.add_group(path, "frozen_hardware", ds) if store else None
    return FrozenRun(ds, stored, time.perf_counter() - start)


# ----------------------------------------------------------------------------- analyse


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
        from forecast.sensitivity import ranking_rows

        ranked = ranking_rows(self.sensitivity.dataset)
        return [
            next(r for r in ranked if r["target"] == t) for t in self.sensitivity.result.targets
        ]

    def coverage(self) -> list[dict]:
        """Backtest coverage rows over all metrics, one per origin."""
        from forecast.backtest import coverage_rows

        return [r for r in coverage_rows(self.backtest.dataset) if r["metric"] == "all"]

    def frontier_coverage(self) -> list[dict]:
        """Frontier-compute backtest rows, one per origin and the pooled one (empty if not run)."""
        from forecast.backtest import frontier_coverage_rows

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
    """Sensitivity and backtest of a published forecast (default: ``latest``), both stored as
    groups of its file; then its report and deck are regenerated (``reports``).
    ``compare_prior``: also the priors-only sensitivity (group ``sensitivity_prior``)."""
    path = storage.resolve_forecast_path(forecast)
    progress(f"analysing {path}")
    from forecast import sensitivity as sens

    with storage.open_forecast(path) as tree:
        prior_set = sens._forecast_priors(tree)  # the forecast's own priors
    data_dir = forecast_data_dir(storage.read_attrs(path))

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
            progress=lambda m: progress(f"backtest: {m}"),
        )
        return bt, frozen_hardware(path, store=False, progress=progress)

    # The Sobol run keeps about 1.3 of the 2 cores busy (vectorized walls); the backtest's NUTS
    # refits and the frozen-hardware plan search are mostly single-threaded: run them beside it.
    # Each part is seeded and independent, so the results do not depend on the interleaving.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="wallcast-refits") as pool:
        refits_future = pool.submit(refits)
        progress(f"sensitivity: Sobol indices, N = {samples} base samples")
        sens_run = sensitivity(
            path,
            samples=samples,
            compare_prior=compare_prior,
            store=False,
            progress=lambda m: progress(f"sensitivity: {m}"),
        )
        bt_run, frozen_run = refits_future.result()
    from forecast.backtest import add_backtest, add_frontier_backtest
    from forecast.sensitivity import BASIS_GROUPS, add_sensitivity

    add_sensitivity(path, sens_run.dataset)
    if sens_run.prior_dataset is not None:
        add_sensitivity(path, sens_run.prior_dataset, BASIS_GROUPS["prior"])
    add_backtest(path, bt_run.dataset)
    add_frontier_backtest(path, bt_run.frontier_dataset)
    storage.add_group(path, "frozen_hardware", frozen_run.dataset)
    progress(
        "stored groups 'sensitivity', 'backtest', 'frontier_backtest' and 'frozen_hardware' "
        f"in {path}"
    )
    out = Analysis(path, samples, backtest_draws, sens_run, bt_run, frozen_run)
    if reports:
        from forecast import report as report_module

        progress("writing report.html, report.md and deck.pptx (plan search per accelerator)")
        t0 = time.perf_counter()
        out.reports = {k: Path(v) for k, v in report_module.generate_reports(path).items()}
        out.reports_seconds = time.perf_counter() - t0
    return out
