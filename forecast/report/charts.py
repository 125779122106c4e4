"""Charts of the report and the deck (matplotlib, Agg; no pyplot state).

Every function returns a :class:`matplotlib.figure.Figure` whose axes are labelled with units;
``scale`` enlarges the text for slides.  Colours: the Okabe–Ito palette of ``wallcast curve``.
All the charts stay in this one module so that they share one style
context, palette and label vocabulary; each chart is one self-contained function.

One concept: the figures of the report and deck, drawn in one matplotlib style.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
from scipy.stats import gaussian_kde

from forecast.config.constants import REFERENCE_YEAR
from forecast.priors.registry import PARAMETERS, input_label
from forecast.queries.answers import interval
from forecast.queries.formatting import fmt_calendar_year, fmt_count, fmt_multiplier
from forecast.queries.headline import Forecast, band_quantiles, wall_label
from forecast.queries.posterior_walls import wall_log10_flop
from forecast.report.drivers import METRIC_LABELS, Backtest, SobolDrivers
from forecast.report.fitted_inputs import AXIS_LABELS

# Okabe & Ito (2008) colour-blind-safe palette, most distinct colours first.
OKABE_ITO = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#E69F00",  # orange
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow
)
BLUE, VERMILLION, GREEN, ORANGE, PURPLE, SKY, BLACK, YELLOW = OKABE_ITO
COLOUR_NAMES = {
    BLUE: "blue",
    VERMILLION: "vermillion",
    GREEN: "green",
    ORANGE: "amber",  # Okabe-Ito's "orange" reads as amber beside vermillion
    PURPLE: "purple",
    SKY: "sky blue",
    BLACK: "black",
    YELLOW: "yellow",
}
"""The word a caption uses for each palette colour (one name per colour, as a reader sees it)."""
FRONTIER_COLOUR = BLUE
WALL_COLOURS = {"data_movement": VERMILLION, "latency": GREEN}
WALL_STYLES = {"data_movement": "--", "latency": ":"}
TREND_END_YEAR = 2035  # the trend panels show the data; the fan chart shows the projection


def wall_colour(wall: str, i: int = 0) -> str:
    return WALL_COLOURS.get(wall, OKABE_ITO[(i + 3) % len(OKABE_ITO)])


@contextmanager
def _style(scale: float = 1.0):
    with rc_context(
        {
            "font.size": 10.5 * scale,
            "axes.titlesize": 12 * scale,
            "axes.labelsize": 11 * scale,
            "xtick.labelsize": 10 * scale,
            "ytick.labelsize": 10 * scale,
            "legend.fontsize": 9.5 * scale,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "svg.fonttype": "none",
            # no "+2.03e3" beside an axis: every tick reads as the number it is
            "axes.formatter.useoffset": False,
        }
    ):
        yield


def to_png(fig: Figure, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _integer_years(ax) -> None:
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=8))


def _year_bins(values: np.ndarray, years: np.ndarray) -> np.ndarray:
    return np.arange(math.floor(years[0]), math.ceil(years[-1]) + 1.0001, 1.0)


# ----------------------------------------------------------------------------- fan chart


def fan_chart(
    fc: Forecast,
    scenario: str | None = None,
    *,
    scale: float = 1.0,
    figsize=(9.5, 5.4),
    title: bool = True,
) -> Figure:
    """Frontier training compute by year (50/80/95% bands) against each wall's 80% band."""
    scenario = fc.scenarios[0] if scenario is None else scenario
    ds = fc.forecast.sel(scenario=scenario)
    years = ds["year"].values.astype(float)
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.add_subplot()
        handles = []
        wall_tops: list[float] = []
        for i, wall in enumerate(fc.walls):
            q = band_quantiles(ds["wall_flop"].sel(wall=wall))
            colour = wall_colour(wall, i)
            ax.fill_between(years, q["lo80"], q["hi80"], color=colour, alpha=0.16, lw=0)
            tops = q["hi80"][np.isfinite(q["hi80"])]
            if tops.size:
                wall_tops.append(float(tops.max()))
            ax.plot(years, q["median"], color=colour, ls=WALL_STYLES.get(wall, "-."), lw=2)
            handles.append(
                (
                    Patch(facecolor=colour, alpha=0.35, edgecolor=colour, ls=WALL_STYLES.get(wall)),
                    f"{wall_label(wall)} wall: median and 80% band",
                )
            )
        q = band_quantiles(ds["frontier_flop"])
        for p, alpha in (("95", 0.15), ("80", 0.25), ("50", 0.4)):
            ax.fill_between(
                years, q[f"lo{p}"], q[f"hi{p}"], color=FRONTIER_COLOUR, alpha=alpha, lw=0
            )
        ax.plot(years, q["median"], color=FRONTIER_COLOUR, lw=2.5)
        wall_hi = max(wall_tops) if wall_tops else np.inf
        # where the frontier run meets each wall: the median hit year at the median hit FLOP,
        # with the hit year's 80% interval (the headline's numbers, not the bands' crossing)
        for i, wall in enumerate(fc.walls):
            hy = interval(ds["hit_year"].sel(wall=wall).values)
            hf = interval(ds["hit_flop"].sel(wall=wall).values) if "hit_flop" in ds else None
            if hf is None or not (math.isfinite(hy["median"]) and math.isfinite(hf["median"])):
                continue
            last = int(years[-1])
            lo = hy["lower"] if math.isfinite(hy["lower"]) else hy["median"]
            open_ended = not math.isfinite(hy["upper"])  # past the last year: no end cap
            hi = years[-1] if open_ended else hy["upper"]
            colour = wall_colour(wall, i)
            ax.plot([lo, hi], [hf["median"]] * 2, color="black", lw=1.6, zorder=5)
            ax.plot([lo], [hf["median"]], "|", color="black", ms=10, mew=1.6, zorder=5)
            ax.plot(
                [hi],
                [hf["median"]],
                ">" if open_ended else "|",
                color="black",
                ms=10 if not open_ended else 7,
                mew=1.6,
                zorder=5,
            )
            ax.plot([hy["median"]], [hf["median"]], "o", ms=9, color=colour, mec="black", zorder=6)
            # the headline's words for the interval ('2042–after 2045'), never the axis end
            upper = f"after {last}" if open_ended else fmt_calendar_year(hy["upper"], last)
            ax.annotate(
                f"hits the {wall_label(wall)} wall: {fmt_calendar_year(hy['median'], last)} "
                f"({fmt_calendar_year(lo, last)}–{upper})",
                (hy["median"], hf["median"]),
                xytext=(12, -18),
                textcoords="offset points",
                fontsize="small",
                fontweight="bold",
                bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1.5},
                zorder=6,
            )
        handles.insert(
            0,
            (
                Line2D([], [], color=FRONTIER_COLOUR, lw=2.5),
                "largest training run: median, 50/80/95% bands",
            ),
        )
        ax.set_yscale("log")
        ax.set_xlim(years[0], years[-1])
        finite = np.concatenate([q["lo95"], q["hi95"]])
        finite = finite[np.isfinite(finite) & (finite > 0)]
        if finite.size:
            # the frontier keeps growing after it passes the walls: stop two decades above them
            top = min(finite.max() * 3, wall_hi * 100, 1e42)
            ax.set_ylim(max(finite.min() / 3, 1e20), top)
        _integer_years(ax)
        ax.set_xlabel("Year")
        ax.set_ylabel("Training compute (FLOP)")
        if title:
            ax.set_title(f"Frontier training compute against the walls ({scenario} scenario)")
        ax.legend(
            [h for h, _ in handles], [t for _, t in handles], loc="upper left", framealpha=0.9
        )
    return fig


