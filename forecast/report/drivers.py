"""What drives the uncertainty, and can the trends be trusted: the report's analysis numbers.

* :func:`uncertainty_drivers`: Spearman rank correlation of each sampled input with a hit year,
  from the forecast's own draws;
* :func:`sobol_drivers`: the Sobol indices and tornado of the ``sensitivity`` group
  (``wallcast sensitivity`` / ``analyse``);
* :func:`backtest_summary`: the coverage of the ``backtest`` group (``wallcast backtest``).

NumPy/xarray (and SciPy's ``rankdata``) only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr
from scipy.stats import rankdata

from forecast.priors.registry import PARAMETERS, input_unit
from forecast.queries.analyses import same_data_origins
from forecast.queries.formatting import fmt_pct, fmt_quantity, sci
from forecast.queries.headline import Forecast, wall_label
from forecast.report.executive import reader_label
from forecast.report.fitted_inputs import input_cell

# ----------------------------------------------------------------------------- uncertainty drivers

DRIVER_METHOD = (
    "Spearman rank correlation, over the draws of the {scenario} scenario, between each "
    "uncertain input (prior draws, posterior draws of the inputs fitted to data, and fitted "
    "trend slopes) and the hit year of the "
    "{wall} wall (draws that never hit rank last). Positive: a larger input delays the wall."
)


def _rank(x: np.ndarray) -> np.ndarray:

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


# ----------------------------------------------------------------------------- sensitivity (Sobol)

SOBOL_TOP = 8

METRIC_LABELS = {
    "flops": ("Peak dense 16-bit compute", "FLOP/s"),
    "hbm_bandwidth": ("HBM bandwidth", "bytes/s"),
    "hbm_capacity": ("HBM capacity", "bytes"),
    "scaleup_bandwidth": ("Scale-up bandwidth", "bytes/s per direction"),
    "scaleout_bandwidth": ("Scale-out bandwidth", "bytes/s per direction"),
}
"""The reader's name and unit of each hardware metric the trends fit (charts and tables)."""


def _fmt_input_value(v: float) -> str:
    """An input's prior percentile: 3 significant digits, scientific when large or small."""
    if not math.isfinite(v):
        return str(v)
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return sci(v, 1)
    return f"{v:.3g}"


def _input_range(key: str, p10: float, p90: float) -> str:
    """'18M – 30M tokens': an input's 10th-90th percentile through the one formatter, with its
    unit (a key outside the registry: three significant digits)."""
    if key not in PARAMETERS or not (math.isfinite(p10) and math.isfinite(p90)):
        return f"{_fmt_input_value(p10)} – {_fmt_input_value(p90)}"
    unit = input_unit(key)
    return f"{fmt_quantity(p10, unit, with_unit=False)} – {fmt_quantity(p90, unit)}"


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
    kinds: list[str] = field(default_factory=list)  # where each input is drawn from ([] unknown)


@dataclass
class SobolDrivers:
    """The ``sensitivity`` group of a forecast, read for the report: one entry per wall's
    hit year, inputs ranked by total index."""

    targets: list[SobolTarget]
    samples: int | None
    evaluations: int | None
    bootstrap: int | None
    prior_set: str
    fitted: list[str] = field(default_factory=list)  # inputs drawn from the joint posterior

    @property
    def method(self) -> str:
        n = "?" if self.samples is None else f"{self.samples:,}"
        evals = "" if self.evaluations is None else f", {self.evaluations:,} model evaluations"
        boot = (
            "95% bootstrap intervals"
            if self.bootstrap is None
            else f"95% bootstrap intervals from {self.bootstrap} resamples"
        )
        priors = self.prior_set or "forecast priors"
        if self.fitted:
            sampled = (
                f"The joint model's ranking: the {len(self.fitted)} inputs the forecast fitted "
                "to data (scaling laws, utilization, domain growth and the trends; 'posterior' "
                "in the table's last column) are drawn from its posterior, each law's inputs "
                f"jointly; the others from their priors ({priors})"
            )
        else:
            sampled = f"Inputs sampled from their priors ({priors})"
        return (
            f"Sobol total-order indices, N = {n} base samples{evals} (Saltelli design; "
            f"first order: Saltelli 2010, total: Jansen 1999), {boot}. {sampled}; "
            "whiskers: 95% intervals."
        )

    def target(self, wall: str) -> SobolTarget | None:
        return next((t for t in self.targets if t.wall == wall), None)


