"""What the walls cost, what to watch, and the five-sentence executive summary.

NumPy/xarray only.  Every number is a :class:`Figure` (value plus the text the report shows),
so that tests can read each number back and compare it with the dataset:

* :func:`cost_summary`: median and 80 % interval of ``cost_multiplier``,
  ``frontier_utilization`` and ``min_run_days`` of the frontier run of one year and scenario
  (the numbers of ``wallcast query --what cost``);
* :func:`signposts`: for the inputs that move the hit year most, the value today (its median:
  posterior when fitted to data, else prior), the values that would move the median hit year
  one year earlier or later, and where to watch;
  from the forecast's ``sensitivity`` group (tornado: hit year with the input at its 10th, 50th
  and 90th percentile) when present, else from the forecast's own draws (least-squares slope of
  the hit year on the input, in log10 for positive inputs);
* :func:`executive_summary`: five sentences, each built from these numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from forecast.priors.registry import input_label, input_unit
from forecast.queries.answers import interval
from forecast.queries.formatting import (
    fmt_calendar_year,
    fmt_days,
    fmt_multiplier,
    fmt_pct,
    fmt_quantity,
    sci,
)
from forecast.queries.headline import (
    PROB,
    Forecast,
    calendar_year,
    headline,
    summary_rows,
    wall_label,
)
from forecast.report.published import (
    BLOG_DM_WALL_FLOP,
    BLOG_LATENCY_WALL_FLOP,
    PAPER_DM_WALL_FLOP,
    PAPER_LATENCY_WALL_FLOP,
    PAPER_YEAR,
    REPORT_LATENCY_2030_FLOP,
    REPORT_LATENCY_YEAR,
)

COST_YEAR = 2032  # leadership's question: the 2032 frontier run
SIGNPOST_TOP = 4

# Where to watch each input, with the public sources of docs/sources.md (cite keys in brackets).
WATCH = {
    "scaling.batch_tokens_2024": (
        "critical batch size",
        "largest batch size published for a frontier run (technical reports) [llama3-herd] "
        "[mccandlish2018]",
    ),
    "scaling.batch_exponent": (
        "growth of the batch with model size",
        "batch sizes across model sizes in published training reports [mccandlish2018]",
    ),
    "scaling.layer_exponent": (
        "growth of depth with model size",
        "layer counts of newly published frontier models [sevilla2024-2030]",
    ),
    "scaling.layers_at_reference": (
        "depth of today's largest models",
        "layer counts of newly published frontier models [llama3-herd]",
    ),
    "hardware.scaleup_domain_size_growth_per_year": (
        "scale-up domain growth",
        "scale-up (NVLink-class) domain of shipped systems, e.g. NVL72 and successors "
        "[nvidia-nvlink-domain]",
    ),
    "latency.change_per_year": (
        "collective latency trend",
        "measured all-reduce latencies (nccl-tests) on new systems [nccl-tests]",
    ),
    "latency.allreduce_base_us": (
        "all-reduce base latency",
        "measured all-reduce latencies (nccl-tests) [nccl-tests]",
    ),
    "latency.kernel_us": (
        "kernel launch latency",
        "kernel and launch overheads in framework release notes [erdil2024]",
    ),
    "latency.intra_domain_hop_us": (
        "latency per hop inside the domain",
        "measured collective latencies inside a scale-up domain [nccl-tests]",
    ),
    "latency.inter_domain_hop_us": (
        "latency per hop across domains",
        "measured collective latencies across nodes [nccl-tests]",
    ),
    "training.duration_days": (
        "length of frontier runs",
        "reported training durations of frontier models [epoch-notable-models]",
    ),
    "training.max_utilization": (
        "utilization at scale",
        "reported model FLOP utilization of large runs [llama3-herd]",
    ),
    "network.collective_efficiency": (
        "collective efficiency",
        "achieved bus bandwidth in nccl-tests [nccl-tests]",
    ),
    "network.scaleout_multiplier": (
        "scale-out bandwidth per accelerator",
        "NICs per accelerator of shipped systems [nvidia-nvlink-domain]",
    ),
    "frontier.compute_growth_per_year": (
        "growth of frontier training compute",
        "training compute of newly reported record runs [epoch-notable-models]",
    ),
    "hardware.flops_growth_per_year": (
        "growth of accelerator FLOP/s",
        "peak dense FLOP/s of newly announced flagship accelerators [epoch-ml-hardware]",
    ),
    "hardware.hbm_bandwidth_growth_per_year": (
        "growth of HBM bandwidth",
        "memory bandwidth of newly announced flagship accelerators [epoch-ml-hardware]",
    ),
    "scaling.tokens_per_param": (
        "tokens per parameter",
        "data-to-parameter ratios of published runs [hoffmann2022]",
    ),
}


@dataclass
class Figure:
    """One number as the report shows it."""

    value: float
    text: str


@dataclass
class CostSummary:
    scenario: str
    year: int
    multiplier: dict[str, float]
    utilization: dict[str, float]
    min_run_days: dict[str, float]
    infeasible_fraction: float
    figures: dict[str, Figure] = field(default_factory=dict)


def cost_year(fc: Forecast, year: int = COST_YEAR) -> int:
    """``year`` if the forecast has it, else its nearest year."""
    years = fc.forecast["year"].values.astype(int)
    return int(years[np.argmin(np.abs(years - year))])


def has_cost(fc: Forecast) -> bool:
    return all(
        v in fc.forecast for v in ("cost_multiplier", "frontier_utilization", "min_run_days")
    )


def cost_summary(
    fc: Forecast, scenario: str | None = None, year: int | None = None, prob: float = PROB
) -> CostSummary:
    """Median and interval of the cost of the frontier run of ``year`` (default 2032)."""
    scenario = fc.scenarios[0] if scenario is None else scenario
    year = cost_year(fc) if year is None else int(year)
    ds = fc.forecast.sel(scenario=scenario, year=year)
    mult = interval(ds["cost_multiplier"].values, prob)
    util = interval(ds["frontier_utilization"].values, prob)
    days = interval(ds["min_run_days"].values, prob)
    out = CostSummary(scenario, year, mult, util, days, mult["not_hit_fraction"])
    out.figures = {
        "multiplier_median": Figure(mult["median"], fmt_multiplier(mult["median"])),
        "multiplier_lower": Figure(mult["lower"], fmt_multiplier(mult["lower"])),
        "multiplier_upper": Figure(mult["upper"], fmt_multiplier(mult["upper"])),
        "utilization_median": Figure(util["median"], fmt_pct(util["median"])),
        "min_run_days_median": Figure(days["median"], fmt_days(days["median"])),
        "infeasible_fraction": Figure(mult["not_hit_fraction"], fmt_pct(mult["not_hit_fraction"])),
    }
    return out


# ----------------------------------------------------------------------------- signposts


@dataclass
class Signpost:
    key: str
    label: str
    today: float
    earlier: float | None  # input value that moves the median hit year one year earlier
    later: float | None  # ... one year later
    watch: str
    method: str
    unit: str = ""  # the input's registry unit

    def fmt(self, v: float | None) -> str:
        """A value of this input with its unit ('23M tokens', '1.45x per year', '57%')."""
        return "out of reach" if v is None else fmt_quantity(v, self.unit)

    def cells(self) -> list[str]:
        return [
            self.label,
            self.fmt(self.today),
            self.fmt(self.earlier),
            self.fmt(self.later),
            self.watch,
        ]


def reader_label(key: str) -> str:
    """An input's name inside a sentence: the signpost phrase where one is written (WATCH), else
    the registry's plain label; never the dotted key."""
    if key in WATCH:
        return WATCH[key][0]
    label = input_label(key)
    return label[:1].lower() + label[1:] if label[1:2].islower() else label


