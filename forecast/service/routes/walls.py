"""The model's answers: accelerators, both walls with the plan at the wall, utilization curves.

These run the plan search (JAX, imported on first use) and are cached per hardware-table hash
and parameters (the run length rounded to whole days): a second request with the same inputs does
no search. A search runs on the service's expensive-work queue
(:class:`forecast.service.guard.ExpensiveWork`): a bounded number at a time, 503 with
``Retry-After`` beyond it, dropped if its client leaves before it starts; the cheap endpoints
never wait for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

router = APIRouter(prefix="/v1", tags=["walls"])

DurationQuery = Annotated[
    float,
    Query(description="Wall-clock length of the training run, days (1 to 3650; whole days)."),
]
PrecisionQuery = Annotated[str, Query(description="bf16 or fp8 (dense FLOP/s, bytes per number).")]
RegimeQuery = Annotated[
    str | None,
    Query(
        description="paper (plans relaxed to continuous quantities, Erdil & Schneider-Joseph "
        "2024) or realistic (plans a run can launch: whole sequences or context parallelism, "
        "whole layers per stage, whole degrees). Default: the served forecast's own regime "
        "(assumptions=forecast), else paper."
    ),
]


AssumptionsQuery = Annotated[
    str,
    Query(
        description="forecast (default): over the served forecast's posterior inputs, median and "
        "80% interval (the report's, deck's and dashboard's numbers); paper: the paper's fixed "
        "assumptions (Erdil & Schneider-Joseph 2024), one value each, for comparison."
    ),
]


async def _answer(request: Request, job: Callable[..., tuple[Any, Any]], *args: Any) -> Any:
    """The cached answer of ``job(*args)`` (inputs checked on the thread pool: they read the
    hardware table), or its computation's, run on the expensive-work queue."""
    cached, compute = await run_in_threadpool(job, *args)
    if cached is not None:
        return cached
    return await request.app.state.expensive.run(compute, request.is_disconnected)


@router.get("/accelerators", summary="Accelerators of the hardware table")
def accelerators(request: Request) -> list[dict]:
    return request.app.state.backend.accelerators()


@router.get("/walls", summary="Both walls of accelerators and the plan at the wall")
async def walls(
    request: Request,
    accelerator: Annotated[
        list[str] | None,
        Query(description="Name, unique part or whole word (repeatable); default: every one."),
    ] = None,
    duration_days: DurationQuery = 90.0,
    precision: PrecisionQuery = "bf16",
    regime: RegimeQuery = None,
    assumptions: AssumptionsQuery = "forecast",
) -> list[dict]:
    """The objects of ``wallcast walls --json``: ``max_utilization``, ``data_movement_wall_flop``,
    ``latency_wall_flop`` (null beyond the 1e20-1e40 search grid), ``regime``,
    ``assumptions_source``; over the forecast, each wall's median with
    ``*_interval_log10_flop``; at the paper's assumptions, ``plan_at_wall``."""
    return await _answer(
        request,
        request.app.state.backend.walls_job,
        accelerator,
        duration_days,
        precision,
        regime,
        assumptions,
    )


@router.get("/curve", summary="Best utilization against training compute, with both walls")
async def curve(
    request: Request,
    accelerator: Annotated[str, Query(description="Name, unique part or whole word.")],
    duration_days: DurationQuery = 90.0,
    precision: PrecisionQuery = "bf16",
    regime: RegimeQuery = None,
    assumptions: AssumptionsQuery = "forecast",
) -> dict:
    """The walls object of ``/v1/walls`` plus ``curve``: ``log10_flop`` (1e22 to 1e33 FLOP),
    and ``utilization`` (fraction of peak; null where no plan finishes in time; over the
    forecast the median, with ``utilization_lower`` / ``_upper``, its 80% band), in the
    ``regime``'s plans (a realistic curve searches every launchable shape: ~10-30 s the first
    time on 2 cores, cached after)."""
    return await _answer(
        request,
        request.app.state.backend.curve_job,
        accelerator,
        duration_days,
        precision,
        regime,
        assumptions,
    )


@router.get("/plan", summary="The best launchable plan per posterior draw, for a run")
async def plan(
    request: Request,
    accelerator: Annotated[
        list[str] | None,
        Query(
            description="Name, unique part or whole word (repeatable: side by side); omitted "
            "with year: the frontier accelerator of that year."
        ),
    ] = None,
    flop: Annotated[
        float | None,
        Query(
            description="Training compute, FLOP (1e20 to 1e40); omitted with year: the "
            "frontier run of that year."
        ),
    ] = None,
    year: Annotated[
        int | None,
        Query(
            description="A year of the forecast: frontier accelerator, frontier run, latencies "
            "and sequence length of that year."
        ),
    ] = None,
    duration_days: DurationQuery = 90.0,
    precision: PrecisionQuery = "bf16",
    draws: Annotated[int, Query(description="Posterior draws, evenly thinned (1 to 4000).")] = 500,
    regime: Annotated[
        str,
        Query(
            description="Plans searched: realistic (launchable, whole degrees) or paper (Erdil & "
            "Schneider-Joseph 2024's relaxation, continuous quantities, labelled as such). The "
            "draws are the served forecast's either way."
        ),
    ] = "realistic",
) -> dict:
    """The JSON of ``wallcast plan --json`` (search form): per accelerator, the distribution
    over the served forecast's posterior draws of the best launchable plan's utilization,
    ``feasible_probability``, accelerators, accelerator-hours, step time, cost multiplier,
    energy, power to provision and rental cost, and ``plan_median_draw`` in whole numbers
    (``regime=paper``: the paper's relaxed plan, continuous quantities)."""
    return await _answer(
        request,
        request.app.state.backend.plan_job,
        accelerator,
        flop,
        year,
        duration_days,
        precision,
        draws,
        regime,
    )


@router.get(
    "/requirements",
    summary="What the frontier accelerator of a year needs for its frontier run to fit the walls",
)
async def requirements(
    request: Request,
    year: Annotated[int, Query(description="A year of the forecast.")],
    duration_days: DurationQuery = 90.0,
    precision: PrecisionQuery = "bf16",
    draws: Annotated[
        int,
        Query(description="Posterior draws, evenly thinned (1 to 1000; each costs 12 searches)."),
    ] = 200,
) -> dict:
    """The JSON of ``wallcast requirements --json``: per lever alone (scale-up domain size,
    scale-up and scale-out bandwidth, latency per hop, HBM bandwidth), the trend's value, the
    value the frontier run of ``year`` needs to stay inside both walls and the improvement
    factor, as distributions over the served forecast's draws, with P(on the trend)."""
    return await _answer(
        request,
        request.app.state.backend.requirements_job,
        year,
        duration_days,
        precision,
        draws,
    )
