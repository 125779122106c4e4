"""Every number of the report and the deck, computed from the persisted forecast.

NumPy/xarray only, except :func:`accelerator_walls` (the per-accelerator plan search, JAX,
imported inside).  Intervals come from :mod:`forecast.query`, so the report shows the numbers
``wallcast query`` prints (hit years to one decimal, FLOP to two significant digits).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from forecast.dataset import FORECAST_FILE, open_forecast, resolve_forecast_path
from forecast.query import interval, quantiles_with_inf, summary_table

PROB = 0.8
FAN_PROBS = (0.5, 0.8, 0.95)
WALL_LABELS = {"data_movement": "data-movement", "latency": "latency"}
MOVED_YEARS = 0.05  # a median that moved by less (it prints the same to 1 decimal) is unchanged
MOVED_DEX = 0.05  # log10 FLOP: a change the 2-digit FLOP numbers show


# ----------------------------------------------------------------------------- loading


@dataclass
class Forecast:
    """A forecast read into memory: the tree, its ``/forecast`` group and root attrs."""

    path: Path
    tree: xr.DataTree
    forecast: xr.Dataset
    attrs: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.attrs.get("id", self.path.parent.name))

    @property
    def scenarios(self) -> list[str]:
        return [str(s) for s in self.forecast["scenario"].values]

    @property
    def walls(self) -> list[str]:
        return [str(w) for w in self.forecast["wall"].values]

    @property
    def last_year(self) -> int:
        return int(self.forecast["year"].values[-1])

    def group(self, name: str) -> xr.Dataset | None:
        return self.tree[name].to_dataset() if name in self.tree.children else None


def load_forecast(path: str | Path) -> Forecast:
    """Open a forecast file (or folder) and read it fully into memory."""
    path = resolve_forecast_path(path)
    tree = open_forecast(path)
    try:
        tree = tree.load()
    finally:
        tree.close()
    return from_tree(tree, path)


def from_tree(tree: xr.DataTree, path: str | Path = FORECAST_FILE) -> Forecast:
    """A :class:`Forecast` from an in-memory tree (tests and the flow, before publishing)."""
    return Forecast(Path(path), tree, tree["forecast"].to_dataset(), dict(tree.attrs))


# ----------------------------------------------------------------------------- formatting


def wall_label(wall: str) -> str:
    return WALL_LABELS.get(wall, wall.replace("_", " "))


def sci(x: float, digits: int = 1) -> str:
    """Scientific notation without '+' or zero padding: 1.2e30 (digits after the point)."""
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def fmt_year(v: float, last_year: int) -> str:
    """Fractional hit year to one decimal, as ``wallcast query``; +inf: not hit by the end."""
    return f"not by {last_year}" if math.isinf(v) else f"{v:.1f}"


def fmt_flop(v: float) -> str:
    return "not hit" if math.isinf(v) else sci(v, 1)


def calendar_year(v: float) -> int:
    """The calendar year a fractional year falls in (2029.6 -> 2029), after rounding to one
    decimal as the tables print it (2032.98 shows as 2033.0 there, so 2033 here)."""
    return int(math.floor(round(v, 1)))


def fmt_pct(p: float) -> str:
    return f"{p:.0%}"


# ----------------------------------------------------------------------------- headline


@dataclass
class Headline:
    scenario: str
    wall: str
    year: dict[str, float]
    flop: dict[str, float]
    p_hit: float
    last_year: int
    sentence: str
    detail: str
    others: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join([self.sentence, self.detail, *self.others])


def _likelihood_word(p: float) -> str:
    if p >= 0.9:
        return "very likely"
    if p >= 2 / 3:
        return "likely"
    return "more likely than not"


def wall_sentence(row: dict, last_year: int, subject: str = "Frontier training") -> str:
    """One plain-words sentence about one wall (a :func:`summary_rows` row)."""
    y, f = row["year"], row["flop"]
    p_hit = 1.0 - y["not_hit_fraction"]
    label = wall_label(row["wall"])
    pct = fmt_pct(y["prob"])
    if math.isinf(y["median"]):
        return (
            f"{subject} is unlikely to hit the {label} wall by {last_year}: "
            f"only {fmt_pct(p_hit)} of the draws reach it by then."
        )
    lo = calendar_year(y["lower"])
    hi = f"after {last_year}" if math.isinf(y["upper"]) else str(calendar_year(y["upper"]))
    return (
        f"{subject} is {_likelihood_word(p_hit)} to hit the {label} wall in "
        f"{calendar_year(y['median'])} ({pct}: {lo}–{hi}) at about {sci(f['median'], 0)} FLOP."
    )


def headline(fc: Forecast, scenario: str | None = None, prob: float = PROB) -> Headline:
    """The answer in one sentence: the wall hit first (earliest median) in ``scenario``."""
    scenario = fc.scenarios[0] if scenario is None else scenario
    rows = [r for r in summary_rows(fc.forecast, prob) if r["scenario"] == scenario]
    rows.sort(key=lambda r: (r["year"]["median"], fc.walls.index(r["wall"])))
    first = rows[0]
    y, f = first["year"], first["flop"]
    p_hit = 1.0 - y["not_hit_fraction"]
    detail = (
        f"In the {scenario} scenario the median hit year is {fmt_year(y['median'], fc.last_year)} "
        f"({fmt_pct(prob)} credible interval {fmt_year(y['lower'], fc.last_year)} to "
        f"{fmt_year(y['upper'], fc.last_year)}), at {fmt_flop(f['median'])} FLOP of training "
        f"compute; {fmt_pct(p_hit)} of the draws hit it by {fc.last_year}."
    )
    others = [
        wall_sentence(r, fc.last_year, "It").replace("It is", "The frontier is") for r in rows[1:]
    ]
    return Headline(
        scenario=scenario,
        wall=first["wall"],
        year=y,
        flop=f,
        p_hit=p_hit,
        last_year=fc.last_year,
        sentence=wall_sentence(first, fc.last_year),
        detail=detail,
        others=others,
    )


# ----------------------------------------------------------------------------- tables


def summary_rows(forecast: xr.Dataset, prob: float = PROB) -> list[dict]:
    """:func:`forecast.query.summary_table` rows with ``p_hit`` (share hit by the last year)."""
    rows = summary_table(forecast, prob)
    for r in rows:
        r["p_hit"] = 1.0 - r["year"]["not_hit_fraction"]
    return rows


SUMMARY_HEADER = [
    "scenario",
    "wall",
    "hit year, median",
    "hit year, 80% interval",
    "hit FLOP, median",
    "hit FLOP, 80% interval",
    "P(hit by end)",
]


def summary_table_cells(rows: list[dict], last_year: int) -> tuple[list[str], list[list[str]]]:
    """Header and string cells of the per-scenario, per-wall table (report and deck)."""
    pct = fmt_pct(rows[0]["year"]["prob"]) if rows else fmt_pct(PROB)
    header = [h.replace("80%", pct) for h in SUMMARY_HEADER]
    header[-1] = f"P(hit by {last_year})"
    body = []
    for r in rows:
        y, f = r["year"], r["flop"]
        body.append(
            [
                r["scenario"],
                wall_label(r["wall"]),
                fmt_year(y["median"], last_year),
                f"{fmt_year(y['lower'], last_year)} – {fmt_year(y['upper'], last_year)}",
                fmt_flop(f["median"]),
                f"{fmt_flop(f['lower'])} – {fmt_flop(f['upper'])}",
                fmt_pct(r["p_hit"]),
            ]
        )
    return header, body


def band_quantiles(da: xr.DataArray, probs=FAN_PROBS) -> dict[str, np.ndarray]:
    """Per-year median and equal-tailed bands over chain and draw (``lo50``, ``hi50``, ...)."""
    dims = [d for d in ("chain", "draw") if d in da.dims]
    stacked = da.stack(sample=dims).transpose(..., "sample").values
    qs = [0.5]
    for p in probs:
        qs += [(1 - p) / 2, (1 + p) / 2]
    values = np.stack([quantiles_with_inf(row, qs) for row in stacked])
    out = {"median": values[:, 0]}
    for i, p in enumerate(probs):
        key = f"{round(p * 100)}"
        out[f"lo{key}"] = values[:, 1 + 2 * i]
        out[f"hi{key}"] = values[:, 2 + 2 * i]
    return out


# ----------------------------------------------------------------------------- what changed


def previous_forecast_path(path: str | Path) -> Path | None:
    """The published forecast before ``path`` (by id order in its ``forecasts/`` folder)."""
    path = resolve_forecast_path(path).resolve()
    here = path.parent
    folder = here.parent
    if not folder.is_dir():
        return None
    ids = sorted(
        p.name
        for p in folder.iterdir()
        if p.is_dir() and not p.name.startswith(".") and (p / FORECAST_FILE).exists()
    )
    earlier = [i for i in ids if i < here.name]
    return folder / earlier[-1] / FORECAST_FILE if earlier else None


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


# ----------------------------------------------------------------------------- provenance


def provenance(fc: Forecast) -> list[tuple[str, str]]:
    a = fc.attrs
    rows = [
        ("forecast id", fc.id),
        ("created", str(a.get("created", "?"))),
        ("data hash", str(a.get("data_hash", "?"))),
        ("priors", f"{a.get('priors_name', '?')} ({a.get('priors_path', '?')})"),
        ("scenarios", ", ".join(fc.scenarios)),
        ("code version", str(a.get("code_version", "?"))),
        ("seed", str(a.get("seed", "?"))),
        (
            "draws",
            f"{a.get('chains', fc.forecast.sizes.get('chain', '?'))} chains × "
            f"{a.get('draws', fc.forecast.sizes.get('draw', '?'))} draws",
        ),
        (
            "hardware rows / frontier runs",
            f"{a.get('hardware_rows', '?')} / {a.get('frontier_rows', '?')}",
        ),
    ]
    return rows


# ----------------------------------------------------------------------------- uncertainty drivers

DRIVER_METHOD = (
    "Spearman rank correlation, over the draws of the {scenario} scenario, between each "
    "uncertain input (sampled priors and fitted trend slopes) and the hit year of the "
    "{wall} wall (draws that never hit rank last). Positive: a larger input delays the wall."
)


def _rank(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x, method="average")


def uncertainty_drivers(
    fc: Forecast, wall: str | None = None, scenario: str | None = None, top: int = 8
) -> tuple[list[tuple[str, float]], str]:
    """Inputs ranked by |rank correlation| with the hit year; and the method in words.

    Uses ``/forecast_inputs`` (the sampled priors) and, when its draws line up with the
    forecast's, the fitted trend slopes of ``/posterior`` (the first scenario was propagated
    from that fit).
    """
    scenario = fc.scenarios[0] if scenario is None else scenario
    wall = fc.walls[0] if wall is None else wall
    target = fc.forecast["hit_year"].sel(scenario=scenario, wall=wall).values.ravel()
    candidates: dict[str, np.ndarray] = {}
    inputs = fc.group("forecast_inputs")
    if inputs is not None:
        sub = inputs.sel(scenario=scenario) if "scenario" in inputs.dims else inputs
        for name, da in sub.data_vars.items():
            candidates[str(name).replace("__", ".")] = da.transpose("chain", "draw").values.ravel()
    post = fc.group("posterior")
    if post is not None and scenario == fc.scenarios[0]:
        shape = fc.forecast["hit_year"].sel(scenario=scenario, wall=wall).shape
        if "slope" in post and "metric" in post["slope"].dims:
            for metric in post["metric"].values:
                da = post["slope"].sel(metric=metric).transpose("chain", "draw")
                if da.shape == shape:
                    candidates[f"trend slope: {metric}"] = da.values.ravel()
        if "frontier_slope" in post:
            da = post["frontier_slope"].transpose("chain", "draw")
            if da.shape == shape:
                candidates["trend slope: frontier compute"] = da.values.ravel()
    ranked_target = _rank(target)
    out = []
    for name, values in candidates.items():
        if values.size != target.size or np.ptp(values) == 0:
            continue
        rho = float(np.corrcoef(_rank(values), ranked_target)[0, 1])
        if np.isfinite(rho):
            out.append((name, rho))
    out.sort(key=lambda t: -abs(t[1]))
    method = DRIVER_METHOD.format(scenario=scenario, wall=wall_label(wall))
    return out[:top], method


# ----------------------------------------------------------------------------- assumptions


def assumptions(priors_text: str) -> list[dict[str, str]]:
    """Every parameter of the priors with its distribution in words and its source."""
    from forecast.priors import parse_prior

    data = tomllib.loads(priors_text or "")
    out = []

    def walk(prefix: str, table: dict) -> None:
        for key, value in table.items():
            if not isinstance(value, dict):
                continue
            full = f"{prefix}.{key}" if prefix else key
            if "source" in value:
                try:
                    described = parse_prior(full, value).describe()
                except Exception:  # a parameter the registry does not know: show it raw
                    described = ", ".join(
                        f"{k} = {v}" for k, v in value.items() if k not in ("source", "note")
                    )
                out.append({"key": full, "prior": described, "source": str(value["source"])})
            elif full != "meta":
                walk(full, value)

    walk("", data)
    return out


# ----------------------------------------------------------------------------- not modelled

NOT_MODELLED = [
    "Parallelism the plan search does not consider: FSDP / ZeRO-3 weight sharding (only ZeRO-1 "
    "optimizer-state sharding is modelled), sequence and context parallelism, expert "
    "parallelism, and interleaved or zero-bubble pipeline schedules. Any of these can move "
    "the walls, mostly later.",
    "Model architecture: dense transformers only; mixture-of-experts models (less compute per "
    "parameter, all-to-all traffic) and long-context attention costs are not modelled.",
    "Hardware: one frontier accelerator per year on smooth trends; one-off jumps beyond the "
    "fitted residuals, new network topologies, optical interconnects and in-network reduction "
    "are not modelled. Scale-up domains grow at a sampled rate from 72 in 2025.",
    "Training run: a fixed-length run (sampled duration) with the critical batch size from the "
    "scaling priors; asynchronous or local-SGD style training, which relaxes the latency wall, "
    "is not modelled.",
    "Frontier compute follows the fitted log-linear trend of the largest runs; economic limits "
    "(power, chips, money) that could bend that trend are outside the model, and so is the "
    "possibility that developers stop scaling single runs.",
    "Structural uncertainty is not in the intervals: they cover the priors and the trend fit, "
    "not the chance that the model of step time itself is wrong.",
]


def _validation_leaves_out(text: str) -> list[str]:
    """The bullets of the 'leaves out' / 'not include' section of docs/validation.md."""
    lines = text.splitlines()
    start = next(
        (
            i
            for i, line in enumerate(lines)
            if line.startswith("#")
            and ("leaves out" in line.lower() or "not include" in line.lower())
        ),
        None,
    )
    if start is None:
        return []
    items: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        stripped = line.strip()
        if stripped.startswith(("* ", "- ")):
            items.append(stripped[2:])
        elif stripped and items:
            items[-1] += " " + stripped
    return [" ".join(i.replace("**", "").split()) for i in items]


def not_modelled(repo_root: Path | None = None) -> tuple[list[str], list[str]]:
    """What uncertainty the model leaves out, and the documents it was read from.

    The parallelism and model-detail items come from docs/validation.md's 'What the model
    leaves out' when that file exists (else from :data:`NOT_MODELLED`); the items on hardware,
    the frontier trend and structural uncertainty are always added.
    """
    root = Path(__file__).resolve().parents[2] if repo_root is None else repo_root
    sources = ["forecast/model/plan.py (docstring)"]
    validation = root / "docs" / "validation.md"
    from_doc = _validation_leaves_out(validation.read_text()) if validation.exists() else []
    if from_doc:
        sources.append("docs/validation.md")
        return from_doc + NOT_MODELLED[2:], sources
    return list(NOT_MODELLED), sources


# ----------------------------------------------------------------------------- accelerators


CURVE_ACCELERATORS = (
    "A100 SXM4 80GB",
    "H100 SXM5",
    "GB200 NVL72",
    "GB300 NVL72",
    "MI355X",
    "TPU7x",
    "Rubin",
)


@dataclass
class AcceleratorWalls:
    rows: list[dict] = field(default_factory=list)
    curves: list[dict] = field(default_factory=list)
    duration_days: float = 90.0
    precision: str = "bf16"
    threshold: float = 0.8


def accelerator_walls(
    names: list[str] | None = None,
    curve_names: list[str] | tuple[str, ...] | None = CURVE_ACCELERATORS,
    *,
    duration_days: float = 90.0,
    precision: str = "bf16",
    hardware: Path | None = None,
    curve_step: float = 0.05,
    log10_flop_range: tuple[float, float] = (22.0, 33.0),
) -> AcceleratorWalls:
    """Walls of each accelerator (as ``wallcast walls``) and utilization curves of a few (JAX)."""
    from forecast.accelerators import bytes_per_number, hardware_from_accelerator
    from forecast.hardware import get_accelerator, load_hardware
    from forecast.model.params import assumptions_with
    from forecast.model.search import UTILIZATION_THRESHOLD, find_walls, utilization_curve

    df = load_hardware(hardware)
    names = [str(n) for n in df["name"].tolist()] if names is None else list(names)
    a = assumptions_with(duration_days=duration_days, bytes_per_number=bytes_per_number(precision))
    out = AcceleratorWalls(duration_days=duration_days, precision=precision)
    out.threshold = UTILIZATION_THRESHOLD
    accs = {}
    for name in names:
        acc = get_accelerator(df, name)
        accs[acc.name] = acc
        hw, notes = hardware_from_accelerator(acc, precision)
        w = find_walls(hw, a)
        out.rows.append(
            {
                "accelerator": acc.name,
                "release_year": float(acc.release_year),
                "max_utilization": float(w.max_utilization),
                "data_movement_log10_flop": float(w.data_movement_wall_log10_flop),
                "latency_log10_flop": float(w.latency_wall_log10_flop),
                "notes": list(notes),
                "hw": hw,
            }
        )
    lo, hi = log10_flop_range
    grid = np.round(np.arange(lo, hi + 1e-9, curve_step), 4)
    for want in curve_names or ():
        try:
            acc = get_accelerator(df, want)
        except Exception:  # not in this table
            continue
        row = next((r for r in out.rows if r["accelerator"] == acc.name), None)
        hw = row["hw"] if row else hardware_from_accelerator(acc, precision)[0]
        c = utilization_curve(hw, a, grid)
        util = np.where(np.asarray(c.feasible), np.asarray(c.utilization), np.nan)
        if row is None:
            w = find_walls(hw, a)
            dm, lat = float(w.data_movement_wall_log10_flop), float(w.latency_wall_log10_flop)
        else:
            dm, lat = row["data_movement_log10_flop"], row["latency_log10_flop"]
        out.curves.append(
            {"accelerator": acc.name, "log10_flop": grid, "utilization": util, "dm": dm, "lat": lat}
        )
    for r in out.rows:
        r.pop("hw", None)
    return out


def accelerator_table_cells(aw: AcceleratorWalls) -> tuple[list[str], list[list[str]]]:
    header = ["accelerator", "max utilization", "data-movement wall (FLOP)", "latency wall (FLOP)"]

    def flop(v: float) -> str:
        if math.isinf(v):
            return "beyond 1e40" if v > 0 else "below 1e20"
        return sci(10.0**v, 1)

    body = [
        [
            r["accelerator"] + (" *" if r["notes"] else ""),
            f"{r['max_utilization']:.2f}",
            flop(r["data_movement_log10_flop"]),
            flop(r["latency_log10_flop"]),
        ]
        for r in aw.rows
    ]
    return header, body


def hit_year_interval(fc: Forecast, wall: str, scenario: str, prob: float = PROB) -> dict:
    """Interval of the hit year straight from the draws (for cross-checks)."""
    return interval(fc.forecast["hit_year"].sel(wall=wall, scenario=scenario).values, prob)


# ----------------------------------------------------------------------------- sensitivity (Sobol)

SOBOL_TOP = 8


def _fmt_input_value(v: float) -> str:
    """An input's prior percentile: 3 significant digits, scientific when large or small."""
    if not math.isfinite(v):
        return str(v)
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return sci(v, 1)
    return f"{v:.3g}"