def fmt_input(v: float) -> str:
    """An input value: 3 significant digits, scientific when large or small."""
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return sci(v, 1)
    return f"{v:.3g}"


def _solve(xs: np.ndarray, ys: np.ndarray, target: float, log: bool) -> float | None:
    """Input value at which the piecewise-linear ``ys(xs)`` reaches ``target`` (extrapolating
    the nearest segment's slope, at most one sampled range beyond it); None when flat or
    farther."""
    t = np.log10(xs) if log else np.asarray(xs, float)
    order = np.argsort(t)
    t, y = t[order], np.asarray(ys, float)[order]
    if not np.all(np.isfinite(y)):
        return None
    for i in range(len(t) - 1):
        lo, hi = sorted((y[i], y[i + 1]))
        if lo <= target <= hi and y[i + 1] != y[i]:
            x = t[i] + (target - y[i]) * (t[i + 1] - t[i]) / (y[i + 1] - y[i])
            return float(10**x if log else x)
    # outside the sampled range: extend the end segment nearer to the target
    end = 0 if abs(target - y[0]) < abs(target - y[-1]) else len(t) - 2
    slope = (y[end + 1] - y[end]) / (t[end + 1] - t[end])
    if slope == 0:
        return None
    anchor = 0 if end == 0 else len(t) - 1
    x = t[anchor] + (target - y[anchor]) / slope
    span = t[-1] - t[0]
    if x < t[0] - span or x > t[-1] + span:
        return None
    return float(10**x if log else x)


