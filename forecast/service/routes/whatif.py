"""What-if: a changed prior's hit-year and hit-FLOP distributions, live or by a real run.

``GET /v1/whatif`` reweights the served forecast's stored draws (Pareto-smoothed importance
sampling: milliseconds); ``POST /v1/whatif/runs`` submits a real run when the Pareto k says the
reweighting is unreliable; ``GET /v1/whatif/runs/{id}`` follows it (:mod:`forecast.service.whatif`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from forecast.service import whatif as work

router = APIRouter(prefix="/v1", tags=["what-if"])

PriorQuery = Annotated[
    list[str] | None,
    Query(
        description="A changed prior, KEY=VALUE (fixed) or KEY=P10,P50,P90 (its 10/50/90 % "
        "quantiles), e.g. scaling.batch_exponent=0.33,0.38,0.43 (repeatable, up to 8)."
    ),
]


@router.get("/whatif", summary="Hit year and FLOP under changed priors, by reweighting")
def whatif(
    request: Request,
    prior: PriorQuery = None,
    scenario: Annotated[str | None, Query(description="Default: the first (baseline).")] = None,
    prob: Annotated[float, Query(description="Probability of the intervals.")] = 0.8,
) -> dict:
    """The JSON of ``wallcast whatif --json``: per wall, before and after (median, interval,
    P(hit)), ``pareto_k``, ``effective_draws``, ``reliable`` (k <= 0.7) and, when not, ``run``:
    how to submit the real run that answers."""
    return work.reweighted(request.app.state.backend, prior, scenario, prob)


@router.get("/whatif/priors", summary="The inputs a what-if can change, with their priors")
def whatif_priors(
    request: Request,
    scenario: Annotated[str | None, Query(description="Default: the first (baseline).")] = None,
) -> dict:
    """``priors``: per input of the propagated walls, ``key``, ``label``, ``unit``, ``kind``
    (fitted, prior or fixed: a fixed one moves only by a real run) and its current 10/50/90 %
    quantiles."""
    return work.priors(request.app.state.backend, scenario)


@router.post("/whatif/runs", summary="Submit a real what-if run (wallcast serve's deployment)")
def submit_run(request: Request, prior: PriorQuery = None) -> dict:
    """A flow run of ``whatif-forecast/whatif`` with the changed priors: its ``flow_run_id``
    and ``status_url``. 503 when no ``wallcast serve`` answers on the Prefect API."""
    return work.submit(request.app.state.backend, prior)


@router.get("/whatif/runs/{flow_run_id}", summary="A what-if run's state and, once done, answer")
def run_status(request: Request, flow_run_id: str, prob: float = 0.8) -> dict:
    """``state`` (Prefect's), ``published`` and, once published, ``walls``: before (the base
    priors) and after (the changed ones), each wall's hit year and hit FLOP."""
    return work.status(request.app.state.backend, flow_run_id, prob)
