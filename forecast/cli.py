"""Command-line interface: ``wallcast`` (console script) and ``python -m forecast``.

Start-up must stay fast: this module imports only typer and the standard library at module
level.  JAX, numpyro, pandas, matplotlib and ``forecast.model`` are imported inside the commands
that need them (a test checks that ``import forecast.cli`` leaves ``jax`` unimported).

Errors derived from :class:`forecast.errors.WallcastError` are reported as one line
``error: ...`` on stderr with exit status 2, without a traceback.  Usage errors (bad options)
also exit with 2, as click does.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

EXIT_USER_ERROR = 2

app = typer.Typer(
    name="wallcast",
    help=(
        "Forecast the data-movement and latency walls of frontier AI training "
        "(after Erdil & Schneider-Joseph 2024). Units: FLOP = total training compute, "
        "utilization = fraction of peak dense FLOP/s."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class Precision(StrEnum):
    bf16 = "bf16"
    fp8 = "fp8"


def _report_error(exc: BaseException) -> None:
    message = " ".join(str(exc).split())  # one line, whatever the exception holds
    typer.echo(f"error: {message}", err=True)


def _reports_errors[F: Callable[..., Any]](fn: F) -> F:
    """Turn a WallcastError raised by a command into ``error: ...`` on stderr and exit 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from forecast.errors import WallcastError

        try:
            return fn(*args, **kwargs)
        except WallcastError as exc:
            _report_error(exc)
            raise typer.Exit(EXIT_USER_ERROR) from None

    return wrapper  # type: ignore[return-value]


# ----------------------------------------------------------------------------- shared options

AcceleratorOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--accelerator",
        "-a",
        help="Accelerator name, exact or a unique part of it (e.g. H100, 'A100 SXM4 80GB'). Repeatable.",
    ),
]
DurationOpt = Annotated[
    float, typer.Option("--duration-days", help="Wall-clock length of the training run, days.")
]
PrecisionOpt = Annotated[
    Precision,
    typer.Option(
        "--precision",
        case_sensitive=False,
        help="Training precision: bf16 (2 bytes/number, dense 16-bit FLOP/s) or fp8 (1 byte, dense FP8 FLOP/s).",
    ),
]
MoeExpertsOpt = Annotated[
    int,
    typer.Option("--moe-experts", min=1, help="Experts per MoE layer (1 = dense model)."),
]
MoeActiveOpt = Annotated[
    int,
    typer.Option("--moe-active", min=1, help="Experts active per token (top-k routing)."),
]
HardwareOpt = Annotated[
    Path | None,
    typer.Option(
        "--hardware",
        exists=True,
        dir_okay=False,
        readable=True,
        help="Accelerator table (CSV, same columns as data/hardware.csv). Default: data/hardware.csv.",
    ),
]


def _check_positive(value: float, option: str) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise typer.BadParameter(f"must be a positive number, got {value}", param_hint=option)


def _sci(x: float, digits: int = 1) -> str:
    """Scientific notation without '+' or zero padding: 2.0e28, 2.9e3, 1.5e-4."""
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


# ----------------------------------------------------------------------------- walls


@app.command()
@_reports_errors
def walls(
    accelerator: AcceleratorOpt = None,
    duration_days: DurationOpt = 90.0,
    precision: PrecisionOpt = Precision.bf16,
    hardware: HardwareOpt = None,
    moe_experts: MoeExpertsOpt = 1,
    moe_active: MoeActiveOpt = 1,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print a JSON list instead of a table.")
    ] = False,
) -> None:
    """Data-movement and latency walls of each accelerator, with the best plan at the wall.

    Data-movement wall: the largest training compute whose best parallel plan keeps utilization
    at or above 80% of the accelerator's small-scale maximum. Latency wall: the largest compute
    any plan can finish within the run's duration.
    """
    _check_positive(duration_days, "--duration-days")
    if moe_active > moe_experts:
        raise typer.BadParameter(
            "--moe-active cannot exceed --moe-experts", param_hint="--moe-active"
        )
    from forecast.walls import walls_records

    rows = walls_records(
        accelerator,
        duration_days=duration_days,
        precision=precision.value,
        moe_experts=moe_experts,
        moe_active_experts=moe_active,
        hardware=hardware,
    )
    if json_output:
        typer.echo(json.dumps(rows, indent=2, allow_nan=False))
        return
    _print_walls_table(rows, duration_days, precision.value)


