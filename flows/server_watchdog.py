"""``python -m flows.server_watchdog PARENT_PID MODULE ARGS...``: run ``python -m MODULE ARGS...``
in this process and terminate it when process PARENT_PID is gone (see :mod:`flows.server_lifecycle`).

A daemon thread polls the parent pid every :data:`POLL_SECONDS`; when this process has been
re-parented (the parent died, even by SIGKILL), it sends itself SIGTERM (uvicorn shuts down
cleanly) and, if still alive :data:`KILL_AFTER_SECONDS` later, exits hard.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time

POLL_SECONDS = 0.5
KILL_AFTER_SECONDS = 10.0


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(POLL_SECONDS)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(KILL_AFTER_SECONDS)
    os._exit(1)


def main(argv: list[str]) -> None:
    if len(argv) < 2 or not argv[0].isdigit():
        sys.exit("usage: python -m flows.server_watchdog PARENT_PID MODULE [ARGS...]")
    parent_pid, module = int(argv[0]), argv[1]
    if os.getppid() != parent_pid:  # the parent died before we started
        sys.exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="parent-watchdog", daemon=True).start()
    sys.argv = [module, *argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
