"""The what-if endpoints' work: reweighting answers, and real runs when reweighting cannot.

``GET /v1/whatif`` answers from the served forecast's stored draws
(:func:`forecast.queries.whatif.whatif_answer`: milliseconds, no JAX); when the answer is
unreliable it names the run that answers instead.  ``POST /v1/whatif/runs`` submits that run, a
flow run of the ``whatif-forecast/whatif`` deployment that ``wallcast serve`` serves (through the
Prefect API the serving process uses); ``GET /v1/whatif/runs/{id}`` reads its state and, once it
has published, compares its two scenarios (the base priors and the changed ones).
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from forecast.config.errors import WallcastError
from forecast.queries.whatif import (
    SPEC_HELP,
    WhatIfInputError,
    changed_priors_text,
    changes_digest,
    forecast_comparison,
    load_draws,
    parse_change,
    reweightable_priors,
    whatif_answer,
    whatif_outputs_dir,
)
from forecast.service.backend import (
    Backend,
    BadParameterError,
    ServerDataError,
    UnknownForecastError,
)
from forecast.store.reader import latest_forecast_path, read_attrs

WHATIF_DEPLOYMENT_NAME = "whatif-forecast/whatif"  # flows.whatif (the library never imports flows)
MAX_CHANGES = 8
MAX_ATTEMPTS = 5  # fresh runs of one set of changes per served forecast, after runs that failed


def _checked(priors: list[str] | None) -> list[str]:
    if not priors:
        raise BadParameterError("prior", None, SPEC_HELP, "missing")
    if len(priors) > MAX_CHANGES:
        raise BadParameterError("prior", len(priors), f"at most {MAX_CHANGES} changes")
    keys = []
    for spec in priors:
        try:
            keys.append(parse_change(spec).key)
        except WhatIfInputError as exc:
            raise BadParameterError("prior", spec, exc.allowed or SPEC_HELP, str(exc)) from None
    if len(set(keys)) != len(keys):
        raise BadParameterError("prior", priors, "each key once", "a key is changed twice")
    return [spec.strip() for spec in priors]


def reweighted(
    backend: Backend, priors: list[str] | None, scenario: str | None, prob: float
) -> dict[str, Any]:
    """``GET /v1/whatif``: the reweighted answer over the served forecast, with ``run`` (how to
    ask for a real run) when it is not reliable."""
    _check_prob(prob)
    specs = _checked(priors)
    _, path, meta = backend.meta(None)
    try:
        out = whatif_answer(specs, path, scenario=scenario, prob=prob)
    except WhatIfInputError as exc:
        raise BadParameterError(exc.parameter, None, exc.allowed or SPEC_HELP, str(exc)) from None
    base = out["scenario"] == _first_scenario(path)
    if not out["reliable"] and not base:
        out["run"] = None
        out["message"] += (
            f" (a real what-if run changes the base priors: ask it with the base scenario, "
            f"{_first_scenario(path)})"
        )
    elif not out["reliable"]:
        out["run"] = {
            "submit": "POST /v1/whatif/runs",
            "prior": specs,
            "note": "a real forecast with the changed priors (a Prefect flow run of "
            f"{WHATIF_DEPLOYMENT_NAME}, served by `wallcast serve`); poll "
            "GET /v1/whatif/runs/{flow_run_id} until it is published",
        }
    return out


def _check_prob(prob: float) -> None:
    if not 0.01 <= prob <= 0.99:
        raise BadParameterError("prob", prob, "numbers from 0.01 to 0.99")


def _first_scenario(path: Any) -> str:
    return load_draws(path).scenarios[0]


def priors(backend: Backend, scenario: str | None) -> dict[str, Any]:
    """``GET /v1/whatif/priors``: the inputs a what-if can change, with their current quantiles."""
    _, path, _ = backend.meta(None)
    try:
        return reweightable_priors(path, scenario)
    except WhatIfInputError as exc:
        raise BadParameterError(exc.parameter, scenario, exc.allowed or [], str(exc)) from None


def _prefect() -> Any:
    """The Prefect client library, on the first what-if run."""
    # why here: only a what-if run talks to Prefect; the API must start without it
    import prefect.deployments

    if not (os.environ.get("PREFECT_API_URL") or prefect.settings.PREFECT_API_URL.value()):
        # no server to submit to: never start a temporary one inside the API process
        raise ServerDataError(
            "what-if runs need `wallcast serve` (the deployment "
            f"{WHATIF_DEPLOYMENT_NAME}); this service has no Prefect API (PREFECT_API_URL)"
        )
    return prefect


def submit(backend: Backend, priors: list[str] | None) -> dict[str, Any]:
    """``POST /v1/whatif/runs``: submit the what-if deployment's run of ``priors``."""
    specs = _checked(priors)
    served_id, served, _ = backend.meta(None)
    try:  # the run's prior file, checked here rather than in the run
        changed_priors_text(str(read_attrs(served).get("priors_text") or ""), specs)
    except WhatIfInputError as exc:
        raise BadParameterError("prior", specs, SPEC_HELP, str(exc)) from None
    prefect = _prefect()
    digest = changes_digest(specs)
    try:
        # one run per set of changes and served forecast: asking again returns the same run;
        # a run that ended without an answer (failed, crashed, cancelled, or its forecast since
        # pruned) is submitted anew under the next key
        for attempt in range(MAX_ATTEMPTS):
            key = f"whatif-{digest}-{served_id}" + (f"-{attempt}" if attempt else "")
            run = prefect.deployments.run_deployment(
                WHATIF_DEPLOYMENT_NAME,
                parameters={"changes": specs},
                timeout=0,
                idempotency_key=key,
            )
            if not _ended_without_answer(run, backend, specs):
                break
    except Exception as exc:  # no server, no deployment: not the caller's fault
        raise ServerDataError(
            f"what-if runs need `wallcast serve` (the deployment {WHATIF_DEPLOYMENT_NAME} on "
            "the Prefect API this service uses); none answered",
            detail=repr(exc),
        ) from None
    return {
        "flow_run_id": str(run.id),
        "state": run.state_name,
        "prior": specs,
        "status_url": f"/v1/whatif/runs/{run.id}",
    }