def _ci(v: float, lo: float, hi: float) -> str:
    return f"{v:.2f} [{lo:.2f}, {hi:.2f}]"


@dataclass
class SobolTarget:
    """Ranked Sobol indices of one target (e.g. ``data_movement_hit_year``), top first."""

    target: str
    wall: str
    baseline: float
    capped_fraction: float
    inputs: list[str]
    first_order: np.ndarray
    first_order_low: np.ndarray
    first_order_high: np.ndarray
    total: np.ndarray
    total_low: np.ndarray
    total_high: np.ndarray
    tornado_low: np.ndarray
    tornado_high: np.ndarray
    input_p10: np.ndarray
    input_p90: np.ndarray


@dataclass
class SobolDrivers:
    """The ``sensitivity`` group of a forecast, read for the report: one entry per wall's
    hit year, inputs ranked by total index."""

    targets: list[SobolTarget]
    samples: int | None
    evaluations: int | None
    bootstrap: int | None
    prior_set: str

    @property
    def method(self) -> str:
        n = "?" if self.samples is None else f"{self.samples:,}"
        evals = "" if self.evaluations is None else f", {self.evaluations:,} model evaluations"
        boot = (
            "95% bootstrap intervals"
            if self.bootstrap is None
            else f"95% bootstrap intervals from {self.bootstrap} resamples"
        )
        return (
            f"Sobol total-order indices, N = {n} base samples{evals} (Saltelli design; "
            f"first order: Saltelli 2010, total: Jansen 1999), {boot}. Inputs sampled from their "
            f"priors ({self.prior_set or 'forecast priors'}); whiskers: 95% intervals."
        )

    def target(self, wall: str) -> SobolTarget | None:
        return next((t for t in self.targets if t.wall == wall), None)