# ----------------------------------------------------------------------------- hit years


def hit_year_chart(fc: Forecast, *, scale: float = 1.0, figsize=None) -> Figure:
    """Distribution of the hit year, one panel per wall and one row per scenario (a ridgeline).

    Each row is that scenario's histogram of the hit year (share of its draws per calendar
    year, all rows on one height scale so rows compare), a tick at its median and, at the
    right, the share of draws not hit by the last year. One row per scenario keeps eight
    scenarios readable where overlaid outlines were not.
    """
    walls, scenarios = fc.walls, list(fc.scenarios)
    years = fc.forecast["year"].values.astype(float)
    last = int(years[-1])
    bins = _year_bins(years, years)
    shares: dict[tuple[str, str], tuple[np.ndarray, float, float]] = {}
    for wall in walls:
        for scenario in scenarios:
            v = fc.forecast["hit_year"].sel(wall=wall, scenario=scenario).values.ravel()
            finite = v[np.isfinite(v)]
            share, _ = np.histogram(finite, bins=bins)
            share = share / max(v.size, 1)
            not_hit = 1.0 - finite.size / max(v.size, 1)
            median = interval(v)["median"] if v.size else math.inf  # as the headline's
            shares[(wall, scenario)] = (share, not_hit, median)
    peak = max((float(s.max()) for s, *_ in shares.values() if s.size), default=1.0) or 1.0
    height = 0.85 / peak  # the tallest bar of any row fills 85% of its row
    rows = len(scenarios)
    figsize = figsize or (4.9 * len(walls) + 1.6, max(3.2, 1.4 + 0.55 * rows))
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        axes = fig.subplots(1, len(walls), sharey=True, squeeze=False)[0]
        for ax, wall in zip(axes, walls, strict=True):
            colour = wall_colour(wall, walls.index(wall))
            for r, scenario in enumerate(scenarios):
                share, not_hit, median = shares[(wall, scenario)]
                base = rows - 1 - r
                ax.stairs(
                    base + share * height, bins, baseline=base, fill=True, color=colour, alpha=0.45
                )
                ax.stairs(base + share * height, bins, baseline=base, color=colour, lw=1.2)
                if math.isfinite(median):
                    ax.plot([median, median], [base, base + 0.9], color="0.15", lw=1.8)
                note = "<1%" if 0 < not_hit < 0.01 else f"{not_hit:.0%}"
                ax.text(  # right of the axes, clear of the bars
                    1.02,
                    base + 0.4,
                    note,
                    transform=ax.get_yaxis_transform(),
                    ha="left",
                    va="center",
                    fontsize="small",
                )
            ax.set_title(f"{wall_label(wall)} wall")
            _integer_years(ax)
            ax.set_xlabel("Year the wall is hit (calendar year)")
            ax.set_xlim(years[0], years[-1])
            ax.set_ylim(-0.15, rows)
            ax.text(
                1.02,
                rows - 0.15,
                f"not hit\nby {last}",
                transform=ax.get_yaxis_transform(),
                ha="left",
                va="bottom",
                fontsize="small",
                fontstyle="italic",
            )
        axes[0].set_yticks(np.arange(rows) + 0.3, scenarios[::-1])
        for ax in axes:
            ax.tick_params(axis="y", length=0)
            ax.grid(axis="y", visible=False)
            ax.set_ylabel("Scenario (share of draws per year)")
        for ax in axes[1:]:
            ax.yaxis.label.set_visible(False)
        fig.suptitle(
            "When each wall is hit, per scenario (bars: share of draws per year; tick: median)"
        )
    return fig


