"""``wallcast sensitivity``, ``wallcast backtest`` and ``wallcast analyse``: analyses of a forecast.

The orchestration (what each analysis runs on, where it is stored) is
:mod:`forecast.jobs.analyse_job`; these commands parse options, call it and print its tables.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from forecast.cli.app import app, echo_json, json_clean, progress, reports_errors
from forecast.cli.options import (
    DataDirOpt,
    ForecastOpt,
    JsonOpt,
    OutputsDirOpt,
    PriorsOpt,
    SeedOpt,
    WallYearStepOpt,
)
from forecast.cli.query import forecast_path
from forecast.cli.tables import (
    analysis_summary,
    backtest_table,
    comparison_table,
    frontier_backtest_table,
    sensitivity_table,
)
from forecast.config.constants import SENSITIVITY_SAMPLES, SENSITIVITY_WALL_YEAR_STEP
from forecast.queries.analyses import (
    comparison_rows,
    coverage_rows,
    frontier_coverage_rows,
    ranking_rows,
    same_data_note,
    same_data_origins,
)

_SAMPLES_HELP = (
    "Sobol base samples N (N x (k+2) model evaluations). The default keeps `make run` in its "
    "time budget (95% intervals about +-0.1 on the leading indices); 1024 halves them."
)
CompareOpt = Annotated[
    bool,
    typer.Option(
        "--compare-prior",
        help="Also run every input from its prior with the same N and seed (the 'before' of "
        "the joint model), stored as group 'sensitivity_prior', and print before -> after.",
    ),
]


def _analyse_job() -> Any:
    """:mod:`forecast.jobs.analyse_job`, imported when an analysis command runs."""
    # why here: the analyses import JAX; `wallcast --help` and the reading commands must not
    from forecast.jobs import analyse_job

    return analyse_job


@app.command()
@reports_errors
def sensitivity(
    forecast: Annotated[
        Path | None,
        typer.Option(
            "--forecast",
            help="Forecast file or folder: anchor the 2024 hardware levels on its posterior, "
            "draw the inputs it fitted from its posterior and the rest from its priors, and "
            "store the result as its 'sensitivity' group. Default: anchor on the data, every "
            "input from the priors, store nothing.",
        ),
    ] = None,
    samples: Annotated[int, typer.Option(min=8, help=_SAMPLES_HELP)] = SENSITIVITY_SAMPLES,
    priors: PriorsOpt = None,
    scenario: Annotated[
        str | None,
        typer.Option(help="Scenario overlay: a name in <priors>/scenarios/ or a .toml path."),
    ] = None,
    seed: SeedOpt = 0,
    wall_year_step: WallYearStepOpt = SENSITIVITY_WALL_YEAR_STEP,
    compare_prior: CompareOpt = False,
    top: Annotated[int, typer.Option(min=1, help="Inputs shown per target in the table.")] = 8,
    json_out: JsonOpt = False,
) -> None:
    """Rank the uncertain inputs by their Sobol indices for each wall's hit year and hit FLOP.

    First-order index: share of the target's variance explained by the input alone; total
    index: including its interactions. Tornado: the target with the input at its 10th and 90th
    percentile, every other input at its median. With --forecast, the inputs the forecast
    fitted (scaling laws, utilization, domain growth, trends) come from its posterior.
    """
    # why here: the plan search imports JAX; reading commands must not
    analyse_job = _analyse_job()
    run = analyse_job.sensitivity(
        forecast,
        priors=priors,
        scenario=scenario,
        samples=samples,
        seed=seed,
        wall_year_step=wall_year_step,
        compare_prior=compare_prior,
        progress=progress,
    )
    if run.stored_in is not None:
        groups = "'sensitivity'" + (" and 'sensitivity_prior'" if run.prior_dataset else "")
        progress(f"stored group(s) {groups} in {run.stored_in}")
    rows = ranking_rows(run.dataset)
    compared = (
        None if run.prior_dataset is None else comparison_rows(run.dataset, run.prior_dataset)
    )
    if json_out:
        echo_json(json_clean(rows if compared is None else {"ranking": rows, "compare": compared}))
        return

    header = (
        f"Sobol indices, basis {run.basis}, priors {run.prior_set.name}: N = {samples} base "
        f"samples, {run.result.settings['evaluations']} evaluations, 95% bootstrap intervals, "
        f"{run.seconds:.0f} s"
    )
    typer.echo(sensitivity_table(run.result, rows, top, header))
    if compared is not None:
        typer.echo("")
        typer.echo(comparison_table(compared, top))


@app.command()
@reports_errors
def backtest(
    draws: Annotated[int, typer.Option(min=50, help="Posterior draws per chain.")] = 500,
    chains: Annotated[int, typer.Option(min=1, help="MCMC chains.")] = 2,
    warmup: Annotated[
        int | None, typer.Option(min=50, help="Warm-up steps per chain; default: draws.")
    ] = None,
    origin: Annotated[
        list[int] | None,
        typer.Option(help="Origin year (repeatable); default 2018, 2020, 2022."),
    ] = None,
    frontier: Annotated[
        bool,
        typer.Option(
            "--frontier/--no-frontier",
            help="Also backtest the frontier training-compute trend (group 'frontier_backtest').",
        ),
    ] = True,
    frontier_origin: Annotated[
        list[int] | None,
        typer.Option(
            "--frontier-origin",
            help="Origin year of the frontier-compute backtest (repeatable); default 2016, 2018, "
            "2020, 2022.",
        ),
    ] = None,
    seed: SeedOpt = 0,
    priors: PriorsOpt = None,
    data_dir: DataDirOpt = None,
    forecast: Annotated[
        Path | None,
        typer.Option(
            "--forecast",
            help="Forecast file or folder to store the results in (group 'backtest'); without "
            "--data-dir, refit against the data it was made from.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Rolling-origin backtest: fit the hardware trends on flagships released before each origin
    and score the predictive intervals of those released after (coverage, log score); the same
    for the frontier training-compute trend on the record runs (coverage, PIT, median error).

    --json prints {"hardware": [...], "frontier_compute": [...]} (the second empty with
    --no-frontier)."""
    # why here: the plan search imports JAX; reading commands must not
    analyse_job = _analyse_job()
    run = analyse_job.backtest(
        forecast=forecast,
        data_dir=data_dir,
        priors=priors,
        origins=origin,
        chains=chains,
        draws=draws,
        warmup=warmup,
        seed=seed,
        frontier=frontier,
        frontier_origins=frontier_origin,
        progress=progress,
    )
    if run.stored_in is not None:
        groups = "'backtest' and 'frontier_backtest'" if frontier else "'backtest'"
        progress(f"stored groups {groups} in {run.stored_in}")
    rows = coverage_rows(run.dataset)
    frontier_rows = (
        [] if run.frontier_dataset is None else frontier_coverage_rows(run.frontier_dataset)
    )
    if json_out:
        echo_json(json_clean({"hardware": rows, "frontier_compute": frontier_rows}))
        return

    header = (
        f"Backtest of the hardware trends ({chains} chains x {draws} draws per origin; "
        f"{run.seconds - run.frontier_seconds:.0f} s; data {run.data_dir}): coverage of central "
        "predictive intervals"
    )
    typer.echo(backtest_table(rows, header))
    note = same_data_note(same_data_origins(run.dataset))
    if note:
        typer.echo(note)
    if frontier_rows:
        typer.echo(
            frontier_backtest_table(
                frontier_rows,
                f"\nBacktest of the frontier training-compute trend (record runs; "
                f"{run.frontier_seconds:.0f} s): coverage of central predictive intervals, "
                "median error (observed - predicted median) and mean PIT",
            )
        )