def sobol_drivers(fc: Forecast, top: int | None = SOBOL_TOP) -> SobolDrivers | None:
    """Inputs ranked by their total Sobol index for the hit year of each wall, from the
    forecast's ``sensitivity`` group (None when it has none)."""
    ds = fc.group("sensitivity")
    if ds is None or "total" not in ds or "target" not in ds.dims:
        return None
    targets = [str(t) for t in ds["target"].values]
    walls = fc.walls + [
        t.removesuffix("_hit_year")
        for t in targets
        if t.endswith("_hit_year") and t.removesuffix("_hit_year") not in fc.walls
    ]
    out = []
    for wall in walls:
        name = f"{wall}_hit_year"
        if name not in targets:
            continue
        sub = ds.sel(target=name)
        total = np.asarray(sub["total"].values, float)
        order = np.argsort(-np.nan_to_num(total, nan=-np.inf), kind="stable")
        if top is not None:
            order = order[:top]

        def get(var: str, sub=sub, order=order) -> np.ndarray:
            if var not in sub:
                return np.full(order.size, np.nan)
            return np.asarray(sub[var].values, float)[order]

        out.append(
            SobolTarget(
                target=name,
                wall=wall,
                baseline=float(sub["baseline"]) if "baseline" in sub else float("nan"),
                capped_fraction=(
                    float(sub["capped_fraction"]) if "capped_fraction" in sub else float("nan")
                ),
                inputs=[str(x) for x in np.asarray(sub["input"].values)[order]],
                first_order=get("first_order"),
                first_order_low=get("first_order_low"),
                first_order_high=get("first_order_high"),
                total=get("total"),
                total_low=get("total_low"),
                total_high=get("total_high"),
                tornado_low=get("tornado_low"),
                tornado_high=get("tornado_high"),
                input_p10=get("input_p10"),
                input_p90=get("input_p90"),
            )
        )
    if not out:
        return None
    a = ds.attrs

    def attr_int(key: str) -> int | None:
        v = a.get(key)
        return None if v is None else int(v)

    return SobolDrivers(
        targets=out,
        samples=attr_int("sensitivity_samples"),
        evaluations=attr_int("sensitivity_evaluations"),
        bootstrap=attr_int("sensitivity_bootstrap"),
        prior_set=str(a.get("sensitivity_prior_set", "")),
    )


