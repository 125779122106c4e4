"""What changed since the previous forecast: medians that moved, data rows and inputs that differ."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forecast.queries.formatting import fmt_flop, fmt_year
from forecast.queries.headline import PROB, Forecast, summary_rows, wall_label
from forecast.store.attrs import wall_year_step

MOVED_YEARS = 0.05  # a median that moved by less (it prints the same to 1 decimal) is unchanged
MOVED_DEX = 0.05  # log10 FLOP: a change the 2-digit FLOP numbers show


def _data_rows(fc: Forecast) -> dict[str, dict[str, float]]:
    """Observed data points by kind and name (hardware 'accelerator|metric', frontier runs)."""
    out: dict[str, dict[str, float]] = {"hardware": {}, "frontier": {}}
    obs, const = fc.group("observed_data"), fc.group("constant_data")
    if obs is None or const is None:
        return out
    if "log10_value" in obs and "obs" in const.coords:
        out["hardware"] = dict(
            zip(map(str, const["obs"].values), map(float, obs["log10_value"].values), strict=True)
        )
    if "log10_compute" in obs and "run" in const.coords:
        out["frontier"] = dict(
            zip(map(str, const["run"].values), map(float, obs["log10_compute"].values), strict=True)
        )
    return out


@dataclass
class Changes:
    previous_id: str | None
    moved: list[dict] = field(default_factory=list)  # medians that moved
    unchanged: list[dict] = field(default_factory=list)
    data: list[str] = field(default_factory=list)  # sentences about data and inputs
    medians: list[dict] = field(default_factory=list)  # every comparable median

    @property
    def first(self) -> bool:
        return self.previous_id is None


def what_changed(current: Forecast, previous: Forecast | None, prob: float = PROB) -> Changes:
    """Medians that moved, and which data rows and inputs differ, since ``previous``."""
    if previous is None:
        return Changes(None)
    ch = Changes(previous.id)
    now_rows = {(r["scenario"], r["wall"]): r for r in summary_rows(current.forecast, prob)}
    old_rows = {(r["scenario"], r["wall"]): r for r in summary_rows(previous.forecast, prob)}
    for key, r in now_rows.items():
        if key not in old_rows:
            ch.data.append(f"new scenario/wall in this forecast: {key[0]} / {wall_label(key[1])}")
            continue
        o = old_rows[key]
        for what, tol in (("year", MOVED_YEARS), ("flop", MOVED_DEX)):
            a, b = o[what]["median"], r[what]["median"]
            if what == "flop":
                da = np.log10(a) if np.isfinite(a) else a
                db = np.log10(b) if np.isfinite(b) else b
            else:
                da, db = a, b
            same = (np.isinf(da) and np.isinf(db)) or (
                np.isfinite(da) and np.isfinite(db) and abs(db - da) < tol
            )
            item = {
                "scenario": key[0],
                "wall": key[1],
                "what": what,
                "previous": a,
                "current": b,
                "change": (b - a) if what == "year" else (db - da),
            }
            ch.medians.append(item)
            (ch.unchanged if same else ch.moved).append(item)
    for key in old_rows.keys() - now_rows.keys():
        ch.data.append(f"dropped since the previous forecast: {key[0]} / {wall_label(key[1])}")

    a, b = previous.attrs, current.attrs
    if previous.regime != current.regime:  # the walls of other plans: every number may move
        ch.data.append(
            f"plan regime: {previous.regime} → {current.regime} (the walls are searched over "
            "other plans, so every median may move for that reason alone)"
        )
    # forecasts before 2026-12-05 searched the walls every 2nd year and carry no such attribute
    step_before, step_now = wall_year_step(a), wall_year_step(b)
    if None not in (step_before, step_now) and step_before != step_now:
        grid = {1: "every year", 2: "every 2nd year", 3: "every 3rd year"}
        before, now = (grid.get(k, f"every {k}th year") for k in (step_before, step_now))
        ch.data.append(
            f"wall grid: walls searched {before} → {now} (the years between searched ones are "
            "interpolated; their walls may move for that reason alone)"
        )
    if a.get("data_hash") != b.get("data_hash"):
        ch.data.append(
            f"data changed: hash {str(a.get('data_hash', '?'))[:12]} → {str(b.get('data_hash', '?'))[:12]}"
        )
    else:
        ch.data.append(f"same data (hash {str(b.get('data_hash', '?'))[:12]})")
    for attr, what in (("hardware_rows", "hardware rows"), ("frontier_rows", "frontier-run rows")):
        if a.get(attr) != b.get(attr):
            ch.data.append(f"{what}: {a.get(attr)} → {b.get(attr)}")
    old_data, new_data = _data_rows(previous), _data_rows(current)
    for kind, label in (("hardware", "hardware data points"), ("frontier", "frontier runs")):
        o, n = old_data[kind], new_data[kind]
        added = sorted(n.keys() - o.keys())
        removed = sorted(o.keys() - n.keys())
        changed = sorted(k for k in n.keys() & o.keys() if abs(n[k] - o[k]) > 1e-9)
        for names, verb in ((added, "added"), (removed, "removed"), (changed, "changed value")):
            if names:
                shown = ", ".join(names[:8]) + (
                    f" and {len(names) - 8} more" if len(names) > 8 else ""
                )
                ch.data.append(f"{label} {verb} ({len(names)}): {shown}")
    for attr, what in (
        ("priors_text", "priors"),
        ("code_version", "code version"),
        ("seed", "seed"),
        ("scenarios", "scenarios"),
        ("draws", "draws per chain"),
        ("chains", "chains"),
        ("propagated_draws_per_chain", "propagated draws per chain"),
    ):
        if a.get(attr) != b.get(attr):
            if attr == "priors_text":
                ch.data.append(
                    f"priors changed ({a.get('priors_name', '?')} → {b.get('priors_name', '?')})"
                )
            else:
                ch.data.append(f"{what}: {a.get(attr)} → {b.get(attr)}")
    return ch


def change_sentences(ch: Changes, last_year: int) -> list[str]:
    """Plain-words lines for the moved medians."""
    out = []
    for m in ch.moved:
        label = f"{m['scenario']}, {wall_label(m['wall'])} wall"
        if m["what"] == "year":
            delta = f" ({m['change']:+.1f} years)" if np.isfinite(m["change"]) else ""
            out.append(
                f"{label}: median hit year {fmt_year(m['previous'], last_year)} → "
                f"{fmt_year(m['current'], last_year)}{delta}"
            )
        else:
            delta = f" ({m['change']:+.2f} dex)" if np.isfinite(m["change"]) else ""
            out.append(
                f"{label}: median hit FLOP {fmt_flop(m['previous'])} → "
                f"{fmt_flop(m['current'])}{delta}"
            )
    return out
