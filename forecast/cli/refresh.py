"""``wallcast run``, ``wallcast ingest`` and ``wallcast serve``: the commands that refresh the forecast.

They share one set of refresh options (:class:`forecast.cli.options.RefreshOptions`) and run the
Prefect flows of :mod:`flows`, imported inside the commands: the library (``forecast``) never
imports ``flows``; the CLI is where the two meet.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from forecast import store
from forecast.cli.app import EXIT_USER_ERROR, app, echo_json, progress, reports_errors
from forecast.cli.options import (
    ApiHostOpt,
    JsonOpt,
    RefreshOptions,
    TaskRunnerKind,
    with_refresh_options,
)
from forecast.cli.tables import summary_table as format_summary
from forecast.config import paths
from forecast.config.errors import WallcastError
from forecast.config.filelock import exclusive_lock
from forecast.queries.answers import summary_table
from forecast.store.layout import LOCK_FILE
from forecast.store.reader import load_forecast_group

#: Settings for Prefect, set before it is imported unless the environment sets them.
PREFECT_DEFAULTS = {
    # On a loaded machine the embedded server can take longer to start than Prefect's default
    # timeout of 20 s.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    # Anonymous usage telemetry: its heartbeat writes to the embedded server's SQLite database
    # and, while the flow writes too, ends in a "database is locked" traceback mid-run.
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
}


LOG_LEVEL_ENV = "WALLCAST_LOG_LEVEL"
"""Verbosity of the flow's logs on the terminal (run, ingest, serve): ``INFO`` (default: progress
lines, no tracebacks), ``WARNING`` (quiet: warnings and the final ``error:`` line), ``DEBUG`` (Prefect's
own messages and every failed task's traceback)."""


def log_level() -> int:
    """The level named by :data:`LOG_LEVEL_ENV` (default INFO), or a WallcastError."""
    name = os.environ.get(LOG_LEVEL_ENV, "INFO").strip().upper() or "INFO"
    level = logging.getLevelNamesMapping().get(name)
    if level is None:
        raise WallcastError(
            f"{LOG_LEVEL_ENV}={name!r} is not a log level; use DEBUG, INFO, WARNING or ERROR"
        )
    return level


def prefect_defaults() -> None:
    """Apply :data:`PREFECT_DEFAULTS` where the environment does not set them."""
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", logging.getLevelName(log_level()))


class _UserErrorsWithoutTraceback(logging.Filter):
    """Keep tracebacks of failed tasks and flows out of the terminal below DEBUG: Prefect logs a
    failure with its traceback, and the command already ends with the one ``error: ...`` line.
    Prefect's API log handler (the UI) still receives the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and log_level() > logging.DEBUG:
            record.exc_info = None
            record.exc_text = None
        return True


def quiet_user_error_tracebacks() -> None:
    """Add :class:`_UserErrorsWithoutTraceback` to the terminal log handlers (once) and keep
    Prefect's own chatter (the temporary server starting and stopping) below DEBUG quiet, so the
    ``error:`` line is the last line of a failed run."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not any(
            isinstance(f, _UserErrorsWithoutTraceback) for f in handler.filters
        ):
            handler.addFilter(_UserErrorsWithoutTraceback())
    level = log_level()
    if level > logging.DEBUG:
        logging.getLogger("prefect").setLevel(logging.WARNING)
        for runs in ("prefect.flow_runs", "prefect.task_runs"):  # the flow's progress lines
            logging.getLogger(runs).setLevel(level)


def preflight(refresh: RefreshOptions) -> None:
    """Validate data, priors, scenarios and the outputs folder before any Prefect import: bad
    input fails at once with one ``error:`` line instead of inside the flow."""
    # why here: the plan search imports JAX; reading commands must not
    from forecast.jobs import forecast_job

    options = refresh.flow_parameters()
    forecast_job.load_inputs(
        options["priors"], options["data_dir"], options["scenarios"], scenario_dir=None
    )
    store.check_outputs_writable(paths.outputs_dir(options["outputs_dir"]))


def _run_refresh(
    refresh: RefreshOptions,
    *,
    task_runner: TaskRunnerKind = TaskRunnerKind.thread,
    dask_address: str | None = None,
    republish: bool = False,
    lock_wait: float = 0.0,
) -> dict[str, Any]:
    """Run the ``refresh-forecast`` Prefect flow in this process and return its summary.

    ``lock_wait``: seconds to wait for a refresh already running on the outputs folder."""
    prefect_defaults()
    # why here: only the refresh commands load Prefect (the others start without it)
    from flows.refresh import flow_with_task_runner

    quiet_user_error_tracebacks()
    start_prefect_server()
    flow = flow_with_task_runner(task_runner.value, dask_address)
    with prefect_connection_errors():
        return flow(**refresh.flow_parameters(), republish=republish, lock_wait=lock_wait)


