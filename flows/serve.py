"""``wallcast serve``: the weekly refresh plus a watcher of the landing folder.

Three deployments are served by one process (``prefect.serve``); every flow run executes in a
fresh subprocess started by Prefect's runner:

* ``refresh-forecast/weekly`` - :func:`flows.refresh.refresh_forecast` on a cron schedule
  (default ``0 6 * * 1``, Mondays 06:00 UTC);
* ``watch-landing/landing`` - :func:`watch_landing`: ingest every file waiting in
  ``data/incoming/`` and, when the table changed, refresh (a subflow);
* ``whatif-forecast/whatif`` - :func:`flows.whatif.whatif_forecast`: a forecast with changed
  priors under ``<outputs>/whatif/<digest>/``, submitted by the API when reweighting cannot
  answer a what-if.

A light poller thread in the serving process looks at ``data/incoming/`` every ``poll_seconds``
(a directory listing, no subprocess) and starts a ``watch-landing/landing`` run when a settled file
is waiting and no watcher run is in flight.  Runs therefore appear in the Prefect UI only when
there is something to do.

It works on the embedded default (no ``PREFECT_API_URL``: Prefect starts a temporary local server
on SQLite under ``$PREFECT_HOME``) and against a real server (``PREFECT_API_URL`` set, e.g. to
``prefect server start``'s ``http://127.0.0.1:4200/api``).
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any, Literal

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.logging import get_logger
from prefect.runner import Runner
from prefect.settings import PREFECT_API_URL
from prefect.types.entrypoint import EntrypointType

from flows.refresh import refresh_forecast
from flows.whatif import WHATIF_DEPLOYMENT, whatif_forecast
from forecast.config import paths
from forecast.config.filelock import LockBusyError, exclusive_lock
from forecast.config.settings import (
    DEFAULT_CHAINS,
    DEFAULT_DRAWS,
    DEFAULT_KEEP,
    DEFAULT_PROPAGATE_DRAWS,
    DEFAULT_SEED,
)
from forecast.data.ingest import INCOMING_DIR, ingest_file, pending_files

__all__ = ["LandingPoller", "ingest_task", "serve_forecast", "watch_landing"]

WATCH_LOCK = ".watch.lock"
REFRESH_DEPLOYMENT = "weekly"
WATCH_DEPLOYMENT = "landing"

ingest_task = task(
    name="ingest-file",
    cache_policy=NO_CACHE,
    retries=2,
    retry_delay_seconds=2,
    task_run_name="ingest-{path}",
)(ingest_file)
"""Prefect task around :func:`forecast.data.ingest.ingest_file` (I/O: retried twice)."""


@flow(name="watch-landing", validate_parameters=True)
def watch_landing(
    data_dir: str | None = None,
    outputs_dir: str | None = None,
    priors: str | None = None,
    scenarios: list[str] | None = None,
    scenario_dir: str | None = None,
    chains: int = DEFAULT_CHAINS,
    draws: int = DEFAULT_DRAWS,
    warmup: int | None = None,
    seed: int = DEFAULT_SEED,
    years: list[float] | None = None,
    keep: int = DEFAULT_KEEP,
    reports: bool = True,
    settle_seconds: float = 2.0,
    lock_wait: float = 3600.0,
    propagate_draws: int | None = DEFAULT_PROPAGATE_DRAWS,
    regime: Literal["paper", "realistic"] = "realistic",
) -> dict[str, Any]:
    """Ingest every settled file in ``<data_dir>/incoming/``; refresh when one added rows.

    A second watcher run while one is busy returns at once (``data/.watch.lock``).  The refresh
    waits up to ``lock_wait`` seconds for a refresh already running (e.g. the weekly one).
    """
    logger = get_run_logger()
    data = paths.data_dir(data_dir)
    try:
        with exclusive_lock(data / WATCH_LOCK, "landing watcher"):
            files = pending_files(data / INCOMING_DIR, settle_seconds)
            results = []
            for f in files:
                r = ingest_task(str(f), str(data))
                (logger.warning if r.status == "rejected" else logger.info)(r.message())
                results.append(r)
            out: dict[str, Any] = {
                "ingested": [
                    {"file": r.file, "status": r.status, "added": list(r.added)} for r in results
                ],
                "refresh": None,
            }
            if any(r.changed for r in results):
                out["refresh"] = refresh_forecast(
                    priors=priors,
                    data_dir=str(data),
                    outputs_dir=outputs_dir,
                    scenarios=scenarios,
                    scenario_dir=scenario_dir,
                    chains=chains,
                    draws=draws,
                    warmup=warmup,
                    seed=seed,
                    years=years,
                    keep=keep,
                    reports=reports,
                    lock_wait=lock_wait,
                    propagate_draws=propagate_draws,
                    regime=regime,
                )
            elif files:
                logger.info("no new rows merged; no refresh needed")
            return out
    except LockBusyError as exc:
        logger.info(f"skipped: {exc}")
        return {"ingested": [], "refresh": None, "skipped": str(exc)}


class LandingPoller(threading.Thread):
    """Start a ``watch-landing`` deployment run when a settled file waits in the landing folder."""

    def __init__(
        self,
        incoming: Path,
        deployment: str,
        poll_seconds: float,
        settle_seconds: float,
    ) -> None:
        super().__init__(name="wallcast-landing-poller", daemon=True)
        self.incoming = incoming
        self.deployment = deployment
        self.poll_seconds = poll_seconds
        self.settle_seconds = settle_seconds
        self.stop = threading.Event()
        self._in_flight: Any = None  # id of the last watcher run started

    def _busy(self) -> bool:
        if self._in_flight is None:
            return False

        with get_client(sync_client=True) as client:
            state = client.read_flow_run(self._in_flight).state
        return state is not None and not state.is_final()

    def poll_once(self) -> bool:
        """One look at the landing folder; True when a watcher run was started."""
        if not pending_files(self.incoming, self.settle_seconds) or self._busy():
            return False

        run = run_deployment(self.deployment, timeout=0)
        self._in_flight = run.id
        return True

    def run(self) -> None:

        log = get_logger("wallcast.serve")
        while not self.stop.wait(self.poll_seconds):
            try:
                if self.poll_once():
                    log.info(f"new file(s) in {self.incoming}: started {self.deployment}")
            except Exception as exc:  # keep polling (e.g. the API is still starting)
                log.warning(f"landing poll failed: {type(exc).__name__}: {exc}")


def _share_embedded_server() -> None:
    """On the embedded default, point flow-run subprocesses at this process's temporary server.

    Without ``PREFECT_API_URL`` each flow run the runner starts would launch a temporary server
    of its own (slow to start, and a second process on the same SQLite file).  Runner subprocesses inherit
    ``os.environ``, so exporting the URL of the server already running here avoids that.
    """
    if PREFECT_API_URL.value():
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the process-wide embedded server (started on first use)
    server.start()
    os.environ["PREFECT_API_URL"] = server.api_url


def serve_forecast(
    *,
    cron: str = "0 6 * * 1",
    poll_seconds: float = 30.0,
    settle_seconds: float = 2.0,
    parameters: dict[str, Any] | None = None,
) -> None:
    """Serve ``refresh-forecast/weekly`` and ``watch-landing/landing`` until interrupted.

    ``parameters`` go to both flows (``data_dir``, ``outputs_dir``, ``priors``, ``chains``,
    ``draws``, ``seed``, ``keep``, ``reports``, ...; None values are dropped).
    """
    params = {k: v for k, v in (parameters or {}).items() if v is not None}
    refresh_params = {k: v for k, v in params.items() if k != "settle_seconds"}
    refresh_params.setdefault("lock_wait", 3600.0)
    watch_params = {**params, "settle_seconds": settle_seconds}
    weekly = refresh_forecast.to_deployment(
        name=REFRESH_DEPLOYMENT,
        cron=cron,
        parameters=refresh_params,
        description="Scheduled refresh of the wallcast forecast (cached when nothing changed).",
        tags=["wallcast"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    whatif = whatif_forecast.to_deployment(
        name=WHATIF_DEPLOYMENT,
        parameters={"changes": [], "refresh": {**refresh_params, "reports": False}},
        description="A forecast with changed priors, when reweighting cannot answer a what-if "
        "(submitted by the API's POST /v1/whatif/runs); one at a time.",
        concurrency_limit=1,
        tags=["wallcast"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    landing = watch_landing.to_deployment(
        name=WATCH_DEPLOYMENT,
        parameters=watch_params,
        description="Ingest files from data/incoming/ and refresh when rows were added.",
        tags=["wallcast"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    data = paths.data_dir(params.get("data_dir"))
    poller = LandingPoller(
        data / INCOMING_DIR,
        f"{watch_landing.name}/{WATCH_DEPLOYMENT}",
        poll_seconds,
        settle_seconds,
    )
    # What prefect.serve(weekly, landing) does, with the poller started once the deployments are
    # registered (the API, embedded or remote, is up by then).
    runner = Runner(
        name="wallcast", pause_on_shutdown=False, limit=None, query_seconds=min(poll_seconds, 10)
    )
    for deployment in (weekly, landing, whatif):
        runner.add_deployment(deployment)
    _share_embedded_server()
    poller.start()
    print(
        f"wallcast serve: deployments {refresh_forecast.name}/{REFRESH_DEPLOYMENT} "
        f"(cron {cron!r}) and {watch_landing.name}/{WATCH_DEPLOYMENT} "
        f"(landing folder {poller.incoming}, polled every {poll_seconds:g} s) and "
        f"{whatif_forecast.name}/{WHATIF_DEPLOYMENT} (what-if runs); Ctrl-C to stop",
        flush=True,
    )
    try:
        asyncio.run(runner.start())
    except KeyboardInterrupt:
        pass
    finally:
        poller.stop.set()
