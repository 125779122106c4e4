"""The embedded Prefect server dies with the process that started it.

Prefect 3 starts its ephemeral API server (``prefect.server.api.server.SubprocessASGIServer``) as
``python -m uvicorn ...`` and stops it from an ``atexit`` hook, which never runs when the parent is
killed with SIGKILL (as the out-of-memory killer does) or crashes: the server was then left running
forever under PID 1.  :func:`server_dies_with_parent` makes Prefect start the server through
:mod:`flows.server_watchdog` instead, which runs the same uvicorn command in the same process
(so Prefect's own ``terminate()`` still stops it) and sends itself SIGTERM as soon as its parent
process is gone.  A watchdog thread is used rather than ``prctl(PR_SET_PDEATHSIG)``, which fires
when the *thread* that spawned the child exits, not the process, and is Linux-only.

The hook replaces only the ``subprocess`` name inside Prefect's server module (nothing global) and
is idempotent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

__all__ = ["WATCHDOG_MODULE", "server_dies_with_parent"]

WATCHDOG_MODULE = "flows.server_watchdog"


class _WatchedSubprocess:
    """Stand-in for the ``subprocess`` module inside Prefect's server module: ``Popen`` of
    ``python -m uvicorn ...`` becomes ``python -m flows.server_watchdog <parent pid> uvicorn ...``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    @staticmethod
    def Popen(args: Any, *rest: Any, **kwargs: Any) -> subprocess.Popen:  # noqa: N802 (module API)
        args = list(args)
        if args[1:3] == ["-m", "uvicorn"]:
            args = [args[0], "-m", WATCHDOG_MODULE, str(os.getpid()), *args[2:]]
        return subprocess.Popen(args, *rest, **kwargs)


def server_dies_with_parent() -> None:
    """Route Prefect's ephemeral-server start through :mod:`flows.server_watchdog` (idempotent)."""
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
