"""An exclusive, non-blocking file lock (``fcntl.flock``) naming its holder: the refresh lock on
``outputs/.lock`` and the ingest lock on the data folder.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forecast.config.errors import WallcastError


class LockBusyError(WallcastError):
    """Another process holds the lock (e.g. another refresh is running)."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


def _holder_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


@contextmanager
def exclusive_lock(path: str | Path, what: str = "refresh", *, wait: float = 0.0) -> Iterator[Path]:
    """Hold an exclusive ``fcntl.flock`` on ``path`` for the ``with`` block.

    The kernel releases the lock when the holder exits, even on SIGKILL, so a crashed refresh
    never leaves a stale lock.  The holder writes its pid into the file.  ``wait`` = 0: fail at
    once with :class:`LockBusyError` ("another refresh is running (pid N)"); ``wait`` > 0: poll
    for up to ``wait`` seconds first.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    pid = _holder_pid(path)
                    who = f"pid {pid}" if pid is not None else "pid unknown"
                    raise LockBusyError(
                        f"another {what} is running ({who}); lock file {path}", pid
                    ) from None
                time.sleep(min(0.5, max(deadline - time.monotonic(), 0.01)))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
