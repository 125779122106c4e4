"""Publishing under the refresh lock: clean leftovers, publish atomically, apply retention.

No Prefect import here (the kill test and scripts use it directly).  Atomicity comes from
:func:`forecast.dataset.publish`: the forecast is written into ``forecasts/.<id>.<random>/``,
renamed to ``forecasts/<id>/``, and only then is ``latest`` replaced with ``os.replace``.  A
process killed at any moment leaves ``latest`` naming a complete forecast; its leftovers (hidden
temporary folders) are removed by the next publish, which holds the lock.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from forecast.dataset import LATEST_POINTER, publish

__all__ = ["DEFAULT_KEEP", "FORECASTS_DIR", "apply_retention", "clean_stale", "publish_forecast"]

FORECASTS_DIR = "forecasts"
DEFAULT_KEEP = 20


def _forecast_dirs(forecasts: Path) -> list[Path]:
    return sorted(p for p in forecasts.iterdir() if p.is_dir() and not p.name.startswith("."))


def clean_stale(outputs_dir: Path) -> list[str]:
    """Remove leftovers of killed publishes (``forecasts/.<id>.*``, ``.trash-*``, ``.latest.*``).

    Only safe while holding the refresh lock (no publish is in flight then).
    """
    removed = []
    forecasts = outputs_dir / FORECASTS_DIR
    if forecasts.is_dir():
        for p in forecasts.iterdir():
            if p.name.startswith("."):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                removed.append(p.name)
    for p in outputs_dir.glob(".latest.*"):
        p.unlink(missing_ok=True)
        removed.append(p.name)
    return removed


def apply_retention(outputs_dir: Path, keep: int) -> list[str]:
    """Delete all but the newest ``keep`` forecasts (by id, which sorts by time); never the one
    ``latest`` points to.  Each is first renamed to ``.trash-<id>`` so that a kill mid-delete
    leaves no half-deleted forecast under its own name."""
    forecasts = outputs_dir / FORECASTS_DIR
    if keep < 1 or not forecasts.is_dir():
        return []
    pointer = outputs_dir / LATEST_POINTER
    current = (outputs_dir / pointer.read_text().strip()).resolve() if pointer.exists() else None
    dirs = _forecast_dirs(forecasts)
    removed = []
    for d in dirs[: max(len(dirs) - keep, 0)]:
        if current is not None and d.resolve() == current:
            continue
        trash = d.with_name(f".trash-{d.name}")
        os.rename(d, trash)
        shutil.rmtree(trash, ignore_errors=True)
        removed.append(d.name)
    return removed


def publish_forecast(
    tree: Any,
    outputs_dir: str | Path,
    forecast_id: str,
    *,
    keep: int = DEFAULT_KEEP,
) -> tuple[Path, list[str]]:
    """Clean leftovers, publish atomically (``forecast.dataset.publish``), apply retention.

    Call it while holding ``<outputs>/.lock``.  Returns (published folder, removed ids).
    """
    outputs_dir = Path(outputs_dir)
    outputs_dir.mkdir(parents=True, exist_ok=True)
    clean_stale(outputs_dir)
    published = publish(tree, outputs_dir, forecast_id)
    return published, apply_retention(outputs_dir, keep)
