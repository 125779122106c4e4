"""The FastAPI application factory and its error mapping.

Every failure is JSON, and its status says whose fault it is: 404 an unknown id or file, 413 an
answer or query string over its limit, 422 a bad parameter (the caller's); 503 the server's data
(an unreadable forecast, named by id) or a full expensive-work queue (with ``Retry-After``); 500
anything unforeseen, with no traceback or path in the answer (both go to the server's log).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from forecast.config.errors import WallcastError
from forecast.config.paths import outputs_dir as resolve_outputs
from forecast.service import dashboard
from forecast.service.backend import (
    Backend,
    BadParameterError,
    ServerDataError,
    UnknownForecastError,
)
from forecast.service.guard import (
    ClientGoneError,
    ExpensiveWork,
    QueueFullError,
    RequestLimits,
    RowLimitError,
    shown,
)
from forecast.service.routes import forecasts, query, walls, whatif

log = logging.getLogger("wallcast.service")

API_TITLE = "wallcast"
API_DESCRIPTION = (
    "Read-only API over the published forecasts of the data-movement and latency walls of "
    "frontier AI training (Erdil & Schneider-Joseph 2024, arXiv 2411.01137). Hit years are "
    "fractional calendar years, compute is total training FLOP; a wall not reached by the last "
    'forecast year is the string "inf". `/v1/query` answers exactly as `wallcast query --json`.'
)


def _version() -> str:

    try:
        return version("wallcast")
    except PackageNotFoundError:
        return "0"


GIL_SWITCH_INTERVAL_S = 0.0005
"""How long a thread holds the GIL before another may take it (Python's default: 5 ms). The event
loop and the route threads hand the GIL back and forth on every request; at 5 ms a cached answer
waited several switch intervals for it under 20 clients (BENCHMARKS.md section 4)."""
WORKER_THREADS = 4
"""Threads that run the plain ``def`` routes (file I/O off the event loop). AnyIO's default is 40:
with 20 clients that many threads take turns on the GIL (a 5 ms switch interval each) and a
cached ``/v1/query`` waited for many of them; a few threads keep the hop cheap and the rest wait
in the event loop, where waiting costs nothing. Plan searches have their own pool (:class:`ExpensiveWork`)."""


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # why here: set at start-up, inside the running event loop
    import anyio.to_thread

    anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    yield
    app.state.expensive.shutdown()


def create_app(
    outputs_dir: str | Path | None = None, data_dir: str | Path | None = None
) -> FastAPI:
    """The API and dashboard over ``outputs_dir`` (default: ``WALLCAST_OUTPUTS_DIR`` or outputs/)."""
    app = FastAPI(
        title=API_TITLE, description=API_DESCRIPTION, version=_version(), lifespan=_lifespan
    )
    app.state.backend = Backend(
        resolve_outputs(outputs_dir), Path(data_dir) if data_dir is not None else None
    )
    app.state.expensive = ExpensiveWork()
    app.add_middleware(RequestLimits)

    @app.exception_handler(UnknownForecastError)
    async def _unknown(_: Request, exc: UnknownForecastError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(BadParameterError)
    async def _bad(_: Request, exc: BadParameterError) -> JSONResponse:
        body = {"detail": str(exc), "parameter": exc.parameter, "allowed": exc.allowed}
        return JSONResponse(body, status_code=422)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {}
        name = str(first.get("loc", ["", "?"])[-1])[:40]
        detail = f"parameter '{name}': {first.get('msg', 'invalid value')}"
        got = first.get("input")
        if got is not None:
            detail += f" (got {shown(got)})"
        return JSONResponse({"detail": detail, "parameter": name}, status_code=422)

    @app.exception_handler(ServerDataError)
    async def _unreadable(_: Request, exc: ServerDataError) -> JSONResponse:
        log.warning("503: %s (%s)", exc, exc.detail)
        body = {"detail": str(exc), "forecast_id": exc.forecast_id}
        return JSONResponse(body, status_code=503)

    @app.exception_handler(RowLimitError)
    async def _too_many_rows(_: Request, exc: RowLimitError) -> JSONResponse:
        body = {"detail": str(exc), "parameter": None, "limit": exc.limit}
        return JSONResponse(body, status_code=413)

    @app.exception_handler(QueueFullError)
    async def _busy(_: Request, exc: QueueFullError) -> JSONResponse:
        headers = {"Retry-After": str(exc.retry_after_s)}
        return JSONResponse({"detail": str(exc)}, status_code=503, headers=headers)

    @app.exception_handler(ClientGoneError)
    async def _gone(_: Request, exc: ClientGoneError) -> Response:
        return Response(status_code=499)  # nobody reads it: the client has disconnected

    @app.exception_handler(WallcastError)
    async def _wallcast(_: Request, exc: WallcastError) -> JSONResponse:
        return JSONResponse({"detail": " ".join(str(exc).split())}, status_code=422)

    @app.exception_handler(OSError)
    async def _os_error(_: Request, exc: OSError) -> JSONResponse:
        log.error("503: storage failure: %r", exc)
        detail = "the server cannot read its outputs folder; the server's log has the cause"
        return JSONResponse({"detail": detail}, status_code=503)

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        log.exception("500: unexpected error")
        return JSONResponse({"detail": "internal error (logged on the server)"}, status_code=500)

    @app.get("/healthz", tags=["service"], summary="Liveness, and which forecast is served")
    def healthz(request: Request) -> dict:
        """``status`` ``ok``, or ``degraded`` with a ``reason`` (the latest forecast or its
        pointer unreadable; ``serving`` names the forecast answered instead), the latest id, the
        number of forecasts and the expensive-work queue's state."""
        backend: Backend = request.app.state.backend
        return {**backend.health(), "expensive_work": request.app.state.expensive.stats()}

    app.include_router(forecasts.router)
    app.include_router(query.router)
    app.include_router(walls.router)
    app.include_router(whatif.router)
    app.include_router(dashboard.router)
    return app
