"""What a forecast is: the code hash, the run fingerprint and the forecast id (no I/O but
reading the package's own sources).

:func:`fingerprint` is the one digest of everything a forecast depends on (data, priors,
scenarios, settings, code); the forecast id is the creation time plus its first 8 hex digits
(:func:`forecast_id`).  The refresh flow compares the fingerprint with that of the forecast
``latest`` names to skip a run that would publish identical numbers.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from forecast.config.settings import default_warmup

NUMERIC_SOURCES = (
    "config/constants.py",
    "config/settings.py",
    "config/runtime.py",
    "priors/",
    "model/",
    "data/hardware.py",
    "data/evidence.py",
    "data/inputs.py",
    "stats/",
    "inference/",
    "jobs/forecast_job.py",
    "analyses/posterior_walls.py",  # the accelerator_walls group the forecast stores
)
"""The sources under ``forecast/`` a forecast's numbers depend on (folders end in ``/``): the
physics, the statistical programs, their inference and propagation, the priors and data loaders
and the job that assembles them (with the per-accelerator walls it stores).  The store, queries, analyses, reports, service and CLI are left
out, so that editing them keeps Prefect's cached fits and propagations."""


def _numeric(rel: str) -> bool:
    return any(rel.startswith(s) if s.endswith("/") else rel == s for s in NUMERIC_SOURCES)


@functools.cache
def code_hash(package_dir: Path | None = None) -> str:
    """SHA-256 over the sources of :data:`NUMERIC_SOURCES` (computed once per process)."""
    root = package_dir or Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if _numeric(rel):
            h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def digest(obj: Any) -> str:
    """SHA-256 hex digest of the canonical JSON of ``obj`` (keys sorted)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def fingerprint(
    *,
    data_hash: str,
    priors_text: str,
    scenario_texts: Mapping[str, str],
    seed: int,
    chains: int,
    draws: int,
    years: Sequence[float] | None,
    code: str,
    propagate_draws: int | None = None,
    regime: str = "paper",
    warmup: int | None = None,
) -> str:
    """The one digest of everything a forecast depends on (64 hex digits).

    ``years`` is the requested forecast grid (None: the default grid), ``code`` the
    :func:`code_hash`, ``propagate_draws`` the draws propagated per scenario (None: all),
    ``regime`` the plans searched (digested only when not ``"paper"``, the regime of every
    forecast published before it was recorded, so that those keep their fingerprints), ``warmup``
    the NUTS warm-up iterations per chain (None: the default for ``draws``; digested only when
    not that default, for the same reason).  Two runs
    with the same fingerprint publish identical numbers; the refresh flow compares it with the
    ``run_fingerprint`` of the forecast ``latest`` names.
    """
    parts = {
        "data_hash": data_hash,
        "priors": priors_text,
        "scenarios": [[name, text] for name, text in scenario_texts.items()],
        "seed": int(seed),
        "chains": int(chains),
        "draws": int(draws),
        "years": None if years is None else [float(y) for y in years],
        "code": code,
        "propagate_draws": None if propagate_draws is None else int(propagate_draws),
    }
    if regime != "paper":
        parts["regime"] = regime
    if warmup is not None and int(warmup) != default_warmup(draws):
        parts["warmup"] = int(warmup)
    return digest(parts)


def inputs_fingerprint(
    inputs: Any,
    scenario_names: Sequence[str],
    *,
    seed: int,
    chains: int,
    draws: int,
    years: Sequence[float] | None,
    code: str,
    propagate_draws: int | None,
    regime: str = "paper",
    warmup: int | None = None,
) -> str:
    """The :func:`fingerprint` of a forecast of ``inputs`` (a :class:`forecast.data.inputs.Inputs`)
    over the scenarios ``scenario_names``: what the refresh flow compares with the forecast
    ``latest`` names, and what :func:`forecast.store.attrs.provenance_attrs` records."""
    return fingerprint(
        data_hash=inputs.data_hash,
        priors_text=inputs.priors.text,
        scenario_texts={n: inputs.scenarios[n].text for n in scenario_names},
        seed=seed,
        chains=chains,
        draws=draws,
        years=years,
        code=code,
        propagate_draws=propagate_draws,
        regime=regime,
        warmup=warmup,
    )


def forecast_id(created: datetime, run_fingerprint: str) -> str:
    """``YYYYMMDDTHHMMSSZ-<8 hex>``: sortable by time, the hex from the run fingerprint."""
    return f"{created.strftime('%Y%m%dT%H%M%SZ')}-{run_fingerprint[:8]}"


def now_utc() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)
