"""``deck.pptx``: the forecast in a few slides a strategy lead can present without editing.

16:9, titles 32 pt, body text 18-24 pt, charts from :mod:`forecast.report.charts` at slide
scale (same palette and style as the report).  Every number comes from the forecast through
:mod:`forecast.queries.headline` and the report's number modules (changes, drivers, executive,
fitted inputs, frontier).
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.util import Emu, Inches, Pt

from forecast.queries.formatting import fmt_calendar_year, fmt_flop
from forecast.queries.headline import (
    Forecast,
    headline,
    regime_phrase,
    summary_rows,
    wall_label,
)
from forecast.report import charts
from forecast.report.bibliography import source_lines
from forecast.report.changes import Changes, change_sentences
from forecast.report.drivers import (
    backtest_summary,
    pct_or_dash,
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
    fitted_inputs,
    fitted_keys,
    headline_input,
    provenance_counts,
    provenance_rows,
)
from forecast.report.frontier import frontier_backtest_summary, frozen_summary
from forecast.report.glossary import scenario_definitions
from forecast.report.textfit import EMU_PER_PT, cell_height_pt, fitting_size

WIDTH, HEIGHT = Inches(13.333), Inches(7.5)
MARGIN = Inches(0.5)
TITLE_PT, BODY_PT, LEAD_PT, TABLE_PT, NOTE_PT = 28, 20, 28, 18, 16
TITLE_SIZES_PT = (TITLE_PT, 26, 24, 22, BODY_PT)
NOTE_HEIGHT = Inches(0.9)
APPENDIX_PT = 13
FONT = "DejaVu Sans"  # shipped with matplotlib, so the fit test measures the font LibreOffice uses
ASSUMPTION_ROWS_PER_SLIDE = 6
CHART_SCALE = 1.45
DARK = RGBColor(0x1A, 0x1A, 0x1A)
ACCENT = RGBColor(0x00, 0x72, 0xB2)  # Okabe-Ito blue, as the report's lead sentence
GREY = RGBColor(0x55, 0x55, 0x55)


def _new(prs, title: str):
    slide = prs.slides.add_slide(prs.slide_layouts[5])  # title only
    t = slide.shapes.title
    t.left, t.top, t.width, t.height = MARGIN, Inches(0.2), WIDTH - 2 * MARGIN, Inches(1.15)
    t.text = title
    tf = t.text_frame
    tf.word_wrap = True
    # a long action title steps down to body size rather than overflow its two lines
    size = fitting_size(title, t.width, t.height, TITLE_SIZES_PT, bold=True)
    for p in tf.paragraphs:
        p.alignment = 1  # left
        for r in p.runs:
            r.font.size = Pt(size)
            r.font.name = FONT
            r.font.bold = True
            r.font.color.rgb = DARK
    return slide


def _text(slide, paragraphs, left, top, width, height, size=BODY_PT, space_after=10):
    """Text box; ``paragraphs``: str or (str, size, bold, colour) tuples; returns the shape."""
    box = slide.shapes.add_textbox(left, top, width, height)
    tf = box.text_frame
    tf.word_wrap = True
    for i, item in enumerate(paragraphs):
        text, psize, bold, colour = (item, size, False, DARK) if isinstance(item, str) else item
        p = tf.paragraphs[0] if i == 0 else tf.add_paragraph()
        run = p.add_run()
        run.text = text
        run.font.size = Pt(psize)
        run.font.name = FONT
        run.font.bold = bold
        run.font.color.rgb = colour
        p.space_after = Pt(space_after)
    return box


def _picture(slide, fig, left, top, max_width, max_height, dpi=150):
    png = charts.to_png(fig, dpi=dpi)
    w_in, h_in = fig.get_size_inches()
    ratio = min(max_width / Inches(w_in), max_height / Inches(h_in))
    width, height = int(Inches(w_in) * ratio), int(Inches(h_in) * ratio)
    left = left + (max_width - width) // 2
    return slide.shapes.add_picture(io.BytesIO(png), left, top, Emu(width), Emu(height))


def _table(slide, header, rows, left, top, width, col_widths=None, size=TABLE_PT, row_in=0.5):
    shape = slide.shapes.add_table(
        len(rows) + 1, len(header), left, top, width, Inches(row_in * (len(rows) + 1))
    )
    table = shape.table
    if col_widths:
        total = sum(col_widths)
        for j, w in enumerate(col_widths):
            table.columns[j].width = int(width * w / total)
    for i, row in enumerate([header, *rows]):
        for j, value in enumerate(row):
            cell = table.cell(i, j)
            cell.text = str(value)
            for p in cell.text_frame.paragraphs:
                for r in p.runs:
                    r.font.size = Pt(size)
                    r.font.name = FONT
                    r.font.bold = i == 0
    return shape


def _pages(
    rows: list[list[str]], header: list[str], widths_pt: list[float], size: float, room_pt: float
) -> list[list[list[str]]]:
    """``rows`` split into as few tables as fit ``room_pt`` each (header repeated), measuring
    every row's wrapped height as the fit check does; at least one page, even when empty."""

    def height(cells: list[str], bold: bool = False) -> float:
        return max(
            Inches(0.28) / EMU_PER_PT,
            *(cell_height_pt(c, w, size, bold) for c, w in zip(cells, widths_pt, strict=True)),
        )

    pages: list[list[list[str]]] = [[]]
    used = height(header, bold=True)
    for row in rows:
        h = height(row)
        if pages[-1] and used + h > room_pt:
            pages.append([])
            used = height(header, bold=True)
        pages[-1].append(row)
        used += h
    return pages


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
        _text(slide, [(text, NOTE_PT, False, GREY)], MARGIN, HEIGHT - height, content_w, height)

    # 0. title: what, when, which forecast and data, and the answer up front
    a = fc.attrs
    created = str(a.get("created", ""))[:10] or "date not recorded"
    slide = _new(
        prs, f"Frontier AI training against the data-movement and latency walls: {created}"
    )
    _text(
        slide,
        [
            (h.sentence, LEAD_PT, True, ACCENT),
            f"Forecast {fc.id}, created {created} by wallcast {a.get('code_version', '?')} "
            "(an automated probabilistic forecast).",
            f"Data: {a.get('hardware_rows', '?')} accelerators and {a.get('frontier_rows', '?')} "
            f"frontier training runs (data hash {str(a.get('data_hash', '?'))[:12]}); walls of "
            f"{regime_phrase(fc.regime)}.",
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
    slide = _new(
        prs,
        f"Frontier training hits the {wall_label(h.wall)} wall around "
        f"{f['hit_year_median'].text} ({lo}–{hi})",
    )
    record(f["hit_year_median"], f["hit_year_lower"], f["hit_year_upper"])
    fig = charts.fan_chart(fc, scale=CHART_SCALE, figsize=(12.5, 5.2), title=False)
    _picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.95))
    note(
        slide,
        f"{h.scenario} scenario, walls of {regime_phrase(fc.regime)}; median and 80% interval "
        "of the first year the largest run reaches the wall. [erdil2024] [sevilla2024-2030]",
    )

    # 2. what it costs
    if has_cost(fc):
        c = cost_summary(fc)
        cf = c.figures
        slide = _new(
            prs,
            f"Data movement makes each FLOP of the {c.year} frontier run cost "
            f"{cf['multiplier_median'].text} (80%: {cf['multiplier_lower'].text} to "
            f"{cf['multiplier_upper'].text})",
        )
        record(cf["multiplier_median"], cf["multiplier_lower"], cf["multiplier_upper"])
        fig = charts.cost_chart(fc, scale=1.15, figsize=(13.0, 5.6))
        _picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.95))
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
        slide = _new(
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
        slide = _new(
            prs,
            f"Only the {h.scenario} scenario: "
            + ", ".join(f"{wall_label(w)} wall in {m.text}" for w, m in medians)
            + " (medians)",
        )
        record(*(m for _, m in medians))
    fig = charts.scenario_chart(
        rows, last, scale=CHART_SCALE, figsize=(12.5, max(3.4, min(5.6, 1.8 + 0.55 * n)))
    )
    _picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.3))

    # 4. what moves it (tornado)
    effects = input_effects(fc, h.wall, top=6)
    if effects:
        e = effects[0]
        slide = _new(prs, lead_title(effects))
        lead = leading_effects(effects)
        shown = lead if len(lead) <= 2 else [max(lead, key=lambda x: abs(x.swing))]
        record(*(Figure(abs(x.swing), f"{abs(x.swing):.1f}") for x in shown))
        fig = charts.tornado_chart(effects, h.wall, scale=CHART_SCALE, figsize=(12.5, 5.0))
        _picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.95))
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
        moved = [m for m in sobol_before_after(fc) if m.wall == h.wall]
        if moved:
            b, a = (Figure(v, f"{v:.2f}") for v in (moved[0].before[0], moved[0].after[0]))
            record(b, a)
            label = reader_label(moved[0].key)
            text += f" Total index of the {label}: {b.text} with priors only → {a.text} now."
        note(slide, text)

    # 4b. backtest (only when the forecast has a backtest group)
    bt = backtest_summary(fc)
    if bt is not None:
        pooled = [bt.row(o)["coverage_80"] for o in bt.origins]
        pooled = [c for c in pooled if c is not None and math.isfinite(c)]
        mean_cov = Figure(float(np.mean(pooled)) if pooled else math.nan, "")
        mean_cov.text = pct_or_dash(mean_cov.value if pooled else None)
        slide = _new(
            prs,
            f"Backtest: the trends' 80% intervals covered {mean_cov.text} of later accelerators",
        )
        record(mean_cov)
        side_w = Inches(3.9)
        chart_w = content_w - side_w - Inches(0.2)
        fig = charts.calibration_chart(bt, scale=1.25, figsize=(12.0, 5.6))
        _picture(slide, fig, MARGIN, top, chart_w, HEIGHT - top - Inches(0.3))
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
        _text(slide, lines, MARGIN + chart_w + Inches(0.2), top, side_w, HEIGHT - top - Inches(0.2))

    # 5. signposts
    posts = signposts(fc, h.wall)
    if posts:
        p = posts[0]
        if p.earlier is not None:
            sp_fig = Figure(p.earlier, p.fmt(p.earlier))
            title = f"Watch the {p.label}: at {sp_fig.text} the wall comes a year earlier"
        else:
            sp_fig = Figure(p.today, p.fmt(p.today))
            title = f"Watch the {p.label}, now estimated at {sp_fig.text}"
        slide = _new(prs, title)
        record(sp_fig)
        body = [sp.cells() for sp in posts]
        _table(
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

    # 6. comparison with published estimates
    cmp = comparison(fc)
    cf = cmp.figures
    slide = _new(
        prs,
        f"Our 2024 data-movement wall: {cf['dm_wall_median'].text} FLOP; against the paper's "
        "~1e28 (abstract), 2e28 (blog)",
    )
    record(cf["dm_wall_median"])
    fig = charts.comparison_chart(cmp.rows, scale=CHART_SCALE, figsize=(12.5, 4.0))
    pic = _picture(slide, fig, MARGIN, top, content_w, Inches(3.3))
    years_text = (
        "is not reached by the last forecast year"
        if cf["dm_years_after_2024"].text == "never"
        else f"is hit in {cf['dm_hit_year_median'].text} (median), "
        f"{cf['dm_years_after_2024'].text} years after 2024"
    )
    _text(
        slide,
        [
            f"[erdil2024]: utilization falls beyond ~1e28 FLOP on an H100 (3 months; 2e28 in "
            "[erdil2024-blog] and [epoch-simulator]), reached in about three years; here the "
            f"data-movement wall {years_text}. Its latency wall: ~1e31 (blog: 2e31); here "
            f"{cf['latency_wall_now_median'].text} FLOP for the 2024 accelerator (median).",
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

    # 6b. the paper's framing: hardware frozen at the H100 (only with a frozen_hardware group)
    fz = frozen_summary(fc)
    if fz is not None:
        dm_f, dm_full = fz.frozen["data_movement"], fz.full["data_movement"]
        frozen_year = Figure(dm_f["median"], fmt_calendar_year(dm_f["median"], last))
        full_year = Figure(dm_full["median"], fmt_calendar_year(dm_full["median"], last))
        frozen_wall = Figure(dm_f["wall_flop"], fmt_flop(dm_f["wall_flop"]))
        slide = _new(
            prs,
            f"Data-movement wall at frozen {fz.accelerator.removeprefix('NVIDIA ')} hardware: "
            f"{frozen_year.text}; with improving hardware: {full_year.text}",
        )
        record(frozen_year, full_year, frozen_wall)
        _text(
            slide,
            [
                "The paper's framing [erdil2024]: 2024 hardware, ~1e28 FLOP, 'a barrier in "
                "about three years'.",
                f"Frozen at the {fz.accelerator} (8-GPU domain, 2024 latencies), this "
                f"forecast's inputs put the wall at {frozen_wall.text} FLOP; the frontier run on "
                f"its fitted trend reaches it in {frozen_year.text} "
                f"({fmt_calendar_year(dm_f['lower'], last)}–"
                f"{fmt_calendar_year(dm_f['upper'], last)}, 80%).",
                f"The full forecast: {full_year.text} "
                f"({fmt_calendar_year(dm_full['lower'], last)}–"
                f"{fmt_calendar_year(dm_full['upper'], last)}, 80%). "
                "Its wall moves with the hardware: 72-GPU domains from 2025 and growing, more "
                "memory and network bandwidth per chip.",
            ],
            MARGIN,
            top,
            content_w,
            HEIGHT - top - Inches(0.3),
            size=BODY_PT,
            space_after=14,
        )
    # 6c. what the data says: prior against posterior of the fitted inputs
    items = fitted_inputs(fc)
    if items is not None:
        it = headline_input(items)
        ef = it.figures
        unit = " tokens" if it.unit == "tokens" else ""
        slide = _new(
            prs,
            f"Fitted to data, {it.label[0].lower() + it.label[1:]} is "
            f"{ef['posterior_median'].text}{unit} (80%: {ef['posterior_lower'].text}–"
            f"{ef['posterior_upper'].text}), not the prior's {ef['prior_median'].text}",
        )
        record(ef["posterior_median"], ef["posterior_lower"], ef["posterior_upper"])
        record(ef["prior_median"])
        fig = charts.prior_posterior_chart(items, scale=1.2, figsize=(13.0, 5.6))
        _picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.95))
        prov = provenance_rows(fc)
        if prov is not None:
            counts = provenance_counts(prov)
            tables = sorted({i.table for i in items})
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

    # 7. what changed (none on a first forecast: an empty slide says nothing; the report says so)
    if not changes.first:
        years_only = Changes(
            changes.previous_id, moved=[m for m in changes.moved if m["what"] == "year"]
        )
        moved = change_sentences(years_only, last) or ["No median hit year moved."]
        slide = _new(
            prs, f"Since forecast {changes.previous_id}: {len(years_only.moved)} hit years moved"
        )
        if len(moved) > 4:
            moved = [*moved[:3], f"… and {len(moved) - 3} more in report.html"]
        data = [_clip(d, 90) for d in changes.data[:2]]
        if len(changes.data) > 2:
            data.append(f"… and {len(changes.data) - 2} more in report.html")
        lines = [*moved, ("Data and inputs:", BODY_PT, True, DARK), *data]
        _text(slide, lines, MARGIN, top, content_w, HEIGHT - top - Inches(0.3), size=18)

    # 8. appendix: assumptions, as a table of plain names with units (no registry key), over as
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
    pages = _pages(
        [r.cells()[: len(header)] for r in rows], header, widths_pt, APPENDIX_PT, room_pt
    )
    for n, page in enumerate(pages, start=1):
        of = f" ({n} of {len(pages)})" if len(pages) > 1 else ""
        slide = _new(
            prs,
            f"Appendix: {n_uncertain.text} uncertain assumptions, {n_fixed.text} fixed{of}",
        )
        record(n_uncertain, n_fixed)
        _table(slide, header, page, MARGIN, top, content_w, shares, size=APPENDIX_PT, row_in=0.28)
        note(
            slide,
            f"Priors: {fc.attrs.get('priors_name', '?')}. "
            + ("Where fitted to data, the forecast uses the posterior. " if fitted_any else "")
            + "Every source: report.html.",
            Inches(0.6),
        )

    # 8b. appendix: what each scenario assumes (only with more than the baseline)
    defs = scenario_definitions(fc)
    if len(defs) > 1:
        slide = _new(prs, f"Appendix: the {len(defs)} scenarios")
        _table(
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

    # 9. appendix: sources, every one the slides cite (short form where written, else the
    # bibliography's), so the deck stands alone
    lines = source_lines([t for s in prs.slides for t in slide_texts(s)])
    slide = _new(prs, "Appendix: sources")
    box_h = HEIGHT - top - Inches(0.3)
    size = fitting_size("\n".join(lines), content_w, box_h, (16, 14, APPENDIX_PT), space_after_pt=4)
    _text(slide, lines, MARGIN, top, content_w, box_h, size=size, space_after=4)
    prs.wallcast_figures = figures
    return prs


def slide_texts(slide) -> list[str]:
    """The text of every text frame and table cell of a slide, in shape order."""
    out = []
    for shape in slide.shapes:
        if shape.has_text_frame:
            out.append(shape.text_frame.text)
        if shape.has_table:
            out += [c.text for row in shape.table.rows for c in row.cells]
    return out


def write_deck(fc: Forecast, out_dir: str | Path, changes: Changes) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "deck.pptx"
    build_deck(fc, changes).save(path)
    return path