TORNADO_HEADER = [
    "wall",
    "rank",
    "input",
    "input p10 – p90",
    "first order [95%]",
    "total [95%]",
    "hit year at input p10 → p90",
    "swing (years)",
]


def tornado_table_cells(sd: SobolDrivers) -> tuple[list[str], list[list[str]]]:
    """Per wall's hit year, the ranked inputs with indices and the one-at-a-time swing."""
    body = []
    for t in sd.targets:
        for i, name in enumerate(t.inputs):
            lo, hi = t.tornado_low[i], t.tornado_high[i]
            body.append(
                [
                    wall_label(t.wall),
                    str(i + 1),
                    name,
                    f"{_fmt_input_value(t.input_p10[i])} – {_fmt_input_value(t.input_p90[i])}",
                    _ci(t.first_order[i], t.first_order_low[i], t.first_order_high[i]),
                    _ci(t.total[i], t.total_low[i], t.total_high[i]),
                    f"{lo:.1f} → {hi:.1f}",
                    f"{hi - lo:+.1f}",
                ]
            )
    return list(TORNADO_HEADER), body


def sobol_sentences(sd: SobolDrivers, last_year: int, top: int = 3) -> list[str]:
    """One plain-words line per wall: its top inputs by total index."""
    out = []
    for t in sd.targets:
        ranked = ", ".join(f"{name} ({t.total[i]:.2f})" for i, name in enumerate(t.inputs[:top]))
        line = (
            f"{wall_label(t.wall)} wall, hit year (all inputs at their medians: "
            f"{t.baseline:.1f}): largest total indices {ranked}."
        )
        if math.isfinite(t.capped_fraction) and t.capped_fraction >= 0.005:
            line += (
                f" {fmt_pct(t.capped_fraction)} of the samples do not hit it by {last_year} "
                f"(capped at {last_year + 1})."
            )
        out.append(line)
    return out


