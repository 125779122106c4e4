"""Rows read from the analyses' groups of a forecast (sensitivity ranking and comparison, backtest
coverage): what the CLI tables, the report and the service print. No JAX.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from forecast.queries.answers import interval

if TYPE_CHECKING:  # annotations only: reading answers does not import xarray
    import xarray as xr

_METHOD = {
    "prior": "Sobol indices by Saltelli/Jansen estimators on a scrambled Sobol design; every "
    "input independently from its prior, 2024 hardware levels fixed",
    "posterior": "Sobol indices by Saltelli/Jansen estimators on a scrambled Sobol design; "
    "fitted inputs (scaling laws, utilization, domain growth, trends) from the forecast's "
    "posterior, each law's inputs jointly through a Gaussian copula (first input of a law: full "
    "index, later ones: independent index; Mara et al. 2015), the rest from their priors; "
    "2024 hardware levels fixed",
}


def _strings(values: Sequence[str], size: int, default: str) -> np.ndarray:
    """A fixed-length unicode array (``default`` where ``values`` is empty)."""
    return np.array(list(values) if values else [default] * size, dtype=str)


def ranking_rows(ds: xr.Dataset) -> list[dict[str, Any]]:
    """One row per (target, input), ranked by total index within each target."""
    rows: list[dict[str, Any]] = []
    for target in ds["target"].values:
        sub = ds.sel(target=target)
        order = np.argsort(-np.nan_to_num(sub["total"].values, nan=-np.inf), kind="stable")
        for rank, i in enumerate(order, start=1):
            s = sub.isel(input=int(i))
            rows.append(
                {
                    "target": str(target),
                    "rank": rank,
                    "input": str(s["input"].values),
                    "first_order": float(s["first_order"]),
                    "total": float(s["total"]),
                    "first_order_ci": [float(s["first_order_low"]), float(s["first_order_high"])],
                    "total_ci": [float(s["total_low"]), float(s["total_high"])],
                    "tornado_low": float(s["tornado_low"]),
                    "tornado_high": float(s["tornado_high"]),
                    "baseline": float(sub["baseline"]),
                    "kind": str(s["input_kind"].values) if "input_kind" in s else "prior",
                }
            )
    return rows


def comparison_rows(posterior: xr.Dataset, prior: xr.Dataset) -> list[dict[str, Any]]:
    """Before -> after: per (target, input), the total and first-order indices of the priors-only
    basis and of the posterior basis with their 95 % intervals, ranked by the posterior total.

    Inputs present in only one dataset get NaN on the other side.
    """
    rows: list[dict[str, Any]] = []
    for rank_row in ranking_rows(posterior):
        target, key = rank_row["target"], rank_row["input"]
        row = {
            "target": target,
            "input": key,
            "kind": rank_row["kind"],
            "rank_posterior": rank_row["rank"],
            "total_posterior": rank_row["total"],
            "total_posterior_ci": rank_row["total_ci"],
            "first_order_posterior": rank_row["first_order"],
        }
        have = target in prior["target"].values and key in prior["input"].values
        sub = prior.sel(target=target, input=key) if have else None
        for name in ("total", "first_order"):
            row[f"{name}_prior"] = float(sub[name]) if have else float("nan")
        row["total_prior_ci"] = (
            [float(sub["total_low"]), float(sub["total_high"])] if have else [np.nan, np.nan]
        )
        if have:
            totals = np.nan_to_num(prior.sel(target=target)["total"].values, nan=-np.inf)
            row["rank_prior"] = int(1 + np.sum(totals > float(sub["total"])))
        else:
            row["rank_prior"] = None
        rows.append(row)
    return rows


def coverage_rows(ds: xr.Dataset) -> list[dict[str, Any]]:
    """One row per (origin, metric) with the coverage numbers (JSON-ready)."""
    rows = []
    for origin in ds["origin"].values:
        for metric in ds["metric"].values:
            s = ds.sel(origin=origin, metric=metric)
            n = int(s["n_held_out"])

            def num(name: str, s=s) -> float | None:
                v = float(s[name])
                return v if np.isfinite(v) else None

            rows.append(
                {
                    "metric": str(metric),
                    "origin": int(origin),
                    "coverage_50": num("coverage_50"),
                    "coverage_80": num("coverage_80"),
                    "coverage_95": num("coverage_95"),
                    "n_held_out": n,
                    "n_train": int(s["n_train"]),
                    "log_score": num("log_score"),
                    "rhat_max": float(s["rhat_max"]),
                }
            )
    return rows


def frontier_coverage_rows(ds: xr.Dataset) -> list[dict[str, Any]]:
    """One row per origin, then the pooled row (JSON-ready; missing numbers are None)."""
    rows = []
    for label in ds["row"].values:
        s = ds.sel(row=label)

        def num(name: str, s=s) -> float | None:
            v = float(s[name])
            return v if np.isfinite(v) else None

        rows.append(
            {
                "origin": str(label),
                "n_train": int(s["n_train"]),
                "n_held_out": int(s["n_held_out"]),
                "train_start_year": num("train_start_year"),
                "growth_median": num("growth_median"),
                "coverage_50": num("coverage_50"),
                "coverage_80": num("coverage_80"),
                "coverage_95": num("coverage_95"),
                "median_error_dex": num("median_error_dex"),
                "median_abs_error_dex": num("median_abs_error_dex"),
                "pit_mean": num("pit_mean"),
                "median_width_80_dex": num("median_width_80_dex"),
                "sigma_median": num("sigma_median"),
                "nu_median": num("nu_median"),
                "standing_record_log10_flop": num("standing_record_log10_flop"),
                "log_score": num("log_score"),
                "rhat_max": num("rhat_max"),
            }
        )
    return rows


def frozen_summary(ds: xr.Dataset, wall: str, prob: float = 0.8) -> dict[str, Any]:
    """Median, central ``prob`` interval and not-hit share of a wall's frozen-hardware hit year
    (group ``frozen_hardware``; :func:`forecast.queries.answers.interval`), with the wall itself
    (``wall_flop``, FLOP)."""
    out = interval(ds["hit_year"].sel(wall=wall).values, prob)
    out["wall_flop"] = float(ds["wall_flop"].sel(wall=wall))
    return out


def check_rows(ds: xr.Dataset) -> list[dict]:
    """One JSON-ready row per likelihood of the ``checks`` group (LOO-PIT,
    :mod:`forecast.inference.loo`) (coverage keyed ``coverage_50`` / ``_80`` / ``_95``)."""
    out = []
    for name in ds["likelihood"].values:
        s = ds.sel(likelihood=name)
        row = {"likelihood": str(name), "table": str(s["table"].values), "rows": int(s["n_rows"])}
        for p in ds["prob"].values:
            row[f"coverage_{round(float(p) * 100)}"] = float(s["loo_coverage"].sel(prob=p))
        row["pit_mean"] = float(s["loo_pit_mean"])
        row["pareto_k_max"] = float(s["pareto_k_max"])
        row["n_high_pareto_k"] = int(s["n_high_pareto_k"])
        out.append(row)
    return out


def _origin_data(ds: xr.Dataset, origin: int) -> tuple:
    """What an origin's backtest trained and scored on: training counts per metric and the
    held-out rows (names and values). Two origins with the same are one backtest."""
    s = ds.sel(origin=origin)

    def vals(name: str) -> tuple:
        if name not in s:
            return ()
        v = np.asarray(s[name].values).ravel()
        if v.dtype.kind == "f":
            v = np.round(v[np.isfinite(v)], 9)
        else:
            v = v[v != ""] if v.dtype.kind in "US" else v
        return tuple(sorted(v.tolist()))

    return (
        tuple(np.asarray(s["n_train"].values).ravel().tolist()) if "n_train" in s else (),
        vals("held_out_name"),
        vals("observed"),
    )


def same_data_origins(ds: xr.Dataset) -> list[list[int]]:
    """The origins of a ``backtest`` group, grouped where they trained and scored on the same
    rows (no accelerator released between them): each group is one backtest, its first origin
    names it (``[[2018, 2020], [2022]]``)."""
    groups: list[list[int]] = []
    keys: list[tuple] = []
    for o in (int(x) for x in ds["origin"].values):
        key = _origin_data(ds, o)
        if key in keys:
            groups[keys.index(key)].append(o)
        else:
            keys.append(key)
            groups.append([o])
    return groups


def same_data_note(groups: list[list[int]]) -> str | None:
    """One line for the CLI when origins repeat a backtest ('Origins 2018 and 2020 trained and
    scored on the same rows: one check, not two.'), else None."""
    twins = [g for g in groups if len(g) > 1]
    if not twins:
        return None
    named = "; ".join(" and ".join(str(o) for o in g) for g in twins)
    return (
        f"Origins {named} trained and scored on the same rows (no accelerator released between "
        "them): one check, not two."
    )