@dataclass
class InputEffect:
    """The hit year with one input at its 10th, 50th and 90th percentile (others typical)."""

    key: str
    inputs: np.ndarray  # (3,) input values at p10, p50, p90
    hit_years: np.ndarray  # (3,) hit year at each
    baseline: float  # hit year with every input at its median
    method: str  # "sensitivity" (the tornado) or "draws" (least-squares slope)
    total_interval: tuple[float, float] | None = None  # Sobol total index, 95% interval

    @property
    def label(self) -> str:
        return reader_label(self.key)

    @property
    def swing(self) -> float:
        return float(self.hit_years[2] - self.hit_years[0])


def _sensitivity_effects(fc: Forecast, wall: str, top: int) -> list[InputEffect] | None:
    ds = fc.group("sensitivity")
    target = f"{wall}_hit_year"
    if ds is None or "tornado_low" not in ds or target not in [str(t) for t in ds["target"].values]:
        return None
    sub = ds.sel(target=target)
    total = np.nan_to_num(np.asarray(sub["total"].values, float), nan=-np.inf)
    base = float(sub["baseline"])
    # a tornado of another regime than the Sobol indices (a realistic forecast's): their
    # intervals say nothing about its swings, so the lead is told by the swings alone
    same_regime = ds.attrs.get("sensitivity_tornado_regime", "paper") == ds.attrs.get(
        "sensitivity_indices_regime", "paper"
    )
    out = []
    for i in np.argsort(-total, kind="stable")[:top]:
        p10, p90 = float(sub["input_p10"].values[i]), float(sub["input_p90"].values[i])
        p50 = float(sub["input_p50"].values[i]) if "input_p50" in sub else 0.5 * (p10 + p90)
        ys = [float(sub["tornado_low"].values[i]), base, float(sub["tornado_high"].values[i])]
        key = str(sub["input"].values[i])
        interval = (
            (float(sub["total_low"].values[i]), float(sub["total_high"].values[i]))
            if "total_low" in sub and "total_high" in sub and same_regime
            else None
        )
        out.append(
            InputEffect(key, np.array([p10, p50, p90]), np.array(ys), base, "sensitivity", interval)
        )
    return out