# ----------------------------------------------------------------------------- trend fits


def _bands_of_lines(intercept: np.ndarray, slope: np.ndarray, t: np.ndarray) -> dict:
    lines = intercept[:, None] + slope[:, None] * t[None, :]
    q = np.quantile(lines, [0.1, 0.5, 0.9], axis=0)
    return {"lo": 10.0 ** q[0], "median": 10.0 ** q[1], "hi": 10.0 ** q[2]}


def trend_chart(fc: Forecast, *, scale: float = 1.0, figsize=(13, 7.6)) -> Figure:
    """Each fitted trend (median, 80% band) with the data points it was fitted to."""
    post, obs, const = fc.group("posterior"), fc.group("observed_data"), fc.group("constant_data")
    last = float(min(fc.last_year, TREND_END_YEAR))
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        if post is None or obs is None or const is None:
            ax = fig.add_subplot()
            ax.text(0.5, 0.5, "no trend fit in this forecast", ha="center", transform=ax.transAxes)
            ax.set_xlabel("Year")
            ax.set_ylabel("Value (log scale)")
            return fig
        metrics = [str(m) for m in post["metric"].values] if "metric" in post.coords else []
        panels = len(metrics) + (1 if "frontier_slope" in post else 0)
        cols = 3
        rows = max(1, math.ceil(panels / cols))
        axes = fig.subplots(rows, cols, squeeze=False).ravel()
        hw_years = const["hardware_year"].values if "hardware_year" in const else np.array([])
        hw_index = (
            const["hardware_metric_index"].values
            if "hardware_metric_index" in const
            else np.array([])
        )
        hw_values = obs["log10_value"].values if "log10_value" in obs else np.array([])
        first_year = min([float(np.min(hw_years))] if hw_years.size else [REFERENCE_YEAR - 8]) - 1.0
        t_axis = np.linspace(first_year, last, 120)
        t = t_axis - REFERENCE_YEAR
        for m, metric in enumerate(metrics):
            ax = axes[m]
            slope = post["slope"].sel(metric=metric).values.ravel()
            intercept = post["intercept"].sel(metric=metric).values.ravel()
            b = _bands_of_lines(intercept, slope, t)
            ax.fill_between(t_axis, b["lo"], b["hi"], color=BLUE, alpha=0.25, lw=0)
            ax.plot(t_axis, b["median"], color=BLUE, lw=2)
            sel = hw_index == m
            ax.scatter(
                hw_years[sel],
                10.0 ** hw_values[sel],
                s=22 * scale,
                color=VERMILLION,
                zorder=3,
                edgecolor="white",
                lw=0.5,
            )
            name, unit = METRIC_LABELS.get(metric, (metric.replace("_", " "), ""))
            growth = 10.0 ** np.quantile(slope, [0.1, 0.5, 0.9])
            ax.set_title(f"{name}\n×{growth[1]:.2f}/yr (80%: {growth[0]:.2f}–{growth[2]:.2f})")
            ax.set_ylabel(f"{name} ({unit})" if unit else name)
        k = len(metrics)
        if "frontier_slope" in post:
            ax = axes[k]
            slope = post["frontier_slope"].values.ravel()
            intercept = post["frontier_intercept"].values.ravel()
            years = const["frontier_year"].values if "frontier_year" in const else np.array([])
            values = obs["log10_compute"].values if "log10_compute" in obs else np.array([])
            spec = (
                const["frontier_is_speculative"].values.astype(bool)
                if "frontier_is_speculative" in const
                else np.zeros(years.size, bool)
            )
            t0 = min(float(np.min(years)) - 1.0 if years.size else first_year, first_year)
            t_f = np.linspace(t0, last, 120)
            b = _bands_of_lines(intercept, slope, t_f - REFERENCE_YEAR)
            ax.fill_between(t_f, b["lo"], b["hi"], color=BLUE, alpha=0.25, lw=0)
            ax.plot(t_f, b["median"], color=BLUE, lw=2, label="fit: median, 80% band")
            ax.scatter(
                years[~spec],
                10.0 ** values[~spec],
                s=22 * scale,
                color=VERMILLION,
                zorder=3,
                edgecolor="white",
                lw=0.5,
                label="record runs",
            )
            if spec.any():
                ax.scatter(
                    years[spec],
                    10.0 ** values[spec],
                    s=22 * scale,
                    facecolor="none",
                    edgecolor=VERMILLION,
                    zorder=3,
                    label="speculative",
                )
            growth = 10.0 ** np.quantile(slope, [0.1, 0.5, 0.9])
            ax.set_title(
                f"Largest training run\n×{growth[1]:.1f}/yr (80%: {growth[0]:.1f}–{growth[2]:.1f})"
            )
            ax.set_ylabel("Training compute (FLOP)")
            ax.legend(loc="upper left", framealpha=0.9)
            k += 1
        for ax in axes[:k]:
            ax.set_yscale("log")
            ax.set_xlabel("Year")
            _integer_years(ax)
            ax.axvline(REFERENCE_YEAR, color="0.5", lw=1, ls=":")
        for ax in axes[k:]:
            ax.set_visible(False)
        fig.suptitle(
            "Trend fits (blue: median and 80% band) and the data points (dots); "
            "growth per year in the titles"
        )
    return fig


