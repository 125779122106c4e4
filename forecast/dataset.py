"""The persisted forecast: one DataTree with its provenance, written and published atomically.

Layout of ``outputs/forecasts/<id>/forecast.nc`` (open with ``xarray.open_datatree``):

* ``/posterior``, ``/sample_stats``, ``/log_likelihood``, ``/posterior_predictive``,
  ``/observed_data``, ``/constant_data``: the NumPyro trend fit (ArviZ 1.x conventions);
* ``/forecast``: dims ``scenario``, ``chain``, ``draw``, ``year``, ``wall``; variables
  ``wall_flop``, ``frontier_flop``, ``hit_year``, ``hit_flop``, ``hit`` and the frontier
  accelerator's specs ``hardware_*``;
* ``/forecast_inputs``: the sampled prior inputs per scenario, chain and draw;
* root ``attrs``: id, created, code version, seed, data hash, priors and scenario texts, units.

This module imports no JAX, and xarray only where a tree is built or opened.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from forecast.errors import WallcastError

if TYPE_CHECKING:  # imported lazily: resolving paths must not pay for xarray
    import xarray as xr

FORECAST_FILE = "forecast.nc"
LATEST_POINTER = "latest"
ENGINE = "h5netcdf"


class ForecastNotFoundError(WallcastError, FileNotFoundError):
    """No published forecast where one was expected."""


def forecast_id(created: datetime, fingerprint: dict) -> str:
    """``YYYYMMDDTHHMMSSZ-<8 hex>``: sortable by time, distinct per inputs."""
    digest = hashlib.sha256(
        json.dumps(fingerprint, sort_keys=True, default=str).encode()
    ).hexdigest()[:8]
    return f"{created.strftime('%Y%m%dT%H%M%SZ')}-{digest}"


def build_tree(
    fit: xr.DataTree,
    forecast: xr.Dataset,
    inputs: xr.Dataset,
    attrs: dict,
) -> xr.DataTree:
    """Assemble the persisted tree from the fit, the scenario forecasts and provenance attrs."""
    groups = {f"/{name}": node.to_dataset() for name, node in fit.children.items()}
    groups["/forecast"] = forecast
    groups["/forecast_inputs"] = inputs
    import xarray as xr

    tree = xr.DataTree.from_dict(groups)
    merged = {k: v for k, v in fit.attrs.items() if isinstance(v, (str, int, float))}
    merged = {f"fit_{k}": v for k, v in merged.items()}
    merged.update(attrs)
    tree.attrs.update(merged)
    return tree


def write_tree(tree: xr.DataTree, path: str | Path) -> Path:
    """Write the tree to NetCDF (h5netcdf engine), numeric arrays gzip-compressed (level 4)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    encoding = {}
    for node in tree.subtree:
        ds = node.to_dataset(inherit=False)
        encoding[node.path] = {
            name: {"compression": "gzip", "compression_opts": 4, "shuffle": True}
            for name, var in ds.data_vars.items()
            if var.dtype.kind in "fiub" and var.ndim > 0
        }
    tree.to_netcdf(path, engine=ENGINE, encoding=encoding)
    return path


def add_group(forecast_path: str | Path, name: str, ds: xr.Dataset) -> Path:
    """Write ``ds`` as group ``/name`` into a published forecast file, replacing that group.

    Used to attach analyses (sensitivity, backtest) to a forecast after it is published.  The
    tree is read into memory, the group set, and the tree written (compressed, like
    :func:`write_tree`) to a temporary file in the same folder with the original's permissions,
    which then replaces the original (``os.replace``): a crash leaves the old file intact.
    Other groups and the root attrs are kept.
    """
    import xarray as xr

    path = resolve_forecast_path(forecast_path)
    with xr.open_datatree(path, engine=ENGINE) as tree:
        tree = tree.load()
        groups = {"/": tree.to_dataset(inherit=False)}
        for node in tree.subtree:
            if node is tree or (node.name == name and node.parent is tree):
                continue
            groups[node.path] = node.to_dataset(inherit=False)
    groups[f"/{name}"] = ds
    new = xr.DataTree.from_dict(groups)
    new.attrs.update(tree.attrs)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write_tree(new, tmp)
        os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def resolve_forecast_path(path: str | Path) -> Path:
    """A forecast file from a file, a forecast folder, or an outputs folder (via ``latest``)."""
    path = Path(path)
    if path.is_dir():
        if (path / FORECAST_FILE).exists():
            return path / FORECAST_FILE
        return latest_forecast_path(path)
    if not path.exists():
        raise ForecastNotFoundError(f"{path}: no such forecast file")
    return path


def open_forecast(path: str | Path) -> xr.DataTree:
    """Open a forecast file (or a forecast folder, or an outputs folder via its ``latest``)."""
    import xarray as xr

    return xr.open_datatree(resolve_forecast_path(path), engine=ENGINE)


def latest_forecast_path(outputs_dir: str | Path) -> Path:
    """The forecast file that ``outputs/latest`` points to."""
    outputs_dir = Path(outputs_dir)
    pointer = outputs_dir / LATEST_POINTER
    if not pointer.exists():
        raise ForecastNotFoundError(
            f"{pointer}: no published forecast yet; run `wallcast run` first"
        )
    target = outputs_dir / pointer.read_text().strip()
    path = target / FORECAST_FILE
    if not path.exists():
        raise ForecastNotFoundError(f"{pointer} points to {target}, which has no {FORECAST_FILE}")
    return path


def publish(
    tree: xr.DataTree,
    outputs_dir: str | Path,
    forecast_id: str,
    extra_files: dict[str, str] | None = None,
) -> Path:
    """Publish atomically: write into a temporary directory, rename it into place, then swap
    the ``latest`` pointer with ``os.replace``.  A crash at any point leaves ``latest`` pointing
    at a complete forecast.  Returns the published directory."""
    outputs_dir = Path(outputs_dir)
    forecasts = outputs_dir / "forecasts"
    forecasts.mkdir(parents=True, exist_ok=True)
    final = forecasts / forecast_id
    if final.exists():
        raise WallcastError(f"{final} already exists; forecasts are immutable")
    tmp = Path(tempfile.mkdtemp(prefix=f".{forecast_id}.", dir=forecasts))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; a published forecast is for everyone to read
    try:
        write_tree(tree, tmp / FORECAST_FILE)
        for name, text in (extra_files or {}).items():
            (tmp / name).write_text(text)
        _fsync_dir(tmp)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    point_latest(outputs_dir, final)
    return final


def point_latest(outputs_dir: Path, target: Path) -> None:
    """Atomically make ``outputs/latest`` name ``target`` (a path relative to outputs_dir)."""
    rel = os.path.relpath(target, outputs_dir)
    fd, tmp = tempfile.mkstemp(prefix=".latest.", dir=outputs_dir)
    os.fchmod(fd, 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(rel + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, outputs_dir / LATEST_POINTER)
    _fsync_dir(outputs_dir)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def now_utc() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)