def _print_walls_table(rows: list[dict[str, Any]], duration_days: float, precision: str) -> None:
    from forecast.formatting import fmt_log10_flop, sci
    from forecast.walls import SEARCH_LOG10_FLOP_RANGE, wall_log10_flop

    header = [
        "accelerator",
        "max util",
        "data-movement wall",
        "latency wall",
        "tp",
        "layout",
        "pp",
        "microbatches",
        "dp",
        "accelerators",
    ]
    right = {1, 2, 3, 4, 6, 7, 8, 9}
    table: list[list[str]] = []
    footnotes: list[tuple[str, list[str]]] = []
    for r in rows:
        name = r["accelerator"]
        if r["assumptions"]:
            footnotes.append((name, r["assumptions"]))
            name += f" [{len(footnotes)}]"
        p = r["plan_at_wall"] or {}
        table.append(
            [
                name,
                f"{r['max_utilization']:.2f}",
                fmt_log10_flop(wall_log10_flop(r, "data_movement"), SEARCH_LOG10_FLOP_RANGE),
                fmt_log10_flop(wall_log10_flop(r, "latency"), SEARCH_LOG10_FLOP_RANGE),
                str(p.get("tensor_parallel", "-")),
                str(p.get("tensor_parallel_layout", "-")),
                str(p.get("pipeline_parallel", "-")),
                str(p.get("microbatches", "-")),
                sci(p["data_parallel"]) if p else "-",
                sci(p["accelerators"]) if p else "-",
            ]
        )
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    typer.echo(
        f"Walls of a {duration_days:g}-day run at {precision} "
        "(training compute in FLOP; plan = best plan at the data-movement wall)"
    )
    typer.echo(line(header))
    typer.echo(line(["-" * w for w in widths]))
    for row in table:
        typer.echo(line(row))
    typer.echo(
        "\ndata-movement wall: largest compute whose best plan keeps utilization >= "
        f"{rows[0]['utilization_threshold']:.0%} of max util; "
        "latency wall: largest compute any plan finishes in time."
        if rows
        else ""
    )
    for i, (name, notes) in enumerate(footnotes, start=1):
        typer.echo(f"[{i}] {name}: " + "; ".join(notes))


# ----------------------------------------------------------------------------- latency-wall


