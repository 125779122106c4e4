"""The what-if run: a forecast with changed priors, for when reweighting the stored draws cannot
answer (Pareto k > 0.7, a fixed input changed, or a new prior outside the old one's support).

``whatif-forecast`` writes the base prior file with each changed key's table replaced (the
Bayesian change the reweighting answers: fitted inputs are refitted under their new prior) and
runs :func:`flows.refresh.refresh_forecast` (a subflow) on it, base scenario only, into
``<outputs>/whatif/<digest>/``, so the served forecast stays the one published.  ``wallcast
serve`` serves it as the deployment ``whatif-forecast/whatif``; the API submits runs of it
(``POST /v1/whatif/runs``) and reads their state and answer (``GET /v1/whatif/runs/{id}``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from flows.refresh import refresh_forecast
from forecast.config import paths
from forecast.queries.whatif import changed_priors_text, parse_change, whatif_outputs_dir

WHATIF_DEPLOYMENT = "whatif"
KEEP_RUNS = 20  # what-if forecasts kept under <outputs>/whatif/ (the newest; older ones removed)
# refresh parameters a what-if run sets itself (the rest come from the deployment)
_OWN = {"outputs_dir", "priors", "scenarios", "scenario_dir", "republish", "lock_wait"}


def _prune(folder: Path, keep: int, current: Path) -> None:
    """Remove all but the newest ``keep`` what-if forecasts (never ``current``)."""
    runs = sorted(
        (p for p in folder.iterdir() if p.is_dir() and p != current),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in runs[max(0, keep - 1) :]:
        shutil.rmtree(old, ignore_errors=True)


@flow(name="whatif-forecast", validate_parameters=True)
def whatif_forecast(changes: list[str], refresh: dict[str, Any] | None = None) -> dict[str, Any]:
    """Publish a forecast of the base priors with ``changes`` (each ``KEY=VALUE`` or
    ``KEY=P10,P50,P90``) under ``<outputs>/whatif/<digest>/``.

    ``refresh``: the parameters of :func:`refresh_forecast` the deployment runs with
    (``data_dir``, ``outputs_dir``, ``priors``, ``chains``, ``draws``, ``seed``, ``years``, ...).
    """
    logger = get_run_logger()
    for change in changes:
        parse_change(change)  # one clear error before any work
    params = dict(refresh or {})
    root = whatif_outputs_dir(params.get("outputs_dir"), changes)
    root.mkdir(parents=True, exist_ok=True)
    base = Path(params.get("priors") or paths.default_priors_path())
    priors = root / "priors.toml"
    priors.write_text(
        changed_priors_text(base.read_text(encoding="utf-8"), changes), encoding="utf-8"
    )
    _prune(root.parent, keep=KEEP_RUNS, current=root)
    logger.info(f"what-if run of {'; '.join(changes)} into {root}")
    kept = {k: v for k, v in params.items() if k not in _OWN}
    result = refresh_forecast(
        **kept, outputs_dir=str(root), priors=str(priors), scenarios=[], lock_wait=3600.0
    )
    return {**result, "changes": list(changes), "outputs_dir": str(root)}