# ----------------------------------------------------------------------------- utilization


def utilization_chart(
    curves: Sequence[dict[str, Any]], *, scale: float = 1.0, figsize=(10, 5.8)
) -> Figure:
    """Best achievable utilization against training compute, both walls marked.

    ``curves``: records of :func:`forecast.analyses.accelerator_walls.curve_record`, one line each (same run
    duration and precision; at least one).
    """
    if not curves:
        raise ValueError("utilization_chart needs at least one curve record")
    first = curves[0]
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.add_subplot()
        handles = []
        for i, c in enumerate(curves):
            colour = OKABE_ITO[i % len(OKABE_ITO)]
            grid = np.asarray(c["log10_flop"], dtype=float)
            utilization = np.array(
                [np.nan if u is None else u for u in c["utilization"]], dtype=float
            )
            lo, hi = float(grid[0]), float(grid[-1])
            label = c["accelerator"] + (" *" if c["assumptions"] else "")
            (line,) = ax.plot(10.0**grid, utilization, color=colour, lw=2, label=label)
            if "utilization_lower" in c and (len(curves) <= 2 or "H100" in c["accelerator"]):
                # the 80% band over the forecast's draws: every curve's when there are two at
                # most, else the H100's alone (seven overlapping bands read as one grey mass)
                ax.fill_between(
                    10.0**grid,
                    np.asarray(c["utilization_lower"], dtype=float),
                    np.asarray(c["utilization_upper"], dtype=float),
                    color=colour,
                    alpha=0.18,
                    lw=0,
                )
            handles.append(line)
            for wall, style in (("data_movement", "--"), ("latency", ":")):
                at = wall_log10_flop(c, wall)
                if math.isfinite(at) and lo <= at <= hi:
                    ax.axvline(10.0**at, color=colour, ls=style, lw=1.4, alpha=0.9)
        handles += [
            Line2D(
                [],
                [],
                color="0.35",
                ls="--",
                lw=1.5,
                label=f"data-movement wall (< {first['utilization_threshold']:.0%} of max)",
            ),
            Line2D([], [], color="0.35", ls=":", lw=1.5, label="latency wall"),
        ]
        banded = [c for c in curves if "utilization_lower" in c]
        if banded:
            handles.append(
                Patch(
                    color="0.6",
                    alpha=0.35,
                    label="80% interval over the draws" + (" (H100)" if len(curves) > 2 else ""),
                )
            )
        ax.set_xscale("log")
        ax.set_xlim(10.0**lo, 10.0**hi)
        ax.set_ylim(0.0, 1.0)
        ax.set_xlabel("Training compute (FLOP)")
        ax.set_ylabel("Best utilization (fraction of peak FLOP/s)")
        ax.set_title(
            f"Best achievable utilization vs training compute "
            f"({first['duration_days']:g}-day run, {first['precision']}, "
            f"{first.get('regime', 'paper')} plans)"
        )
        ax.legend(handles=handles, loc="lower left", framealpha=0.9, ncol=2)
        notes = [
            f"* {c['accelerator']}: " + "; ".join(c["assumptions"])
            for c in curves
            if c["assumptions"]
        ]
        if notes:
            fig.text(
                0.01, 0.0, "\n".join(notes), fontsize="x-small", va="bottom", ha="left", wrap=True
            )
            fig.get_layout_engine().set(h_pad=0.25)
    return fig


# ----------------------------------------------------------------------------- drivers


def _plain(name: str) -> str:
    """An input's label on a chart: the registry's plain name for a registry key (also in its
    variable form ``scaling__batch_tokens_2024``), anything else as given."""
    key = name.replace("__", ".")
    return input_label(key) if key in PARAMETERS else name


def drivers_chart(
    drivers: list[tuple[str, float]], wall: str, *, scale: float = 1.0, figsize=(10, 5.4)
) -> Figure:
    """Horizontal bars: rank correlation of each input with the hit year."""
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.add_subplot()
        names = [_plain(n) for n, _ in drivers][::-1]
        rho = np.array([r for _, r in drivers][::-1])
        colours = [BLUE if r < 0 else VERMILLION for r in rho]
        ax.barh(np.arange(len(rho)), rho, color=colours)
        ax.set_yticks(np.arange(len(rho)), names)
        ax.axvline(0, color="0.3", lw=1)
        ax.set_xlim(-1, 1)
        ax.set_xlabel(f"Rank correlation with the {wall_label(wall)} hit year (−1 to 1, unitless)")
        ax.set_ylabel("Uncertain input")
        ax.grid(True, axis="x", alpha=0.3)
        ax.grid(False, axis="y")
        ax.legend(
            [Patch(color=VERMILLION), Patch(color=BLUE)],
            ["larger input: wall hit later", "larger input: wall hit sooner"],
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            ncol=2,
            frameon=False,
        )
    return fig