SENSITIVITY_GROUP = "sensitivity"
"""The ranking of the forecast's own inputs: fitted ones from its posterior."""
PRIOR_SENSITIVITY_GROUP = "sensitivity_prior"
"""The priors-only ranking (every input from its prior), kept for the before -> after."""


def sensitivity_regime_note(fc: Forecast) -> str:
    """What a realistic forecast's sensitivity analysis is about: the walls of the paper's plans
    (``wallcast analyse`` runs the paper regime's fast path; the realistic one costs ~9x per
    evaluation). Empty for a paper forecast."""
    ds = fc.group(SENSITIVITY_GROUP)
    if fc.regime == "paper" or ds is None:
        return ""
    if ds.attrs.get("sensitivity_tornado_regime", "paper") == fc.regime:
        return (
            "The Sobol indices rank the inputs of the paper's idealized walls (its fast path, "
            "over the same inputs; the launchable-plan path would cost ~9x per evaluation); the "
            "tornado, and the signposts and levers read from it, are the launchable-plan walls "
            "this forecast leads with."
        )
    return (
        "The sensitivity analysis (Sobol indices and tornado) ranks the inputs of the paper's "
        "idealized walls (its fast path, over the same inputs), not of the launchable-plan walls "
        "this forecast leads with: they share every input, but the two rankings are not checked "
        "to be the same."
    )


def sobol_drivers(
    fc: Forecast, top: int | None = SOBOL_TOP, group: str = SENSITIVITY_GROUP
) -> SobolDrivers | None:
    """Inputs ranked by their total Sobol index for the hit year of each wall, from the
    forecast's ``sensitivity`` group (or ``group``; None when it has none)."""
    ds = fc.group(group)
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
                kinds=(
                    [str(k) for k in np.asarray(sub["input_kind"].values)[order]]
                    if "input_kind" in sub
                    else []
                ),
            )
        )
    if not out:
        return None
    a = ds.attrs

    def attr_int(key: str) -> int | None:
        v = a.get(key)
        return None if v is None else int(v)

    kinds = (
        [str(k) for k in np.asarray(ds["input_kind"].values)]
        if "input_kind" in ds
        else ["prior"] * ds.sizes["input"]  # analyses before the joint model: every prior
    )
    return SobolDrivers(
        targets=out,
        samples=attr_int("sensitivity_samples"),
        evaluations=attr_int("sensitivity_evaluations"),
        bootstrap=attr_int("sensitivity_bootstrap"),
        prior_set=str(a.get("sensitivity_prior_set", "")),
        fitted=[
            str(name)
            for name, kind in zip(np.asarray(ds["input"].values), kinds, strict=True)
            if kind == "posterior"
        ],
    )


BEFORE_AFTER_INPUT = "scaling.batch_tokens_2024"
"""The input whose index the report compares before and after the joint model (it
held half the data-movement hit year's variance when every input came from its prior)."""


@dataclass
class BeforeAfter:
    """One input's total Sobol index for one wall's hit year: priors only -> joint posterior."""

    key: str
    wall: str
    before: tuple[float, float, float]  # total index, 95% low, high
    after: tuple[float, float, float]
    rank_before: int
    rank_after: int

    @property
    def sentence(self) -> str:
        b, a = self.before, self.after
        return (
            f"{wall_label(self.wall)} wall: total index of {self.key} "
            f"{_ci(*b)} (rank {self.rank_before}) with every input from its prior → "
            f"{_ci(*a)} (rank {self.rank_after}) with the fitted inputs from the posterior."
        )


def sobol_before_after(fc: Forecast, key: str = BEFORE_AFTER_INPUT) -> list[BeforeAfter]:
    """``key``'s total index per wall's hit year in the priors-only ranking
    (``sensitivity_prior``) and in the forecast's (``sensitivity``); empty unless both rank it."""
    after = sobol_drivers(fc, top=None)
    before = sobol_drivers(fc, top=None, group=PRIOR_SENSITIVITY_GROUP)
    if after is None or before is None:
        return []
    out = []
    for ta in after.targets:
        tb = before.target(ta.wall)
        if tb is None or key not in ta.inputs or key not in tb.inputs:
            continue
        i, j = tb.inputs.index(key), ta.inputs.index(key)
        out.append(
            BeforeAfter(
                key,
                ta.wall,
                (float(tb.total[i]), float(tb.total_low[i]), float(tb.total_high[i])),
                (float(ta.total[j]), float(ta.total_low[j]), float(ta.total_high[j])),
                i + 1,
                j + 1,
            )
        )
    return out


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
"""Columns of the tornado table; "drawn from" (prior, posterior, scenario) is added when the
sensitivity group records where each input came from."""