def _draw_effects(fc: Forecast, wall: str, top: int) -> list[InputEffect]:
    scenario = fc.scenarios[0]
    y = fc.forecast["hit_year"].sel(scenario=scenario, wall=wall).values.ravel()
    inputs = fc.group("forecast_inputs")
    ok = np.isfinite(y)
    if inputs is None or ok.sum() < 10:
        return []
    sub = inputs.sel(scenario=scenario) if "scenario" in inputs.dims else inputs
    base = float(np.median(y[ok]))
    out = []
    for name, da in sub.data_vars.items():
        x = da.transpose("chain", "draw").values.ravel()
        if x.size != y.size or np.ptp(x[ok]) == 0:
            continue
        log = bool(np.all(x > 0))
        t = np.log10(x[ok]) if log else x[ok]
        slope = float(np.polyfit(t, y[ok], 1)[0])
        tq = np.quantile(t, [0.1, 0.5, 0.9])
        xs = 10.0**tq if log else tq
        ys = base + slope * (tq - tq[1])
        out.append(InputEffect(str(name).replace("__", "."), xs, ys, base, "draws"))
    out.sort(key=lambda e: -abs(e.swing))
    return out[:top]


def input_effects(fc: Forecast, wall: str, top: int = SIGNPOST_TOP) -> list[InputEffect]:
    """The inputs that move the hit year of ``wall`` most: from the ``sensitivity`` group's
    tornado when present, else from the forecast's draws."""
    found = _sensitivity_effects(fc, wall, top)
    return found if found is not None else _draw_effects(fc, wall, top)


LEAD_SWING_RATIO = 0.8
"""A runner-up whose swing is at least this share of the leader's moves the wall as much."""


def leading_effects(effects: list[InputEffect]) -> list[InputEffect]:
    """The inputs that share the lead: the first, and each next one (in rank order) whose
    swing is within ``LEAD_SWING_RATIO`` of the leader's or whose Sobol total-index interval
    overlaps the leader's (the ranking cannot tell them apart)."""
    if not effects:
        return []
    top = effects[0]
    out = [top]
    for e in effects[1:]:
        close = abs(e.swing) >= LEAD_SWING_RATIO * abs(top.swing)
        overlap = (
            top.total_interval is not None
            and e.total_interval is not None
            and np.all(np.isfinite([*top.total_interval, *e.total_interval]))
            and e.total_interval[1] >= top.total_interval[0]
        )
        if not (close or overlap):
            break
        out.append(e)
    return out


def lead_title(effects: list[InputEffect]) -> str:
    """The sensitivity slide's action title: the leader alone, or the inputs tied with it
    (swings over the 10th-90th percentile of each input, which the slide's note states)."""
    lead = leading_effects(effects)
    swings = [f"{abs(e.swing):.1f}" for e in lead]
    if len(lead) == 1:
        return (
            f"The {lead[0].label} moves the wall most: {swings[0]} years between its "
            "10th and 90th percentile"
        )
    if len(lead) == 2:
        return (
            f"The {lead[0].label} and the {lead[1].label} move the wall most, about equally "
            f"({swings[0]} and {swings[1]} years)"
        )
    top = max(abs(e.swing) for e in lead)
    rest = f"the {lead[2].label}" if len(lead) == 3 else f"{len(lead) - 2} more"
    return (
        f"The {lead[0].label}, the {lead[1].label} and {rest} move the wall "
        f"about equally (up to {top:.1f} years)"
    )


FRACTION_INPUTS = ("network.collective_efficiency", "training.max_utilization")


def signpost_of(e: InputEffect) -> Signpost:
    """The signpost of one input effect: its value now and the values that move the median hit
    year a year earlier or later (None where out of reach)."""
    label = reader_label(e.key)
    watch = WATCH.get(e.key, ("", "the input's prior source (assumptions table)"))[1]
    log = bool(np.all(e.inputs > 0))

    def at(target: float) -> float | None:
        v = _solve(e.inputs, e.hit_years, target, log)
        if v is not None and e.key in FRACTION_INPUTS and not 0.0 < v <= 1.0:
            return None  # a fraction of peak cannot leave (0, 1]
        return v

    return Signpost(
        e.key,
        label,
        float(e.inputs[1]),
        at(e.baseline - 1.0),
        at(e.baseline + 1.0),
        watch,
        e.method,
        input_unit(e.key),
    )