def sobol_chart(
    sd: SobolDrivers,
    walls: list[str] | None = None,
    *,
    scale: float = 1.0,
    figsize=None,
    top: int | None = None,
) -> Figure:
    """Total and first-order Sobol indices (95% whiskers) per input, one panel per wall's hit
    year; inputs ranked by total index (largest at the top)."""
    targets = [t for t in sd.targets if walls is None or t.wall in walls]
    n_rows = max((len(t.inputs) if top is None else min(top, len(t.inputs))) for t in targets)
    figsize = figsize or (6.2 * len(targets) + 1.0, 1.0 + 0.48 * n_rows + 1.2)
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        axes = fig.subplots(1, len(targets), squeeze=False)[0]
        h = 0.38
        ends = [0.1, 0.0]
        for t in targets:
            k = len(t.inputs) if top is None else min(top, len(t.inputs))
            ends.extend(np.concatenate([t.total_low[:k], t.total_high[:k]]))
            ends.extend(np.concatenate([t.first_order_low[:k], t.first_order_high[:k]]))
        upper, lower = np.nanmax(ends), np.nanmin(ends)
        xlim = (min(lower - 0.02, 0.0), min(max(upper * 1.08, 0.1), 1.1))  # same on every panel
        for ax, t in zip(axes, targets, strict=True):
            k = len(t.inputs) if top is None else min(top, len(t.inputs))
            y = np.arange(k)[::-1].astype(float)
            for values, lo, hi, offset, colour, label in (
                (
                    t.total,
                    t.total_low,
                    t.total_high,
                    h / 2,
                    VERMILLION,
                    "total (with interactions)",
                ),
                (
                    t.first_order,
                    t.first_order_low,
                    t.first_order_high,
                    -h / 2,
                    BLUE,
                    "first order (input alone)",
                ),
            ):
                v = np.asarray(values[:k], float)
                err = np.vstack([np.clip(v - lo[:k], 0, None), np.clip(hi[:k] - v, 0, None)])
                err = np.nan_to_num(err)
                ax.barh(
                    y + offset,
                    v,
                    height=h,
                    color=colour,
                    xerr=err,
                    error_kw={"ecolor": BLACK, "elinewidth": 1.2 * scale, "capsize": 3 * scale},
                    label=label,
                )
            names = [
                f"{_plain(name)} *"
                if i < len(t.kinds) and t.kinds[i] == "posterior"
                else _plain(name)
                for i, name in enumerate(t.inputs[:k])
            ]
            ax.set_yticks(y, names)
            ax.axvline(0, color="0.3", lw=1)
            ax.set_xlim(*xlim)
            ax.set_xlabel("Sobol index (fraction of variance)")
            ax.set_ylabel("Uncertain input")
            ax.set_title(f"{wall_label(t.wall)} wall: hit year")
            ax.grid(True, axis="x", alpha=0.3)
            ax.grid(False, axis="y")
        for ax in axes[1:]:
            ax.yaxis.label.set_visible(False)
        axes[0].legend(loc="lower right", framealpha=0.9)
        n = "?" if sd.samples is None else f"{sd.samples:,}"
        fitted = " * fitted to data: drawn from the posterior." if sd.fitted else ""
        fig.suptitle(
            f"What drives the hit year: Sobol indices (N = {n}; whiskers: 95% intervals).{fitted}"
        )
    return fig


# ----------------------------------------------------------------------------- backtest


def calibration_chart(
    bt: Backtest, *, scale: float = 1.0, figsize=(11, 4.8), pit: bool = True
) -> Figure:
    """Nominal vs empirical coverage of the central predictive intervals per origin (pooled
    over metrics), and the PIT histogram of the held-out values."""
    markers = ("o", "s", "^", "D", "v", "P")
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        axes = fig.subplots(1, 2 if pit else 1, squeeze=False)[0]
        ax = axes[0]
        ax.plot([0, 1], [0, 1], color="0.4", ls="--", lw=1.2, label="perfect calibration")
        last = len(bt.origins) - 1
        for i, origin in enumerate(bt.origins):
            c = bt.curve(origin)
            if c is None:
                continue
            prob, emp = c
            n = bt.row(origin)["n_held_out"]
            # earlier origins wider and below, so overlapping curves show
            ax.plot(
                prob,
                emp,
                color=OKABE_ITO[i % len(OKABE_ITO)],
                marker=markers[i % len(markers)],
                ms=(5 + 2.5 * (last - i)) * scale,
                lw=1.6 + 1.6 * (last - i),
                zorder=2 + i,
                label=f"origin {bt.label(origin)} ({n} held out)",
            )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel("Nominal coverage of the central interval (fraction)")
        ax.set_ylabel("Empirical coverage (fraction of held-out values)")
        ax.set_title("Calibration: above the diagonal = intervals too wide")
        ax.legend(loc="upper left", framealpha=0.9)
        if pit:
            ax = axes[1]
            bins = np.linspace(0, 1, 11)
            pits = [bt.pit(o) for o in bt.origins]
            colours = [OKABE_ITO[i % len(OKABE_ITO)] for i in range(len(bt.origins))]
            labels = [f"origin {bt.label(o)}" for o in bt.origins]
            kept = [(p, c, lab) for p, c, lab in zip(pits, colours, labels, strict=True) if p.size]
            if kept:
                ax.hist(
                    [p for p, _, _ in kept],
                    bins=bins,
                    color=[c for _, c, _ in kept],
                    label=[lab for _, _, lab in kept],
                    density=True,
                )
            ax.axhline(1.0, color="0.4", ls="--", lw=1.2, label="uniform (calibrated)")
            ax.set_xlim(0, 1)
            ax.set_xlabel("PIT: predictive CDF at the held-out value (fraction)")
            ax.set_ylabel("Density of held-out values (per unit PIT)")
            ax.set_title("PIT histogram (flat = calibrated)")
            ax.legend(loc="upper left", framealpha=0.9)
        fig.suptitle(f"Backtest of the hardware trends ({bt.settings})")
    return fig


