"""Reports of a published forecast: ``report.html`` / ``report.md`` and ``deck.pptx``.

``generate_reports`` is what the refresh flow calls after each publish; the ``wallcast report``
and ``wallcast deck`` commands call :func:`write_report_files` and :func:`write_deck_file`.
Every number comes from the dataset (:mod:`forecast.report.numbers`, ``changes``, ``drivers``)
or, for today's accelerators, from the walls service (:mod:`forecast.walls`, through
:mod:`forecast.report.hardware_walls`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

__all__ = ["generate_reports", "write_deck_file", "write_report_files"]


def _load(forecast_path: str | Path, previous: str | Path | None | bool):
    from forecast.report.changes import what_changed
    from forecast.report.numbers import load_forecast
    from forecast.storage import previous_forecast_path

    fc = load_forecast(forecast_path)
    if previous is True or previous is None:
        prev_path = previous_forecast_path(fc.path)
    elif previous is False:
        prev_path = None
    else:
        prev_path = Path(previous)
    prev = load_forecast(prev_path) if prev_path is not None else None
    return fc, what_changed(fc, prev)


def write_report_files(
    forecast_path: str | Path,
    out_dir: str | Path | None = None,
    *,
    previous: str | Path | None | bool = None,
    accelerators: bool | list[str] = True,
    curve_accelerators: list[str] | None = None,
) -> dict[str, Any]:
    """report.html, report.md (and report_files/) for a forecast; default out: its folder.

    ``previous``: None/True finds the previous published forecast, False compares with none,
    a path compares with that one.  ``accelerators``: True computes every accelerator of the
    hardware table (the walls service's plan search, JAX, about a minute), a list only those,
    False skips the section.
    """
    from forecast.report.hardware_walls import CURVE_ACCELERATORS, accelerator_walls
    from forecast.report.html import write_report

    fc, changes = _load(forecast_path, previous)
    aw = None
    if accelerators is not False:
        names = None if accelerators is True else list(accelerators)
        curves = CURVE_ACCELERATORS if curve_accelerators is None else curve_accelerators
        aw = accelerator_walls(names, curves)
    out = Path(out_dir) if out_dir is not None else fc.path.parent
    return write_report(fc, out, changes, aw)


def write_deck_file(
    forecast_path: str | Path,
    out_dir: str | Path | None = None,
    *,
    previous: str | Path | None | bool = None,
) -> Path:
    """deck.pptx for a forecast; default out: its folder."""
    from forecast.report.deck import write_deck

    fc, changes = _load(forecast_path, previous)
    out = Path(out_dir) if out_dir is not None else fc.path.parent
    return write_deck(fc, out, changes)


def generate_reports(
    forecast_path: str | Path, out_dir: str | Path | None = None, **kwargs: Any
) -> dict[str, Path]:
    """Write report.html, report.md and deck.pptx beside the forecast (or in ``out_dir``).

    Returns ``{"report_html": ..., "report_md": ..., "deck": ...}``.  Keyword arguments go to
    :func:`write_report_files` (``previous``, ``accelerators``, ``curve_accelerators``).
    """
    report = write_report_files(forecast_path, out_dir, **kwargs)
    deck = write_deck_file(forecast_path, out_dir, previous=kwargs.get("previous"))
    return {"report_html": report["report_html"], "report_md": report["report_md"], "deck": deck}