def signposts(fc: Forecast, wall: str | None = None, top: int = SIGNPOST_TOP) -> list[Signpost]:
    """Signposts for the hit year of ``wall`` (default: the headline's wall)."""
    wall = headline(fc).wall if wall is None else wall
    return [signpost_of(e) for e in input_effects(fc, wall, top)]


SIGNPOST_HEADER = [
    "input",
    "estimate now",
    "a year earlier at",
    "a year later at",
    "where to watch",
]


def signpost_method(posts: list[Signpost], wall: str) -> str:
    how = (
        "the tornado of the sensitivity analysis (hit year with the input at its 10th, 50th and "
        "90th percentile, the others at their medians), interpolated in log10 of the input"
        if posts and posts[0].method == "sensitivity"
        else "the least-squares slope of the hit year on the input (log10 when positive) over "
        "the forecast's draws (no sensitivity group: `wallcast analyse` adds one)"
    )
    return (
        f"Inputs that move the {wall_label(wall)} wall's hit year most; 'estimate now': the input's "
        f"median (the posterior median for inputs fitted to data, else the prior's); the values at which the median hit year would move a year earlier or later, "
        f"from {how}."
    )


# ----------------------------------------------------------------------------- summary


@dataclass
class Summary:
    sentences: list[str]
    figures: dict[str, Figure]


def executive_summary(fc: Forecast, prob: float = PROB) -> Summary:
    """Five sentences: when, what it costs, the latency wall, the scenarios, what to watch."""
    h = headline(fc, prob=prob)
    last = fc.last_year
    figs: dict[str, Figure] = {
        "hit_year_median": Figure(h.year["median"], str(calendar_year(h.year["median"]))),
        "hit_year_lower": Figure(h.year["lower"], str(calendar_year(h.year["lower"]))),
        "hit_year_upper": Figure(
            h.year["upper"],
            f"after {last}" if math.isinf(h.year["upper"]) else str(calendar_year(h.year["upper"])),
        ),
    }
    s1 = (
        f"In the {h.scenario} scenario frontier training reaches the {wall_label(h.wall)} wall "
        f"first, in {figs['hit_year_median'].text} ({fmt_pct(prob)}: "
        f"{figs['hit_year_lower'].text}–{figs['hit_year_upper'].text})."
    )
    sentences = [s1]
    if has_cost(fc):
        c = cost_summary(fc, prob=prob)
        figs.update({f"cost_{k}": v for k, v in c.figures.items()})
        sentences.append(
            f"Data movement makes each FLOP of the {c.year} frontier run cost "
            f"{c.figures['multiplier_median'].text} what it would at small-scale utilization "
            f"({fmt_pct(prob)}: {c.figures['multiplier_lower'].text} to "
            f"{c.figures['multiplier_upper'].text}); the run is infeasible in "
            f"{c.figures['infeasible_fraction'].text} of draws."
        )
        sentences.append(
            f"Because of the latency wall, no run shorter than "
            f"{c.figures['min_run_days_median'].text} (median) could train the {c.year} "
            f"frontier model at all."
        )
    rows = [r for r in summary_rows(fc.forecast, prob) if r["wall"] == h.wall]
    rows.sort(key=lambda r: r["year"]["median"])
    early, late = rows[0], rows[-1]
    figs["scenario_earliest"] = Figure(
        early["year"]["median"], fmt_calendar_year(early["year"]["median"], last)
    )
    figs["scenario_latest"] = Figure(
        late["year"]["median"], fmt_calendar_year(late["year"]["median"], last)
    )
    if len(rows) > 1:
        sentences.append(
            f"Across the {len(rows)} scenarios the median hit year of the {wall_label(h.wall)} "
            f"wall falls in {figs['scenario_earliest'].text} ({early['scenario']}) to "
            f"{figs['scenario_latest'].text} ({late['scenario']})."
        )
    else:  # one scenario: a range from it to itself says nothing
        sentences.append(
            f"This forecast holds only the {early['scenario']} scenario; a full `wallcast run` "
            "adds the other scenarios, which show how other assumptions move it."
        )
    posts = signposts(fc, h.wall)
    if posts:
        p = posts[0]
        move = []
        if p.earlier is not None:
            figs["signpost_earlier"] = Figure(p.earlier, p.fmt(p.earlier))
            move.append(f"{figs['signpost_earlier'].text} would bring it a year earlier")
        if p.later is not None:
            figs["signpost_later"] = Figure(p.later, p.fmt(p.later))
            move.append(f"{figs['signpost_later'].text} would push it a year later")
        figs["signpost_today"] = Figure(p.today, p.fmt(p.today))
        sentences.append(
            f"The signpost to watch is the {p.label}, now estimated at "
            f"{figs['signpost_today'].text}: "
            + (" and ".join(move) or "no value in reach moves it a year")
            + "."
        )
    else:
        sentences.append("No sampled inputs in this forecast, so no signposts.")
    if len(sentences) < 5:  # a forecast without the cost variables
        sentences.insert(1, h.detail)
    return Summary(sentences[:5], figs)


