"""The what-if run: a forecast with changed priors, for when reweighting the stored draws cannot
answer (Pareto k > 0.7, a fixed input changed, or a new prior outside the old one's support).

``whatif-forecast`` lays the changed priors on the base prior file as the scenario ``whatif``
and runs :func:`flows.refresh.refresh_forecast` (a subflow: the base scenario's fit and
propagation come from the cache when they ran before) into ``<outputs>/whatif/<digest>/``, so
the served forecast stays the one published.  ``wallcast serve`` serves it as the deployment
``whatif-forecast/whatif``; the API submits runs of it (``POST /v1/whatif/runs``) and reads
their state and answer (``GET /v1/whatif/runs/{id}``).
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from flows.refresh import refresh_forecast
from forecast.queries.whatif import (
    WHATIF_SCENARIO,
    overlay_text,
    parse_change,
    whatif_outputs_dir,
)

WHATIF_DEPLOYMENT = "whatif"
# refresh parameters a what-if run takes from the deployment (the rest are the run's own)
_OWN = {"outputs_dir", "scenarios", "scenario_dir", "republish", "lock_wait"}


@flow(name="whatif-forecast", validate_parameters=True)
def whatif_forecast(changes: list[str], refresh: dict[str, Any] | None = None) -> dict[str, Any]:
    """Publish a forecast of the base scenario and the scenario ``whatif`` (the base priors with
    ``changes``, each ``KEY=VALUE`` or ``KEY=P10,P50,P90``) under ``<outputs>/whatif/<digest>/``.

    ``refresh``: the parameters of :func:`refresh_forecast` the deployment runs with
    (``data_dir``, ``outputs_dir``, ``priors``, ``chains``, ``draws``, ``seed``, ``years``, ...).
    """
    logger = get_run_logger()
    for change in changes:
        parse_change(change)  # one clear error before any work
    params = dict(refresh or {})
    root = whatif_outputs_dir(params.get("outputs_dir"), changes)
    scenario_dir = root / "scenarios"
    scenario_dir.mkdir(parents=True, exist_ok=True)
    (scenario_dir / f"{WHATIF_SCENARIO}.toml").write_text(overlay_text(changes), encoding="utf-8")
    logger.info(f"what-if run of {'; '.join(changes)} into {root}")
    kept = {k: v for k, v in params.items() if k not in _OWN}
    result = refresh_forecast(
        **kept,
        outputs_dir=str(root),
        scenarios=[WHATIF_SCENARIO],
        scenario_dir=str(scenario_dir),
        lock_wait=3600.0,
    )
    return {**result, "changes": list(changes), "outputs_dir": str(root)}
