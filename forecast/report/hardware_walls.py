"""The report's section on today's accelerators: both walls of each, and a few utilization curves.

Every number comes from the walls service (:mod:`forecast.analyses.accelerator_walls`), as records identical to what
``wallcast walls --json`` prints and ``wallcast curve`` plots; this module only chooses which
accelerators to show and lays out their table.  JAX runs inside the service, not here.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forecast.analyses.accelerator_walls import (
    CURVE_LOG10_FLOP_RANGE,
    DEFAULT_DURATION_DAYS,
    DEFAULT_PRECISION,
    curve_record,
    hardware_table_hash,
    select_accelerators,
    walls_records,
)
from forecast.config.errors import UnknownAcceleratorError
from forecast.queries import posterior_walls as pw
from forecast.queries.posterior_walls import CURVE_ACCELERATORS, wall_cell

__all__ = [
    "CURVE_ACCELERATORS",
    "REPORT_CURVE_STEP_LOG10",
    "AcceleratorWalls",
    "accelerator_section_text",
    "accelerator_table_cells",
    "accelerator_walls",
    "accelerator_walls_of_forecast",
    "utilization_caption",
    "wall_cell",
]


#: The report's curves step 0.05 dex (``wallcast curve``: 0.02): seven curves stay quick.
REPORT_CURVE_STEP_LOG10 = 0.05


@dataclass
class AcceleratorWalls:
    """The section's records: :func:`forecast.analyses.accelerator_walls.walls_record` per table row and
    :func:`forecast.analyses.accelerator_walls.curve_record` per charted accelerator."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    curves: list[dict[str, Any]] = field(default_factory=list)
    duration_days: float = DEFAULT_DURATION_DAYS
    precision: str = DEFAULT_PRECISION
    #: "forecast": over the forecast's posterior inputs (median, 80 % interval); "paper": the
    #: paper's fixed assumptions (one value each).
    source: str = "paper"
    draws: int | None = None
    scenario: str | None = None

    @property
    def threshold(self) -> float | None:
        """The data-movement wall's fraction of maximum utilization (None without records)."""
        records = self.rows or self.curves
        return records[0]["utilization_threshold"] if records else None


def accelerator_walls(
    names: Sequence[str] | None = None,
    curve_names: Sequence[str] | None = CURVE_ACCELERATORS,
    *,
    duration_days: float = DEFAULT_DURATION_DAYS,
    precision: str = DEFAULT_PRECISION,
    hardware: str | Path | None = None,
    curve_step: float = REPORT_CURVE_STEP_LOG10,
    log10_flop_range: tuple[float, float] = CURVE_LOG10_FLOP_RANGE,
) -> AcceleratorWalls:
    """Walls of each named accelerator (every table row when ``names`` is None) and the
    utilization curves of ``curve_names`` that are in the table.

    Cached in the process on the arguments and the accelerator table's bytes (its SHA-256), so
    the refresh flow can compute them beside the fit (:func:`warm_accelerator_walls`) and the
    report, written after publishing, reads them back; a changed table is computed afresh.
    Callers get their own copy."""
    key = (
        None if names is None else tuple(names),
        None if curve_names is None else tuple(curve_names),
        float(duration_days),
        str(precision),
        None if hardware is None else str(hardware),
        hardware_table_hash(hardware),
        float(curve_step),
        tuple(float(x) for x in log10_flop_range),
    )
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
    if cached is None:
        cached = _accelerator_walls(
            names,
            curve_names,
            duration_days=duration_days,
            precision=precision,
            hardware=hardware,
            curve_step=curve_step,
            log10_flop_range=log10_flop_range,
        )
        with _CACHE_LOCK:
            _CACHE[key] = cached
            while len(_CACHE) > 8:
                _CACHE.pop(next(iter(_CACHE)))
    return copy.deepcopy(cached)


_CACHE: dict[tuple, AcceleratorWalls] = {}
_CACHE_LOCK = threading.Lock()


def warm_accelerator_walls() -> None:
    """Compute the report's accelerator section now (what :func:`forecast.report.write_report_files`
    asks for by default), so that a report written later in this process finds it cached."""
    accelerator_walls(None, CURVE_ACCELERATORS)


