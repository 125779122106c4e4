"""Credible intervals from a published forecast (NumPy/xarray only: never imports JAX).

Three layers: ``interval`` on arrays, ``wall_interval`` on a Dataset, ``query`` on a file.
Draws that never hit a wall are +inf; they stay in the quantiles (an upper bound of +inf means
"not hit by the last year at that probability") and are counted in ``not_hit_fraction``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from forecast.config.errors import WallcastError
from forecast.store.reader import has_variable, read_variable, resolve_forecast_path

if TYPE_CHECKING:  # xarray is imported lazily: `wallcast query` needs only h5py and NumPy
    import xarray as xr

WHAT_VARIABLE = {"year": "hit_year", "flop": "hit_flop"}
WHATS = (*WHAT_VARIABLE, "cost")  # cost: per year, not per wall
COST_VARIABLES = ("cost_multiplier", "frontier_utilization", "min_run_days")


class QueryError(WallcastError, ValueError):
    """A query the dataset cannot answer (unknown wall, scenario or quantity)."""


def quantiles_with_inf(values: np.ndarray, probs) -> np.ndarray:
    """Linear-interpolation quantiles (NumPy's default) that stay +inf past the first +inf.

    ``np.quantile`` returns NaN when it interpolates between two infinities; here a quantile
    that touches a never-hit draw (+inf) is +inf, and one between finite draws is as NumPy's.
    """
    v = np.sort(np.asarray(values, dtype=float).ravel())
    h = (v.size - 1) * np.asarray(probs, dtype=float)
    lo = np.floor(h).astype(int)
    hi = np.minimum(lo + 1, v.size - 1)
    frac = h - lo
    a, b = v[lo], v[hi]
    with np.errstate(invalid="ignore"):
        out = np.where(frac == 0, a, a + frac * (b - a))  # on a draw: that draw (0 x inf is NaN)
    return np.where(np.isinf(b) & (frac > 0), b, np.where(np.isinf(a), a, out))


def interval(values: np.ndarray, prob: float = 0.8) -> dict[str, float]:
    """Median and equal-tailed ``prob`` interval of draws (inf allowed), with the not-hit share."""
    if not 0.0 < prob < 1.0:
        raise QueryError(f"prob must be in (0, 1), got {prob}")
    v = np.asarray(values, dtype=float).ravel()
    v = v[~np.isnan(v)]
    if v.size == 0:
        raise QueryError("no draws to summarize")
    lo, med, hi = quantiles_with_inf(v, [(1 - prob) / 2, 0.5, (1 + prob) / 2])
    return {
        "median": float(med),
        "lower": float(lo),
        "upper": float(hi),
        "prob": float(prob),
        "not_hit_fraction": float(np.mean(np.isinf(v))),
        "draws": int(v.size),
    }


def wall_interval(
    forecast: xr.Dataset,
    wall: str,
    what: str = "year",
    scenario: str | None = None,
    prob: float = 0.8,
) -> dict:
    """Interval of the hit year or hit FLOP of one wall and scenario (default: the first)."""
    if what not in WHAT_VARIABLE:
        raise QueryError(f"what must be one of {sorted(WHAT_VARIABLE)}, got {what!r}")
    walls = [str(w) for w in forecast["wall"].values]
    if wall not in walls:
        raise QueryError(f"unknown wall {wall!r}; the forecast has {walls}")
    scenarios = [str(s) for s in forecast["scenario"].values]
    scenario = scenarios[0] if scenario is None else scenario
    if scenario not in scenarios:
        raise QueryError(f"unknown scenario {scenario!r}; the forecast has {scenarios}")
    da = forecast[WHAT_VARIABLE[what]].sel(wall=wall, scenario=scenario)
    out = interval(da.values, prob)
    out.update(wall=wall, what=what, scenario=scenario, units=da.attrs.get("units", ""))
    return out


def query(
    path: str | Path | None,
    wall: str,
    what: str = "year",
    scenario: str | None = None,
    prob: float = 0.8,
) -> dict:
    """Interval of the hit year or FLOP of one wall and scenario, read straight from a file
    (``path`` as :func:`forecast.store.reader.resolve_forecast_path` takes it; None: ``latest``).

    Same answer as :func:`wall_interval` on the opened dataset; reads only the one variable
    with h5py and never imports xarray or JAX (the ``wallcast query`` path).
    """
    if what not in WHAT_VARIABLE:
        raise QueryError(f"what must be one of {sorted(WHAT_VARIABLE)}, got {what!r}")

    path = resolve_forecast_path(path)
    dims, values, attrs, coords, root = read_variable(path, "forecast", WHAT_VARIABLE[what])
    walls, scenarios = coords.get("wall", []), coords.get("scenario", [])
    if wall not in walls:
        raise QueryError(f"unknown wall {wall!r}; the forecast has {walls}")
    scenario = scenarios[0] if scenario is None else scenario
    if scenario not in scenarios:
        raise QueryError(f"unknown scenario {scenario!r}; the forecast has {scenarios}")
    index = tuple(
        walls.index(wall)
        if d == "wall"
        else scenarios.index(scenario)
        if d == "scenario"
        else slice(None)
        for d in dims
    )
    out = interval(values[index], prob)
    out.update(wall=wall, what=what, scenario=scenario, units=attrs.get("units", ""))
    out["forecast_id"] = root.get("id", "")
    out["regime"] = root.get("regime", "paper")  # the plans the walls come from
    paper_name = f"paper_{WHAT_VARIABLE[what]}"
    if has_variable(path, "forecast", paper_name):
        # a realistic forecast holds the paper's idealized bound beside it, on the same draws
        _, p_values, *_ = read_variable(path, "forecast", paper_name)  # the same dims
        paper = interval(p_values[index], prob)
        for key in ("median", "lower", "upper", "not_hit_fraction"):
            out[f"paper_{key}"] = paper[key]
    out["forecast"] = str(path)
    return out


def _index(dims, coords: dict[str, list], chosen: dict[str, str]) -> tuple:
    return tuple(coords[d].index(chosen[d]) if d in chosen else slice(None) for d in dims)


def cost_query(
    path: str | Path | None, year: int, scenario: str | None = None, prob: float = 0.8
) -> dict:
    """What the wall costs the frontier run of ``year``: median and ``prob`` interval of
    ``cost_multiplier`` (``median``, ``lower``, ``upper``; +inf: past the latency wall), the
    share of draws where the run is infeasible (``infeasible_fraction``), and the same
    interval of ``frontier_utilization`` and ``min_run_days`` (keys prefixed with their name).

    Reads the three variables with h5py (no xarray, no JAX), like :func:`query`.
    """
    # why here: h5py only when a file is read (resolving paths needs none)
    import h5py

    path = resolve_forecast_path(path)
    with h5py.File(path, "r") as h5:
        years = [int(y) for y in h5["forecast"]["year"][...]]
    if int(year) not in years:
        raise QueryError(f"year {year} is not in the forecast ({years[0]}-{years[-1]})")
    out: dict = {}
    root: dict = {}
    for name in COST_VARIABLES:
        try:
            dims, values, attrs, coords, root = read_variable(path, "forecast", name)
        except KeyError:
            raise QueryError(
                f"{path}: the forecast has no {name!r} (published before cost variables existed; "
                "rerun `wallcast run`)"
            ) from None
        scenarios = coords.get("scenario", [])
        scenario = scenarios[0] if scenario is None else scenario
        if scenario not in scenarios:
            raise QueryError(f"unknown scenario {scenario!r}; the forecast has {scenarios}")
        coords = {**coords, "year": [str(y) for y in years]}
        draws = values[_index(dims, coords, {"scenario": scenario, "year": str(int(year))})]
        res = interval(draws, prob)
        if name == COST_VARIABLES[0]:
            out.update(res)
            out["infeasible_fraction"] = out.pop("not_hit_fraction")
            out["units"] = attrs.get("units", "")
        else:
            for key in ("median", "lower", "upper"):
                out[f"{name}_{key}"] = res[key]
            out[f"{name}_units"] = attrs.get("units", "")
    out.update(what="cost", year=int(year), scenario=scenario)
    out["forecast_id"] = root.get("id", "")
    out["regime"] = root.get("regime", "paper")  # the plans the walls come from
    out["forecast"] = str(path)
    return out


def json_ready(out: dict) -> dict:
    """A :func:`query` answer as plain JSON values: +inf/-inf become the strings "inf"/"-inf"."""
    return {
        k: (v if not isinstance(v, float) or math.isfinite(v) else ("inf" if v > 0 else "-inf"))
        for k, v in out.items()
    }


def answer(
    path: str | Path | None,
    wall: str | None,
    what: str = "year",
    scenario: str | None = None,
    prob: float = 0.8,
    year: int | None = None,
) -> dict:
    """:func:`cost_query` for ``what="cost"`` (needs ``year``; ``wall`` is ignored), else
    :func:`query` (needs ``wall``)."""
    if what == "cost":
        if year is None:
            raise QueryError("--what cost needs --year (the year of the frontier run)")
        return cost_query(path, year, scenario, prob)
    if wall is None:
        raise QueryError(f"--what {what} needs --wall (data_movement or latency)")
    return query(path, wall, what, scenario, prob)


def query_json(
    path: str | Path,
    wall: str | None,
    what: str = "year",
    scenario: str | None = None,
    prob: float = 0.8,
    year: int | None = None,
) -> dict:
    """The JSON object of ``wallcast query --json`` and of the API's ``GET /v1/query``."""
    return json_ready(answer(path, wall, what, scenario, prob, year))


def summary_table(forecast: xr.Dataset, prob: float = 0.8) -> list[dict]:
    """Median and ``prob`` interval of hit year and hit FLOP per wall and scenario."""
    rows = []
    for scenario in forecast["scenario"].values:
        for wall in forecast["wall"].values:
            y = wall_interval(forecast, str(wall), "year", str(scenario), prob)
            f = wall_interval(forecast, str(wall), "flop", str(scenario), prob)
            rows.append({"scenario": str(scenario), "wall": str(wall), "year": y, "flop": f})
    return rows
