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

from forecast.queries.formatting import calendar_year, fmt_pct
from forecast.queries.headline import Forecast, headline, prose_flop, wall_label
from forecast.report.executive import (
    Figure,
    cost_summary,
    has_cost,
    input_effects,
    leading_effects,
    signpost_of,
)
from forecast.report.frontier import Block

DECISIONS_HEADING = "What this means and what to decide"

WALL_CONSEQUENCE = {
    "data_movement": "utilization falls below 80% of the small-scale maximum, so each FLOP costs "
    "more",
    "latency": "no plan finishes the run in its length, at any utilization",
}


@dataclass
class Decisions:
    """The decision points in order (timing, size, budget, lever, revisit) and the title."""

    title: str
    points: list[str]
    figures: list[Figure] = field(default_factory=list)


def _timing(fc: Forecast, h, wall: str, figures: list[Figure]) -> tuple[str, str]:
    """The timing point and the slide's title."""
    y, last = h.year, fc.last_year
    if math.isfinite(y["median"]):
        lower = Figure(y["lower"], str(calendar_year(y["lower"])))
        median = Figure(y["median"], str(calendar_year(y["median"])))
        figures += [lower, median]
        return (
            f"Timing: plan frontier runs from {lower.text} for the {wall} wall: one draw in ten "
            f"meets it in {lower.text} or earlier, half by the end of {median.text}.",
            f"What to decide: plan frontier runs from {lower.text} for the {wall} wall",
        )
    share = Figure(h.p_hit, fmt_pct(h.p_hit))
    figures.append(share)
    if math.isfinite(y["lower"]):
        lower = Figure(y["lower"], str(calendar_year(y["lower"])))
        figures.append(lower)
        risk = f"one draw in ten meets it by the end of {lower.text}, so plans past then carry that risk."
    else:
        risk = "plans in the forecast window carry that risk, no more."
    return (
        f"Timing: {share.text} of the draws reach the {wall} wall by {last}; {risk}",
        f"What to decide: the {wall} wall is not expected by {last}",
    )


def decisions(fc: Forecast) -> Decisions:
    """The decision points of the headline scenario and wall (points without the data they need
    are left out: no cost point without the cost variables, no lever without input effects)."""
    h = headline(fc)
    wall = wall_label(h.wall)
    figures: list[Figure] = []
    timing, title = _timing(fc, h, wall, figures)
    points = [timing]

    if math.isfinite(h.flop["median"]):
        flop = Figure(h.flop["median"], prose_flop(h.flop["median"]))
        figures.append(flop)
        remedy = (
            "larger programmes split into runs below it or accept the cost"
            if h.wall == "data_movement"
            else "a larger run needs a longer schedule, a larger critical batch or faster links"
        )
        points.append(
            f"Size: past about {flop.text} FLOP in one run (the median hit), "
            f"{WALL_CONSEQUENCE.get(h.wall, 'the wall binds')}; {remedy}."
        )

    if has_cost(fc):
        c = cost_summary(fc)
        cf = c.figures
        infeasible = cf["infeasible_fraction"]
        if math.isfinite(c.multiplier["median"]):
            figures.append(cf["multiplier_median"])
            cost = (
                f"Budget: the {c.year} frontier run costs {cf['multiplier_median'].text} per FLOP "
                "what it would at small scale"
            )
            if math.isfinite(c.multiplier["upper"]):
                figures.append(cf["multiplier_upper"])
                cost += f" (80%: up to {cf['multiplier_upper'].text})"
            elif infeasible.value > 0:
                figures.append(infeasible)
                cost += f" and cannot be trained at all in {infeasible.text} of the draws"
        else:
            figures.append(infeasible)
            cost = (
                f"Budget: the {c.year} frontier run cannot be trained in its run length in "
                f"{infeasible.text} of the draws; it needs a longer run or a smaller model"
            )
        if math.isfinite(c.min_run_days["median"]):
            figures.append(cf["min_run_days_median"])
            cost += f"; no run shorter than {cf['min_run_days_median'].text} can train it"
        points.append(cost + ".")

    effects = input_effects(fc, h.wall)  # once: the lever and the signpost both read them
    lead = [e for e in leading_effects(effects) if math.isfinite(e.swing)]
    if lead:
        names = [e.label for e in lead[:3]]
        listed = (
            names[0] if len(names) == 1 else ", the ".join(names[:-1]) + f" and the {names[-1]}"
        )
        top = max(abs(e.swing) for e in lead)  # as the sensitivity slide's title
        swing = Figure(top, f"{top:.1f}")
        figures.append(swing)
        many = len(lead) > 1
        points.append(
            f"Lever: the {listed} {'move' if many else 'moves'} the hit year most (up to "
            f"{swing.text} years across the 80% range): better evidence on "
            f"{'them' if many else 'it'} narrows the forecast most, and a training recipe or "
            f"hardware that shifts {'them' if many else 'it'} moves the wall most."
        )

    posts = [signpost_of(e) for e in effects]
    posts = [p for p in posts if p.earlier is not None or p.later is not None]
    if posts:
        p = posts[0]
        today = Figure(p.today, p.fmt(p.today))
        value, direction = (p.earlier, "earlier") if p.earlier is not None else (p.later, "later")
        at = Figure(value, p.fmt(value))
        figures += [today, at]
        points.append(
            f"Revisit: re-plan if the {p.label} reaches {at.text} (now {today.text}): the wall "
            f"then comes a year {direction}."
        )
    return Decisions(title, points, figures)


def decision_blocks(fc: Forecast) -> list[Block]:
    """The report's section: the decision points as a list."""
    d = decisions(fc)
    return [Block("h2", DECISIONS_HEADING), Block("ul", items=d.points)]
