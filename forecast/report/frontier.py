"""Two report sections about the frontier run, drawn from groups that ``wallcast analyse`` adds.

* ``frontier_backtest`` (:func:`forecast.analyses.frontier_backtest.frontier_backtest_dataset`): the rolling-origin
  backtest of the frontier training-compute trend, shown in the backtest section beside the
  hardware backtest (table per origin and pooled, and a chart of held-out records against their
  80% predictive intervals).
* ``frozen_hardware`` (:func:`forecast.analyses.frozen_hardware.frozen_dataset`): the paper's framing, hardware
  frozen at the H100, beside the full forecast whose hardware improves, with a paragraph that says
  why they differ.

Every number is read from the forecast file.  :func:`frontier_backtest_blocks` and
:func:`frozen_blocks` return report blocks (:class:`forecast.report.html.Block`); the deck uses
:func:`frontier_backtest_summary` and :func:`frozen_summary`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from forecast.queries.analyses import frozen_summary as summary
from forecast.queries.answers import interval
from forecast.queries.formatting import (
    fmt_calendar_year,
    fmt_flop,
    fmt_interval,
    fmt_pct,
    fmt_year,
    sci,
)
from forecast.queries.headline import PROB, Forecast, wall_label
from forecast.report import charts
from forecast.report.drivers import backtest_settings
from forecast.report.published import (
    BLOG_DM_WALL_FLOP,
    PAPER_DM_WALL_FLOP,
    PAPER_YEAR,
    PAPER_YEARS_TO_WALL,
)


@dataclass
class Block:
    """One block of the report (a heading, paragraph, table, figure or list), rendered to HTML
    and Markdown by :mod:`forecast.report.html`."""

    kind: str  # h1 | h2 | p | lead | table | figure | ul
    text: str = ""
    header: list[str] | None = None
    rows: list[list[str]] | None = None
    items: list[str] | None = None
    key: str = ""
    png: bytes = b""
    figure: Figure | None = None


FROZEN_HEADING = "The paper's framing: 2024 hardware, frozen"


def _pct(v: float | None) -> str:
    return "–" if v is None or not math.isfinite(v) else fmt_pct(v)


def _num(v: float, fmt: str) -> str:
    return format(v, fmt) if math.isfinite(v) else "–"


# ----------------------------------------------------------------------------- backtest


@dataclass
class FrontierBacktest:
    """The ``frontier_backtest`` group, read for the report."""

    ds: xr.Dataset

    @property
    def labels(self) -> list[str]:
        return [str(r) for r in self.ds["row"].values]

    @property
    def origins(self) -> list[int]:
        return [int(o) for o in self.ds["origin"].values]

    @property
    def pooled(self) -> str:
        return str(self.ds.attrs.get("pooled_row", self.labels[-1]))

    def row(self, label: str | int) -> dict[str, float]:
        s = self.ds.sel(row=str(label))
        return {str(k): float(v) for k, v in s.data_vars.items() if v.dims == ()}

    @property
    def settings(self) -> str:
        return backtest_settings(self.ds.attrs)


def frontier_backtest_summary(fc: Forecast) -> FrontierBacktest | None:
    ds = fc.group("frontier_backtest")
    if ds is None or "coverage_80" not in ds or "row" not in ds.dims:
        return None
    return FrontierBacktest(ds)


FRONTIER_BACKTEST_HEADER = [
    "origin",
    "trained on (from)",
    "growth fitted (x/yr)",
    "held out",
    "50% covers",
    "80% covers",
    "95% covers",
    "median error (dex)",
    "mean PIT",
]


def frontier_backtest_table_cells(fb: FrontierBacktest) -> tuple[list[str], list[list[str]]]:
    """One row per origin and the pooled row."""
    body = []
    for label in fb.labels:
        r = fb.row(label)
        pooled = label == fb.pooled
        start = r.get("train_start_year", math.nan)
        trained = f"{int(r['n_train'])}" + (
            "" if pooled else f" ({_num(math.floor(start), '.0f')})"
        )
        body.append(
            [
                "all origins" if pooled else label,
                "–" if pooled else trained,
                "–" if pooled else _num(r.get("growth_median", math.nan), ".1f"),
                str(int(r["n_held_out"])),
                _pct(r["coverage_50"]),
                _pct(r["coverage_80"]),
                _pct(r["coverage_95"]),
                _num(r["median_error_dex"], "+.2f"),
                _num(r["pit_mean"], ".2f"),
            ]
        )
    return list(FRONTIER_BACKTEST_HEADER), body


def frontier_backtest_sentence(fb: FrontierBacktest) -> str:
    """Pooled 80% coverage, against the 60–95% target, in words."""
    r = fb.row(fb.pooled)
    cov = r["coverage_80"]
    verdict = (
        "inside the 60–95% target"
        if 0.6 <= cov <= 0.95
        else (
            "above the 60–95% target: the intervals are too wide"
            if cov > 0.95
            else "below the 60–95% target: the intervals are too narrow"
        )
    )
    return (
        f"Pooled over the origins, the 80% predictive intervals cover {_pct(cov)} of "
        f"{int(r['n_held_out'])} held-out records ({verdict}); the median error of the predicted "
        f"median is {_num(r['median_error_dex'], '+.2f')} dex "
        f"(median absolute {_num(r['median_abs_error_dex'], '.2f')} dex)."
    )


def frontier_backtest_chart(
    fb: FrontierBacktest, *, scale: float = 1.0, figsize=(10.5, 4.8)
) -> Figure:
    """Held-out records (black dots; a cross in an origin's colour where the record lies outside
    that origin's 80% interval) against the predicted median and 80% interval from each origin."""
    ds = fb.ds
    with charts._style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.subplots()
        for i, origin in enumerate(fb.origins):
            colour = charts.OKABE_ITO[i % len(charts.OKABE_ITO)]
            s = ds.sel(origin=origin)
            ok = np.isfinite(s["observed"].values)
            year = s["year"].values[ok]
            order = np.argsort(year)
            year = year[order]
            med = s["predicted_median"].values[ok][order]
            lo, hi = s["lower_80"].values[ok][order], s["upper_80"].values[ok][order]
            obs = s["observed"].values[ok][order]
            ax.fill_between(year, lo, hi, color=colour, alpha=0.12, lw=0)
            ax.plot(year, med, color=colour, lw=1.6, label=f"from {origin}: median, 80% band")
            outside = (obs < lo) | (obs > hi)
            ax.scatter(
                year[outside], obs[outside], color=colour, marker="x", s=70 * scale, zorder=4
            )
        first = ds.sel(origin=fb.origins[0])  # the earliest origin holds out every later record
        ok = np.isfinite(first["observed"].values)
        ax.scatter(
            first["year"].values[ok],
            first["observed"].values[ok],
            color=charts.BLACK,
            s=18 * scale,
            zorder=3,
            label="record runs (cross: outside that origin's 80% band)",
        )
        ax.set_xlabel("Publication year")
        ax.set_ylabel("Training compute (log10 FLOP)")
        ax.set_title("Record training runs after each origin against the trend fitted before it")
        ax.legend(loc="upper left", framealpha=0.9)
    return fig


def frontier_backtest_blocks(fc: Forecast) -> list[Any]:
    """The frontier-compute part of the backtest section (empty without the group)."""
    fb = frontier_backtest_summary(fc)
    if fb is None:
        return []
    header, body = frontier_backtest_table_cells(fb)
    fig = frontier_backtest_chart(fb)
    caption = (
        "Frontier compute backtest: each record run published at or after an origin against the "
        "trend fitted to the records before it (line: predictive median; band: 80% interval; "
        "a cross in the origin's colour: a record outside that band)."
    )
    return [
        Block(
            "p",
            "Rolling-origin backtest of the frontier training-compute trend (the second-largest "
            "driver of the hit years): the same model as the forecast (Student-t residuals with "
            "a fitted tail weight, wider noise for speculative estimates) fitted on the record "
            "runs published before each origin (from 2018 as in the forecast; the 2016 and 2018 "
            "origins, with no record from 2018 on, train on every earlier record), with a weak "
            "prior on the level, and scored on every later record, whose predictive is "
            "conditioned on beating the record standing at the origin, as every later record "
            f"does by definition ({fb.settings}). " + frontier_backtest_sentence(fb),
        ),
        Block("table", header=header, rows=body),
        Block("figure", caption, key="frontier_backtest", png=charts.to_png(fig), figure=fig),
    ]


# ----------------------------------------------------------------------------- frozen hardware


@dataclass
class FrozenHardware:
    """The ``frozen_hardware`` group beside the full forecast (same scenario)."""

    ds: xr.Dataset
    scenario: str
    frozen: dict[str, dict[str, float]]  # wall -> median, lower, upper, wall_flop, ...
    full: dict[str, dict[str, float]]  # wall -> the forecast's hit-year interval
    wall_year: int  # the forecast's grid year nearest the frozen data-movement median
    full_wall_then: float  # the forecast's median data-movement wall in that year (FLOP)
    full_hit_years: np.ndarray  # the forecast's data-movement hit year per draw

    @property
    def accelerator(self) -> str:
        return str(self.ds.attrs.get("accelerator", "?"))


def frozen_summary(fc: Forecast, prob: float = PROB) -> FrozenHardware | None:
    """Frozen and full hit years per wall, or None without the group."""
    ds = fc.group("frozen_hardware")
    if ds is None or "hit_year" not in ds:
        return None
    scenario = str(ds.attrs.get("scenario", fc.scenarios[0]))
    if scenario not in fc.scenarios:
        scenario = fc.scenarios[0]
    f = fc.forecast.sel(scenario=scenario)
    walls = [str(w) for w in ds["wall"].values]
    frozen = {w: summary(ds, w, prob) for w in walls}
    grid = f["year"].values.astype(float)
    dm_year = frozen["data_movement"]["median"]
    year = grid[int(np.argmin(np.abs(grid - dm_year)))] if np.isfinite(dm_year) else grid[-1]
    wall_then = (
        float(np.median(f["wall_flop"].sel(wall="data_movement", year=year).values))
        if "wall_flop" in f
        else math.nan
    )
    return FrozenHardware(
        ds,
        scenario,
        frozen,
        {w: interval(f["hit_year"].sel(wall=w).values, prob) for w in walls},
        int(year),
        wall_then,
        np.asarray(f["hit_year"].sel(wall="data_movement").values, float).ravel(),
    )


def frozen_table_cells(fz: FrozenHardware, last_year: int) -> tuple[list[str], list[list[str]]]:
    header = [
        "wall",
        f"{fz.accelerator} wall (FLOP)",
        f"reached, frozen hardware ({fmt_pct(PROB)})",
        f"reached, full forecast ({fmt_pct(PROB)})",
    ]

    def years(d: dict[str, float]) -> str:
        return fmt_interval(
            fmt_year(d["median"], last_year),
            fmt_year(d["lower"], last_year),
            fmt_year(d["upper"], last_year),
        )

    body = [
        [wall_label(w), fmt_flop(fz.frozen[w]["wall_flop"]), years(fz.frozen[w]), years(fz.full[w])]
        for w in fz.frozen
    ]
    return header, body


def frozen_paragraph(fz: FrozenHardware, last_year: int) -> str:
    """The side-by-side in words, with why the two readings differ."""
    dm_f, dm = fz.frozen["data_movement"], fz.full["data_movement"]
    gap = dm["median"] - dm_f["median"]
    years_after = dm_f["median"] - PAPER_YEAR
    if "wall_flop_lower" in fz.ds:  # walls per posterior draw (the group accelerator_walls)
        w = fz.ds.sel(wall="data_movement")
        lo, hi = fmt_flop(float(w["wall_flop_lower"])), fmt_flop(float(w["wall_flop_upper"]))
        inputs = (
            f"over its posterior draws, the per-accelerator table's median; "
            f"{fmt_pct(PROB)}: {lo} to {hi}"
        )
        wall_words = "its median"
        per_draw = True
    else:
        per_draw = False
        inputs = (
            "posterior medians of the fitted laws" if _any_posterior(fz.ds) else "prior medians"
        )
        wall_words = "that wall"
    text = (
        f"[erdil2024] read the data-movement wall off 2024 hardware: utilization falls beyond "
        f"~{sci(PAPER_DM_WALL_FLOP, 0)} FLOP on an H100 cluster (3-month run; "
        f"{sci(BLOG_DM_WALL_FLOP, 0)} in its blog [erdil2024-blog] and simulator "
        "[epoch-simulator]), which at the "
        f"current pace is 'a barrier in about three years'. Held at the {fz.accelerator} (its "
        f"8-GPU NVLink domain, 2024 latencies), with this forecast's inputs ({inputs}), the "
        f"model puts {wall_words} at {fmt_flop(dm_f['wall_flop'])} FLOP, and the frontier run on "
        f"its fitted trend reaches it in {fmt_calendar_year(dm_f['median'], last_year)} "
        + ("(the median over draws, each with its own wall and run) " if per_draw else "")
    )
    if math.isfinite(years_after):
        text += f"({years_after:.1f} years after {PAPER_YEAR}; "
    else:
        text += "("
    text += (
        f"{fmt_pct(PROB)}: {fmt_calendar_year(dm_f['lower'], last_year)} to "
        f"{fmt_calendar_year(dm_f['upper'], last_year)})."
    )
    if "paper_wall_hit_year" in fz.ds:
        paper = interval(fz.ds["paper_wall_hit_year"].values, PROB)
        text += (
            f" The same run reaches the paper's ~{sci(PAPER_DM_WALL_FLOP, 0)} in "
            f"{fmt_calendar_year(paper['median'], last_year)} "
            f"({paper['median'] - PAPER_YEAR:.1f} years after {PAPER_YEAR}; the paper: about "
            f"{PAPER_YEARS_TO_WALL:.0f}): the two frozen years differ by the gap between the "
            "model's wall and the paper's."
        )
    text += (
        " The full forecast, whose hardware improves, "
        f"hits the wall in {fmt_calendar_year(dm['median'], last_year)}"
    )
    if math.isfinite(gap):
        text += f", {gap:.1f} years later"
    text += (
        ". Why they differ: the frozen wall stands still while the frontier run grows, but the "
        "forecast's wall moves with the frontier accelerator of each year: scale-up domains of "
        "72 GPUs from 2025 and growing (tensor parallelism stays inside a fast domain), more HBM "
        "and network bandwidth per chip"
    )
    if math.isfinite(fz.full_wall_then) and fz.full_wall_then > 0:
        ratio = fz.full_wall_then / dm_f["wall_flop"]
        times = f"{ratio:.0f}" if ratio >= 10 else f"{ratio:.1f}"
        text += (
            f" (in {fz.wall_year} the forecast's wall is {fmt_flop(fz.full_wall_then)} FLOP at the "
            f"median, {times} times the frozen one)"
        )
    text += (
        ". The frozen reading answers 'how long does 2024 hardware last'; the forecast "
        "answers 'when does the frontier run meet the hardware it will actually train on'."
    )
    return text


def _any_posterior(ds: xr.Dataset) -> bool:

    sources = json.loads(str(ds.attrs.get("input_sources", "{}")))
    return any(str(v).startswith("posterior") for v in sources.values())


def frozen_chart(fz: FrozenHardware, *, scale: float = 1.0, figsize=(10.5, 4.2)) -> Figure:
    """Distribution of the data-movement hit year: hardware frozen against the full forecast."""
    with charts._style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.subplots()
        frozen = np.asarray(fz.ds["hit_year"].sel(wall="data_movement").values, float).ravel()
        full = fz.full_hit_years
        n_frozen, n_full = max(frozen.size, 1), max(full.size, 1)
        frozen = frozen[np.isfinite(frozen)]
        full = full[np.isfinite(full)]
        both = np.concatenate([frozen, full])
        lo = math.floor(both.min()) if both.size else PAPER_YEAR
        hi = math.ceil(both.max()) if both.size else PAPER_YEAR + 1
        bins = np.arange(lo, hi + 0.5, 0.5)
        ax.hist(
            frozen,
            bins=bins,
            weights=np.full(frozen.size, 1.0 / n_frozen),
            color=charts.ORANGE,
            alpha=0.8,
            label=f"hardware frozen at {fz.accelerator}",
        )
        if full.size:
            ax.hist(
                full,
                bins=bins,
                weights=np.full(full.size, 1.0 / n_full),
                color=charts.BLUE,
                alpha=0.5,
                label="full forecast (hardware improves)",
            )
        ax.axvline(
            PAPER_YEAR + PAPER_YEARS_TO_WALL,
            color="0.3",
            ls="--",
            lw=1.2,
            label="[erdil2024]: about three years from 2024",
        )
        charts._integer_years(ax)
        ax.set_xlabel("Year the frontier run reaches the data-movement wall")
        ax.set_ylabel("Share of draws per half year")
        ax.legend(loc="upper right", framealpha=0.9)
    return fig


def frozen_blocks(fc: Forecast) -> list[Any]:
    """The frozen-hardware section (empty without the group)."""
    fz = frozen_summary(fc)
    if fz is None:
        return []
    header, body = frozen_table_cells(fz, fc.last_year)
    fig = frozen_chart(fz)
    return [
        Block("h2", FROZEN_HEADING),
        Block("p", frozen_paragraph(fz, fc.last_year)),
        Block("table", header=header, rows=body),
        Block(
            "figure",
            f"Year the frontier run reaches the data-movement wall, {fz.scenario} scenario: "
            f"hardware frozen at the {fz.accelerator} (amber) against the full forecast (blue); "
            "dashed: the paper's 'about three years'.",
            key="frozen_hardware",
            png=charts.to_png(fig),
            figure=fig,
        ),
    ]