@app.command("latency-wall")
@_reports_errors
def latency_wall(
    t_layer_us: Annotated[
        float,
        typer.Option("--t-layer-us", help="Minimum time per layer (forward + backward), µs."),
    ],
    batch_tokens: Annotated[
        float, typer.Option("--batch-tokens", help="Batch size, tokens per optimizer step.")
    ],
    duration_days: Annotated[
        float, typer.Option("--duration-days", help="Wall-clock length of the run, days.")
    ],
    layer_coef: Annotated[
        float, typer.Option("--layer-coef", help="Depth L = coef * N^exponent: coefficient.")
    ] = 0.088,
    layer_exponent: Annotated[
        float, typer.Option("--layer-exponent", help="Depth L = coef * N^exponent: exponent.")
    ] = 0.27,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Closed-form latency wall of Sevilla et al. (2024), 'Can AI scaling continue through 2030?'.

    With Chinchilla scaling (D = 20 N tokens, C = 120 N^2 FLOP) and a fixed batch, training
    fits in T only if T >= t_L * L * D / B, which bounds N and so C.
    """
    _check_positive(t_layer_us, "--t-layer-us")
    _check_positive(batch_tokens, "--batch-tokens")
    _check_positive(duration_days, "--duration-days")
    _check_positive(layer_coef, "--layer-coef")

    from forecast.model.latency import latency_wall_flop, latency_wall_params
    from forecast.model.params import SECONDS_PER_DAY

    args = (
        t_layer_us * 1e-6,
        batch_tokens,
        duration_days * SECONDS_PER_DAY,
        layer_coef,
        layer_exponent,
    )
    params = float(latency_wall_params(*args))
    flop = float(latency_wall_flop(*args))
    if json_output:
        out = {
            "params": params,
            "flop": flop,
            "inputs": {
                "t_layer_s": t_layer_us * 1e-6,
                "batch_tokens": batch_tokens,
                "duration_days": duration_days,
                "layer_coef": layer_coef,
                "layer_exponent": layer_exponent,
                "tokens_per_param": 20.0,
            },
        }
        typer.echo(json.dumps(out, indent=2))
        return
    typer.echo(
        f"Latency wall (t_L = {t_layer_us:g} µs/layer, B = {_sci(batch_tokens, 2)} tokens, "
        f"T = {duration_days:g} days, L = {layer_coef:g}·N^{layer_exponent:g}):"
    )
    typer.echo(f"  largest model:     {_sci(params, 2)} parameters")
    typer.echo(f"  training compute:  {_sci(flop, 2)} FLOP")


# ----------------------------------------------------------------------------- curve


@app.command()
@_reports_errors
def curve(
    accelerator: Annotated[
        list[str],
        typer.Option(
            "--accelerator", "-a", help="Accelerator name (exact or a unique part). Repeatable."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output image (PNG).", dir_okay=False)],
    duration_days: DurationOpt = 90.0,
    precision: PrecisionOpt = Precision.bf16,
    hardware: HardwareOpt = None,
) -> None:
    """Plot best achievable utilization against training compute, with both walls marked."""
    _check_positive(duration_days, "--duration-days")
    from forecast.walls import curve_record, select_accelerators

    curves = [
        curve_record(acc, duration_days=duration_days, precision=precision.value)
        for acc in select_accelerators(accelerator, hardware)
    ]
    from forecast.report.charts import utilization_chart

    fig = utilization_chart(curves, figsize=(9, 5.5))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=150)
    typer.echo(f"wrote {out}")


# ----------------------------------------------------------------------------- run


class Wall(StrEnum):
    data_movement = "data_movement"
    latency = "latency"


class What(StrEnum):
    year = "year"
    flop = "flop"


class TaskRunnerKind(StrEnum):
    thread = "thread"
    dask = "dask"


RunDataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        envvar="WALLCAST_DATA_DIR",
        help="Folder with hardware.csv and frontier_runs.csv (landing folder: incoming/).",
    ),
]
RunOutputsDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--outputs-dir",
        envvar="WALLCAST_OUTPUTS_DIR",
        help="Where forecasts are published (forecasts/<id>/ and the 'latest' pointer).",
    ),
]
DrawsOpt = Annotated[int, typer.Option(min=50, help="Posterior draws per chain.")]
ChainsOpt = Annotated[int, typer.Option(min=1, help="MCMC chains.")]
SeedOpt = Annotated[
    int, typer.Option(help="Random seed (same seed, same inputs: identical dataset).")
]
KeepOpt = Annotated[
    int,
    typer.Option(
        min=1, help="Keep the newest N published forecasts (never deletes the one 'latest' names)."
    ),
]
ReportFlagOpt = Annotated[
    bool,
    typer.Option(
        "--report/--no-report", help="Generate the report of a new forecast (link artifact)."
    ),
]
YearStepOpt = Annotated[
    int,
    typer.Option(min=1, help="Years between forecast grid points (1: every year 2024..2045)."),
]


def _prefect_defaults() -> None:
    """The embedded Prefect server needs ~20 s to start on 2 cores; Prefect's default is 20."""
    import os

    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def _year_grid(step: int) -> list[float] | None:
    if step == 1:
        return None
    from forecast.propagate import DEFAULT_YEARS

    years = [float(y) for y in DEFAULT_YEARS[::step]]
    if years[-1] != float(DEFAULT_YEARS[-1]):
        years.append(float(DEFAULT_YEARS[-1]))
    return years


def _run_refresh(
    *,
    task_runner: TaskRunnerKind = TaskRunnerKind.thread,
    dask_address: str | None = None,
    **params: Any,
) -> dict[str, Any]:
    """Run the ``refresh-forecast`` Prefect flow in this process and return its summary."""
    _prefect_defaults()
    from flows.refresh import flow_with_task_runner

    refresh = flow_with_task_runner(task_runner.value, dask_address)
    return refresh(**params)


def _print_refresh(result: dict[str, Any], json_out: bool) -> None:
    from forecast.query import format_summary, summary_table
    from forecast.storage import load_forecast_group

    states = result["task_states"]
    cached = result["cached"]
    ran = [k for k, v in states.items() if v != "Cached"]
    typer.echo(
        f"cached tasks: {', '.join(cached) or 'none'}; ran: {', '.join(ran) or 'none'}", err=True
    )
    ds, _ = load_forecast_group(result["path"], ["hit_year", "hit_flop"])
    rows = summary_table(ds)
    if json_out:
        out = {
            "forecast_id": result["forecast_id"],
            "path": result["path"],
            "status": result["status"],
            "cached": cached,
            "task_states": states,
            "removed": result["removed"],
            "summary": rows,
        }
        typer.echo(json.dumps(out, indent=2, default=_json_default))
        return
    typer.echo(format_summary(rows))
    if result["status"] == "unchanged":
        typer.echo(f"\ninputs unchanged: latest kept, {result['path']} ({result['seconds']:.0f} s)")
    else:
        typer.echo(f"\npublished {result['path']} in {result['seconds']:.0f} s")
    if result["removed"]:
        typer.echo(f"retention: removed {len(result['removed'])} old forecast(s)")


@app.command()
@_reports_errors
def run(
    priors: Annotated[
        Path | None, typer.Option(help="Prior file (TOML); default priors/baseline.toml.")
    ] = None,
    data_dir: RunDataDirOpt = None,
    outputs_dir: RunOutputsDirOpt = None,
    draws: DrawsOpt = 1000,
    chains: ChainsOpt = 4,
    seed: SeedOpt = 0,
    scenario: Annotated[
        list[str] | None,
        typer.Option(help="Scenario overlay name in priors/scenarios/ (repeatable); default: all."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    task_runner: Annotated[
        TaskRunnerKind,
        typer.Option(help="Where tasks run: threads here, or Dask (a local cluster by default)."),
    ] = TaskRunnerKind.thread,
    dask_address: Annotated[
        str | None,
        typer.Option(help="Address of an existing Dask scheduler (tcp://host:8786)."),
    ] = None,
    keep: KeepOpt = 20,
    report: ReportFlagOpt = True,
    republish: Annotated[
        bool, typer.Option(help="Publish a new forecast even when the inputs are unchanged.")
    ] = False,
    year_step: YearStepOpt = 1,
) -> None:
    """Run the refresh-forecast flow: fit, propagate every scenario, publish, print the summary.

    Steps whose inputs (data, priors, settings, code) did not change are served from Prefect's
    cache; when nothing changed, no new forecast is published and 'latest' is kept.
    """
    if dask_address and task_runner != TaskRunnerKind.dask:
        task_runner = TaskRunnerKind.dask
    typer.echo(f"refresh-forecast: {chains} chains x {draws} draws ...", err=True)
    result = _run_refresh(
        task_runner=task_runner,
        dask_address=dask_address,
        priors=str(priors) if priors else None,
        data_dir=str(data_dir) if data_dir else None,
        outputs_dir=str(outputs_dir) if outputs_dir else None,
        scenarios=scenario,
        chains=chains,
        draws=draws,
        seed=seed,
        years=_year_grid(year_step),
        keep=keep,
        republish=republish,
        reports=report,
    )
    _print_refresh(result, json_out)


@app.command()
@_reports_errors
def ingest(
    file: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, help="CSV of accelerators (columns of hardware.csv)."
        ),
    ],
    data_dir: RunDataDirOpt = None,
    outputs_dir: RunOutputsDirOpt = None,
    refresh: Annotated[
        bool, typer.Option("--refresh/--no-refresh", help="Refresh the forecast after a merge.")
    ] = True,
    draws: DrawsOpt = 1000,
    chains: ChainsOpt = 4,
    seed: SeedOpt = 0,
    keep: KeepOpt = 20,
    report: ReportFlagOpt = True,
    json_out: Annotated[bool, typer.Option("--json", help="Print the refresh as JSON.")] = False,
) -> None:
    """Validate FILE and merge its accelerators into hardware.csv, then refresh the forecast.

    All or nothing: a file with any invalid row, or with an accelerator already in the table with
    different numbers, is moved to data/rejected/ with a .reason file and nothing else changes
    (exit 2).  Exact duplicates are skipped.  A merged file is archived in data/processed/.
    """
    from forecast.ingest import ingest_file

    result = ingest_file(file, data_dir)
    if result.status == "rejected":
        for problem in result.problems:
            typer.echo(f"  {problem}", err=True)
        typer.echo(
            f"error: {file.name} rejected, nothing merged; moved to {result.moved_to} "
            f"(reasons in {result.moved_to}.reason)",
            err=True,
        )
        raise typer.Exit(EXIT_USER_ERROR)
    typer.echo(result.message(), err=True)
    if not result.changed or not refresh:
        return
    out = _run_refresh(
        data_dir=str(data_dir) if data_dir else None,
        outputs_dir=str(outputs_dir) if outputs_dir else None,
        chains=chains,
        draws=draws,
        seed=seed,
        keep=keep,
        reports=report,
    )
    _print_refresh(out, json_out)


@app.command()
@_reports_errors
def serve(
    cron: Annotated[
        str, typer.Option(help="Schedule of the refresh (cron, UTC). Default: Mondays 06:00.")
    ] = "0 6 * * 1",
    poll_seconds: Annotated[
        float, typer.Option(min=0.5, help="How often the landing folder is checked, seconds.")
    ] = 30.0,
    settle_seconds: Annotated[
        float,
        typer.Option(min=0.0, help="A landing file must be unchanged this long to be ingested."),
    ] = 2.0,
    priors: Annotated[
        Path | None, typer.Option(help="Prior file (TOML); default priors/baseline.toml.")
    ] = None,
    data_dir: RunDataDirOpt = None,
    outputs_dir: RunOutputsDirOpt = None,
    draws: DrawsOpt = 1000,
    chains: ChainsOpt = 4,
    seed: SeedOpt = 0,
    keep: KeepOpt = 20,
    report: ReportFlagOpt = True,
    year_step: YearStepOpt = 1,
    scenario: Annotated[
        list[str] | None,
        typer.Option(help="Scenario overlay name in priors/scenarios/ (repeatable); default: all."),
    ] = None,
) -> None:
    """Serve the refresh on a schedule and watch data/incoming/ for new accelerator files.

    Uses the embedded Prefect server (local SQLite under PREFECT_HOME) unless PREFECT_API_URL
    points at a Prefect server.  Stop with Ctrl-C.
    """
    from prefect.client.schemas.schedules import CronSchedule

    try:
        CronSchedule(cron=cron)
    except ValueError as exc:
        raise typer.BadParameter(f"invalid cron expression {cron!r}", param_hint="--cron") from exc
    _prefect_defaults()
    from flows.serve import serve_forecast

    serve_forecast(
        cron=cron,
        poll_seconds=poll_seconds,
        settle_seconds=settle_seconds,
        parameters={
            "priors": str(priors.resolve()) if priors else None,
            "data_dir": str(data_dir.resolve()) if data_dir else None,
            "outputs_dir": str(outputs_dir.resolve()) if outputs_dir else None,
            "chains": chains,
            "draws": draws,
            "seed": seed,
            "keep": keep,
            "reports": report,
            "years": _year_grid(year_step),
            "scenarios": [str(Path(x).resolve()) if x.endswith(".toml") else x for x in scenario]
            if scenario
            else None,
        },
    )


def _json_default(x: Any) -> Any:
    return float(x)


# ----------------------------------------------------------------------------- query


@app.command()
@_reports_errors
def query(
    wall: Annotated[Wall, typer.Option(help="Which wall.")],
    what: Annotated[
        What, typer.Option(help="year: when it is hit; flop: at what training compute.")
    ] = What.year,
    forecast: Annotated[
        Path | None, typer.Option(help="Forecast file or folder; default: outputs/latest.")
    ] = None,
    outputs_dir: Annotated[
        Path | None, typer.Option(help="Outputs folder holding 'latest'.")
    ] = None,
    scenario: Annotated[
        str | None, typer.Option(help="Scenario; default: the first (baseline).")
    ] = None,
    prob: Annotated[
        float, typer.Option(min=0.01, max=0.99, help="Probability of the interval.")
    ] = 0.8,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Median and credible interval of when / at what FLOP a wall is hit (no JAX import)."""
    from forecast.query import query as run_query
    from forecast.storage import resolve_forecast_path

    path = resolve_forecast_path(
        forecast or outputs_dir or Path(__file__).resolve().parents[1] / "outputs"
    )
    out = run_query(path, wall.value, what.value, scenario, prob)
    if json_out:
        clean = {
            k: (v if not isinstance(v, float) or math.isfinite(v) else ("inf" if v > 0 else "-inf"))
            for k, v in out.items()
        }
        typer.echo(json.dumps(clean, indent=2))
        return
    fmt = (
        (lambda v: "not hit by the last year" if math.isinf(v) else f"{v:.1f}")
        if what == What.year
        else (lambda v: "not hit" if math.isinf(v) else f"{v:.2e} FLOP")
    )
    typer.echo(
        f"{out['wall']} wall, {out['scenario']}: {what.value} median {fmt(out['median'])}; "
        f"{out['prob']:.0%} interval {fmt(out['lower'])} - {fmt(out['upper'])}; "
        f"not hit by the last year in {out['not_hit_fraction']:.0%} of draws "
        f"(forecast {out['forecast_id']})"
    )


# ----------------------------------------------------------------------------- report, deck

ReportForecastOpt = Annotated[
    Path | None,
    typer.Option(
        "--forecast",
        help="Forecast file or folder (or an outputs folder); default: outputs/latest.",
    ),
]
ReportOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out", help="Folder to write into; default: the forecast's folder.", file_okay=False
    ),
]


def _report_forecast_path(forecast: Path | None) -> Path:
    from forecast.storage import resolve_forecast_path

    return resolve_forecast_path(forecast or Path(__file__).resolve().parents[1] / "outputs")


@app.command()
@_reports_errors
def report(
    forecast: ReportForecastOpt = None,
    out: ReportOutOpt = None,
    accelerator: Annotated[
        list[str] | None,
        typer.Option(
            "--accelerator",
            "-a",
            help="Only these accelerators in the per-accelerator table (default: all). Repeatable.",
        ),
    ] = None,
) -> None:
    """Write report.html (self-contained) and report.md: headline, charts, per-accelerator
    walls (runs the plan search, about a minute), trend fits, changes, provenance."""
    from forecast.report import write_report_files

    written = write_report_files(
        _report_forecast_path(forecast),
        out,
        accelerators=accelerator or True,
        curve_accelerators=accelerator or None,
    )
    typer.echo(f"wrote {written['report_html']}")
    typer.echo(f"wrote {written['report_md']}")


@app.command()
@_reports_errors
def deck(forecast: ReportForecastOpt = None, out: ReportOutOpt = None) -> None:
    """Write deck.pptx: the answer, fan chart, scenarios, uncertainty drivers, assumptions."""
    from forecast.report import write_deck_file

    typer.echo(f"wrote {write_deck_file(_report_forecast_path(forecast), out)}")


# ----------------------------------------------------------------------------- sensitivity


def _json_clean(x: Any) -> Any:
    """NaN/inf -> None, recursively (strict JSON)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _json_clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_json_clean(v) for v in x]
    return x


@app.command()
@_reports_errors
def sensitivity(
    forecast: Annotated[
        Path | None,
        typer.Option(
            help="Forecast file or folder: anchor the 2024 hardware levels on its posterior, use "
            "its priors, and store the result as its 'sensitivity' group. Default: anchor on the "
            "data and store nothing."
        ),
    ] = None,
    samples: Annotated[
        int, typer.Option(min=8, help="Sobol base samples N (N x (k+2) model evaluations).")
    ] = 1024,
    priors: Annotated[
        Path | None, typer.Option(help="Prior file (TOML); default: the forecast's or baseline.")
    ] = None,
    scenario: Annotated[
        str | None, typer.Option(help="Scenario overlay name in priors/scenarios/.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the Sobol design and the bootstrap.")] = 0,
    year_step: Annotated[
        int, typer.Option(min=1, help="Compute the walls every this many years, interpolate.")
    ] = 2,
    top: Annotated[int, typer.Option(min=1, help="Inputs shown per target in the table.")] = 8,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print every (target, input) row as a JSON list.")
    ] = False,
) -> None:
    """Rank the uncertain inputs by their Sobol indices for each wall's hit year and hit FLOP.

    First-order index: share of the target's variance explained by the input alone; total
    index: including its interactions. Tornado: the target with the input at its 10th and 90th
    percentile, every other input at its median.
    """
    import time

    from forecast import pipeline
    from forecast import sensitivity as sens
    from forecast.paths import default_priors_path
    from forecast.priors import load_overlay, load_priors

    start = time.perf_counter()
    path = None
    if forecast is not None:
        from forecast.storage import open_forecast, resolve_forecast_path

        path = resolve_forecast_path(forecast)
        with open_forecast(path) as tree:
            anchors = sens.forecast_anchors(tree)
            prior_set = load_priors(priors) if priors else sens._forecast_priors(tree)
    else:
        from forecast.hardware import load_hardware

        prior_set = load_priors(priors or default_priors_path())
        anchors = sens.data_anchors(load_hardware(), prior_set)
    if scenario:
        prior_set = prior_set.overlay(load_overlay(pipeline.scenario_path(scenario)))
    result = sens.run_sensitivity(
        prior_set,
        anchors,
        n=samples,
        seed=seed,
        wall_year_step=year_step,
        progress=lambda m: typer.echo(m, err=True),
    )
    ds = sens.sensitivity_dataset(result)
    if path is not None:
        sens.add_group(path, "sensitivity", ds)
        typer.echo(f"stored group 'sensitivity' in {path}", err=True)
    rows = sens.ranking_rows(ds)
    if json_out:
        typer.echo(json.dumps(_json_clean(rows), indent=2))
        return
    typer.echo(
        f"Sobol indices, priors {prior_set.name}: N = {samples} base samples, "
        f"{result.settings['evaluations']} evaluations, 95% bootstrap intervals, "
        f"{time.perf_counter() - start:.0f} s"
    )
    for t, target in enumerate(result.targets):
        unit = "year" if target.endswith("year") else "log10 FLOP"
        typer.echo(
            f"\n{target} (all medians: {result.baseline[t]:.2f}; "
            f"not hit, capped: {result.capped_fraction[t]:.0%})"
        )
        typer.echo(
            f"{'rank':>4}  {'input':<44} {'first order':>20} {'total':>20}  tornado p10 -> p90 ({unit})"
        )
        for r in [r for r in rows if r["target"] == target][:top]:
            s1 = f"{r['first_order']:.2f} [{r['first_order_ci'][0]:.2f}, {r['first_order_ci'][1]:.2f}]"
            st = f"{r['total']:.2f} [{r['total_ci'][0]:.2f}, {r['total_ci'][1]:.2f}]"
            typer.echo(
                f"{r['rank']:>4}  {r['input']:<44} {s1:>20} {st:>20}  "
                f"{r['tornado_low']:.2f} -> {r['tornado_high']:.2f}"
            )