@app.command()
@reports_errors
def analyse(
    forecast: ForecastOpt = None,
    outputs_dir: OutputsDirOpt = None,
    samples: Annotated[int, typer.Option(min=8, help=_SAMPLES_HELP)] = SENSITIVITY_SAMPLES,
    backtest_draws: Annotated[
        int,
        typer.Option(
            "--backtest-draws", min=50, help="Backtest: posterior draws (and warm-up) per chain."
        ),
    ] = 500,
    compare_prior: CompareOpt = False,
    report: Annotated[
        bool, typer.Option("--report/--no-report", help="Regenerate report.html/.md and deck.pptx.")
    ] = True,
) -> None:
    """Sensitivity (Sobol) and backtest of a published forecast: store both as groups of the
    forecast file ('sensitivity', 'backtest'), then regenerate its report and deck.

    The backtest refits against the data folder the forecast was made from."""
    # why here: the plan search imports JAX; reading commands must not
    analyse_job = _analyse_job()
    start = time.perf_counter()
    done = analyse_job.analyse(
        forecast_path(forecast, outputs_dir),
        samples=samples,
        backtest_draws=backtest_draws,
        compare_prior=compare_prior,
        reports=report,
        progress=progress,
    )
    typer.echo(analysis_summary(done))
    if done.reports:
        typer.echo(f"reports regenerated ({done.reports_seconds:.0f} s):")
        for p in done.reports.values():
            typer.echo(f"  wrote {p}")
    typer.echo(f"done in {time.perf_counter() - start:.0f} s")