def start_prefect_server() -> None:
    """The embedded Prefect server, tied to this process and started with retries
    (:func:`flows.server_lifecycle.start_embedded_server`); a WallcastError naming the setting to
    change when it does not answer."""
    # why here: only the refresh commands load Prefect (the others start without it)
    from flows.server_lifecycle import (
        ServerStartError,
        server_dies_with_parent,
        start_embedded_server,
    )

    server_dies_with_parent()
    try:
        start_embedded_server()
    except ServerStartError as exc:
        raise WallcastError(str(exc)) from None


@contextmanager
def prefect_connection_errors() -> Iterator[None]:
    """A lost connection to the Prefect API mid-run (the server stopped answering; Prefect's client
    has already retried) becomes one ``error:`` line: nothing was published, ``latest`` is kept,
    and a rerun reuses every task already cached."""
    # why here: only the refresh commands load Prefect (the others start without it)
    import httpx

    # why here: only the refresh commands load Prefect (the others start without it)
    from prefect.exceptions import PrefectHTTPStatusError

    # why here: only the refresh commands load Prefect (the others start without it)
    from prefect.settings import PREFECT_API_URL

    advice = (
        "nothing was published and the latest forecast is kept; run the command again "
        "(finished tasks are cached), and on a busy machine set "
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=300 or use a standing server "
        "(`prefect server start`, PREFECT_API_URL)"
    )
    url = PREFECT_API_URL.value() or "the embedded server"
    try:
        yield
    except httpx.UnsupportedProtocol as exc:
        raise WallcastError(f"PREFECT_API_URL {url!r} is not an http(s) address: {exc}") from None
    except httpx.TransportError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise WallcastError(
            f"lost the connection to Prefect's API ({url}: {reason}); {advice}"
        ) from None
    except PrefectHTTPStatusError as exc:
        status = exc.response.status_code if exc.response is not None else 0
        if status < 500:
            raise
        raise WallcastError(
            f"Prefect's API ({url}) failed with HTTP {status} (overloaded?); {advice}"
        ) from None


#: How long ``wallcast ingest`` waits, after a merge, for a refresh that started meanwhile.
INGEST_REFRESH_LOCK_WAIT_S = 3600.0


def _refuse_while_refreshing(refresh: RefreshOptions) -> None:
    """Raise LockBusyError ("another refresh is running") before anything is merged."""
    lock = paths.outputs_dir(refresh.outputs_dir) / LOCK_FILE
    if lock.is_file():  # no lock file: no refresh has ever run there
        with exclusive_lock(lock, "refresh"):
            pass


def _print_refresh(result: dict[str, Any], json_out: bool) -> None:

    states = result["task_states"]
    cached = result["cached"]
    ran = [k for k, v in states.items() if v != "Cached"]
    progress(f"cached tasks: {', '.join(cached) or 'none'}; ran: {', '.join(ran) or 'none'}")
    rows = result.get("summary")
    if rows is None:  # a flow run from elsewhere: read the two variables back (h5py)
        ds, _ = load_forecast_group(result["path"], ["hit_year", "hit_flop"])
        rows = summary_table(ds)
    if json_out:
        echo_json(
            {
                "forecast_id": result["forecast_id"],
                "path": result["path"],
                "status": result["status"],
                "cached": cached,
                "task_states": states,
                "removed": result["removed"],
                "summary": rows,
            }
        )
        return
    typer.echo(format_summary(rows))
    if result["status"] == "unchanged":
        typer.echo(f"\ninputs unchanged: latest kept, {result['path']} ({result['seconds']:.0f} s)")
    else:
        typer.echo(f"\npublished {result['path']} in {result['seconds']:.0f} s")
    if result["removed"]:
        typer.echo(f"retention: removed {len(result['removed'])} old forecast(s)")