# ----------------------------------------------------------------------------- scenarios


def scenario_chart(
    rows: list[dict], last_year: int, *, scale: float = 1.0, figsize=(10, 4.8)
) -> Figure:
    """Median and 80% interval of the hit year per scenario and wall (from summary rows)."""
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    walls = list(dict.fromkeys(r["wall"] for r in rows))
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.add_subplot()
        offsets = np.linspace(-0.15, 0.15, len(walls)) if len(walls) > 1 else [0.0]
        for j, wall in enumerate(walls):
            colour = wall_colour(wall, j)
            for i, scenario in enumerate(scenarios):
                r = next(x for x in rows if x["scenario"] == scenario and x["wall"] == wall)
                y = r["year"]
                # not hit by the last year: drawn up to it, with an arrow head
                med = y["median"] if math.isfinite(y["median"]) else last_year
                lo = y["lower"] if math.isfinite(y["lower"]) else last_year
                hi = y["upper"] if math.isfinite(y["upper"]) else last_year
                ax.plot([lo, hi], [i + offsets[j]] * 2, color=colour, lw=4, solid_capstyle="butt")
                if not math.isfinite(y["upper"]):
                    ax.plot([last_year], [i + offsets[j]], ">", color=colour, ms=12)
                ax.plot(
                    [med],
                    [i + offsets[j]],
                    "o",
                    color=colour,
                    ms=9,
                    label=f"{wall_label(wall)} wall" if i == 0 else None,
                )
        ax.set_yticks(np.arange(len(scenarios)), scenarios)
        ax.set_ylim(-0.6, len(scenarios) - 0.4)
        ax.invert_yaxis()  # the first scenario (the baseline) on top, as in the other charts
        _integer_years(ax)
        ax.set_xlabel(
            f"Hit year (calendar year; dot: median, bar: 80% interval, ▶: not by {last_year})"
        )
        ax.set_ylabel("Scenario")
        # below the axes: inside, "best" still lands on a bar when the intervals fill the width
        fig.legend(loc="outside lower center", ncol=len(walls), frameon=False)
    return fig


# ----------------------------------------------------------------------------- cost of the wall

COST_CAP = 100.0  # the multiplier chart's top; above it (and infeasible runs) drawn at the cap


def cost_chart(
    fc: Forecast,
    scenario: str | None = None,
    *,
    scale: float = 1.0,
    figsize=(9.5, 4.6),
) -> Figure:
    """Fan chart of the cost multiplier of one scenario's frontier run (default: the first) by
    year: median and 50/80 % bands over the draws, clipped at ``COST_CAP`` (an infinite
    multiplier: the run is past the latency wall), and the share of draws in which the run is
    infeasible on the right axis. The scenarios side by side: :func:`cost_scenarios_chart`.
    """
    scenario = fc.scenarios[0] if scenario is None else scenario
    years = fc.forecast["year"].values.astype(float)
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.add_subplot()
        da = fc.forecast["cost_multiplier"].sel(scenario=scenario)
        q = band_quantiles(da, probs=(0.5, 0.8))
        cap = {k: np.minimum(v, COST_CAP) for k, v in q.items()}
        for p, alpha in (("80", 0.2), ("50", 0.4)):
            ax.fill_between(
                years, cap[f"lo{p}"], cap[f"hi{p}"], color=VERMILLION, alpha=alpha, lw=0
            )
        med = np.where(np.isfinite(q["median"]), q["median"], np.nan)
        ax.plot(years, np.minimum(med, COST_CAP), color=VERMILLION, lw=2.2)
        infeasible = np.isinf(da).mean(("chain", "draw")).values
        twin = ax.twinx()
        twin.plot(years, infeasible, color=BLACK, lw=1.4, alpha=0.7, ls="--")
        twin.set_ylim(0, 1)
        twin.set_yticks([0, 0.25, 0.5, 0.75, 1], ["0", "25%", "50%", "75%", "100%"])
        twin.set_ylabel("Share of draws infeasible (fraction)")
        twin.grid(False)
        ax.set_yscale("log")
        ax.set_ylim(1, COST_CAP * 1.05)
        ax.set_yticks([1, 2, 5, 10, 20, 50, 100], ["1x", "2x", "5x", "10x", "20x", "50x", "100x"])
        ax.set_xlim(years[0], years[-1])
        _integer_years(ax)
        ax.set_xlabel("Year of the frontier run")
        ax.set_ylabel("Cost multiplier (x accelerator-time per FLOP)")
        ax.set_title(f"Cost of the wall, {scenario} scenario")
        ax.legend(
            [
                Line2D([], [], color=VERMILLION, lw=2.2),
                Patch(facecolor=VERMILLION, alpha=0.4),
                Patch(facecolor=VERMILLION, alpha=0.2),
                Line2D([], [], color=BLACK, lw=1.4, ls="--", alpha=0.7),
            ],
            ["median", "50% band", "80% band", "share infeasible (right axis)"],
            loc="upper left",
            framealpha=0.9,
        )
    return fig


