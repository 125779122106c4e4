"""``deck.pptx``: the forecast in a few slides a strategy lead can present without editing.

16:9, titles 32 pt, body text 18-24 pt, charts from :mod:`forecast.report.charts` at slide
scale (same palette and style as the report).  Every number comes from
the forecast through :mod:`forecast.report.numbers` and its siblings.
"""

from __future__ import annotations

import io
from pathlib import Path

from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.util import Emu, Inches, Pt

from forecast.report import charts
from forecast.report.changes import Changes, change_sentences
from forecast.report.drivers import (
    backtest_summary,
    pct_or_dash,
    sobol_drivers,
    uncertainty_drivers,
)
from forecast.report.numbers import (
    Forecast,
    assumptions,
    headline,
    summary_rows,
    summary_table_cells,
    wall_label,
)

WIDTH, HEIGHT = Inches(13.333), Inches(7.5)
MARGIN = Inches(0.5)
TITLE_PT, BODY_PT, LEAD_PT, TABLE_PT = 32, 20, 28, 18
ASSUMPTION_ROWS_PER_SLIDE = 6
CHART_SCALE = 1.45
DARK = RGBColor(0x1A, 0x1A, 0x1A)
ACCENT = RGBColor(0x00, 0x72, 0xB2)  # Okabe-Ito blue, as the report's lead sentence
GREY = RGBColor(0x55, 0x55, 0x55)

TITLE = "When will frontier AI training hit the walls?"
SLIDE_TITLES = (
    TITLE,
    "The answer",
    "Frontier compute against the walls",
    "Scenarios compared",
    "What changed since the last forecast",
    "What drives the uncertainty",
    "Assumptions and sources",
)
BACKTEST_TITLE = "Can the trends be trusted? (backtest)"  # after the drivers slide, when present


def _new(prs, title: str):
    slide = prs.slides.add_slide(prs.slide_layouts[5])  # title only
    t = slide.shapes.title
    t.left, t.top, t.width, t.height = MARGIN, Inches(0.3), WIDTH - 2 * MARGIN, Inches(0.95)
    t.text = title
    tf = t.text_frame
    tf.word_wrap = True
    for p in tf.paragraphs:
        p.alignment = 1  # left
        for r in p.runs:
            r.font.size = Pt(TITLE_PT)
            r.font.bold = True
            r.font.color.rgb = DARK
    return slide


def _text(slide, paragraphs, left, top, width, height, size=BODY_PT):
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
        run.font.bold = bold
        run.font.color.rgb = colour
        p.space_after = Pt(10)
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
                    r.font.bold = i == 0
    return shape


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _short_source(source: str, limit: int = 70) -> str:
    head = source.split(": ", 1)[0].strip()
    text = head if len(head) <= limit else source
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _short_prior(described: str) -> str:
    """'split_lognormal median 1.45, 80% 1.30–1.65 x/yr' -> 'median 1.45, 80% 1.30–1.65 x/yr'."""
    first, _, rest = described.partition(" ")
    families = ("normal", "lognormal", "logitnormal", "uniform", "loguniform", "triangular")
    named = first in families or first.startswith(("split_", "quantile_"))
    return rest if named and rest.startswith("median") else described


