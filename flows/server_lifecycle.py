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

__all__ = ["WATCHDOG_MODULE", "main", "server_dies_with_parent"]

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
