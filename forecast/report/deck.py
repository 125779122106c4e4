"""``deck.pptx``: the forecast in a few slides a strategy lead can present without editing.

16:9, titles 32 pt, body text 18-24 pt, charts from :mod:`forecast.report.charts` at slide
scale (same palette and style as the report).  Every number comes from the forecast through
:mod:`forecast.queries.headline` and the report's number modules (changes, drivers, executive,
fitted inputs, frontier).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from pptx import Presentation
from pptx.util import Inches

from forecast.queries.formatting import fmt_calendar_year, fmt_flop
from forecast.queries.headline import (
    Forecast,
    headline,
    paper_beside_sentence,
    regime_phrase,
    summary_rows,
    wall_label,
)
from forecast.report import charts
from forecast.report.bibliography import source_lines
from forecast.report.changes import Changes, change_sentences
from forecast.report.decisions import decisions
from forecast.report.drivers import (
    backtest_summary,
    pct_or_dash,
    sensitivity_regime_note,
    sobol_before_after,
    sobol_drivers,
)
from forecast.report.executive import (
    SIGNPOST_HEADER,
    Figure,
    comparison,
    cost_summary,
    executive_summary,
    has_cost,
    input_effects,
    lead_title,
    leading_effects,
    reader_label,
    signposts,
)
from forecast.report.fitted_inputs import (
    ASSUMPTION_HEADER,
    assumption_rows,
    data_words,
    fitted_inputs,
    fitted_keys,
    headline_input,
    provenance_counts,
    provenance_rows,
)
from forecast.report.frontier import frontier_backtest_summary, frozen_chart, frozen_summary
from forecast.report.glossary import scenario_definitions
from forecast.report.method import method_chart
from forecast.report.slides import (
    ACCENT,
    APPENDIX_PT,
    BODY_PT,
    CHART_SCALE,
    DARK,
    GREY,
    HEIGHT,
    LEAD_PT,
    MARGIN,
    NOTE_HEIGHT,
    NOTE_PT,
    WIDTH,
    add_picture,
    add_table,
    add_text,
    clip,
    new_slide,
    slide_texts,
    table_pages,
)
from forecast.report.textfit import EMU_PER_PT, fitting_size


def build_deck(fc: Forecast, changes: Changes) -> Presentation:
    """A title slide, then 7-11 slides, each titled with its point and that point's number from the dataset (the
    backtest and the prior-against-posterior slides only when the forecast has their data).

    The numbers shown are recorded on the presentation as ``prs.wallcast_figures`` (slide
    index -> list of :class:`forecast.report.executive.Figure`), which the tests read back.
    """
    prs = Presentation()
    prs.slide_width, prs.slide_height = WIDTH, HEIGHT
    content_w = WIDTH - 2 * MARGIN
    top = Inches(1.45)
    h = headline(fc)
    last = fc.last_year
    summary = executive_summary(fc)
    f = summary.figures
    figures: dict[int, list[Figure]] = {}

    def record(*figs: Figure) -> None:
        figures.setdefault(len(prs.slides) - 1, []).extend(figs)

    def note(slide, text: str, height=NOTE_HEIGHT) -> None:
        add_text(slide, [(text, NOTE_PT, False, GREY)], MARGIN, HEIGHT - height, content_w, height)

    # 0. title: what, when, which forecast and data, and the answer up front
    a = fc.attrs
    created = str(a.get("created", ""))[:10] or "date not recorded"
    slide = new_slide(
        prs, f"Frontier AI training against the data-movement and latency walls: {created}"
    )
    add_text(
        slide,
        [
            (h.sentence, LEAD_PT, True, ACCENT),
            f"Forecast {fc.id}, created {created} by wallcast {a.get('code_version', '?')} "
            "(an automated probabilistic forecast).",
            f"Data: {a.get('hardware_rows', '?')} accelerators and {a.get('frontier_rows', '?')} "
            f"frontier training runs (data hash {str(a.get('data_hash', '?'))[:12]}); walls of "
            f"{regime_phrase(fc.regime)}.",
            *([beside] if (beside := paper_beside_sentence(fc, short=True)) else []),
            "Every number is a median or an 80% interval over the forecast's draws; sources in "
            "the appendix.",
        ],
        MARGIN,
        Inches(1.9),
        content_w,
        HEIGHT - Inches(2.4),
    )

    # 1. the answer, with the fan chart
    lo, hi = f["hit_year_lower"].text, f["hit_year_upper"].text
    slide = new_slide(
        prs,
        f"Frontier training hits the {wall_label(h.wall)} wall around "
        f"{f['hit_year_median'].text} ({lo}–{hi})",
    )
    record(f["hit_year_median"], f["hit_year_lower"], f["hit_year_upper"])
    fig = charts.fan_chart(fc, scale=CHART_SCALE, figsize=(12.5, 5.2), title=False)
    add_picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.95))
    note(
        slide,
        f"{h.scenario} scenario, walls of {regime_phrase(fc.regime)}; median and 80% interval "
        "of the first year the largest run reaches the wall. [erdil2024] [sevilla2024-2030]",
    )

    # 2. what it costs
    if has_cost(fc):
        c = cost_summary(fc)
        cf = c.figures
        slide = new_slide(
            prs,
            f"Data movement makes each FLOP of the {c.year} frontier run cost "
            f"{cf['multiplier_median'].text} (80%: {cf['multiplier_lower'].text} to "
            f"{cf['multiplier_upper'].text})",
        )
        record(cf["multiplier_median"], cf["multiplier_lower"], cf["multiplier_upper"])
        fig = charts.cost_chart(fc, scale=CHART_SCALE, figsize=(12.5, 5.2))
        add_picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.95))
        note(
            slide,
            f"Cost multiplier: small-scale maximum utilization / best utilization of the year's "
            f"frontier run (1 = no penalty). {c.year}, {c.scenario}: infeasible in "
            f"{cf['infeasible_fraction'].text} of draws; shortest run that could train it "
            f"{cf['min_run_days_median'].text}.",
        )
        record(cf["infeasible_fraction"], cf["min_run_days_median"])

    # 3. when, per scenario
    rows = summary_rows(fc.forecast)
    n = len(fc.scenarios)
    if n > 1:
        slide = new_slide(
            prs,
            f"Across scenarios the {wall_label(h.wall)} wall arrives between "
            f"{f['scenario_earliest'].text} and {f['scenario_latest'].text} (medians)",
        )
        record(f["scenario_earliest"], f["scenario_latest"])
    else:  # one scenario: a range from it to itself says nothing; both walls' medians do
        medians = [
            (r["wall"], Figure(r["year"]["median"], fmt_calendar_year(r["year"]["median"], last)))
            for r in rows
        ]
        slide = new_slide(
            prs,
            f"Only the {h.scenario} scenario: "
            + ", ".join(f"{wall_label(w)} wall in {m.text}" for w, m in medians)
            + " (medians)",
        )
        record(*(m for _, m in medians))
    fig = charts.scenario_chart(
        rows, last, scale=CHART_SCALE, figsize=(12.5, max(3.4, min(5.6, 1.8 + 0.55 * n)))
    )
    add_picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.3))

    # 4. what moves it (tornado)
    effects = input_effects(fc, h.wall, top=6)
    if effects:
        e = effects[0]
        slide = new_slide(prs, lead_title(effects))
        lead = leading_effects(effects)
        shown = lead if len(lead) <= 2 else [max(lead, key=lambda x: abs(x.swing))]
        record(*(Figure(abs(x.swing), f"{abs(x.swing):.1f}") for x in shown))
        fig = charts.tornado_chart(effects, h.wall, scale=CHART_SCALE, figsize=(12.5, 5.0))
        add_picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.95))
        if e.method == "sensitivity":
            sd = sobol_drivers(fc, top=None)
            fitted = bool(sd is not None and sd.fitted)
        else:
            fitted = bool(fitted_keys(fc))
        text = (
            "One input at a time at its 10th or 90th "
            + ("percentile (posterior when fitted to data); " if fitted else "prior percentile; ")
            + (
                "from the sensitivity analysis (`wallcast analyse`)."
                if e.method == "sensitivity"
                else "from the slope of the hit year on the input over the forecast's draws "
                "(no sensitivity analysis in this forecast)."
            )
        )
        sens = fc.group("sensitivity") if e.method == "sensitivity" else None
        if sens is not None and sensitivity_regime_note(fc):
            if sens.attrs.get("sensitivity_tornado_regime", "paper") == fc.regime:
                text += " Walls of launchable plans; its Sobol ranking: the paper's plans."
            else:
                text += " Walls of the paper's idealized plans (the analysis's fast path)."
        moved = [m for m in sobol_before_after(fc) if m.wall == h.wall]
        if moved:
            b, a = (Figure(v, f"{v:.2f}") for v in (moved[0].before[0], moved[0].after[0]))
            record(b, a)
            label = reader_label(moved[0].key)
            text += f" Total index of the {label}: {b.text} with priors only → {a.text} now."
        note(slide, text)

    # 5. evidence: comparison with published estimates
    cmp = comparison(fc)
    cf = cmp.figures
    slide = new_slide(
        prs,
        f"Our 2024 data-movement wall: {cf['dm_wall_median'].text} FLOP; against the paper's "
        "~1e28 (abstract), 2e28 (blog)",
    )
    record(cf["dm_wall_median"])
    fig = charts.comparison_chart(cmp.rows, scale=CHART_SCALE, figsize=(12.5, 4.0))
    pic = add_picture(slide, fig, MARGIN, top, content_w, Inches(3.3))
    years_text = (
        "is not reached by the last forecast year"
        if cf["dm_years_after_2024"].text == "never"
        else f"is hit in {cf['dm_hit_year_median'].text} (median), "
        f"{cf['dm_years_after_2024'].text} years after 2024"
    )
    add_text(
        slide,
        [
            f"[erdil2024]: utilization falls beyond ~1e28 FLOP on an H100 (3 months; 2e28 in "
            "[erdil2024-blog] and [epoch-simulator]), reached in about three years; here the "
            f"data-movement wall {years_text}. Its latency wall: ~1e31 (blog: 2e31); here "
            f"{cf['latency_wall_now_median'].text} FLOP for the 2024 frontier chip of the fitted "
            "trends (median; the H100 itself: the frozen-hardware appendix).",
            f"[sevilla2024-2030]: latency wall in 2030 near 3e31 FLOP (3e30–1e32); here "
            f"{cf['latency_wall_median'].text} FLOP (median).",
        ],
        MARGIN,
        pic.top + pic.height + Inches(0.15),
        content_w,
        HEIGHT - (pic.top + pic.height) - Inches(0.3),
        size=18,
    )
    record(
        cf["latency_wall_median"],
        cf["latency_wall_now_median"],
        cf["dm_years_after_2024"],
        cf["dm_hit_year_median"],
    )

    # 6. evidence: backtest (only when the forecast has a backtest group)
    bt = backtest_summary(fc)
    if bt is not None:
        pooled = [bt.row(o)["coverage_80"] for o in bt.origins]
        pooled = [c for c in pooled if c is not None and math.isfinite(c)]
        mean_cov = Figure(float(np.mean(pooled)) if pooled else math.nan, "")
        mean_cov.text = pct_or_dash(mean_cov.value if pooled else None)
        slide = new_slide(
            prs,
            f"Backtest: the trends' 80% intervals covered {mean_cov.text} of later accelerators",
        )
        record(mean_cov)
        side_w = Inches(3.9)
        chart_w = content_w - side_w - Inches(0.2)
        fig = charts.calibration_chart(bt, scale=1.25, figsize=(12.0, 5.6))
        add_picture(slide, fig, MARGIN, top, chart_w, HEIGHT - top - Inches(0.3))
        lines = [("80% intervals cover:", BODY_PT, True, DARK)]
        for origin in bt.origins:
            r = bt.row(origin)
            cov = Figure(r["coverage_80"], pct_or_dash(r["coverage_80"]))
            record(cov)
            lines.append(f"origin {bt.label(origin)}: {cov.text} of {r['n_held_out']} held out")
        fbt = frontier_backtest_summary(fc)
        if fbt is not None:
            pooled_row = fbt.row(fbt.pooled)
            fcov = Figure(pooled_row["coverage_80"], pct_or_dash(pooled_row["coverage_80"]))
            record(fcov)
            lines.append(
                f"frontier compute: {fcov.text} of {int(pooled_row['n_held_out'])} later records "
                f"(origins {fbt.origins[0]}–{fbt.origins[-1]})"
            )
        lines.append(
            (
                "Hardware trends refitted on parts released before each origin; "
                "scored on the later ones (mean over distinct backtests in the title"
                + ("; origins with the same data count once)." if bt.same_data else ")."),
                NOTE_PT,
                False,
                GREY,
            )
        )
        add_text(
            slide, lines, MARGIN + chart_w + Inches(0.2), top, side_w, HEIGHT - top - Inches(0.2)
        )

    # 7. what to watch: signposts
    posts = signposts(fc, h.wall)
    if posts:
        p = posts[0]
        if p.earlier is not None:
            sp_fig = Figure(p.earlier, p.fmt(p.earlier))
            title = f"Watch the {p.label}: at {sp_fig.text} the wall comes a year earlier"
        else:
            sp_fig = Figure(p.today, p.fmt(p.today))
            title = f"Watch the {p.label}, now estimated at {sp_fig.text}"
        slide = new_slide(prs, title)
        record(sp_fig)
        body = [sp.cells() for sp in posts]
        add_table(
            slide,
            list(SIGNPOST_HEADER),
            body,
            MARGIN,
            top,
            content_w,
            [2.6, 1.3, 1.6, 1.6, 5.2],
            size=16,
            row_in=0.85,
        )
        for sp in posts:
            record(
                *(Figure(v, sp.fmt(v)) for v in (sp.today, sp.earlier, sp.later) if v is not None)
            )
        now = "median (posterior when fitted)" if fitted_keys(fc) else "prior median"
        note(slide, f"Estimate now: {now}. Sources: the appendix.", Inches(0.6))

    # 8. what this means and what to decide
    d = decisions(fc)
    slide = new_slide(prs, d.title)
    record(*d.figures)
    add_text(slide, d.points, MARGIN, top, content_w, HEIGHT - top - Inches(0.3), space_after=14)

    # 9. what changed (none on a first forecast: an empty slide says nothing; the report says so)
    if not changes.first:
        years_only = Changes(
            changes.previous_id, moved=[m for m in changes.moved if m["what"] == "year"]
        )
        moved = change_sentences(years_only, last) or ["No median hit year moved."]
        slide = new_slide(
            prs, f"Since forecast {changes.previous_id}: {len(years_only.moved)} hit years moved"
        )
        if len(moved) > 4:
            moved = [*moved[:3], f"… and {len(moved) - 3} more in report.html"]
        data = [clip(d, 90) for d in changes.data[:2]]
        if len(changes.data) > 2:
            data.append(f"… and {len(changes.data) - 2} more in report.html")
        lines = [*moved, ("Data and inputs:", BODY_PT, True, DARK), *data]
        add_text(slide, lines, MARGIN, top, content_w, HEIGHT - top - Inches(0.3), size=18)

    # 10. appendix: the paper's framing, hardware frozen at the H100 (only with the group)
    fz = frozen_summary(fc)
    if fz is not None:
        dm_f, dm_full = fz.frozen["data_movement"], fz.full["data_movement"]
        frozen_year = Figure(dm_f["median"], fmt_calendar_year(dm_f["median"], last))
        full_year = Figure(dm_full["median"], fmt_calendar_year(dm_full["median"], last))
        frozen_wall = Figure(dm_f["wall_flop"], fmt_flop(dm_f["wall_flop"]))
        slide = new_slide(
            prs,
            f"Appendix: data-movement wall at frozen {fz.accelerator.removeprefix('NVIDIA ')} "
            "hardware: "
            f"{frozen_year.text}; with improving hardware: {full_year.text}",
        )
        record(frozen_year, full_year, frozen_wall)
        side_w = Inches(4.6)
        chart_w = content_w - side_w - Inches(0.2)
        fig = frozen_chart(fz, scale=1.55, figsize=(8.6, 5.4))
        add_picture(slide, fig, MARGIN, top, chart_w, HEIGHT - top - Inches(0.3))
        add_text(
            slide,
            [
                "The paper's framing [erdil2024]: 2024 hardware, ~1e28 FLOP, 'a barrier in "
                "about three years'.",
                f"Frozen at the {fz.accelerator} (8-GPU domain, 2024 latencies): the wall at "
                f"{frozen_wall.text} FLOP{_wall_interval(fz.ds)}, reached in {frozen_year.text} "
                f"({fmt_calendar_year(dm_f['lower'], last)}–"
                f"{fmt_calendar_year(dm_f['upper'], last)}, 80%).",
                f"Improving hardware: {full_year.text} "
                f"({fmt_calendar_year(dm_full['lower'], last)}–"
                f"{fmt_calendar_year(dm_full['upper'], last)}, 80%): 72-GPU domains from 2025 "
                "and growing, more memory and network bandwidth per chip.",
            ],
            MARGIN + chart_w + Inches(0.2),
            top,
            side_w,
            HEIGHT - top - Inches(0.3),
            size=18,
            space_after=14,
        )
    # 11. appendix: what the data says, prior against posterior of the fitted inputs
    items = fitted_inputs(fc)
    if items is not None:
        it = headline_input(items)
        ef = it.figures
        unit = " tokens" if it.unit == "tokens" else ""
        slide = new_slide(
            prs,
            f"Appendix: fitted to data, {it.label[0].lower() + it.label[1:]} is "
            f"{ef['posterior_median'].text}{unit} (80%: {ef['posterior_lower'].text}–"
            f"{ef['posterior_upper'].text}), not the prior's {ef['prior_median'].text}",
        )
        record(ef["posterior_median"], ef["posterior_lower"], ef["posterior_upper"])
        record(ef["prior_median"])
        fig = charts.prior_posterior_chart(items, scale=1.2, figsize=(13.0, 5.6))
        add_picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.95))
        prov = provenance_rows(fc)
        if prov is not None:
            counts = provenance_counts(prov)
            tables = sorted({data_words(i.table) for i in items})
            inputs_line = (
                f"Inputs: {counts['fitted']} fitted to data ({', '.join(tables)}), "
                f"{counts['prior']} priors with a public source, {counts['fixed']} fixed; "
                "every one with its origin in report.html."
            )
            record(*(Figure(counts[k], str(counts[k])) for k in ("fitted", "prior", "fixed")))
        else:
            inputs_line = (
                "Light: prior; dark: posterior of the joint model (details in report.html)."
            )
        note(slide, inputs_line)

    # 12. appendix: assumptions, as a table of plain names with units (no registry key), over as
    # many slides as keep every row readable
    rows = assumption_rows(fc)
    fixed = sum(r.fixed for r in rows)
    n_fixed = Figure(fixed, str(fixed))
    n_uncertain = Figure(len(rows) - fixed, str(len(rows) - fixed))
    fitted_any = any(r.fitted != "—" for r in rows)
    header = ASSUMPTION_HEADER if fitted_any else ASSUMPTION_HEADER[:2]
    shares = [5.6, 4.0, 3.6] if fitted_any else [6.0, 6.0]
    widths_pt = [content_w / EMU_PER_PT * w / sum(shares) for w in shares]
    room_pt = (HEIGHT - top - Inches(0.65)) / EMU_PER_PT  # above the note
    pages = table_pages(
        [r.cells()[: len(header)] for r in rows], header, widths_pt, APPENDIX_PT, room_pt
    )
    for n, page in enumerate(pages, start=1):
        of = f" ({n} of {len(pages)})" if len(pages) > 1 else ""
        slide = new_slide(
            prs,
            f"Appendix: {n_uncertain.text} uncertain assumptions, {n_fixed.text} fixed{of}",
        )
        record(n_uncertain, n_fixed)
        add_table(
            slide, header, page, MARGIN, top, content_w, shares, size=APPENDIX_PT, row_in=0.28
        )
        note(
            slide,
            f"Priors: {fc.attrs.get('priors_name', '?')}. "
            + ("Where fitted to data, the forecast uses the posterior. " if fitted_any else "")
            + "Every source: report.html.",
            Inches(0.6),
        )

    # 13. appendix: what each scenario assumes (only with more than the baseline)
    defs = scenario_definitions(fc)
    if len(defs) > 1:
        slide = new_slide(prs, f"Appendix: the {len(defs)} scenarios")
        add_table(
            slide,
            ["Scenario", "What it assumes"],
            [list(d) for d in defs],
            MARGIN,
            top,
            content_w,
            [2.6, 9.7],
            size=APPENDIX_PT,
            row_in=0.42,
        )

    # 14. appendix: the method, as the report's diagram with one line per step
    slide = new_slide(prs, "Appendix: how the forecast is made")
    fig = method_chart(scale=1.3, figsize=(13.0, 4.3))
    pic = add_picture(slide, fig, MARGIN, top, content_w, Inches(3.55))
    add_text(
        slide,
        [
            "Priors from public sources; one joint Bayesian fit (NumPyro) to published hardware, "
            "runs, model shapes and utilization; every number is a distribution over its draws.",
            "Per draw and year: the frontier accelerator from the fitted trends, the frontier run "
            "from the compute trend; the plan search finds the best utilization "
            f"({regime_phrase(fc.regime)}).",
            "Faster chips can bring the wall sooner: arithmetic speeds up, the bytes to move and "
            "the latencies to wait for do not [erdil2024].",
        ],
        MARGIN,
        pic.top + pic.height + Inches(0.1),
        content_w,
        HEIGHT - (pic.top + pic.height) - Inches(0.2),
        size=16,
        space_after=6,
    )

    # 15. appendix: sources, every one the slides cite (short form where written, else the
    # bibliography's), so the deck stands alone
    lines = source_lines([t for s in prs.slides for t in slide_texts(s)])
    slide = new_slide(prs, "Appendix: sources")
    box_h = HEIGHT - top - Inches(0.3)
    size = fitting_size("\n".join(lines), content_w, box_h, (16, 14, APPENDIX_PT), space_after_pt=4)
    add_text(slide, lines, MARGIN, top, content_w, box_h, size=size, space_after=4)
    prs.wallcast_figures = figures
    return prs


def write_deck(fc: Forecast, out_dir: str | Path, changes: Changes) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "deck.pptx"
    build_deck(fc, changes).save(path)
    return path


def _wall_interval(ds) -> str:
    """' (median; 80%: 2.3e27-2.1e29)' when the frozen walls are per draw, else ''."""
    if "wall_flop_lower" not in ds:
        return ""
    w = ds.sel(wall="data_movement")
    lo, hi = fmt_flop(float(w["wall_flop_lower"])), fmt_flop(float(w["wall_flop_upper"]))
    return f" (median; 80%: {lo}–{hi})"
