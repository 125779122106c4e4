"""The model's answers: accelerators, both walls with the plan at the wall, utilization curves.

These run the plan search (JAX, imported on first use) and are cached per hardware-table hash
and parameters: a second request with the same inputs does no search.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

router = APIRouter(prefix="/v1", tags=["walls"])

DurationQuery = Annotated[
    float, Query(description="Wall-clock length of the training run, days (1 to 3650).")
]
PrecisionQuery = Annotated[str, Query(description="bf16 or fp8 (dense FLOP/s, bytes per number).")]


@router.get("/accelerators", summary="Accelerators of the hardware table")
def accelerators(request: Request) -> list[dict]:
    return request.app.state.backend.accelerators()


@router.get("/walls", summary="Both walls of accelerators and the plan at the wall")
def walls(
    request: Request,
    accelerator: Annotated[
        list[str] | None,
        Query(description="Name, unique part or whole word (repeatable); default: every one."),
    ] = None,
    duration_days: DurationQuery = 90.0,
    precision: PrecisionQuery = "bf16",
) -> list[dict]:
    """The objects of ``wallcast walls --json``: ``max_utilization``, ``data_movement_wall_flop``,
    ``latency_wall_flop`` (null beyond the 1e20-1e40 search grid), ``plan_at_wall``, ..."""
    return request.app.state.backend.walls(accelerator, duration_days, precision)


@router.get("/curve", summary="Best utilization against training compute, with both walls")
def curve(
    request: Request,
    accelerator: Annotated[str, Query(description="Name, unique part or whole word.")],
    duration_days: DurationQuery = 90.0,
    precision: PrecisionQuery = "bf16",
) -> dict:
    """The walls object of ``/v1/walls`` plus ``curve``: ``log10_flop`` (1e22 to 1e33 FLOP),
    and ``utilization`` (fraction of peak; null where no plan finishes in time)."""
    return request.app.state.backend.curve(accelerator, duration_days, precision)
