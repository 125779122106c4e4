"""The FastAPI application factory and its error mapping (404 unknown id, 422 bad parameter)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from forecast.errors import WallcastError
from forecast.service.backend import Backend, BadParameterError, UnknownForecastError

API_TITLE = "wallcast"
API_DESCRIPTION = (
    "Read-only API over the published forecasts of the data-movement and latency walls of "
    "frontier AI training (Erdil & Schneider-Joseph 2024, arXiv 2411.01137). Hit years are "
    "fractional calendar years, compute is total training FLOP; a wall not reached by the last "
    'forecast year is the string "inf". `/v1/query` answers exactly as `wallcast query --json`.'
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wallcast")
    except PackageNotFoundError:
        return "0"


def create_app(
    outputs_dir: str | Path | None = None, data_dir: str | Path | None = None
) -> FastAPI:
    """The API and dashboard over ``outputs_dir`` (default: ``WALLCAST_OUTPUTS_DIR`` or outputs/)."""
    from forecast.paths import outputs_dir as resolve_outputs
    from forecast.service import dashboard
    from forecast.service.routes import forecasts, query, walls

    app = FastAPI(title=API_TITLE, description=API_DESCRIPTION, version=_version())
    app.state.backend = Backend(
        resolve_outputs(outputs_dir), Path(data_dir) if data_dir is not None else None
    )

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
        name = str(first.get("loc", ["", "?"])[-1])
        detail = f"parameter '{name}': {first.get('msg', 'invalid value')}"
        got = first.get("input")
        if got is not None:
            detail += f" (got {got!r})"
        return JSONResponse({"detail": detail, "parameter": name}, status_code=422)

    @app.exception_handler(WallcastError)
    async def _wallcast(_: Request, exc: WallcastError) -> JSONResponse:
        return JSONResponse({"detail": " ".join(str(exc).split())}, status_code=422)

    @app.get("/healthz", tags=["service"], summary="Liveness, and which forecast is served")
    def healthz(request: Request) -> dict:
        backend: Backend = request.app.state.backend
        return {
            "status": "ok",
            "latest": backend.latest_id(),
            "forecasts": len(backend.forecast_ids()),
        }

    app.include_router(forecasts.router)
    app.include_router(query.router)
    app.include_router(walls.router)
    app.include_router(dashboard.router)
    return app