def tornado_table_cells(sd: SobolDrivers) -> tuple[list[str], list[list[str]]]:
    """Per wall's hit year, the ranked inputs with indices and the one-at-a-time swing."""
    header = list(TORNADO_HEADER)
    kinds = any(t.kinds for t in sd.targets)
    if kinds:
        header.append("drawn from")
    body = []
    for t in sd.targets:
        for i, name in enumerate(t.inputs):
            lo, hi = t.tornado_low[i], t.tornado_high[i]
            body.append(
                [
                    wall_label(t.wall),
                    str(i + 1),
                    input_cell(name),
                    _input_range(name, t.input_p10[i], t.input_p90[i]),
                    _ci(t.first_order[i], t.first_order_low[i], t.first_order_high[i]),
                    _ci(t.total[i], t.total_low[i], t.total_high[i]),
                    f"{lo:.1f} → {hi:.1f}",
                    f"{hi - lo:+.1f}",
                ]
            )
            if kinds:
                body[-1].append(t.kinds[i] if i < len(t.kinds) else "prior")
    return header, body


def sobol_sentences(sd: SobolDrivers, last_year: int, top: int = 3) -> list[str]:
    """One plain-words line per wall: its top inputs by total index."""
    out = []
    for t in sd.targets:
        ranked = ", ".join(
            f"{reader_label(name)} ({t.total[i]:.2f})" for i, name in enumerate(t.inputs[:top])
        )
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
    origins: list[int]  # one per distinct backtest: the first origin of each group
    pooled: str  # the pooled metric label in the group ("all")
    same_data: dict[int, list[int]] = field(default_factory=dict)  # origin -> later twins

    def label(self, origin: int) -> str:
        """'2018', or '2018 = 2020' when later origins trained and scored on the same data."""
        return " = ".join(str(o) for o in [origin, *self.same_data.get(origin, [])])

    @property
    def twins_note(self) -> str:
        """One sentence naming the origins counted once, '' when every origin is distinct."""
        pairs = [self.label(o) for o in self.origins if self.same_data.get(o)]
        if not pairs:
            return ""
        return (
            "Origins " + "; ".join(pairs) + ": no accelerator in the data was released between "
            "them, so "
            "they train and score on the same rows and count as one backtest."
        )

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
        return backtest_settings(self.ds.attrs)


def backtest_settings(attrs: dict) -> str:
    """Chains x draws per origin of a stored backtest group (hardware or frontier compute)."""
    if attrs.get("backtest_chains") and attrs.get("backtest_draws"):
        return f"{attrs['backtest_chains']} chains × {attrs['backtest_draws']} draws per origin"
    return "settings not recorded"


def backtest_summary(fc: Forecast) -> Backtest | None:
    ds = fc.group("backtest")
    if ds is None or "coverage_80" not in ds or "origin" not in ds.dims:
        return None
    metrics = [str(m) for m in ds["metric"].values]
    pooled = "all" if "all" in metrics else metrics[-1]
    groups = same_data_origins(ds)
    return Backtest(ds, [g[0] for g in groups], pooled, {g[0]: g[1:] for g in groups if g[1:]})


def pct_or_dash(v: float | None) -> str:
    """A coverage as a whole percentage, '–' when missing (None or NaN)."""
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
                bt.label(origin),
                "–" if r["n_train"] is None else str(r["n_train"]),
                "–" if r["n_held_out"] is None else str(r["n_held_out"]),
                pct_or_dash(r["coverage_50"]),
                pct_or_dash(r["coverage_80"]),
                pct_or_dash(r["coverage_95"]),
                f"{ls:.2f}" if math.isfinite(ls) else "–",
            ]
            if per_metric:
                cells.insert(1, METRIC_LABELS.get(metric, (metric,))[0])
            body.append(cells)
    return header, body


def backtest_sentence(bt: Backtest) -> str:
    """The 80% coverage per origin in words."""
    parts = []
    for origin in bt.origins:
        r = bt.row(origin)
        parts.append(
            f"{pct_or_dash(r['coverage_80'])} of {r['n_held_out']} held-out values "
            f"(origin {bt.label(origin)})"
        )
    twins = f" {bt.twins_note}" if bt.twins_note else ""
    return "The 80% predictive intervals cover " + "; ".join(parts) + "." + twins
