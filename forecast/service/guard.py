"""What bounds the work a request can cause: input limits, and a queue for expensive work.

**Input limits** (:class:`RequestLimits`, an ASGI middleware in front of every route). A query
string longer than :data:`MAX_QUERY_CHARS` is refused with 413; a parameter value longer than
:data:`MAX_VALUE_CHARS`, a repeatable parameter given more than :data:`MAX_REPEATS` times, or a
single-valued parameter given twice is refused with 422. Each refusal is JSON naming the parameter
and the limit, and never echoes more than :data:`ECHO_CHARS` characters of the input. Rows per
answer are bounded where the rows are counted (:data:`MAX_ROWS`, the backend).

**Expensive work** (:class:`ExpensiveWork`: plan searches now, planner endpoints as they land).
It runs on its own small thread pool, so the threads that serve cheap endpoints (AnyIO's pool and
the event loop) never wait for it; at most ``max_running`` jobs run and ``max_waiting`` wait, and a
request beyond that gets 503 with ``Retry-After``. A job whose client disconnects before it starts
is dropped (a running plan search cannot be interrupted; its answer is cached for the next asker).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from forecast.config.runtime import chunks_in_place

__all__ = [
    "ECHO_CHARS",
    "ClientGoneError",
    "MAX_QUERY_CHARS",
    "MAX_REPEATS",
    "MAX_ROWS",
    "MAX_VALUE_CHARS",
    "ExpensiveWork",
    "QueueFullError",
    "RequestLimits",
    "RowLimitError",
    "shown",
]

MAX_QUERY_CHARS = 4096
"""Longest query string accepted (characters after ``?``, percent-encoded)."""
MAX_VALUE_CHARS = 200
"""Longest value of one parameter (decoded): an accelerator name, a scenario, an id."""
MAX_REPEATS = 32
"""Most values of one repeatable parameter (``scenario``, ``wall``, ``year``, ``accelerator``)."""
MAX_ROWS = 2000
"""Most rows in one answer (``/v1/forecasts/{id}/intervals``)."""
ECHO_CHARS = 40
"""Characters of a refused input quoted back in the error."""

#: Parameters that may be given more than once, per route (path prefix, path suffix).
REPEATABLE: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("/v1/forecasts/", "/intervals", frozenset({"scenario", "wall", "year"})),
    ("/v1/walls", "", frozenset({"accelerator"})),
    ("/v1/plan", "", frozenset({"accelerator"})),
    ("/v1/whatif", "", frozenset({"prior"})),
)


def shown(value: Any) -> str:
    """``repr`` of a refused input, cut to :data:`ECHO_CHARS` characters."""
    text = str(value)
    if len(text) <= ECHO_CHARS:
        return repr(text)
    return f"{text[:ECHO_CHARS]!r}... ({len(text)} characters)"


def _repeatable(path: str) -> frozenset[str]:
    for prefix, suffix, names in REPEATABLE:
        if path.startswith(prefix) and path.endswith(suffix):
            return names
    return frozenset()


def _refusal(status: int, parameter: str | None, limit: int, detail: str) -> JSONResponse:
    body = {"detail": detail, "parameter": parameter, "limit": limit}
    return JSONResponse(body, status_code=status)


class RequestLimits:
    """ASGI middleware: refuse oversized or ambiguous query strings before any route runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.check(scope.get("path", ""), scope.get("query_string", b""))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def check(path: str, raw: bytes) -> JSONResponse | None:
        """The refusal of a request's query string, or None when it is within the limits."""
        if len(raw) > MAX_QUERY_CHARS:
            return _refusal(
                413,
                None,
                MAX_QUERY_CHARS,
                f"query string of {len(raw)} characters; at most {MAX_QUERY_CHARS}",
            )
        try:
            pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
        except ValueError:
            return _refusal(422, None, MAX_QUERY_CHARS, "query string is not key=value pairs")
        counts: dict[str, int] = {}
        repeatable = _repeatable(path)
        for name, value in pairs:
            if len(name) > MAX_VALUE_CHARS:
                return _refusal(
                    422,
                    name[:ECHO_CHARS],
                    MAX_VALUE_CHARS,
                    f"parameter name {shown(name)}: at most {MAX_VALUE_CHARS} characters",
                )
            if len(value) > MAX_VALUE_CHARS:
                return _refusal(
                    422,
                    name,
                    MAX_VALUE_CHARS,
                    f"parameter '{name}': {len(value)} characters; at most {MAX_VALUE_CHARS}",
                )
            counts[name] = counts.get(name, 0) + 1
        for name, count in counts.items():
            if name in repeatable and count > MAX_REPEATS:
                return _refusal(
                    422,
                    name,
                    MAX_REPEATS,
                    f"parameter '{name}' given {count} times; at most {MAX_REPEATS}",
                )
            if name not in repeatable and count > 1:
                return _refusal(
                    422, name, 1, f"parameter '{name}' given {count} times; give it once"
                )
        return None


