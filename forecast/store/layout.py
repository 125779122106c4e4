"""The names of an outputs folder and of a forecast file's groups (no I/O)."""

from __future__ import annotations

from pathlib import Path

from forecast.config.errors import WallcastError

FORECAST_FILE = "forecast.nc"
FORECASTS_DIR = "forecasts"
LATEST_POINTER = "latest"
LOCK_FILE = ".lock"

FORECAST_GROUP = "forecast"
"""The group of a forecast file holding the forecast variables (``hit_year``, ``wall_flop``, ...)."""


class ForecastNotFoundError(WallcastError, FileNotFoundError):
    """No published forecast where one was expected."""


def forecast_dirs(forecasts: Path) -> list[Path]:
    """Published forecast folders under ``forecasts/``, oldest first (ids sort by time)."""
    if not forecasts.is_dir():
        return []
    return sorted(p for p in forecasts.iterdir() if p.is_dir() and not p.name.startswith("."))
