"""``GET /v1/query``: the answer of ``wallcast query --json``, from the same function."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

router = APIRouter(prefix="/v1", tags=["query"])


@router.get("/query", summary="When (or at what FLOP) a wall is hit: median and interval")
def query(
    request: Request,
    wall: Annotated[
        str | None, Query(description="data_movement or latency (what=year or flop).")
    ] = None,
    what: Annotated[
        str,
        Query(description="year: when it is hit; flop: at what FLOP; cost: of the year's run."),
    ] = "year",
    year: Annotated[int | None, Query(description="Year of the frontier run (what=cost).")] = None,
    scenario: Annotated[str | None, Query(description="Scenario; default the first.")] = None,
    prob: Annotated[float, Query(description="Probability of the interval (0.01 to 0.99).")] = 0.8,
    forecast: Annotated[str | None, Query(description="Forecast id; default the latest.")] = None,
    regime: Annotated[
        str | None,
        Query(
            description="paper or realistic: the newest forecast of that plan regime (with "
            "`forecast`, that forecast must be of it)."
        ),
    ] = None,
) -> JSONResponse:
    """``median``, ``lower``, ``upper``, ``prob``, ``not_hit_fraction``, ``draws``, ``wall``,
    ``what``, ``scenario``, ``units``, ``forecast_id`` and ``forecast``: the object
    ``wallcast query --json`` prints (``"inf"``: not hit by the last forecast year), with
    ``forecast`` relative to the outputs folder; ``regime`` selects the newest forecast of that
    plan regime.
    ``what=cost&year=Y``: the cost multiplier of the frontier run of year Y, its utilization and
    the shortest run that could train it, as ``wallcast query --what cost --year Y --json``."""
    # A plain `def` route: it runs on AnyIO's thread pool, so file I/O (the `latest` pointer, a
    # stat, an h5py read) never blocks the event loop. A repeated question is a cache hit.
    answer = request.app.state.backend.query(wall, what, scenario, prob, forecast, year, regime)
    return JSONResponse(answer)