# ----------------------------------------------------------------------------- published estimates

# the published figures: forecast.report.published


@dataclass
class Comparison:
    rows: list[dict]
    figures: dict[str, Figure]


def comparison(fc: Forecast, prob: float = PROB) -> Comparison:
    """This forecast beside the published estimates (baseline scenario)."""
    scenario = fc.scenarios[0]
    ds = fc.forecast.sel(scenario=scenario)
    first_year = int(ds["year"].values[0])
    dm = interval(ds["wall_flop"].sel(wall="data_movement", year=first_year).values, prob)
    lat_year = cost_year(fc, REPORT_LATENCY_YEAR)
    lat = interval(ds["wall_flop"].sel(wall="latency", year=lat_year).values, prob)
    hit = interval(ds["hit_year"].sel(wall="data_movement").values, prob)
    figs = {
        "dm_wall_median": Figure(dm["median"], sci(dm["median"], 0)),
        "latency_wall_median": Figure(lat["median"], sci(lat["median"], 0)),
        "dm_years_after_2024": Figure(
            hit["median"] - PAPER_YEAR,
            "never" if math.isinf(hit["median"]) else f"{hit['median'] - PAPER_YEAR:.1f}",
        ),
        "dm_hit_year_median": Figure(hit["median"], fmt_calendar_year(hit["median"], fc.last_year)),
    }
    lat_now = interval(ds["wall_flop"].sel(wall="latency", year=first_year).values, prob)
    figs["latency_wall_now_median"] = Figure(lat_now["median"], sci(lat_now["median"], 0))
    rows = [
        {
            "label": f"data-movement wall, {first_year} frontier chip (trend)",
            **{k: dm[k] for k in ("median", "lower", "upper")},
            "published": PAPER_DM_WALL_FLOP,
            "published_also": BLOG_DM_WALL_FLOP,
            "published_low": None,
            "published_high": None,
            "source": "erdil2024",
        },
        {
            "label": f"latency wall, {first_year} frontier chip (trend)",
            **{k: lat_now[k] for k in ("median", "lower", "upper")},
            "published": PAPER_LATENCY_WALL_FLOP,
            "published_also": BLOG_LATENCY_WALL_FLOP,
            "published_low": None,
            "published_high": None,
            "source": "erdil2024",
        },
        {
            "label": f"latency wall, {lat_year}",
            **{k: lat[k] for k in ("median", "lower", "upper")},
            "published": REPORT_LATENCY_2030_FLOP[1],
            "published_low": REPORT_LATENCY_2030_FLOP[0],
            "published_high": REPORT_LATENCY_2030_FLOP[2],
            "source": "sevilla2024-2030",
        },
    ]
    return Comparison(rows, figs)