def _accelerator_walls(
    names: Sequence[str] | None,
    curve_names: Sequence[str] | None,
    *,
    duration_days: float,
    precision: str,
    hardware: str | Path | None,
    curve_step: float,
    log10_flop_range: tuple[float, float],
) -> AcceleratorWalls:
    settings = {"duration_days": duration_days, "precision": precision, "hardware": hardware}
    rows = walls_records(names, **settings)
    curves = []
    for want in curve_names or ():
        try:
            (acc,) = select_accelerators([want], hardware)
        except UnknownAcceleratorError:  # not in this table
            continue
        curves.append(
            curve_record(
                acc,
                **settings,
                log10_flop_range=log10_flop_range,
                step_log10=curve_step,
            )
        )
    return AcceleratorWalls(rows, curves, duration_days, precision)


def accelerator_walls_of_forecast(
    group: Any,
    names: Sequence[str] | None = None,
    curve_names: Sequence[str] | None = CURVE_ACCELERATORS,
) -> AcceleratorWalls:
    """The section's records from a forecast's ``accelerator_walls`` group (no plan search):
    the walls of ``names`` (every accelerator when None) and the curves of ``curve_names``, as
    medians with their 80 % intervals over the forecast's posterior draws."""
    rows = pw.walls_records(group, pw.resolve_names(group, names))
    have_curves = [str(n) for n in group["curve_accelerator"].values]
    curves = [
        pw.curve_record(group, n)
        for n in pw.resolve_names(group, list(curve_names or ()))
        if n in have_curves
    ]
    return AcceleratorWalls(
        rows,
        curves,
        float(group.attrs["duration_days"]),
        str(group.attrs["precision"]),
        source="forecast",
        draws=int(group.attrs["draws"]),
        scenario=str(group.attrs["scenario"]),
    )


def accelerator_section_text(aw: AcceleratorWalls) -> str:
    """The sentence that opens the report's accelerator section: what the walls are computed
    over (the forecast's draws, or the paper's fixed assumptions) and what each wall means."""
    if aw.source == "forecast":
        basis = (
            f"over {aw.draws} posterior draws of this forecast's inputs ({aw.scenario} "
            "scenario: maximum utilization, batch and depth laws, collective efficiency, "
            "latencies as measured today), median and 80% interval; the same numbers as "
            "`wallcast walls`, the API and the dashboard"
        )
    else:
        basis = (
            "at the paper's fixed assumptions (maximum utilization 0.7, the paper's batch and "
            "depth laws), not this forecast's fitted inputs"
        )
    return (
        f"Each accelerator alone, {basis} ({aw.duration_days:g}-day run, {aw.precision}); "
        f"data-movement wall: utilization falls below {aw.threshold:.0%} of its maximum; "
        "latency wall: no plan finishes in time."
    )


def utilization_caption(aw: AcceleratorWalls) -> str:
    """The caption of the report's utilization chart (which bands it draws)."""
    text = (
        "Best achievable utilization against training compute (dashed: data-movement wall, "
        "dotted: latency wall"
    )
    if aw.source != "forecast":
        return text + ")."
    band = "each curve's 80% interval" if len(aw.curves) <= 2 else "the H100's 80% interval"
    return (
        f"{text}; lines: median over the forecast's posterior draws; band: {band}, mostly the "
        "spread of the small-scale maximum utilization)."
    )


def accelerator_table_cells(aw: AcceleratorWalls) -> tuple[list[str], list[list[str]]]:
    """Header and string cells of the per-accelerator table (``*``: gap-filling assumptions)."""
    if aw.source == "forecast":
        header = [
            "accelerator",
            "max utilization",
            "data-movement wall (FLOP), median (80% interval)",
            "latency wall (FLOP), median (80% interval)",
        ]
    else:
        header = [
            "accelerator",
            "max utilization",
            "data-movement wall (FLOP)",
            "latency wall (FLOP)",
        ]
    body = [
        [
            r["accelerator"] + (" *" if r["assumptions"] else ""),
            f"{r['max_utilization']:.2f}",
            wall_cell(r, "data_movement"),
            wall_cell(r, "latency"),
        ]
        for r in aw.rows
    ]
    return header, body
