"""Publishing a forecast atomically, retention, and attaching analysis groups to it.

:func:`publish` writes into ``forecasts/.<id>.<random>/``, renames it to ``forecasts/<id>/`` and
only then replaces ``latest`` with ``os.replace``: a process killed at any moment leaves
``latest`` naming a complete forecast.  :func:`publish_forecast` also removes the leftovers of
killed publishes (:func:`clean_stale`) and applies retention (:func:`apply_retention`); call it
while holding :func:`forecast.config.filelock.exclusive_lock` on ``outputs/.lock``.
:func:`add_groups` later attaches analyses to a published file, replacing it atomically (the
one in-place change a published forecast receives).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forecast.config.errors import WallcastError
from forecast.config.settings import DEFAULT_KEEP
from forecast.store.layout import FORECAST_FILE, FORECASTS_DIR, LATEST_POINTER, forecast_dirs
from forecast.store.reader import load_forecast, resolve_forecast_path
from forecast.store.schema import write_tree

if TYPE_CHECKING:  # imported lazily: resolving paths and querying must not pay for xarray
    import xarray as xr


class StorageError(WallcastError):
    """The outputs folder cannot take a forecast (not a folder, read-only, disk full)."""


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(tree: xr.DataTree, outputs_dir: str | Path, forecast_id: str) -> Path:
    """Publish atomically: write into a temporary directory, rename it into place, then swap
    the ``latest`` pointer with ``os.replace``.  Returns the published directory."""
    outputs_dir = Path(outputs_dir)
    forecasts = outputs_dir / FORECASTS_DIR
    forecasts.mkdir(parents=True, exist_ok=True)
    final = forecasts / forecast_id
    if final.exists():
        raise WallcastError(f"{final} already exists; forecasts are immutable")
    tmp = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{forecast_id}.", dir=forecasts))
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; a published forecast is for all to read
        write_tree(tree, tmp / FORECAST_FILE)
        _fsync_dir(tmp)
        os.rename(tmp, final)
        tmp = None
        point_latest(outputs_dir, final)
    except OSError as exc:
        raise StorageError(
            f"{outputs_dir}: cannot publish forecast {forecast_id}: {_os_reason(exc)}; "
            "latest is unchanged"
        ) from exc
    finally:
        if tmp is not None:  # every failure path, KeyboardInterrupt included
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def point_latest(outputs_dir: Path, target: Path) -> None:
    """Atomically make ``outputs/latest`` name ``target`` (a path relative to outputs_dir)."""
    rel = os.path.relpath(target, outputs_dir)
    fd, tmp = tempfile.mkstemp(prefix=".latest.", dir=outputs_dir)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write(rel + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, outputs_dir / LATEST_POINTER)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(outputs_dir)


def clean_stale(outputs_dir: str | Path) -> list[str]:
    """Remove leftovers of killed publishes (``forecasts/.<id>.*``, ``.trash-*``, ``.latest.*``).

    Only safe while holding the refresh lock (no publish is in flight then).
    """
    outputs_dir = Path(outputs_dir)
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


def apply_retention(outputs_dir: str | Path, keep: int) -> list[str]:
    """Delete all but the newest ``keep`` forecasts (by id, which sorts by time); never the one
    ``latest`` points to.  Each is first renamed to ``.trash-<id>`` so that a kill mid-delete
    leaves no half-deleted forecast under its own name."""
    outputs_dir = Path(outputs_dir)
    forecasts = outputs_dir / FORECASTS_DIR
    if keep < 1 or not forecasts.is_dir():
        return []
    pointer = outputs_dir / LATEST_POINTER
    current = (outputs_dir / pointer.read_text().strip()).resolve() if pointer.exists() else None
    dirs = forecast_dirs(forecasts)
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
    tree: Any, outputs_dir: str | Path, forecast_id: str, *, keep: int = DEFAULT_KEEP
) -> tuple[Path, list[str]]:
    """Clean leftovers, publish atomically, apply retention; returns (folder, removed ids).

    Call it while holding ``<outputs>/.lock`` (:func:`forecast.config.filelock.exclusive_lock`).
    """
    outputs_dir = Path(outputs_dir)
    check_outputs_writable(outputs_dir)
    clean_stale(outputs_dir)
    published = publish(tree, outputs_dir, forecast_id)
    return published, apply_retention(outputs_dir, keep)


def check_outputs_writable(outputs_dir: str | Path) -> Path:
    """Create ``outputs_dir`` if needed and prove a file can be written there, or
    :class:`StorageError` (a file in its place, read-only, no space).  Cheap; no Prefect."""
    outputs_dir = Path(outputs_dir)
    if outputs_dir.exists() and not outputs_dir.is_dir():
        raise StorageError(f"{outputs_dir}: the outputs folder is a file, not a folder")
    try:
        outputs_dir.mkdir(parents=True, exist_ok=True)
        forecasts = outputs_dir / FORECASTS_DIR
        if forecasts.exists() and not forecasts.is_dir():
            raise StorageError(f"{forecasts}: expected a folder of forecasts, found a file")
        for folder in (outputs_dir, forecasts) if forecasts.is_dir() else (outputs_dir,):
            with tempfile.TemporaryFile(prefix=".probe.", dir=folder) as fh:
                fh.write(b"x")
                fh.flush()
                os.fsync(fh.fileno())
    except OSError as exc:
        raise StorageError(
            f"{outputs_dir}: cannot write to the outputs folder: {_os_reason(exc)}"
        ) from exc
    return outputs_dir


def add_groups(
    forecast_path: str | Path,
    groups: Mapping[str, xr.Dataset],
    *,
    tree: xr.DataTree | None = None,
) -> xr.DataTree:
    """Write each ``groups[name]`` as group ``/name`` into a published forecast file, in one pass;
    returns the tree as written.

    Attaches analyses (sensitivity, backtests, frozen hardware) to a published forecast: the tree
    (``tree`` when the caller has already read the file, else read here) gets the groups (an
    existing group of that name is replaced) and is written once to a temporary file in the same
    folder with the original's permissions, which then replaces the original (``os.replace``): a
    crash leaves the old file intact.  Other groups and the root attrs are kept.
    """
    import xarray as xr  # store imports stay free of xarray until a tree is built

    path = resolve_forecast_path(forecast_path)
    tree = load_forecast(path) if tree is None else tree
    if not groups:
        return tree
    tree_groups = {"/": tree.to_dataset(inherit=False)}
    for node in tree.subtree:
        if node is tree or (node.name in groups and node.parent is tree):
            continue
        tree_groups[node.path] = node.to_dataset(inherit=False)
    for name, ds in groups.items():
        tree_groups[f"/{name}"] = ds
    new = xr.DataTree.from_dict(tree_groups)
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
    return new