def cost_scenarios_chart(
    fc: Forecast, year: int, *, scale: float = 1.0, figsize=(9.5, 4.2)
) -> Figure:
    """The cost multiplier of the ``year`` frontier run per scenario: median (dot) and 80 %
    interval (bar) on a log axis, the share of infeasible draws beside each row."""
    scenarios = list(fc.scenarios)
    with _style(scale):
        fig = Figure(
            figsize=(figsize[0], max(2.4, 1.1 + 0.42 * len(scenarios))), layout="constrained"
        )
        ax = fig.add_subplot()
        for i, scenario in enumerate(scenarios):
            v = fc.forecast["cost_multiplier"].sel(scenario=scenario, year=year).values
            q = interval(v)
            lo, med, hi = (min(q[k], COST_CAP) for k in ("lower", "median", "upper"))
            ax.plot([lo, hi], [i, i], color=VERMILLION, lw=4, solid_capstyle="butt")
            if q["upper"] > COST_CAP:
                ax.plot([COST_CAP], [i], ">", color=VERMILLION, ms=10)
            capped = q["median"] > COST_CAP  # a median past the axis: an arrow, not a dot at it
            ax.plot(
                [med],
                [i],
                ">" if capped else "o",
                color=VERMILLION,
                mec="black",
                ms=10 if capped else 8,
            )
            note = (
                fmt_multiplier(q["median"]) if math.isfinite(q["median"]) else "median infeasible"
            )
            share = q["not_hit_fraction"]
            if share > 0:
                note += "; infeasible in " + ("<1%" if share < 0.005 else f"{share:.0%}")
            ax.text(COST_CAP * 1.35, i, note, va="center", fontsize="small")
        ax.set_xscale("log")
        ax.set_xlim(0.9, COST_CAP * 5)
        ax.set_xticks([1, 2, 5, 10, 20, 50, 100], ["1x", "2x", "5x", "10x", "20x", "50x", "100x"])
        ax.set_yticks(np.arange(len(scenarios)), scenarios)
        ax.set_ylim(-0.6, len(scenarios) - 0.4)
        ax.invert_yaxis()
        ax.set_xlabel(
            f"Cost multiplier of the {year} frontier run (x per FLOP; dot: median, bar: 80%)"
        )
        ax.set_ylabel("Scenario")
    return fig


def tornado_chart(
    effects: Sequence[Any], wall: str, *, scale: float = 1.0, figsize=(10, 5.0)
) -> Figure:
    """Tornado: the hit year with one input at its 10th and 90th percentile, the others at
    their medians (``forecast.report.executive.InputEffect``), largest swing at the top."""
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.add_subplot()
        if not effects:
            return fig
        base = effects[0].baseline
        y = np.arange(len(effects))[::-1].astype(float)
        for yi, e in zip(y, effects, strict=True):
            lo, hi = float(e.hit_years[0]), float(e.hit_years[2])
            ax.barh(yi, lo - base, left=0.0, color=BLUE, height=0.6)
            ax.barh(yi, hi - base, left=0.0, color=VERMILLION, height=0.6)
        ax.axvline(0.0, color="0.2", lw=1.2)
        ax.set_yticks(y, [e.label for e in effects])
        ax.xaxis.set_major_formatter(
            FuncFormatter(
                lambda v, _: "0" if abs(v) < 1e-9 else f"{round(v, 2):+g}".replace("-", "\u2212")
            )
        )
        ax.set_xlabel(f"Shift of the hit year, years (0: all inputs at median, {base:.1f})")
        ax.grid(True, axis="x", alpha=0.3)
        ax.grid(False, axis="y")
        ax.legend(
            [Patch(color=BLUE), Patch(color=VERMILLION), Line2D([], [], color="0.2")],
            [
                "input at its 10th percentile",
                "input at its 90th percentile",
                "all at median",
            ],
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            ncol=3,
            frameon=False,
        )
    return fig


