"""The headline, summary and provenance numbers of the report and the deck, from the forecast.

NumPy/xarray only (no JAX).  Intervals come from :mod:`forecast.queries.answers`, so the report
shows the numbers ``wallcast query`` prints (hit years to one decimal, FLOP to two significant
digits); numbers are written for people by :mod:`forecast.queries.formatting`.  The report's
other numbers live in :mod:`forecast.report`: :mod:`~forecast.report.changes` (what moved since
the previous forecast), :mod:`~forecast.report.drivers` (rank correlations, Sobol indices,
backtest), :mod:`~forecast.report.hardware_walls` (walls of today's accelerators, from
:mod:`forecast.analyses.accelerator_walls`) and :mod:`~forecast.report.not_modelled`.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import numpy as np

from forecast import store
from forecast.priors import parse_prior
from forecast.queries.answers import interval, quantiles_with_inf, summary_table
from forecast.queries.formatting import (
    calendar_year,
    fmt_calendar_year,
    fmt_flop,
    fmt_pct,
    fmt_year,
)
from forecast.store.attrs import draws_description

if TYPE_CHECKING:  # annotations only: reading answers does not import xarray
    import xarray as xr

PROB = 0.8
FAN_PROBS = (0.5, 0.8, 0.95)
WALL_LABELS = {"data_movement": "data-movement", "latency": "latency"}


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
    def regime(self) -> str:
        """The plans the walls were searched over: ``"paper"`` or ``"realistic"``."""
        return str(self.attrs.get("regime", "paper"))

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


REGIME_SENTENCES = {
    "paper": (
        "The walls are searched over the paper's idealized plans (Erdil & Schneider-Joseph 2024): "
        "continuous microbatch, pipeline and parallelism degrees, microbatches as small as one "
        "token at no cost; a run that must use whole sequences, whole layers per stage and whole "
        "degrees (`wallcast run --regime realistic`) typically meets both walls at less compute."
    ),
    "realistic": (
        "The walls are searched over plans a run can launch: whole sequences per microbatch or "
        "one split over context-parallel ranks (its K/V collectives charged), whole layers per "
        "pipeline stage, whole degrees, with activation recompute and the interleaved schedule "
        "as options; the paper's idealized plans (`wallcast run --regime paper`) typically put "
        "both walls at more compute."
    ),
}


REGIME_PHRASES = {
    "paper": "the paper's idealized plans (continuous degrees, one-token microbatches)",
    "realistic": "plans a run can launch (whole sequences, layers and degrees)",
}
"""The plans a forecast's walls were searched over, as a phrase (the deck's notes)."""


def regime_phrase(regime: str) -> str:
    """:data:`REGIME_PHRASES` of a forecast's ``regime``."""
    return REGIME_PHRASES.get(regime, f"{regime} plans")


def regime_sentence(regime: str) -> str:
    """One sentence on the plans a forecast's walls were searched over (its ``regime``)."""
    return REGIME_SENTENCES.get(regime, f"The walls are searched over {regime} plans.")


PAPER_BESIDE_HEADER = [
    "scenario",
    "wall",
    "hit year, launchable plans",
    "hit year, paper's plans",
    "paper's later by (years, median of draws)",
    "hit FLOP, launchable plans",
    "hit FLOP, paper's plans",
]


def has_paper_beside(fc: Forecast) -> bool:
    """Whether the forecast holds the paper regime's walls beside its own (``paper_hit_year``:
    a realistic forecast's propagation computes both on the same draws)."""
    return fc.regime == "realistic" and "paper_hit_year" in fc.forecast


def paper_beside_rows(fc: Forecast, prob: float = PROB) -> list[dict]:
    """Per scenario and wall: the realistic hit year and FLOP (median and ``prob`` interval), the
    paper regime's on the same draws, and ``paper_later_years``: the median over draws of the
    paper's hit year minus the realistic one (+inf where only the realistic wall is hit by the
    last year, -inf where only the paper's is; draws where neither is hit are left out and
    counted in ``neither_share``; NaN when that is every draw), with the shares of draws in
    which the paper's wall comes later (``paper_later_share``) and earlier."""
    ds = fc.forecast
    rows = []
    for scenario in fc.scenarios:
        for wall in fc.walls:
            sel = {"scenario": scenario, "wall": wall}
            real_y = ds["hit_year"].sel(sel).values.ravel()
            paper_y = ds["paper_hit_year"].sel(sel).values.ravel()
            neither = np.isinf(real_y) & np.isinf(paper_y)
            with np.errstate(invalid="ignore"):
                later = (paper_y - real_y)[~neither]  # +inf: only the realistic wall is hit
            rows.append(
                {
                    "scenario": scenario,
                    "wall": wall,
                    "year": interval(real_y, prob),
                    "paper_year": interval(paper_y, prob),
                    "flop": interval(ds["hit_flop"].sel(sel).values, prob),
                    "paper_flop": interval(ds["paper_hit_flop"].sel(sel).values, prob),
                    "paper_later_years": (
                        float(quantiles_with_inf(later, [0.5])[0]) if later.size else math.nan
                    ),
                    "paper_later_share": float(np.mean(later > 0)) if later.size else math.nan,
                    "paper_earlier_share": float(np.mean(later < 0)) if later.size else math.nan,
                    "neither_share": float(np.mean(neither)),
                }
            )
    return rows