def build_deck(fc: Forecast, changes: Changes) -> Presentation:
    prs = Presentation()
    prs.slide_width, prs.slide_height = WIDTH, HEIGHT
    content_w = WIDTH - 2 * MARGIN
    top = Inches(1.35)
    h = headline(fc)
    last = fc.last_year

    # 1. title
    slide = prs.slides.add_slide(prs.slide_layouts[0])
    slide.shapes.title.text = TITLE
    slide.shapes.title.left, slide.shapes.title.top = MARGIN, Inches(2.0)
    slide.shapes.title.width, slide.shapes.title.height = content_w, Inches(1.6)
    for r in slide.shapes.title.text_frame.paragraphs[0].runs:
        r.font.size, r.font.bold, r.font.color.rgb = Pt(40), True, DARK
    sub = slide.placeholders[1]
    sub.left, sub.top, sub.width, sub.height = MARGIN, Inches(3.9), content_w, Inches(1.8)
    sub.text = (
        f"Data-movement and latency walls (Erdil & Schneider-Joseph 2024)\n"
        f"Forecast {fc.id} · {str(fc.attrs.get('created', ''))[:10]} · "
        f"scenarios: {', '.join(fc.scenarios)}"
    )
    for p in sub.text_frame.paragraphs:
        for r in p.runs:
            r.font.size, r.font.color.rgb = Pt(22), GREY

    # 2. the answer
    slide = _new(prs, "The answer")
    _text(
        slide,
        [(h.sentence, LEAD_PT, True, ACCENT), h.detail, *h.others],
        MARGIN,
        top + Inches(0.2),
        content_w,
        Inches(5.5),
    )

    # 3. fan chart
    slide = _new(prs, "Frontier compute against the walls")
    fig = charts.fan_chart(fc, scale=CHART_SCALE, figsize=(12.5, 5.8), title=False)
    _picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - Inches(0.2))

    # 4. scenarios compared
    slide = _new(prs, "Scenarios compared")
    rows = summary_rows(fc.forecast)
    header, body = summary_table_cells(rows, last)
    keep = [0, 1, 2, 3, 6]  # scenario, wall, median year, interval, P(hit)
    header = [header[j] for j in keep]
    body = [[r[j] for j in keep] for r in body]
    shown = body[:10]
    shape = _table(slide, header, shown, MARGIN, top, content_w, [2.6, 2.2, 2.2, 3.2, 2.0])
    below = top + shape.height + Inches(0.25)
    if len(shown) < len(body):
        _text(
            slide,
            [f"… and {len(body) - len(shown)} more rows in report.html"],
            MARGIN,
            below,
            content_w,
            Inches(0.6),
            size=18,
        )
    elif HEIGHT - below > Inches(2.6):
        fig = charts.scenario_chart(
            rows, last, scale=CHART_SCALE, figsize=(12.5, max(3.0, (HEIGHT - below) / Inches(1)))
        )
        _picture(slide, fig, MARGIN, below, content_w, HEIGHT - below - Inches(0.15))

    # 5. what changed
    slide = _new(prs, "What changed since the last forecast")
    if changes.first:
        lines = ["This is the first forecast: there is no previous one to compare."]
    else:
        years_only = Changes(
            changes.previous_id, moved=[m for m in changes.moved if m["what"] == "year"]
        )
        moved = change_sentences(years_only, last) or ["No median hit year moved."]
        if len(moved) > 5:
            moved = [*moved[:4], f"… and {len(moved) - 4} more in report.html"]
        data = [_clip(d, 95) for d in changes.data[:3]]
        if len(changes.data) > 3:
            data.append(f"… and {len(changes.data) - 3} more in report.html")
        lines = [
            (f"Since forecast {changes.previous_id}:", BODY_PT, True, DARK),
            *moved,
            ("Data and inputs:", BODY_PT, True, DARK),
            *data,
        ]
    _text(slide, lines, MARGIN, top, content_w, HEIGHT - top - Inches(0.3))

    # 6. what drives the uncertainty
    slide = _new(prs, "What drives the uncertainty")
    sobol = sobol_drivers(fc, top=6)
    text_h = Inches(1.25)
    if sobol is not None:
        fig = charts.sobol_chart(sobol, scale=1.2, figsize=(13.5, 5.2))
        _picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - text_h - Inches(0.2))
        n = "?" if sobol.samples is None else f"{sobol.samples:,}"
        leaders = "; ".join(
            f"{wall_label(t.wall)}: {t.inputs[0]} ({t.total[0]:.2f})" for t in sobol.targets
        )
        note = (
            f"Sobol total-order indices, N = {n} base samples, 95% bootstrap whiskers. "
            f"Largest: {leaders}."
        )
    else:
        drivers, method = uncertainty_drivers(fc, wall=h.wall, top=7)
        if drivers:
            fig = charts.drivers_chart(drivers, h.wall, scale=CHART_SCALE, figsize=(12.5, 4.6))
            _picture(slide, fig, MARGIN, top, content_w, HEIGHT - top - text_h - Inches(0.2))
        note = (
            "Fallback (no Sobol sensitivity group in this forecast; `wallcast analyse` adds "
            "one): " + method
        )
    _text(
        slide,
        [(note, 18, False, GREY)],
        MARGIN,
        HEIGHT - text_h - Inches(0.1),
        content_w,
        text_h,
    )

    # 6b. backtest (only when the forecast has a backtest group)
    bt = backtest_summary(fc)
    if bt is not None:
        slide = _new(prs, BACKTEST_TITLE)
        side_w = Inches(3.9)
        chart_w = content_w - side_w - Inches(0.2)
        fig = charts.calibration_chart(bt, scale=1.25, figsize=(12.0, 5.6))
        _picture(slide, fig, MARGIN, top, chart_w, HEIGHT - top - Inches(0.3))
        lines = [("80% intervals cover:", BODY_PT, True, DARK)]
        for origin in bt.origins:
            r = bt.row(origin)
            lines.append(
                f"origin {origin}: {pct_or_dash(r['coverage_80'])} of {r['n_held_out']} held out"
            )
        lines.append(
            (
                "Hardware trends refitted on parts released before each origin; "
                "scored on the later ones.",
                18,
                False,
                GREY,
            )
        )
        _text(slide, lines, MARGIN + chart_w + Inches(0.2), top, side_w, HEIGHT - top)

    # 7+. assumptions and sources
    items = assumptions(str(fc.attrs.get("priors_text", "")))
    pages = [
        items[i : i + ASSUMPTION_ROWS_PER_SLIDE]
        for i in range(0, len(items), ASSUMPTION_ROWS_PER_SLIDE)
    ] or [[]]
    for n, page in enumerate(pages, start=1):
        suffix = f" ({n}/{len(pages)})" if len(pages) > 1 else ""
        slide = _new(prs, f"Assumptions and sources{suffix}")
        if not page:
            _text(
                slide, ["No priors recorded in this forecast."], MARGIN, top, content_w, Inches(1)
            )
            continue
        body = [
            [
                it["key"].replace(".", " · ").replace("_", " "),
                _short_prior(it["prior"]),
                _short_source(it["source"]),
            ]
            for it in page
        ]
        _table(
            slide,
            ["parameter", "prior", "source"],
            body,
            MARGIN,
            top,
            content_w,
            [3.7, 4.5, 4.1],
            row_in=0.6,
        )
        _text(
            slide,
            [
                (
                    f"Priors: {fc.attrs.get('priors_name', '?')}; full sources in the priors "
                    "file and in report.html.",
                    18,
                    False,
                    GREY,
                )
            ],
            MARGIN,
            HEIGHT - Inches(0.6),
            content_w,
            Inches(0.5),
        )
    return prs


def write_deck(fc: Forecast, out_dir: str | Path, changes: Changes) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "deck.pptx"
    build_deck(fc, changes).save(path)
    return path
