"""What the forecast means for a decision: when to plan for the wall, how large a single run can
grow, what to budget, which lever buys the most time, and when to revisit, each a sentence with
its number from the forecast (the deck's "what to decide" slide and the report's section).

Nothing here is new arithmetic: every figure comes from the headline, the cost summary, the
input effects and the signposts of :mod:`forecast.report.executive`, so the slide, the report
and ``wallcast query`` give the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from forecast.queries.formatting import calendar_year
from forecast.queries.headline import Forecast, headline, prose_flop, wall_label
from forecast.report.executive import (
    Figure,
    cost_summary,
    has_cost,
    input_effects,
    leading_effects,
    signposts,
)
from forecast.report.frontier import Block

DECISIONS_HEADING = "What this means and what to decide"

WALL_CONSEQUENCE = {
    "data_movement": "utilization falls below 80% of the small-scale maximum, so each FLOP costs "
    "more",
    "latency": "no plan finishes the run in its length at any utilization",
}


@dataclass
class Decisions:
    """The decision points in order (timing, size, budget, lever, revisit) and the title."""

    title: str
    points: list[str]
    figures: list[Figure] = field(default_factory=list)


def decisions(fc: Forecast) -> Decisions:
    """The decision points of the headline scenario and wall (points without the data they need
    are left out: no cost point without the cost variables, no lever without input effects)."""
    h = headline(fc)
    wall = wall_label(h.wall)
    y = h.year
    figures: list[Figure] = []
    points: list[str] = []

    if math.isinf(y["median"]):
        lower = Figure(
            y["lower"], "never" if math.isinf(y["lower"]) else str(calendar_year(y["lower"]))
        )
        timing = f"Timing: fewer than half the draws reach the {wall} wall by {fc.last_year}; " + (
            f"one in ten reaches it by {lower.text}, so plans past then carry that risk."
            if math.isfinite(y["lower"])
            else "no plan in the forecast window needs to allow for it."
        )
        title = f"What to decide: the {wall} wall is not expected by {fc.last_year}"
    else:
        lower = Figure(y["lower"], str(calendar_year(y["lower"])))
        median = Figure(y["median"], str(calendar_year(y["median"])))
        figures.append(median)
        timing = (
            f"Timing: plan frontier runs from {lower.text} for the {wall} wall: one draw in ten "
            f"meets it in {lower.text} or earlier, half by the end of {median.text}."
        )
        title = f"What to decide: plan frontier runs from {lower.text} for the {wall} wall"
    figures.append(lower)
    points.append(timing)

    if math.isfinite(y["median"]):
        flop = Figure(h.flop["median"], prose_flop(h.flop["median"]))
        figures.append(flop)
        points.append(
            f"Size: past about {flop.text} FLOP in one run (the median hit), "
            f"{WALL_CONSEQUENCE.get(h.wall, 'the wall binds')}; larger programmes split into "
            "runs below it or accept the cost."
        )

    if has_cost(fc):
        c = cost_summary(fc)
        cf = c.figures
        figures += [cf["multiplier_median"], cf["multiplier_upper"], cf["min_run_days_median"]]
        points.append(
            f"Budget: the {c.year} frontier run costs {cf['multiplier_median'].text} per FLOP "
            f"what it would at small scale (80%: up to {cf['multiplier_upper'].text}), and no run "
            f"shorter than {cf['min_run_days_median'].text} can train it."
        )

    effects = input_effects(fc, h.wall)
    lead = leading_effects(effects)
    if lead:
        names = " and the ".join(e.label for e in lead[:2])
        swing = Figure(abs(lead[0].swing), f"{abs(lead[0].swing):.1f}")
        figures.append(swing)
        points.append(
            f"Lever: the {names} {'move' if len(lead) > 1 else 'moves'} the hit year most (up to "
            f"{swing.text} years across the 80% range): better evidence on "
            f"{'them' if len(lead) > 1 else 'it'} narrows the forecast most, and a training "
            "recipe or hardware that shifts it moves the wall most."
        )

    posts = [p for p in signposts(fc, h.wall) if p.earlier is not None or p.later is not None]
    if posts:
        p = posts[0]
        today = Figure(p.today, p.fmt(p.today))
        figures.append(today)
        if p.earlier is not None:
            at = Figure(p.earlier, p.fmt(p.earlier))
            figures.append(at)
            move = f"reaches {at.text} (now {today.text}): the wall then comes a year earlier"
        else:
            at = Figure(p.later, p.fmt(p.later))
            figures.append(at)
            move = f"reaches {at.text} (now {today.text}): the wall then comes a year later"
        points.append(f"Revisit: re-plan if the {p.label} {move}.")
    return Decisions(title, points, figures)


def decision_blocks(fc: Forecast) -> list[Block]:
    """The report's section: the decision points as a list."""
    d = decisions(fc)
    return [Block("h2", DECISIONS_HEADING), Block("ul", items=d.points)]