class RowLimitError(ValueError):
    """An answer would have more than :data:`MAX_ROWS` rows (HTTP 413)."""

    def __init__(self, rows: int, limit: int = MAX_ROWS, hint: str = "") -> None:
        self.rows, self.limit = rows, limit
        super().__init__(f"the selection gives {rows} rows; at most {limit}{hint}")


class ClientGoneError(Exception):
    """The client disconnected while its expensive job waited; nothing is sent."""


class QueueFullError(RuntimeError):
    """The expensive-work queue is full (HTTP 503 with ``Retry-After``)."""

    def __init__(self, running: int, waiting: int, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(
            f"the server is busy with {running} plan searches and {waiting} waiting; "
            f"retry in {retry_after_s} s"
        )


def _in_place(compute: Callable[[threading.Event], Any], cancelled: threading.Event) -> Any:
    """``compute(cancelled)`` with its searches' chunks on this thread alone: the service keeps an
    expensive job to one core, beside the threads that answer the cheap endpoints
    (:func:`forecast.config.runtime.chunks_in_place`)."""
    with chunks_in_place():
        return compute(cancelled)


class ExpensiveWork:
    """A bounded queue for expensive computations, apart from the cheap endpoints' threads."""

    def __init__(self, max_running: int = 1, max_waiting: int = 4, retry_after_s: int = 10):
        self.max_running, self.max_waiting = max_running, max_waiting
        self.retry_after_s = retry_after_s
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_running, thread_name_prefix="wallcast-expensive"
        )
        self._lock = threading.Lock()
        self._admitted = 0  # running + waiting
        self.dropped = 0  # jobs dropped because their client went away before they started
        self.refused = 0  # requests refused because the queue was full

    def stats(self) -> dict[str, int]:
        with self._lock:
            admitted = self._admitted
        return {
            "admitted": admitted,
            "max_running": self.max_running,
            "max_waiting": self.max_waiting,
            "dropped": self.dropped,
            "refused": self.refused,
        }

    def _admit(self) -> None:
        with self._lock:
            if self._admitted >= self.max_running + self.max_waiting:
                self.refused += 1
                running = min(self._admitted, self.max_running)
                raise QueueFullError(running, self._admitted - running, self.retry_after_s)
            self._admitted += 1

    def _release(self, _: Any = None) -> None:
        with self._lock:
            self._admitted -= 1

    async def run(
        self,
        compute: Callable[[threading.Event], Any],
        is_disconnected: Callable[[], Any] | None = None,
        poll_s: float = 0.25,
    ) -> Any:
        """Run ``compute(cancelled)`` on the expensive pool; QueueFullError when the queue is full.

        ``is_disconnected`` (an async callable, e.g. ``request.is_disconnected``) is polled while
        the job waits or runs: a job whose client has gone is cancelled before it starts, and a
        running one finds ``cancelled`` set (a job of several searches stops between them)."""
        self._admit()
        cancelled = threading.Event()
        try:
            future = self._pool.submit(_in_place, compute, cancelled)
        except BaseException:
            self._release()
            raise
        future.add_done_callback(self._release)
        wrapped = asyncio.wrap_future(future)
        while True:
            done, _ = await asyncio.wait({wrapped}, timeout=poll_s)
            if done:
                return wrapped.result()
            if is_disconnected is not None and await is_disconnected():
                cancelled.set()  # a running job stops at its next check
                if future.cancel():  # not started yet: dropped (the callback releases its slot)
                    self.dropped += 1
                # started: its current search finishes and is cached; nobody waits for it here
                raise ClientGoneError

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
