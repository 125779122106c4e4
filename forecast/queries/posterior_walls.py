"""Records of today's accelerators from a forecast's ``accelerator_walls`` group (no JAX).

The group (:mod:`forecast.analyses.posterior_walls`) holds both walls of every accelerator per
posterior draw of the forecast's inputs.  This module summarizes it as the walls service's
records (the keys of :func:`forecast.analyses.accelerator_walls.walls_record`, with the median
as the value and the 80 % interval beside it), so ``wallcast walls``, ``/v1/walls``, the report,
the deck and the dashboard print one number per accelerator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from forecast.config.errors import WallcastError
from forecast.queries.answers import quantiles_with_inf
from forecast.queries.formatting import fmt_log10_flop
from forecast.store.reader import read_group, resolve_forecast_path

if TYPE_CHECKING:
    import xarray as xr

GROUP = "accelerator_walls"
PROB = 0.8
WALLS = ("data_movement", "latency")
_LABELS = {"data_movement": "data-movement wall", "latency": "latency wall"}
SEARCH_LOG10_FLOP_RANGE = (20.0, 40.0)

REGIME_NOTES = {
    "paper": "paper: plans relaxed to continuous quantities (microbatches of any number of tokens, "
    "fractional degrees and layers per stage), as Erdil & Schneider-Joseph (2024)",
    "realistic": "realistic: plans a run can launch (microbatches of whole sequences or a sequence "
    "split over context-parallel ranks, whole layers per stage, whole degrees, tensor parallelism "
    "within the attention heads; recomputation and interleaved 1F1B as options)",
}

#: Accelerators whose utilization curve a forecast stores and the report draws (parts of table
#: names; those not in the table are skipped).
CURVE_ACCELERATORS = (
    "A100 SXM4 80GB",
    "H100 SXM5",
    "GB200 NVL72",
    "GB300 NVL72",
    "MI355X",
    "TPU7x",
    "Rubin",
)

#: What a record computed over a forecast's draws says about its inputs.
FORECAST_SOURCE_NOTE = (
    "walls per posterior draw of the forecast's inputs (maximum utilization, batch and depth "
    "laws, collective efficiency, latencies at their {year:g} values): median and 80 % interval"
)


class NoAcceleratorWallsError(WallcastError):
    """The forecast has no ``accelerator_walls`` group (published before it existed)."""


def load_group(path: str | Path) -> xr.Dataset:
    """The ``accelerator_walls`` group of a published forecast file (loaded into memory)."""
    path = resolve_forecast_path(path)
    try:
        return read_group(path, GROUP)
    except KeyError:
        raise NoAcceleratorWallsError(
            f"{path}: this forecast has no per-accelerator walls (published before they were "
            "part of a forecast); run `wallcast run` again, or pass --assumptions paper"
        ) from None


def summary(values: np.ndarray, prob: float = PROB) -> tuple[float, float, float]:
    """(median, lower, upper) of draws that may be +-inf (``quantiles_with_inf``)."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[~np.isnan(v)]
    lo, med, hi = quantiles_with_inf(v, [(1 - prob) / 2, 0.5, (1 + prob) / 2])
    return float(med), float(lo), float(hi)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _beyond_note(label: str, median: float) -> str | None:
    if math.isfinite(median):
        return None
    lo, hi = SEARCH_LOG10_FLOP_RANGE
    if median > 0:
        return f"{label} beyond the search grid (above 1e{hi:.0f} FLOP) in most draws"
    return f"{label} below the search grid (under 1e{lo:.0f} FLOP) in most draws"


def wall_log10_flop(record: dict[str, Any], wall: str) -> float:
    """A record's wall in log10 FLOP: ``wall`` is "data_movement" or "latency"; a wall beyond
    the search grid is +inf (above it) or -inf (below it), as the plan search returns it."""
    value = record[f"{wall}_wall_log10_flop"]
    if value is not None:
        return float(value)
    below = f"{_LABELS[wall]} below the search grid"
    return -math.inf if below in (record.get("note") or "") else math.inf


def wall_cell(record: dict[str, Any], wall: str) -> str:
    """A wall as the tables print it: the median, and its 80 % interval when the record has one
    ("2.5e28 (2.2e27 – 2e29)")."""
    median = fmt_log10_flop(wall_log10_flop(record, wall), SEARCH_LOG10_FLOP_RANGE)
    interval = record.get(f"{wall}_wall_interval_log10_flop")
    if not interval:
        return median
    below = record.get(f"{wall}_wall_below_grid_fraction", 0.0) or 0.0
    ends = [
        float(v) if v is not None else (-math.inf if side == 0 and below > 0 else math.inf)
        for side, v in enumerate(interval)
    ]
    lo, hi = (fmt_log10_flop(v, SEARCH_LOG10_FLOP_RANGE) for v in ends)
    return f"{median} ({lo} – {hi})"


def accelerator_names(ds: xr.Dataset) -> list[str]:
    return [str(n) for n in ds["accelerator"].values]


