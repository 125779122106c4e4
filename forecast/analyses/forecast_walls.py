"""The walls service over a published forecast: today's accelerators at its posterior inputs.

What ``wallcast walls`` and ``wallcast curve`` (by default), ``/v1/walls`` and ``/v1/curve`` (by
default), the report and the dashboard show for an accelerator: its walls per posterior draw of
the forecast's inputs (:mod:`forecast.analyses.posterior_walls`), summarized as median and 80 %
interval (:mod:`forecast.queries.posterior_walls`).  A request the forecast's stored group
``accelerator_walls`` holds (90 days, BF16, the forecast's regime, dense, the forecast's
hardware table) is read from the file, without JAX; any other is computed over the forecast's
draws (the fast path, ~1-20 s) and cached in the process.  The paper's fixed assumptions stay
with :mod:`forecast.analyses.accelerator_walls`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from forecast.analyses.accelerator_walls import (
    DEFAULT_DURATION_DAYS,
    DEFAULT_PRECISION,
    DEFAULT_REGIME,
    WallsInputError,
    _check_inputs,
    _check_regime,
    hardware_table_hash,
    select_accelerators,
)
from forecast.config.runtime import init_jax
from forecast.model.accelerators import hardware_from_accelerator
from forecast.queries import posterior_walls as pw
from forecast.store.layout import ForecastNotFoundError
from forecast.store.reader import load_forecast, read_attrs, resolve_forecast_path

#: Where an accelerator's walls come from: ``forecast``, the published forecast's posterior
#: inputs (a distribution: median and 80 % interval; what every surface shows by default);
#: ``paper``, the paper's fixed assumptions (one value, for comparison with Erdil &
#: Schneider-Joseph 2024).
ASSUMPTION_SOURCES = ("forecast", "paper")
DEFAULT_ASSUMPTION_SOURCE = "forecast"


def check_assumption_source(source: str) -> None:
    if source not in ASSUMPTION_SOURCES:
        raise WallsInputError(
            f"assumptions must be one of {', '.join(ASSUMPTION_SOURCES)}, got {source!r}"
        )


def _group_answers(
    group: Any,
    names: Sequence[str],
    *,
    duration_days: float,
    precision: str,
    regime: str,
    moe_experts: int,
    moe_active_experts: int,
    table_hash: str,
) -> bool:
    """Whether the forecast's stored group holds this request (same settings and table)."""
    a = group.attrs
    have = {str(n) for n in group["accelerator"].values}
    return (
        float(a["duration_days"]) == float(duration_days)
        and str(a["precision"]) == precision
        and str(a["regime"]) == regime
        and int(a.get("moe_experts", 1)) == moe_experts
        and int(a.get("moe_active_experts", 1)) == moe_active_experts
        and str(a.get("hardware_table_hash", "")) == table_hash
        and set(names) <= have
    )


@functools.lru_cache(maxsize=32)
def _forecast_group(
    path: str,
    mtime_ns: int,
    names: tuple[str, ...],
    curve_names: tuple[str, ...],
    duration_days: float,
    precision: str,
    regime: str,
    moe_experts: int,
    moe_active_experts: int,
    hardware: str | None,
    hardware_hash: str | None,
) -> Any:
    settings = dict(
        duration_days=duration_days,
        precision=precision,
        regime=regime,
        moe_experts=moe_experts,
        moe_active_experts=moe_active_experts,
    )
    stored = _stored_answer(path, mtime_ns, names, curve_names, hardware_hash, **settings)
    if stored is not None:
        return stored
    init_jax()
    # why here: the computation imports JAX; reading the stored group must not
    from forecast.analyses.posterior_walls import accelerator_walls_for_forecast

    tree = load_forecast(path)
    return accelerator_walls_for_forecast(
        tree,
        hardware=hardware,
        names=list(names),
        curve_names=list(curve_names),
        duration_days=duration_days,
        precision=precision,
        regime=regime,
        moe_experts=moe_experts,
        moe_active_experts=moe_active_experts,
    )


def forecast_regime(path: str | Path) -> str:
    """The plan regime a published forecast was made in (its root attribute ``regime``)."""
    return str(read_attrs(path).get("regime", DEFAULT_REGIME))


