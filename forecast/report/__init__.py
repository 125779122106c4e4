"""Reports of a published forecast: ``report.html`` / ``report.md`` and ``deck.pptx``.

``generate_reports`` is what the refresh flow calls after each publish; the ``wallcast report``
and ``wallcast deck`` commands call :func:`write_report_files` and :func:`write_deck_file`.
Every number comes from the dataset (:mod:`forecast.queries.headline`, ``changes``, ``drivers``)
or, for today's accelerators, from the walls service (:mod:`forecast.analyses.accelerator_walls`, through
:mod:`forecast.report.hardware_walls`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported by the chart modules: no display

import xarray as xr  # noqa: E402

from forecast import store  # noqa: E402
from forecast.queries.headline import Forecast, from_tree, load_forecast  # noqa: E402
from forecast.report.changes import what_changed  # noqa: E402
from forecast.report.deck import write_deck  # noqa: E402
from forecast.report.hardware_walls import (  # noqa: E402
    CURVE_ACCELERATORS,
    accelerator_walls,
    accelerator_walls_of_forecast,
)
from forecast.report.html import write_report  # noqa: E402

__all__ = ["generate_reports", "write_deck_file", "write_report_files"]


def _load(
    forecast_path: str | Path,
    previous: str | Path | None | bool,
    tree: xr.DataTree | None = None,
) -> tuple[Forecast, Any]:
    """The forecast (``tree`` when the caller has read it) and what changed since ``previous``."""
    path = store.resolve_forecast_path(forecast_path)
    fc = load_forecast(path) if tree is None else from_tree(tree, path)
    if previous is True or previous is None:
        prev_path = store.previous_forecast_path(fc.path)
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
    tree: xr.DataTree | None = None,
) -> dict[str, Any]:
    """report.html, report.md (and report_files/) for a forecast; default out: its folder.

    ``previous``: None/True finds the previous published forecast, False compares with none,
    a path compares with that one.  ``accelerators``: True shows every accelerator of the
    forecast's group ``accelerator_walls`` (over its posterior draws; a forecast without the
    group: the walls service's plan search at the paper's assumptions, JAX, the slow part), a
    list only those, False skips the section.  ``tree``: the forecast, when the caller has already read it.
    """
    return _write_report(
        *_load(forecast_path, previous, tree), out_dir, accelerators, curve_accelerators
    )


def _write_report(fc, changes, out_dir, accelerators, curve_accelerators) -> dict[str, Any]:
    aw = None
    if accelerators is not False:
        names = None if accelerators is True else list(accelerators)
        curves = CURVE_ACCELERATORS if curve_accelerators is None else curve_accelerators
        group = fc.group("accelerator_walls")
        if group is not None:  # over the forecast's own posterior inputs: no plan search
            aw = accelerator_walls_of_forecast(group, names, curves)
        else:  # a forecast published before the group existed: the paper's assumptions
            aw = accelerator_walls(names, curves)
    out = Path(out_dir) if out_dir is not None else fc.path.parent
    return write_report(fc, out, changes, aw)


def write_deck_file(
    forecast_path: str | Path,
    out_dir: str | Path | None = None,
    *,
    previous: str | Path | None | bool = None,
    tree: xr.DataTree | None = None,
) -> Path:
    """deck.pptx for a forecast; default out: its folder."""
    fc, changes = _load(forecast_path, previous, tree)
    return write_deck(fc, Path(out_dir) if out_dir is not None else fc.path.parent, changes)


def generate_reports(
    forecast_path: str | Path,
    out_dir: str | Path | None = None,
    *,
    previous: str | Path | None | bool = None,
    accelerators: bool | list[str] = True,
    curve_accelerators: list[str] | None = None,
    tree: xr.DataTree | None = None,
) -> dict[str, Path]:
    """Write report.html, report.md and deck.pptx beside the forecast (or in ``out_dir``).

    Returns ``{"report_html": ..., "report_md": ..., "deck": ...}``; the options are those of
    :func:`write_report_files`.  The forecast (and the previous one) is read once for both.
    """
    fc, changes = _load(forecast_path, previous, tree)
    report = _write_report(fc, changes, out_dir, accelerators, curve_accelerators)
    deck = write_deck(fc, Path(out_dir) if out_dir is not None else fc.path.parent, changes)
    return {"report_html": report["report_html"], "report_md": report["report_md"], "deck": deck}