def _ended_without_answer(run: Any, backend: Backend, specs: list[str]) -> bool:
    state = run.state
    if state is None or not state.is_final():
        return False
    if not state.is_completed():
        return True
    return not (whatif_outputs_dir(backend.outputs, specs) / "latest").exists()


def status(backend: Backend, flow_run_id: str, prob: float = 0.8) -> dict[str, Any]:
    """``GET /v1/whatif/runs/{id}``: the run's state and, once published, the hit-year and
    hit-FLOP distributions of the served forecast (before) and of the run's (after)."""
    _check_prob(prob)
    try:
        run_id = uuid.UUID(flow_run_id)
    except ValueError:
        raise BadParameterError("flow_run_id", flow_run_id, "a flow run id (UUID)") from None
    prefect = _prefect()
    try:
        with prefect.get_client(sync_client=True) as client:
            run = client.read_flow_run(run_id)
    except prefect.exceptions.ObjectNotFound:
        raise UnknownForecastError(f"no what-if run {flow_run_id}") from None
    except Exception as exc:
        raise ServerDataError(
            f"flow run {flow_run_id} could not be read from the Prefect API", detail=repr(exc)
        ) from None
    specs = list((run.parameters or {}).get("changes") or [])
    out: dict[str, Any] = {
        "flow_run_id": flow_run_id,
        "state": run.state_name,
        "prior": specs,
        "published": False,
    }
    if run.state is not None and run.state.is_completed() and specs:
        root = whatif_outputs_dir(backend.outputs, specs)
        try:
            path = latest_forecast_path(root)
        except WallcastError:
            raise ServerDataError(
                f"what-if run {flow_run_id} completed, but its forecast is not under this "
                "service's outputs folder (the deployment writes elsewhere)",
                detail=str(root),
            ) from None
        served_id, served, _ = backend.meta(None)
        out.update(
            published=True,
            forecast_id=path.parent.name,
            compared_with=served_id,
            walls=forecast_comparison(served, path, prob),
        )
    return out