def stored_group_answers(
    forecast: str | Path,
    names: Sequence[str],
    *,
    curve: bool = False,
    duration_days: float = DEFAULT_DURATION_DAYS,
    precision: str = DEFAULT_PRECISION,
    moe_experts: int = 1,
    moe_active_experts: int = 1,
    hardware: str | Path | None = None,
    regime: str | None = None,
) -> bool:
    """Whether the forecast's stored ``accelerator_walls`` group answers this request (then
    :func:`forecast_walls_group` reads it, no computation)."""
    path = resolve_forecast_path(forecast)
    stored = _stored_answer(
        str(path),
        path.stat().st_mtime_ns,
        names,
        names if curve else (),
        hardware_table_hash(hardware) if hardware else None,
        duration_days=duration_days,
        precision=precision,
        regime=forecast_regime(path) if regime is None else regime,
        moe_experts=moe_experts,
        moe_active_experts=moe_active_experts,
    )
    return stored is not None


def _stored_answer(
    path: str,
    mtime_ns: int,
    names: Sequence[str],
    curve_names: Sequence[str],
    hardware_hash: str | None,
    **settings: Any,
) -> Any:
    """The forecast's stored group when it holds the request (its walls for ``names``, its
    curves for ``curve_names``, the same settings and table; ``hardware_hash`` None: the
    forecast's own table), else None."""
    try:
        stored = _stored_group(path, mtime_ns)
    except pw.NoAcceleratorWallsError:
        return None
    table_hash = hardware_hash or str(stored.attrs.get("hardware_table_hash", ""))
    curves = {str(n) for n in stored["curve_accelerator"].values}
    if (
        _group_answers(stored, names, table_hash=table_hash, **settings)
        and set(curve_names) <= curves
    ):
        return stored
    return None


@functools.lru_cache(maxsize=8)
def _stored_group(path: str, mtime_ns: int) -> Any:
    """The forecast file's stored group, read once per file version (path, mtime)."""
    return pw.load_group(path)


def forecast_walls_group(
    forecast: str | Path | None,
    names: Sequence[str],
    *,
    curve_names: Sequence[str] = (),
    duration_days: float = DEFAULT_DURATION_DAYS,
    precision: str = DEFAULT_PRECISION,
    moe_experts: int = 1,
    moe_active_experts: int = 1,
    hardware: str | Path | None = None,
    regime: str | None = None,
) -> Any:
    """The ``accelerator_walls`` draws that answer a request over a published forecast
    (``forecast``: a file, folder or outputs folder; None: ``latest``): the forecast's stored
    group when it holds the request (no JAX), else the same computation over the forecast's
    inputs with the request's settings (the fast path; cached in the process).  ``names``: full
    accelerator names (:func:`select_accelerators`)."""
    _check_inputs(duration_days, moe_experts, moe_active_experts)
    try:
        path = resolve_forecast_path(forecast)
    except ForecastNotFoundError as exc:  # the other way to an answer: the paper's assumptions
        raise ForecastNotFoundError(
            f"{exc}, or pass --assumptions paper (assumptions=paper) for the paper's fixed "
            "assumptions"
        ) from None
    regime = forecast_regime(path) if regime is None else regime
    _check_regime(regime)
    return _forecast_group(
        str(path),
        path.stat().st_mtime_ns,
        tuple(names),
        tuple(curve_names),
        float(duration_days),
        str(precision),
        regime,
        int(moe_experts),
        int(moe_active_experts),
        None if hardware is None else str(hardware),
        None if hardware is None else hardware_table_hash(hardware),
    )


def forecast_walls_records(
    forecast: str | Path | None,
    names: Sequence[str] | None = None,
    *,
    hardware: str | Path | None = None,
    **settings: Any,
) -> list[dict[str, Any]]:
    """:func:`walls_records` over a published forecast's posterior inputs (median and 80 %
    interval per wall; :mod:`forecast.queries.posterior_walls`)."""
    accs = select_accelerators(names, hardware)
    precision = settings.get("precision", DEFAULT_PRECISION)
    if names:  # a named chip without the precision is refused, as at the paper's assumptions
        for acc in accs:
            hardware_from_accelerator(acc, precision)
    else:  # every row: those without the precision are left out
        accs = [a for a in accs if precision != "fp8" or a.flops_fp8 is not None]
    full = [a.name for a in accs]
    group = forecast_walls_group(forecast, full, hardware=hardware, **settings)
    return pw.walls_records(group, full)


def forecast_curve_record(
    forecast: str | Path | None,
    accelerator: str,
    *,
    hardware: str | Path | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """:func:`curve_record` over a published forecast's posterior inputs: the median curve with
    its 80 % band (``utilization_lower`` / ``_upper``) and both walls' medians and intervals."""
    (acc,) = select_accelerators([accelerator], hardware)
    hardware_from_accelerator(acc, settings.get("precision", DEFAULT_PRECISION))  # refuses
    group = forecast_walls_group(
        forecast, [acc.name], curve_names=[acc.name], hardware=hardware, **settings
    )
    return pw.curve_record(group, acc.name)