def resolve_names(ds: xr.Dataset, wanted: Sequence[str] | None) -> list[str]:
    """Full accelerator names of the group for ``wanted`` (exact names or a part that one name
    contains, case-insensitive; parts matching none are skipped): every name when empty."""
    have = accelerator_names(ds)
    if not wanted:
        return have
    out: list[str] = []
    for part in wanted:
        key = str(part).strip().lower()
        exact = [n for n in have if n.lower() == key]
        hits = exact or [n for n in have if key in n.lower()]
        if len(hits) == 1 and hits[0] not in out:
            out.append(hits[0])
    return out


def wall_draws(ds: xr.Dataset, accelerator: str, wall: str) -> np.ndarray:
    """One accelerator's wall per sample (log10 FLOP)."""
    return np.asarray(ds["wall_log10_flop"].sel(accelerator=accelerator, wall=wall).values)


def walls_record(ds: xr.Dataset, accelerator: str, prob: float = PROB) -> dict[str, Any]:
    """The walls service's record of one accelerator from the group: medians as the values,
    ``*_interval_log10_flop`` ([lower, upper] of the ``prob`` interval, ``None`` beyond the grid),
    the shares of draws beyond the grid, and the source of the inputs."""
    if accelerator not in accelerator_names(ds):
        raise KeyError(accelerator)
    attrs = ds.attrs
    out: dict[str, Any] = {
        "accelerator": accelerator,
        "precision": str(attrs["precision"]),
        "duration_days": float(attrs["duration_days"]),
        "moe_experts": int(attrs.get("moe_experts", 1)),
        "moe_active_experts": int(attrs.get("moe_active_experts", 1)),
        "utilization_threshold": float(attrs["utilization_threshold"]),
    }
    u = np.asarray(ds["max_utilization"].sel(accelerator=accelerator).values)
    u_med, u_lo, u_hi = summary(u, prob)
    out["max_utilization"] = u_med
    out["max_utilization_interval"] = [u_lo, u_hi]
    notes = []
    for wall in WALLS:
        draws = wall_draws(ds, accelerator, wall)
        med, lo, hi = summary(draws, prob)
        out[f"{wall}_wall_flop"] = 10.0**med if math.isfinite(med) else None
        out[f"{wall}_wall_log10_flop"] = _finite(med)
        out[f"{wall}_wall_interval_log10_flop"] = [_finite(lo), _finite(hi)]
        out[f"{wall}_wall_beyond_grid_fraction"] = float(np.mean(np.isposinf(draws)))
        out[f"{wall}_wall_below_grid_fraction"] = float(np.mean(np.isneginf(draws)))
        note = _beyond_note(_LABELS[wall], med)
        if note:
            notes.append(note)
    hardware = {
        str(k).removeprefix("hardware_"): float(ds[k].sel(accelerator=accelerator))
        for k in ds.data_vars
        if str(k).startswith("hardware_")
    }
    gaps = str(ds["gap_notes"].sel(accelerator=accelerator).values)
    regime = str(attrs["regime"])
    out.update(
        {
            "plan_at_wall": None,
            "hardware": hardware,
            "assumptions": [g for g in gaps.split("; ") if g],
            "note": "; ".join(notes) or None,
            "regime": regime,
            "regime_note": REGIME_NOTES[regime],
            "assumptions_source": "forecast",
            "assumptions_note": FORECAST_SOURCE_NOTE.format(year=float(attrs["reference_year"])),
            "forecast_id": str(attrs.get("forecast_id", "")) or None,
            "scenario": str(attrs["scenario"]),
            "draws": int(attrs["draws"]),
            "prob": float(prob),
        }
    )
    return out


def walls_records(
    ds: xr.Dataset, names: Sequence[str] | None = None, prob: float = PROB
) -> list[dict[str, Any]]:
    """:func:`walls_record` of each accelerator of ``names`` (full table names; every one in
    the group when empty), in order; a name not in the group (no figure at the group's
    precision) is skipped."""
    have = accelerator_names(ds)
    wanted = have if not names else [n for n in names if n in have]
    return [walls_record(ds, n, prob) for n in wanted]


def curve_record(ds: xr.Dataset, accelerator: str, prob: float = PROB) -> dict[str, Any]:
    """Median and ``prob`` band of the best utilization against training compute (``None``
    where fewer than half the draws have a plan that finishes in time), with the accelerator's
    :func:`walls_record`: the record of ``wallcast curve`` over a forecast's draws."""
    if accelerator not in [str(n) for n in ds["curve_accelerator"].values]:
        raise KeyError(accelerator)
    u = np.asarray(ds["curve_utilization"].sel(curve_accelerator=accelerator).values)
    qs = np.quantile(u, [(1 - prob) / 2, 0.5, (1 + prob) / 2], axis=0)
    feasible = np.mean(u > 0, axis=0)
    walls = walls_record(ds, accelerator, prob)

    def col(row: np.ndarray) -> list[float | None]:
        return [float(x) if f >= 0.5 else None for x, f in zip(row, feasible, strict=True)]

    return {
        **walls,
        "log10_flop": [float(x) for x in ds["log10_flop"].values],
        "utilization": col(qs[1]),
        "utilization_lower": [float(x) for x in qs[0]],
        "utilization_upper": [float(x) for x in qs[2]],
        "feasible_fraction": [float(x) for x in feasible],
        "curve_draws": int(u.shape[0]),
    }