# ----------------------------------------------------------------------------- backtest


@dataclass
class Backtest:
    """The ``backtest`` group of a forecast, read for the report (pooled metric ``all``)."""

    ds: xr.Dataset
    origins: list[int]
    pooled: str  # the pooled metric label in the group ("all")

    def row(self, origin: int, metric: str | None = None) -> dict[str, Any]:
        s = self.ds.sel(origin=origin, metric=metric or self.pooled)

        def num(name: str) -> float:
            return float(s[name]) if name in s else float("nan")

        return {
            "origin": int(origin),
            "metric": str(metric or self.pooled),
            "n_train": int(num("n_train")) if math.isfinite(num("n_train")) else None,
            "n_held_out": int(num("n_held_out")) if math.isfinite(num("n_held_out")) else None,
            "coverage_50": num("coverage_50"),
            "coverage_80": num("coverage_80"),
            "coverage_95": num("coverage_95"),
            "log_score": num("log_score"),
        }

    @property
    def metrics(self) -> list[str]:
        return [str(m) for m in self.ds["metric"].values if str(m) != self.pooled]

    def curve(self, origin: int) -> tuple[np.ndarray, np.ndarray] | None:
        if "coverage_curve" not in self.ds or "prob" not in self.ds.coords:
            return None
        c = self.ds["coverage_curve"].sel(origin=origin, metric=self.pooled).values
        return np.asarray(self.ds["prob"].values, float), np.asarray(c, float)

    def pit(self, origin: int) -> np.ndarray:
        if "pit" not in self.ds:
            return np.array([])
        v = np.asarray(self.ds["pit"].sel(origin=origin).values, float)
        return v[np.isfinite(v)]

    @property
    def settings(self) -> str:
        a = self.ds.attrs
        if a.get("backtest_chains") and a.get("backtest_draws"):
            return f"{a['backtest_chains']} chains × {a['backtest_draws']} draws per origin"
        return "settings not recorded"