def _gap_cell(gap: float) -> str:
    if math.isnan(gap):
        return "neither hit"
    if math.isinf(gap):
        return "paper's not hit" if gap > 0 else "launchable not hit"
    return f"{gap:+.1f}"


def paper_beside_cells(rows: list[dict], last_year: int) -> tuple[list[str], list[list[str]]]:
    """Header and string cells of :func:`paper_beside_rows` (report and deck)."""
    body = []
    for r in rows:
        body.append(
            [
                r["scenario"],
                wall_label(r["wall"]),
                fmt_year(r["year"]["median"], last_year),
                fmt_year(r["paper_year"]["median"], last_year),
                _gap_cell(r["paper_later_years"]),
                fmt_flop(r["flop"]["median"]),
                fmt_flop(r["paper_flop"]["median"]),
            ]
        )
    return list(PAPER_BESIDE_HEADER), body


def _gap_phrase(r: dict, last_year: int, short: bool = False) -> str:
    """One wall's difference between the two plan models, as a phrase."""
    gap, label = r["paper_later_years"], wall_label(r["wall"])
    if math.isnan(gap):
        return f"the {label} wall not by {last_year} under either plan model"
    if math.isinf(gap):
        if gap > 0:
            return (
                f"the {label} wall not by {last_year} in most of the draws in which launchable "
                "plans reach it"
            )
        return (
            f"the {label} wall by {last_year} in most of the draws in which launchable plans do "
            "not reach it"
        )
    word = "later" if gap >= 0 else "earlier"
    phrase = f"the {label} wall {abs(gap):.1f} years {word}"
    if short:
        return phrase
    median = r["paper_year"]["median"]
    if math.isinf(median):
        return f"{phrase} (median: not by {last_year})"
    return f"{phrase} (median {median:.1f}, at about {prose_flop(r['paper_flop']['median'])} FLOP)"


def paper_beside_sentence(fc: Forecast, scenario: str | None = None, short: bool = False) -> str:
    """How far the paper's idealized walls are from the forecast's realistic ones, in one
    sentence (empty when the forecast does not hold both); ``short``: the gaps only (the
    deck)."""
    if not has_paper_beside(fc):
        return ""
    scenario = fc.scenarios[0] if scenario is None else scenario
    rows = [r for r in paper_beside_rows(fc) if r["scenario"] == scenario]
    parts = " and ".join(_gap_phrase(r, fc.last_year, short) for r in rows)
    if short:
        return (
            "The paper's idealized plans (continuous degrees, one-token microbatches) would hit "
            f"{parts} (median over the same draws)."
        )
    return (
        "Beside these walls, the paper's idealized plans (Erdil & Schneider-Joseph 2024: "
        f"continuous degrees, microbatches down to one token at no cost) would put {parts} in "
        f"the {scenario} scenario (the median over the same draws of the paper's hit year minus "
        "the launchable one): the difference is what whole sequences, whole layers per stage "
        "and whole degrees change, net of the recomputation and interleaving that the paper's "
        "plans do not have."
    )


def load_forecast(path: str | Path | None = None) -> Forecast:
    """A forecast file (or folder; None: ``latest``) read fully into memory."""
    path = store.resolve_forecast_path(path)
    return from_tree(store.load_forecast(path), path)


def from_tree(tree: xr.DataTree, path: str | Path = store.FORECAST_FILE) -> Forecast:
    """A :class:`Forecast` from an in-memory tree (tests and the flow, before publishing)."""
    return Forecast(Path(path), tree, tree["forecast"].to_dataset(), dict(tree.attrs))


def wall_label(wall: str) -> str:
    return WALL_LABELS.get(wall, wall.replace("_", " "))


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


LIKELIHOOD_WORDS: tuple[tuple[str, float, float], ...] = (
    ("virtually certain", 0.99, 1.0),
    ("very likely", 0.90, 0.99),
    ("likely", 0.66, 0.90),
    ("about as likely as not", 0.33, 0.66),
    ("unlikely", 0.10, 0.33),
    ("very unlikely", 0.01, 0.10),
    ("exceptionally unlikely", 0.0, 0.01),
)
"""Calibrated words for a probability [low, high), as the IPCC's guidance on consistent
treatment of uncertainties uses them [ipcc-uncertainty] (each word here names the narrowest
band, so 'likely' means 66-90 %, not 'very likely')."""