def comparison_chart(rows: Sequence[dict], *, scale: float = 1.0, figsize=(10, 4.2)) -> Figure:
    """Ours (median, 80% interval) against published estimates, one row per quantity.

    ``rows``: dicts with ``label``, ``median``, ``lower``, ``upper`` (ours, FLOP) and
    ``published`` (FLOP), ``published_low``/``published_high`` (optional range), ``source``.
    """
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.add_subplot()
        y = np.arange(len(rows))[::-1].astype(float)
        for yi, r in zip(y, rows, strict=True):
            ax.plot([r["lower"], r["upper"]], [yi + 0.12] * 2, color=BLUE, lw=5)
            ax.plot([r["median"]], [yi + 0.12], "o", color=BLUE, ms=10)
            if r.get("published_low") is not None:
                ax.plot(
                    [r["published_low"], r["published_high"]], [yi - 0.12] * 2, color=ORANGE, lw=5
                )
            ax.plot([r["published"]], [yi - 0.12], "D", color=ORANGE, ms=10)
            if r.get("published_also") is not None:
                ax.plot(
                    [r["published_also"]],
                    [yi - 0.12],
                    "D",
                    mfc="white",
                    mec=ORANGE,
                    mew=2.5,
                    ms=10,
                )
        ax.set_xscale("log")
        ax.set_yticks(y, [r["label"] for r in rows])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlabel("Training compute (FLOP)")
        handles = [
            Line2D([], [], color=BLUE, lw=5, marker="o", ms=10),
            Line2D([], [], color=ORANGE, lw=5, marker="D", ms=10),
        ]
        names = ["this forecast (median, 80% interval)", "published (range)"]
        if any(r.get("published_also") is not None for r in rows):
            handles.append(
                Line2D([], [], ls="", marker="D", mfc="white", mec=ORANGE, mew=2.5, ms=10)
            )
            names.append("the paper's blog and simulator")
        fig.legend(handles, names, loc="outside upper center", ncol=len(names), frameon=False)
    return fig


# ----------------------------------------------------------------------------- evidence

PRIOR_COLOUR, POSTERIOR_COLOUR = SKY, BLUE


def _density(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Kernel density of ``values`` on ``grid`` (Scott's bandwidth), scaled to a peak of 1."""
    if values.size < 2 or np.ptp(values) == 0:
        d = np.zeros_like(grid)
        d[np.argmin(np.abs(grid - values[0]))] = 1.0
        return d
    d = gaussian_kde(values)(grid)
    return d / d.max() if d.max() > 0 else d


def prior_posterior_chart(
    items: Sequence[Any], *, scale: float = 1.0, figsize=None, ncols: int = 3
) -> Figure:
    """Prior against posterior of each fitted input, one panel each.

    ``items``: :class:`forecast.report.fitted_inputs.InputEvidence`.  Each panel shows both densities
    (kernel estimates, each scaled to a peak of 1: light = prior, dark = posterior) and, below
    them, each one's median (dot) and 80 % interval (bar); x in the input's unit, log scale where
    the prior spans over a factor of 10.
    """
    ncols = max(1, min(ncols, len(items)))
    nrows = max(1, math.ceil(len(items) / ncols))
    figsize = figsize or (4.0 * ncols + 0.6, 3.1 * nrows + 0.9)
    with _style(scale):
        fig = Figure(figsize=figsize, layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, it in zip(axes, items, strict=False):
            log = it.log_scale

            def to_axis(v, log=log):
                return np.log10(v) if log else np.asarray(v, float)

            prior, post = to_axis(it.prior), to_axis(it.posterior)
            lo = min(np.quantile(prior, 0.01), np.quantile(post, 0.005))
            hi = max(np.quantile(prior, 0.99), np.quantile(post, 0.995))
            pad = 0.04 * (hi - lo) if hi > lo else 0.1
            grid = np.linspace(lo - pad, hi + pad, 240)
            x = 10.0**grid if log else grid
            for values, colour, alpha in (
                (prior, PRIOR_COLOUR, 0.35),
                (post, POSTERIOR_COLOUR, 0.55),
            ):
                d = _density(values, grid)
                ax.fill_between(x, 0, d, color=colour, alpha=alpha, lw=0)
                ax.plot(x, d, color=colour, lw=1.6)
            for q, colour, y in (
                (it.prior_q, PRIOR_COLOUR, -0.13),
                (it.posterior_q, POSTERIOR_COLOUR, -0.27),
            ):
                ax.plot([q[0], q[2]], [y, y], color=colour, lw=5 * scale, solid_capstyle="butt")
                ax.plot([q[1]], [y], "o", color=colour, mec=BLACK, mew=0.8, ms=6 * scale)
            if log:
                ax.set_xscale("log")
                subs = (1.0,) if grid[-1] - grid[0] > 2.5 else (1.0, 2.0, 5.0)
                ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs))
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_count(v)))
                ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlim(x[0], x[-1])
            ax.set_ylim(-0.38, 1.12)
            ax.set_yticks([0, 0.5, 1])
            ax.axhline(0, color="0.3", lw=0.8)
            ax.set_xlabel(AXIS_LABELS.get(it.unit, f"Value ({it.unit})"))
            ax.set_ylabel("Density (peak = 1)")
            ax.set_title(
                f"{it.label.removeprefix('The ')}\nfitted to {it.fitted_to.split(' of ')[0]}",
                fontsize="medium",
            )
        for ax in axes[len(items) :]:
            ax.set_visible(False)
        for k, ax in enumerate(axes[: len(items)]):
            if k % ncols:
                ax.yaxis.label.set_visible(False)
        fig.legend(
            [
                Patch(facecolor=PRIOR_COLOUR, alpha=0.6),
                Patch(facecolor=POSTERIOR_COLOUR, alpha=0.8),
                Line2D([], [], color="0.3", lw=4, marker="o", mfc="0.6", mec=BLACK),
            ],
            ["prior", "posterior (fitted to the data)", "median and 80% interval (below the axis)"],
            loc="outside lower center",
            ncols=3,
            frameon=False,
        )
    return fig