def backtest_summary(fc: Forecast) -> Backtest | None:
    ds = fc.group("backtest")
    if ds is None or "coverage_80" not in ds or "origin" not in ds.dims:
        return None
    metrics = [str(m) for m in ds["metric"].values]
    pooled = "all" if "all" in metrics else metrics[-1]
    return Backtest(ds, [int(o) for o in ds["origin"].values], pooled)


def _pct_or_dash(v: float | None) -> str:
    return "–" if v is None or not math.isfinite(v) else fmt_pct(v)


BACKTEST_HEADER = [
    "origin",
    "trained on",
    "held out",
    "50% interval covers",
    "80% interval covers",
    "95% interval covers",
    "log score (per dex)",
]


def backtest_table_cells(
    bt: Backtest, per_metric: bool = False
) -> tuple[list[str], list[list[str]]]:
    """Coverage per origin (pooled over metrics), or per origin and metric."""
    header = list(BACKTEST_HEADER)
    if per_metric:
        header.insert(1, "metric")
    body = []
    for origin in bt.origins:
        for metric in bt.metrics if per_metric else [bt.pooled]:
            r = bt.row(origin, metric)
            ls = r["log_score"]
            cells = [
                str(origin),
                "–" if r["n_train"] is None else str(r["n_train"]),
                "–" if r["n_held_out"] is None else str(r["n_held_out"]),
                _pct_or_dash(r["coverage_50"]),
                _pct_or_dash(r["coverage_80"]),
                _pct_or_dash(r["coverage_95"]),
                f"{ls:.2f}" if math.isfinite(ls) else "–",
            ]
            if per_metric:
                cells.insert(1, metric)
            body.append(cells)
    return header, body


def backtest_sentence(bt: Backtest) -> str:
    """The 80% coverage per origin in words."""
    parts = []
    for origin in bt.origins:
        r = bt.row(origin)
        parts.append(
            f"{_pct_or_dash(r['coverage_80'])} of {r['n_held_out']} held-out values "
            f"(origin {origin})"
        )
    return "The 80% predictive intervals cover " + "; ".join(parts) + "."
