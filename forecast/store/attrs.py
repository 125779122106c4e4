"""A published forecast's root attributes: their one writer and their one reader.

:func:`provenance_attrs` sets every root attribute when a forecast is assembled (the id, the run
fingerprint, code and data identity, priors and scenario texts, units, platform);
:func:`forecast.store.reader.read_attrs` (with the other h5py readers) reads them back from a
file, and :func:`read_priors` and :func:`recorded_data_dir` turn the two that analyses need back
into objects; :func:`wall_year_step` reads the wall grid the report and the API name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forecast import __version__
from forecast.config import paths
from forecast.config.platform import platform_json
from forecast.store.identity import code_hash, forecast_id, inputs_fingerprint, now_utc
from forecast.store.schema import UNITS, WALL_DEFINITIONS

if TYPE_CHECKING:
    from forecast.priors import PriorSet


def provenance_attrs(
    inputs: Any,
    scenario_names: Sequence[str],
    *,
    seed: int,
    chains: int,
    draws: int,
    years: Sequence[float] | None = None,
    code: str | None = None,
    created: datetime | None = None,
    propagate_draws: int | None = None,
    run_fingerprint: str | None = None,
    regime: str = "paper",
    warmup: int | None = None,
) -> dict[str, Any]:
    """Every root attribute of a published forecast (the one place they are set).

    ``inputs`` is a :class:`forecast.data.inputs.Inputs`.  Includes the ``id`` (from the
    :func:`fingerprint`), the fingerprint itself (``run_fingerprint``), the code version and hash,
    the data hash and folder (``data_dir``, so that analyses refit against the same tables), the
    priors and scenario texts, the units and the platform (:mod:`forecast.config.platform`).
    ``run_fingerprint``: the fingerprint when the caller has computed it for these same inputs
    and settings (the refresh flow, which compares it with ``latest`` first), else computed here
    (``warmup``: the fit's NUTS warm-up iterations per chain, None: the default).
    """
    code = code_hash() if code is None else code
    created = now_utc() if created is None else created
    scenario_texts = {n: inputs.scenarios[n].text for n in scenario_names}
    run_fp = run_fingerprint or inputs_fingerprint(
        inputs,
        scenario_names,
        seed=seed,
        chains=chains,
        draws=draws,
        years=years,
        code=code,
        propagate_draws=propagate_draws,
        regime=regime,
        warmup=warmup,
    )
    data_dir = getattr(inputs, "data_dir", None)
    return {
        "id": forecast_id(created, run_fp),
        "created": created.isoformat(),
        "code_version": __version__,
        "code_hash": code,
        "run_fingerprint": run_fp,
        "seed": int(seed),
        "chains": int(chains),
        "draws": int(draws),
        "propagate_draws": -1 if propagate_draws is None else int(propagate_draws),
        "regime": regime,
        "data_hash": inputs.data_hash,
        "data_dir": str(Path(data_dir).resolve()) if data_dir is not None else "",
        "priors_name": inputs.priors.name,
        "priors_path": str(inputs.priors.path),
        "priors_text": inputs.priors.text,
        "scenarios": ",".join(scenario_names),
        **{f"scenario_text_{n}": t for n, t in scenario_texts.items()},
        "hardware_rows": int(len(inputs.hardware)),
        "frontier_rows": int(len(inputs.frontier_runs)),
        **{
            f"{table}_rows": int(len(df))
            for table in ("model_shapes", "scaleup_domains")
            if (df := getattr(inputs, table, None)) is not None
        },
        "units": UNITS,
        # where the propagation ran; the fit's own platform is ``fit_platform`` (it may come
        # from a cached fit made elsewhere)
        "platform": platform_json(),
        "wall_definitions": WALL_DEFINITIONS,
    }


def read_priors(attrs: dict[str, Any]) -> PriorSet:
    """The base prior set a forecast was made with, from its stored text (``priors_text``); a
    forecast without it falls back to its ``priors_path``, else the default prior file."""
    # why here: parsing priors loads SciPy; reading a forecast's attributes must not
    from forecast.priors import load_priors, loads

    text = attrs.get("priors_text")
    path = attrs.get("priors_path")
    if not text:
        return load_priors(path) if path else load_priors(paths.default_priors_path())
    name = f"{attrs.get('priors_name', 'baseline')}.toml"
    return loads(text, name, path=Path(path) if path else None)


def recorded_data_dir(attrs: dict[str, Any]) -> Path:
    """The data folder a forecast was made from (its ``data_dir`` attr) when it still holds the
    tables, else the resolver's (:func:`forecast.config.paths.data_dir`)."""
    recorded = str(attrs.get("data_dir") or "")
    if recorded and paths.hardware_path(recorded).exists():
        return Path(recorded)
    return paths.data_dir()


#: The wall grid of a forecast without the attribute: made before 2026-12-05, every 2nd year.
WALL_YEAR_STEP_BEFORE_ATTRIBUTE = 2


def wall_year_step(attrs: dict[str, Any]) -> int | None:
    """Walls searched every this many years (root attribute ``wall_year_step``; 2 where absent:
    :data:`WALL_YEAR_STEP_BEFORE_ATTRIBUTE`); None where the value is not a positive integer (a
    damaged or hand-edited file: readers show nothing rather than fail)."""
    value = attrs.get("wall_year_step", WALL_YEAR_STEP_BEFORE_ATTRIBUTE)
    if isinstance(value, bool):
        return None
    try:
        step = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return step if step >= 1 and step == value else None


def gate_extension(attrs: dict[str, Any]) -> dict[str, Any] | None:
    """The fit's record of a narrow convergence refusal after which its chains ran twice as long
    (root attribute ``fit_gate_extension``, or ``gate_extension`` of a fit's own tree): a dict
    with ``requested_samples``, ``samples`` and ``refusal``; None where the fit was not extended,
    the forecast predates the attribute, or the value is damaged."""
    raw = attrs.get("fit_gate_extension", attrs.get("gate_extension"))
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or not record:
        return None
    requested, samples = record.get("requested_samples"), record.get("samples")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (requested, samples)):
        return None
    return record


def draws_description(attrs: dict[str, Any], chains: Any, draws: Any) -> str:
    """The run's size in words: ``4 chains × 1000 draws``, or, for a fit the gate had run twice
    as long, ``4 chains × 2000 draws (1000 asked: run twice as long after a narrow convergence
    refusal)``."""
    record = gate_extension(attrs)
    if record is None:
        return f"{chains} chains × {draws} draws"
    return (
        f"{chains} chains × {record['samples']} draws ({record['requested_samples']} asked: run "
        "twice as long after a narrow convergence refusal)"
    )