def prose_flop(x: float) -> str:
    """A hit FLOP in a sentence, to one significant figure ('6e29'): its 80 % interval spans
    about an order of magnitude, so the headline and its detail say the same rounded number
    (tables keep two figures)."""
    return fmt_flop(x, 0)


def likelihood_word(p: float) -> str:
    """The calibrated word for a probability ``p`` (:data:`LIKELIHOOD_WORDS`)."""
    for word, low, _ in LIKELIHOOD_WORDS:
        if p >= low:
            return word
    return LIKELIHOOD_WORDS[-1][0]


def wall_sentence(row: dict, last_year: int, subject: str = "Frontier training") -> str:
    """One plain-words sentence about one wall (a :func:`summary_rows` row): the median calendar
    year with its interval, then how likely a hit by the last year is, the word beside the share
    of draws it stands for (the word is about that share, not about the median year)."""
    y, f = row["year"], row["flop"]
    p_hit = 1.0 - y["not_hit_fraction"]
    label = wall_label(row["wall"])
    pct = fmt_pct(y["prob"])
    shown = fmt_pct(p_hit)  # the word goes with the share as printed (0.899 reads "90%")
    odds = f"{likelihood_word(float(shown.rstrip('%')) / 100)} ({shown} of the draws)"
    if math.isinf(y["median"]):
        return f"A hit of the {label} wall by {last_year} is {odds}."
    lo = calendar_year(y["lower"])
    hi = f"after {last_year}" if math.isinf(y["upper"]) else str(calendar_year(y["upper"]))
    return (
        f"{subject} hits the {label} wall in {calendar_year(y['median'])} ({pct}: {lo}–{hi}) "
        f"at about {prose_flop(f['median'])} FLOP; a hit by {last_year} is {odds}."
    )


def headline(fc: Forecast, scenario: str | None = None, prob: float = PROB) -> Headline:
    """The answer in one sentence: the wall hit first (earliest median) in ``scenario``."""
    scenario = fc.scenarios[0] if scenario is None else scenario
    rows = [r for r in summary_rows(fc.forecast, prob) if r["scenario"] == scenario]
    rows.sort(key=lambda r: (r["year"]["median"], fc.walls.index(r["wall"])))
    first = rows[0]
    y, f = first["year"], first["flop"]
    p_hit = 1.0 - y["not_hit_fraction"]
    cal = [fmt_calendar_year(y[k], fc.last_year) for k in ("median", "lower", "upper")]
    detail = (
        f"In the {scenario} scenario the median draw hits it in {cal[0]} "
        f"({fmt_pct(prob)} credible interval {cal[1]} to {cal[2]}), at about "
        f"{prose_flop(f['median'])} FLOP of training compute; {fmt_pct(p_hit)} of the draws hit "
        f"it by {fc.last_year}."
    )
    others = [wall_sentence(r, fc.last_year, "The frontier") for r in rows[1:]]
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


def summary_rows(forecast: xr.Dataset, prob: float = PROB) -> list[dict]:
    """:func:`forecast.queries.answers.summary_table` rows with ``p_hit`` (share hit by the last year)."""
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


def provenance(fc: Forecast) -> list[tuple[str, str]]:
    a = fc.attrs
    rows = [
        ("forecast id", fc.id),
        ("created", str(a.get("created", "?"))),
        ("data hash", str(a.get("data_hash", "?"))),
        # the priors by name (and the file's stem where it differs): the path it was read from
        # belongs to the machine that ran it
        ("priors", _priors_name(a)),
        ("scenarios", ", ".join(fc.scenarios)),
        ("code version", str(a.get("code_version", "?"))),
        ("seed", str(a.get("seed", "?"))),
        (
            "draws",
            draws_description(
                a,
                a.get("chains", fc.forecast.sizes.get("chain", "?")),
                a.get("draws", fc.forecast.sizes.get("draw", "?")),
            ),
        ),
        (
            "hardware rows / frontier runs",
            f"{a.get('hardware_rows', '?')} / {a.get('frontier_rows', '?')}",
        ),
    ]
    return rows


def _priors_name(attrs) -> str:
    name = str(attrs.get("priors_name", "?"))
    stem = PurePath(str(attrs["priors_path"])).stem if attrs.get("priors_path") else name
    return name if stem == name else f"{name} (file {stem})"


def assumptions(priors_text: str) -> list[dict[str, str]]:
    """Every parameter of the priors with its distribution in words and its source."""
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
