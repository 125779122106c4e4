"""The embedded Prefect server dies with the process that started it.

Prefect 3 starts its ephemeral API server (``prefect.server.api.server.SubprocessASGIServer``) as
``python -m uvicorn ...`` and stops it from an ``atexit`` hook, which never runs when the parent is
killed with SIGKILL (as the out-of-memory killer does) or crashes: the server was then left running
forever under PID 1.  :func:`server_dies_with_parent` makes Prefect start the server as
``python -m flows.server_lifecycle PARENT_PID uvicorn ...`` instead (:func:`main`): the same
uvicorn command in the same process (so Prefect's own ``terminate()`` still stops it), which sends
itself SIGTERM as soon as its parent process is gone.  A watchdog thread is used rather than ``prctl(PR_SET_PDEATHSIG)``, which fires
when the *thread* that spawned the child exits, not the process, and is Linux-only.

The hook replaces only the ``subprocess`` name inside Prefect's server module (nothing global) and
is idempotent.
"""

from __future__ import annotations

import os
import runpy
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_SERVER_EPHEMERAL_ENABLED,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
)

__all__ = [
    "WATCHDOG_MODULE",
    "ServerStartError",
    "main",
    "server_dies_with_parent",
    "start_embedded_server",
]

WATCHDOG_MODULE = "flows.server_lifecycle"
POLL_SECONDS = 0.5
"""How often the watchdog thread checks that the parent is alive."""
KILL_AFTER_SECONDS = 10.0
"""How long after its SIGTERM an orphaned server may take to shut down before it exits hard."""


class _WatchedSubprocess:
    """Stand-in for the ``subprocess`` module inside Prefect's server module: ``Popen`` of
    ``python -m uvicorn ...`` becomes ``python -m flows.server_lifecycle <parent pid> uvicorn ...``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    @staticmethod
    def Popen(args: Any, *rest: Any, **kwargs: Any) -> subprocess.Popen:  # noqa: N802 (module API)
        args = list(args)
        if args[1:3] == ["-m", "uvicorn"]:
            args = [args[0], "-m", WATCHDOG_MODULE, str(os.getpid()), *args[2:]]
        return subprocess.Popen(args, *rest, **kwargs)


def server_dies_with_parent() -> None:
    """Start Prefect's ephemeral server under the parent watchdog of :func:`main` (idempotent)."""
    from prefect.server.api import server as server_module

    if isinstance(getattr(server_module, "subprocess", None), _WatchedSubprocess):
        return
    if getattr(server_module, "subprocess", None) is not subprocess:  # Prefect changed: leave it
        print(
            "warning: Prefect's server module has changed; the embedded server may outlive a "
            "killed wallcast process",
            file=sys.stderr,
        )
        return
    server_module.subprocess = _WatchedSubprocess()  # type: ignore[assignment]


# ----------------------------------------------------------------------------- starting it

STARTUP_TIMEOUT_ENV = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
START_ATTEMPTS = 3
"""How often :func:`start_embedded_server` starts the server before it gives up."""


class ServerStartError(RuntimeError):
    """The embedded Prefect server did not answer; the message says what to change."""


def start_embedded_server(attempts: int = START_ATTEMPTS) -> str | None:
    """Start Prefect's embedded API server before a flow runs, retrying; its URL (None when
    ``PREFECT_API_URL`` names a server, which is then the user's to run).

    On a loaded machine the server can take longer than the start-up timeout to answer
    its health check, or its health check can time out on its own (Prefect lets that
    ``httpx.ReadTimeout`` escape). Nothing has run yet, so starting again is safe: each attempt
    stops what the last one left and starts a fresh server on a free port. After ``attempts``
    failures, :class:`ServerStartError` names the timeout setting to raise and the alternative of a
    standing server. Flows started afterwards in this process reuse the running server (Prefect
    keeps one per process).
    """
    from prefect.server.api.server import SubprocessASGIServer

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return None  # the user's server, or none at all (then Prefect itself says what to set)
    timeout = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
    reasons: list[str] = []
    exited = False
    for _ in range(max(1, attempts)):
        server = SubprocessASGIServer()
        if server.running:
            return server.api_url
        try:
            server.start(timeout=timeout)
            return server.api_url
        except Exception as exc:  # noqa: BLE001 - any start-up failure: stop, then retry
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            reasons.append(first_line[:200])
            process = server.server_process
            exited = exited or (process is not None and process.poll() is not None)
            server.stop()  # frees the singleton: the next attempt is a new server, new port
    what = "exited before answering" if exited else f"did not answer within {timeout} s"
    raise ServerStartError(
        f"Prefect's embedded API server {what} in {len(reasons)} attempts (last: "
        f"{reasons[-1]}); on a busy machine give it longer with {STARTUP_TIMEOUT_ENV}=300, or "
        "run a standing server (`prefect server start`) and set PREFECT_API_URL to its address"
    )


# ----------------------------------------------------------------------------- the server side


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(POLL_SECONDS)
    os.kill(os.getpid(), signal.SIGTERM)  # re-parented: the parent is gone
    time.sleep(KILL_AFTER_SECONDS)
    os._exit(1)


def main(argv: list[str]) -> None:
    """``python -m flows.server_lifecycle PARENT_PID MODULE ARGS...``: run ``python -m MODULE
    ARGS...`` in this process while a daemon thread polls the parent pid every
    :data:`POLL_SECONDS`; once re-parented (the parent died, even by SIGKILL) it sends itself
    SIGTERM (uvicorn shuts down cleanly) and exits hard :data:`KILL_AFTER_SECONDS` later."""
    if len(argv) < 2 or not argv[0].isdigit():
        sys.exit("usage: python -m flows.server_lifecycle PARENT_PID MODULE [ARGS...]")
    parent_pid, module = int(argv[0]), argv[1]
    if os.getppid() != parent_pid:  # the parent died before we started
        sys.exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="parent-watchdog", daemon=True).start()
    sys.argv = [module, *argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