@app.command()
@reports_errors
@with_refresh_options
def run(
    json_out: JsonOpt = False,
    task_runner: Annotated[
        TaskRunnerKind,
        typer.Option(help="Where tasks run: threads here, or Dask (a local cluster by default)."),
    ] = TaskRunnerKind.thread,
    dask_address: Annotated[
        str | None,
        typer.Option(help="Address of an existing Dask scheduler (tcp://host:8786)."),
    ] = None,
    republish: Annotated[
        bool, typer.Option(help="Publish a new forecast even when the inputs are unchanged.")
    ] = False,
    *,
    refresh: RefreshOptions,
) -> None:
    """Run the refresh-forecast flow: fit, propagate every scenario, publish, print the summary.

    Steps whose inputs (data, priors, settings, code) did not change are served from Prefect's
    cache; when nothing changed, no new forecast is published and 'latest' is kept.  Data,
    priors, scenarios and the outputs folder are validated before the flow starts;
    WALLCAST_LOG_LEVEL (INFO, WARNING, DEBUG) sets how much of the flow's log is shown.
    """
    if dask_address and task_runner != TaskRunnerKind.dask:
        task_runner = TaskRunnerKind.dask
    log_level()  # a bad WALLCAST_LOG_LEVEL fails here, not after the fit
    preflight(refresh)
    warmup = "" if refresh.warmup is None else f" after {refresh.warmup} warm-up iterations"
    progress(f"refresh-forecast: {refresh.chains} chains x {refresh.draws} draws{warmup} ...")
    result = _run_refresh(
        refresh, task_runner=task_runner, dask_address=dask_address, republish=republish
    )
    _print_refresh(result, json_out)


@app.command()
@reports_errors
@with_refresh_options
def ingest(
    file: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, help="CSV of accelerators (columns of hardware.csv)."
        ),
    ],
    then_refresh: Annotated[
        bool, typer.Option("--refresh/--no-refresh", help="Refresh the forecast after a merge.")
    ] = True,
    json_out: JsonOpt = False,
    *,
    refresh: RefreshOptions,
) -> None:
    """Validate FILE and merge its accelerators into hardware.csv, then refresh the forecast.

    All or nothing: a file with any invalid row, or with an accelerator already in the table with
    different numbers, is archived in data/rejected/ with a .reason file and nothing else changes
    (exit 2).  Exact duplicates are skipped.  A merged file is archived in data/processed/.  A
    file of data/incoming/ is moved there; a file from elsewhere is copied and left in place; the
    data folder's own tables are refused.  With --refresh, a refresh already running on the
    outputs folder refuses the ingest before anything is merged (exit 2, try again later).
    """
    if then_refresh:
        _refuse_while_refreshing(refresh)
    # why here: the table checks load pandas; the other commands start without it
    from forecast.data.ingest import ingest_file

    result = ingest_file(file, refresh.data_dir)
    kept = "; the original is left in place" if result.kept_source else ""
    if result.status == "rejected":
        first, *rest = result.problems
        for problem in rest:
            typer.echo(f"  {problem}", err=True)
        n = result.n_problems or len(result.problems)
        count = f" (first of {n} problems, the others above)" if n > 1 else ""
        typer.echo(
            f"error: {first}{count}; {file.name} rejected, nothing merged; "
            f"archived as {result.moved_to} (reasons in {result.moved_to}.reason){kept}",
            err=True,
        )
        raise typer.Exit(EXIT_USER_ERROR)
    progress(result.message() + kept)
    if not result.changed or not then_refresh:
        return
    _print_refresh(_run_refresh(refresh, lock_wait=INGEST_REFRESH_LOCK_WAIT_S), json_out)


@app.command()
@reports_errors
@with_refresh_options
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
    api_port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port of the API and dashboard; 0: none.")
    ] = 8000,
    api_host: ApiHostOpt = "127.0.0.1",
    *,
    refresh: RefreshOptions,
) -> None:
    """Serve the refresh on a schedule and watch data/incoming/ for new accelerator files.

    Also serves the HTTP API and dashboard (as `wallcast api`) on --api-port.  Uses the embedded
    Prefect server (local SQLite under PREFECT_HOME) unless PREFECT_API_URL points at a Prefect
    server.  Stop with Ctrl-C.
    """
    prefect_defaults()
    # why here: only the refresh commands load Prefect (the others start without it)
    from prefect.client.schemas.schedules import CronSchedule

    try:
        CronSchedule(cron=cron)
    except ValueError as exc:
        raise typer.BadParameter(f"invalid cron expression {cron!r}", param_hint="--cron") from exc
    # why here: only the refresh commands load Prefect (the others start without it)
    from flows.serve import serve_forecast

    quiet_user_error_tracebacks()
    start_prefect_server()
    if api_port:
        # why here: only `wallcast serve` starts the API beside the flows
        from forecast.service.server import start_api_thread

        start_api_thread(api_host, api_port, refresh.outputs_dir)
        typer.echo(f"API and dashboard: http://{api_host}:{api_port}/", err=True)
    with prefect_connection_errors():
        serve_forecast(
            cron=cron,
            poll_seconds=poll_seconds,
            settle_seconds=settle_seconds,
            parameters=refresh.flow_parameters(absolute=True),
        )
