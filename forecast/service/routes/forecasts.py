"""Published forecasts: listing, description, credible intervals, headline and file downloads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import StreamingResponse

from forecast.service.backend import DOWNLOADS, Backend

router = APIRouter(prefix="/v1/forecasts", tags=["forecasts"])

IdPath = Annotated[
    str, PathParam(description="Forecast id (YYYYMMDDTHHMMSSZ-<8 hex>) or 'latest'.")
]
ProbQuery = Annotated[
    float, Query(description="Probability of the equal-tailed credible interval (0.01 to 0.99).")
]


def _backend(request: Request) -> Backend:
    return request.app.state.backend


@router.get("", summary="Every published forecast, oldest first, and which one is latest")
def list_forecasts(
    request: Request,
    regime: Annotated[
        str | None, Query(description="Only forecasts of this plan regime: paper or realistic.")
    ] = None,
) -> dict:
    backend = _backend(request)
    return {"latest": backend.latest_id(), "forecasts": backend.list_forecasts(regime)}


@router.get("/latest", summary="The forecast `outputs/latest` points to")
def latest(request: Request) -> dict:
    return _backend(request).describe("latest")


@router.get("/{forecast_id}", summary="One forecast: provenance, scenarios, years, variables")
def describe(request: Request, forecast_id: IdPath) -> dict:
    return _backend(request).describe(forecast_id)


@router.get(
    "/{forecast_id}/intervals",
    summary="Credible intervals of any forecast variable, and P(wall hit by year Y)",
)
def intervals(
    request: Request,
    forecast_id: IdPath,
    var: Annotated[
        str, Query(description="Variable of the /forecast group (see /v1/forecasts/{id}).")
    ] = "hit_year",
    wall: Annotated[list[str] | None, Query(description="Walls to keep (repeatable).")] = None,
    scenario: Annotated[
        list[str] | None, Query(description="Scenarios to keep (repeatable).")
    ] = None,
    year: Annotated[
        list[str] | None,
        Query(
            description="Forecast years to keep (repeatable). For var=hit_year, which has no "
            "year dimension: years Y for P(hit by Y), returned as p_hit_by."
        ),
    ] = None,
    prob: ProbQuery = 0.8,
) -> dict:
    """Median and ``prob`` interval over chains and draws, one row per remaining coordinate.

    The same numbers as ``fc[var].sel(...).quantile([(1-prob)/2, 0.5, (1+prob)/2],
    dim=["chain", "draw"])`` on the opened dataset (linear interpolation), with never-hit draws
    (+inf) kept and counted in ``not_hit_fraction``.
    """
    selection = {"scenario": scenario or [], "wall": wall or [], "year": year or []}
    return _backend(request).intervals(forecast_id, var, selection, prob)


@router.get("/{forecast_id}/headline", summary="The headline sentence of one scenario")
def headline(
    request: Request,
    forecast_id: IdPath,
    scenario: Annotated[str | None, Query(description="Scenario; default the first.")] = None,
    prob: ProbQuery = 0.8,
) -> dict:
    return _backend(request).headline(forecast_id, scenario, prob)


CHUNK_BYTES = 1 << 20


def _download(request: Request, forecast_id: str, name: str) -> StreamingResponse:
    """The file, opened before any header is sent (a file that cannot be opened is a JSON
    error, never a 200 that drops), streamed from the open handle with its size."""
    handle, size, fid = _backend(request).open_download(forecast_id, name)

    def chunks() -> Iterator[bytes]:
        with handle:
            while block := handle.read(CHUNK_BYTES):
                yield block

    disposition = "inline" if name.endswith(".html") else "attachment"
    headers = {
        "Content-Length": str(size),
        "Content-Disposition": f'{disposition}; filename="{fid}-{name}"',
    }
    return StreamingResponse(chunks(), media_type=DOWNLOADS[name], headers=headers)


@router.get("/{forecast_id}/forecast.nc", summary="Download the forecast dataset (NetCDF)")
def download_forecast(request: Request, forecast_id: IdPath) -> StreamingResponse:
    return _download(request, forecast_id, "forecast.nc")


@router.get("/{forecast_id}/report.html", summary="The forecast's report (self-contained HTML)")
def download_report(request: Request, forecast_id: IdPath) -> StreamingResponse:
    return _download(request, forecast_id, "report.html")


@router.get("/{forecast_id}/deck.pptx", summary="Download the forecast's slide deck")
def download_deck(request: Request, forecast_id: IdPath) -> StreamingResponse:
    return _download(request, forecast_id, "deck.pptx")
