"""Does the text of a slide fit its boxes?  Measured with the font's own metrics.

The deck sets every run in DejaVu Sans (:data:`forecast.report.slides.FONT`), whose TrueType
files ship with matplotlib, so this measures exactly the glyph advances LibreOffice and
PowerPoint lay out (where DejaVu Sans is installed; elsewhere a substitute of similar width).
Lines are wrapped greedily at spaces like a text frame with word wrap; a line is
``LINE_HEIGHT`` times the font size (DejaVu Sans: ascent + descent = 1.164 em) plus the
paragraph's space after.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import matplotlib
from PIL import ImageFont
from pptx.util import Emu, Pt

LINE_HEIGHT = 1.17
EMU_PER_PT = 12700
DEFAULT_INSET_LR = Emu(91440)  # 0.1 in, python-pptx / PowerPoint default
DEFAULT_INSET_TB = Emu(45720)  # 0.05 in


@lru_cache(maxsize=4)
def _font(bold: bool):

    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    return ImageFont.truetype(str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / name), 1000)


def text_width_pt(text: str, size_pt: float, bold: bool = False) -> float:
    """Advance width of ``text`` set in DejaVu Sans at ``size_pt``, in points."""
    return _font(bold).getlength(text) * size_pt / 1000.0


def wrapped_lines(text: str, width_pt: float, size_pt: float, bold: bool = False) -> int:
    """Lines ``text`` takes when wrapped at spaces to ``width_pt`` (a long word breaks)."""
    lines = 0
    for hard in text.split("\n") or [""]:
        words = hard.split(" ")
        line = ""
        count = 1
        for word in words:
            trial = word if not line else f"{line} {word}"
            if text_width_pt(trial, size_pt, bold) <= width_pt:
                line = trial
                continue
            if line:
                count += 1
            w = text_width_pt(word, size_pt, bold)
            extra = int(w // width_pt) if width_pt > 0 else 0
            count += extra
            line = word
        lines += count
    return lines


def cell_height_pt(text: str, width_pt: float, size_pt: float, bold: bool = False) -> float:
    """Height (points) a table cell of ``width_pt`` (its column) needs for ``text`` at
    ``size_pt``, with the default insets: what :func:`overflows` charges a new table's cell."""
    inner = width_pt - 2 * DEFAULT_INSET_LR / EMU_PER_PT
    lines = wrapped_lines(text, inner, size_pt, bold) if text else 1
    return lines * size_pt * LINE_HEIGHT + 2 * DEFAULT_INSET_TB / EMU_PER_PT


def fitting_size(
    text: str,
    width_emu: int,
    height_emu: int,
    sizes_pt: tuple[float, ...],
    bold: bool = False,
    space_after_pt: float = 0.0,
) -> float:
    """The largest of ``sizes_pt`` at which ``text`` (one paragraph per line, each followed by
    ``space_after_pt``) fits a new text frame of that size (default insets); the smallest when
    none does."""
    inner_w = width_emu / EMU_PER_PT - 2 * DEFAULT_INSET_LR / EMU_PER_PT
    inner_h = height_emu / EMU_PER_PT - 2 * DEFAULT_INSET_TB / EMU_PER_PT
    paragraphs = text.split("\n")
    for size in sorted(sizes_pt, reverse=True):
        need = sum(
            wrapped_lines(p, inner_w, size, bold) * size * LINE_HEIGHT + space_after_pt
            for p in paragraphs
        )
        if need <= inner_h + 0.5:
            return size
    return min(sizes_pt)


def _inset(value, default) -> float:
    return float(default if value is None else value) / EMU_PER_PT


def frame_height_pt(text_frame, width_pt: float) -> float:
    """Height (points) the paragraphs of a text frame need at ``width_pt``."""
    total = 0.0
    for p in text_frame.paragraphs:
        runs = list(p.runs)
        text = "".join(r.text for r in runs)
        size = max((r.font.size or Pt(18)) for r in runs) / EMU_PER_PT if runs else 18.0
        bold = any(bool(r.font.bold) for r in runs)
        n = wrapped_lines(text, width_pt, size, bold) if text else 1
        after = (p.space_after or 0) / EMU_PER_PT
        total += n * size * LINE_HEIGHT + after
    return total


def overflows(prs) -> list[str]:
    """Every text frame (and table) whose content would not fit: one line per problem."""
    problems = []
    slide_h = prs.slide_height / EMU_PER_PT
    for i, slide in enumerate(prs.slides, start=1):
        for shape in slide.shapes:
            if shape.has_text_frame and shape.text_frame.text.strip():
                tf = shape.text_frame
                width = (
                    shape.width / EMU_PER_PT
                    - _inset(tf.margin_left, DEFAULT_INSET_LR)
                    - _inset(tf.margin_right, DEFAULT_INSET_LR)
                )
                height = (
                    shape.height / EMU_PER_PT
                    - _inset(tf.margin_top, DEFAULT_INSET_TB)
                    - _inset(tf.margin_bottom, DEFAULT_INSET_TB)
                )
                need = frame_height_pt(tf, width)
                if need > height + 0.5:
                    problems.append(
                        f"slide {i}: text {tf.text[:50]!r} needs {need:.0f} pt, box has {height:.0f}"
                    )
            if shape.has_table:
                table = shape.table
                bottom = shape.top / EMU_PER_PT
                for row in table.rows:
                    need_row = row.height / EMU_PER_PT
                    for j, cell in enumerate(row.cells):
                        width = (
                            table.columns[j].width / EMU_PER_PT
                            - _inset(cell.margin_left, DEFAULT_INSET_LR)
                            - _inset(cell.margin_right, DEFAULT_INSET_LR)
                        )
                        need = (
                            frame_height_pt(cell.text_frame, width)
                            + _inset(cell.margin_top, DEFAULT_INSET_TB)
                            + _inset(cell.margin_bottom, DEFAULT_INSET_TB)
                        )
                        need_row = max(need_row, need)
                    bottom += need_row
                below = [
                    s.top / EMU_PER_PT
                    for s in slide.shapes
                    if s is not shape and s.top > shape.top and s.has_text_frame
                ]
                limit = min([slide_h, *below])
                if bottom > limit + 0.5:
                    problems.append(
                        f"slide {i}: table ends at {bottom:.0f} pt, room until {limit:.0f} pt"
                    )
    return problems
