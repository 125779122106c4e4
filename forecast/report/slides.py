"""The deck's slide toolkit: page size, fonts and colours, and the helpers that place a title,
text, a chart picture or a table on a 16:9 slide (python-pptx), measured by
:mod:`forecast.report.textfit` so nothing overflows its box."""

from __future__ import annotations

import io

from pptx.dml.color import RGBColor
from pptx.util import Emu, Inches, Pt

from forecast.report import charts
from forecast.report.textfit import EMU_PER_PT, cell_height_pt, fitting_size

WIDTH, HEIGHT = Inches(13.333), Inches(7.5)
MARGIN = Inches(0.5)
TITLE_PT, BODY_PT, LEAD_PT, TABLE_PT, NOTE_PT = 28, 20, 28, 18, 16
TITLE_SIZES_PT = (TITLE_PT, 26, 24, 22, BODY_PT)
NOTE_HEIGHT = Inches(0.9)
APPENDIX_PT = 13
FONT = "DejaVu Sans"  # shipped with matplotlib, so the fit test measures the font LibreOffice uses
CHART_SCALE = 1.45
DARK = RGBColor(0x1A, 0x1A, 0x1A)
ACCENT = RGBColor(0x00, 0x72, 0xB2)  # Okabe-Ito blue, as the report's lead sentence
GREY = RGBColor(0x55, 0x55, 0x55)


def new_slide(prs, title: str):
    """A title-only slide whose action title steps down in size until it fits two lines."""
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


def add_text(slide, paragraphs, left, top, width, height, size=BODY_PT, space_after=10):
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


def add_picture(slide, fig, left, top, max_width, max_height, dpi=150):
    png = charts.to_png(fig, dpi=dpi)
    w_in, h_in = fig.get_size_inches()
    ratio = min(max_width / Inches(w_in), max_height / Inches(h_in))
    width, height = int(Inches(w_in) * ratio), int(Inches(h_in) * ratio)
    left = left + (max_width - width) // 2
    return slide.shapes.add_picture(io.BytesIO(png), left, top, Emu(width), Emu(height))


def add_table(slide, header, rows, left, top, width, col_widths=None, size=TABLE_PT, row_in=0.5):
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


def table_pages(
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


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def slide_texts(slide) -> list[str]:
    """The text of every text frame and table cell of a slide, in shape order."""
    out = []
    for shape in slide.shapes:
        if shape.has_text_frame:
            out.append(shape.text_frame.text)
        if shape.has_table:
            out += [c.text for row in shape.table.rows for c in row.cells]
    return out