# ----------------------------------------------------------------------------- backtest


@app.command()
@_reports_errors
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
    seed: Annotated[int, typer.Option(help="Random seed of the fits.")] = 0,
    priors: Annotated[
        Path | None, typer.Option(help="Prior file (TOML); default priors/baseline.toml.")
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="Folder with hardware.csv and frontier_runs.csv.")
    ] = None,
    forecast: Annotated[
        Path | None,
        typer.Option(help="Forecast file or folder to store the results in (group 'backtest')."),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per (metric, origin).")
    ] = False,
) -> None:
    """Rolling-origin backtest: fit the hardware trends on flagships released before each origin
    and score the predictive intervals of those released after (coverage, log score)."""
    import time

    from forecast import backtest as bt
    from forecast.hardware import load_frontier_runs, load_hardware
    from forecast.inference import init_jax
    from forecast.paths import data_dir as data_dir_of
    from forecast.paths import default_priors_path
    from forecast.priors import load_priors
    from forecast.trends import trend_priors_from_prior_set

    start = time.perf_counter()
    init_jax()
    data = data_dir_of(data_dir)
    prior_set = load_priors(priors or default_priors_path())
    results = bt.run_backtest(
        load_hardware(data / "hardware.csv"),
        load_frontier_runs(data / "frontier_runs.csv"),
        trend_priors_from_prior_set(prior_set),
        origin or bt.DEFAULT_ORIGINS,
        chains=chains,
        warmup=draws if warmup is None else warmup,
        draws=draws,
        seed=seed,
        progress=lambda m: typer.echo(m, err=True),
    )
    ds = bt.backtest_dataset(results)
    if forecast is not None:
        from forecast.storage import resolve_forecast_path

        path = bt.add_backtest(resolve_forecast_path(forecast), ds)
        typer.echo(f"stored group 'backtest' in {path}", err=True)
    rows = bt.coverage_rows(ds)
    if json_out:
        typer.echo(json.dumps(_json_clean(rows), indent=2))
        return

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.0%}"

    typer.echo(
        f"Backtest of the hardware trends ({chains} chains x {draws} draws per origin; "
        f"{time.perf_counter() - start:.0f} s): coverage of central predictive intervals"
    )
    typer.echo(
        f"{'origin':>6}  {'metric':<18} {'train':>5} {'held out':>8} {'50%':>5} {'80%':>5} "
        f"{'95%':>5} {'log score':>9}  r-hat max"
    )
    for r in rows:
        ls = "-" if r["log_score"] is None else f"{r['log_score']:.2f}"
        typer.echo(
            f"{r['origin']:>6}  {r['metric']:<18} {r['n_train']:>5} {r['n_held_out']:>8} "
            f"{pct(r['coverage_50']):>5} {pct(r['coverage_80']):>5} {pct(r['coverage_95']):>5} "
            f"{ls:>9}  {r['rhat_max']:.3f}"
        )


# ----------------------------------------------------------------------------- analyse

ANALYSE_SAMPLES = 1024
ANALYSE_BACKTEST_DRAWS = 500


@app.command()
@_reports_errors
def analyse(
    forecast: Annotated[
        Path | None,
        typer.Option(
            "--forecast",
            help="Forecast file or folder (or an outputs folder); default: outputs/latest.",
        ),
    ] = None,
    samples: Annotated[
        int, typer.Option(min=8, help="Sobol base samples N of the sensitivity analysis.")
    ] = ANALYSE_SAMPLES,
    backtest_draws: Annotated[
        int,
        typer.Option(
            "--backtest-draws", min=50, help="Backtest: posterior draws (and warm-up) per chain."
        ),
    ] = ANALYSE_BACKTEST_DRAWS,
    no_report: Annotated[
        bool, typer.Option("--no-report", help="Do not regenerate report.html/.md and deck.pptx.")
    ] = False,
) -> None:
    """Sensitivity (Sobol) and backtest of a published forecast: store both as groups of the
    forecast file ('sensitivity', 'backtest'), then regenerate its report and deck."""
    import time

    from forecast import backtest as bt
    from forecast import sensitivity as sens
    from forecast.hardware import load_frontier_runs, load_hardware
    from forecast.inference import init_jax
    from forecast.paths import data_dir as data_dir_of
    from forecast.storage import open_forecast
    from forecast.trends import trend_priors_from_prior_set

    start = time.perf_counter()
    path = _report_forecast_path(forecast)
    typer.echo(f"analysing {path}", err=True)

    with open_forecast(path) as tree:
        anchors = sens.forecast_anchors(tree)
        prior_set = sens._forecast_priors(tree)
    t0 = time.perf_counter()
    result = sens.run_sensitivity(
        prior_set, anchors, n=samples, progress=lambda m: typer.echo(f"sensitivity: {m}", err=True)
    )
    sens_ds = sens.sensitivity_dataset(result)
    sens_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    init_jax()
    data = data_dir_of(None)
    results = bt.run_backtest(
        load_hardware(data / "hardware.csv"),
        load_frontier_runs(data / "frontier_runs.csv"),
        trend_priors_from_prior_set(prior_set),
        bt.DEFAULT_ORIGINS,
        warmup=backtest_draws,
        draws=backtest_draws,
        progress=lambda m: typer.echo(f"backtest: {m}", err=True),
    )
    bt_ds = bt.backtest_dataset(results)
    bt_s = time.perf_counter() - t0

    sens.add_sensitivity(path, sens_ds)
    bt.add_backtest(path, bt_ds)

    ranked = sens.ranking_rows(sens_ds)
    typer.echo(
        f"Sensitivity: Sobol total-order indices, N = {samples} "
        f"({result.settings['evaluations']} evaluations, {sens_s:.0f} s); largest per target:"
    )
    for target in result.targets:
        r = next(x for x in ranked if x["target"] == target)
        typer.echo(
            f"  {target:<30} {r['input']:<44} total {r['total']:.2f} "
            f"[{r['total_ci'][0]:.2f}, {r['total_ci'][1]:.2f}]"
        )
    typer.echo(f"Backtest ({backtest_draws} draws per chain, {bt_s:.0f} s): 80% interval covers")
    for row in bt.coverage_rows(bt_ds):
        if row["metric"] == "all":
            cov = "-" if row["coverage_80"] is None else f"{row['coverage_80']:.0%}"
            typer.echo(f"  origin {row['origin']}: {cov} of {row['n_held_out']} held-out values")
    typer.echo(f"stored groups 'sensitivity' and 'backtest' in {path}")

    if not no_report:
        from forecast.report import generate_reports

        t0 = time.perf_counter()
        made = generate_reports(path)
        typer.echo(f"reports regenerated ({time.perf_counter() - t0:.0f} s):")
        for p in made.values():
            typer.echo(f"  wrote {p}")
    typer.echo(f"done in {time.perf_counter() - start:.0f} s")


# ----------------------------------------------------------------------------- later commands
#
# Planned commands register here with @app.command() and @_reports_errors, importing their heavy
# dependencies inside the function body:
#   run     - the full probabilistic forecast (priors -> draws -> walls), writes outputs/
#   query   - answer questions from a finished run without importing JAX (must start fast)
#   ingest  - validate files in data/incoming/, move failures to data/rejected/
#   serve   - the Prefect-backed service (the Docker image's eventual default)
#   report  - written report of a run
#   deck    - slide deck of a run


def main() -> None:
    """Entry point of the ``wallcast`` console script and ``python -m forecast``."""
    from forecast.errors import WallcastError

    try:
        app(prog_name="wallcast")
    except WallcastError as exc:  # raised outside a command body (e.g. in a callback)
        _report_error(exc)
        sys.exit(EXIT_USER_ERROR)
