"""Published forecasts on disk: the one module that writes, locks, finds and reads them.

Layout of an outputs folder (:func:`forecast.paths.outputs_dir`)::

    outputs/
      forecasts/<id>/forecast.nc   one published forecast (immutable once renamed into place)
      latest                       text file naming the current forecast (relative path)
      .lock                        held (fcntl.flock) by a running refresh

* **Fingerprint and provenance** - :func:`fingerprint` is the one digest of everything a forecast
  depends on (data, priors, scenarios, settings, code); the forecast id is the creation time plus
  its first 8 hex digits (:func:`forecast_id`); :func:`provenance_attrs` writes every root
  attribute of a published forecast.
* **Publishing** - :func:`publish` writes into ``forecasts/.<id>.<random>/``, renames it to
  ``forecasts/<id>/`` and only then replaces ``latest`` with ``os.replace``: a process killed at
  any moment leaves ``latest`` naming a complete forecast.  :func:`publish_forecast` also removes
  the leftovers of killed publishes (:func:`clean_stale`) and applies retention
  (:func:`apply_retention`); call it while holding :func:`exclusive_lock` on ``outputs/.lock``.
* **Reading** - :func:`resolve_forecast_path` turns a file, a forecast folder, an outputs folder
  or nothing (the resolver's outputs folder) into a forecast file; :func:`open_forecast` /
  :func:`load_forecast` give the whole DataTree (xarray), :func:`read_variable` and
  :func:`read_attrs` one variable or the root attributes with h5py only (``wallcast query``).

This module imports neither JAX nor xarray at module level (the query path needs neither).

Why one module of ~700 lines: issue 10 asks for exactly one storage layer (publish, lock, latest,
retention, reader, fingerprint, provenance); its parts share the folder layout and the failure
handling, and splitting them would bring back the several readers it replaced.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from forecast import paths
from forecast.dataset import ENGINE, write_tree
from forecast.errors import WallcastError

if TYPE_CHECKING:  # imported lazily: resolving paths and querying must not pay for xarray
    import xarray as xr

__all__ = [
    "DEFAULT_KEEP",
    "ENGINE",
    "FORECASTS_DIR",
    "FORECAST_FILE",
    "LATEST_POINTER",
    "LOCK_FILE",
    "ForecastNotFoundError",
    "LockBusyError",
    "add_group",
    "apply_retention",
    "clean_stale",
    "code_hash",
    "exclusive_lock",
    "fingerprint",
    "forecast_id",
    "latest_forecast_path",
    "load_forecast",
    "load_forecast_group",
    "now_utc",
    "open_forecast",
    "previous_forecast_path",
    "provenance_attrs",
    "publish",
    "publish_forecast",
    "read_attrs",
    "read_variable",
    "resolve_forecast_path",
]

FORECAST_FILE = "forecast.nc"
FORECASTS_DIR = "forecasts"
LATEST_POINTER = "latest"
LOCK_FILE = ".lock"
DEFAULT_KEEP = 20

#: Parts of the ``forecast`` package that do not change a forecast's numbers (left out of
#: :func:`code_hash`, so that editing them keeps Prefect's cached fits and propagations).
PRESENTATION_MODULES = frozenset(
    {"cli", "__main__", "query", "storage", "paths", "formatting", "ingest", "analysis", "report"}
)

UNITS = (
    "FLOP: floating-point operations; year: calendar year (fractional); "
    "bandwidth: bytes/s per direction"
)
WALL_DEFINITIONS = (
    "data_movement: largest training compute whose best parallel plan keeps utilization >= 80% "
    "of the small-scale maximum; latency: largest training compute feasible at any utilization "
    "(Erdil & Schneider-Joseph 2024)"
)


class ForecastNotFoundError(WallcastError, FileNotFoundError):
    """No published forecast where one was expected."""


FORECAST_GROUP = "forecast"
"""The group of a forecast file holding the forecast variables (``hit_year``, ``wall_flop``, ...)."""


class ForecastReadError(WallcastError, OSError):
    """A forecast file that cannot be read (truncated, empty, corrupted, not a forecast); an
    OSError too, so readers that skip unreadable files (the service) keep doing so."""


class StorageError(WallcastError):
    """The outputs folder cannot take a forecast (not a folder, read-only, disk full)."""


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


@contextmanager
def reading_forecast(path: str | Path) -> Iterator[None]:
    """Turn any failure to read ``path`` as a forecast into :class:`ForecastReadError`.

    h5py and xarray raise OSError, KeyError, ValueError or TypeError on a truncated, zero-byte or
    corrupted file or one without the ``forecast`` group; the message names the file.
    """
    try:
        yield
    except WallcastError:
        raise
    except KeyError as exc:
        raise ForecastReadError(
            f"{path}: not a wallcast forecast (missing {' '.join(map(str, exc.args)) or 'a group'}); "
            "publish one with `wallcast run` or pass another --forecast"
        ) from None
    except (OSError, ValueError, TypeError, IndexError, RuntimeError) as exc:
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise ForecastReadError(
            f"{path}: cannot read the forecast file (truncated or corrupted?): {reason}"
        ) from None


class LockBusyError(WallcastError):
    """Another process holds the lock (e.g. another refresh is running)."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


# ============================================================================ fingerprint, provenance


@functools.cache
def code_hash(package_dir: Path | None = None) -> str:
    """SHA-256 over the source of the ``forecast`` modules a forecast's numbers depend on.

    Everything under ``forecast/`` except :data:`PRESENTATION_MODULES` (CLI, queries, storage,
    reports, ...): an edit to the model, inference, trends, propagation, priors or data loaders
    changes it; an edit to presentation code does not.  Computed once per process.
    """
    root = package_dir or Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0].removesuffix(".py") in PRESENTATION_MODULES:
            continue
        h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def digest(obj: Any) -> str:
    """SHA-256 hex digest of the canonical JSON of ``obj`` (keys sorted)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def fingerprint(
    *,
    data_hash: str,
    priors_text: str,
    scenario_texts: Mapping[str, str],
    seed: int,
    chains: int,
    draws: int,
    years: Sequence[float] | None,
    code: str,
    propagate_draws: int | None = None,
) -> str:
    """The one digest of everything a forecast depends on (64 hex digits).

    ``years`` is the requested forecast grid (None: the default grid), ``code`` the
    :func:`code_hash`, ``propagate_draws`` the draws propagated per scenario (None: all).  Two
    runs with the same fingerprint publish identical numbers; the refresh
    flow compares it with the ``run_fingerprint`` of the forecast ``latest`` names.
    """
    return digest(
        {
            "data_hash": data_hash,
            "priors": priors_text,
            "scenarios": [[name, text] for name, text in scenario_texts.items()],
            "seed": int(seed),
            "chains": int(chains),
            "draws": int(draws),
            "years": None if years is None else [float(y) for y in years],
            "code": code,
            "propagate_draws": None if propagate_draws is None else int(propagate_draws),
        }
    )


def forecast_id(created: datetime, run_fingerprint: str) -> str:
    """``YYYYMMDDTHHMMSSZ-<8 hex>``: sortable by time, the hex from the run fingerprint."""
    return f"{created.strftime('%Y%m%dT%H%M%SZ')}-{run_fingerprint[:8]}"


def now_utc() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def provenance_attrs(
    inputs: Any,
    scenario_names: Sequence[str],
    *,
    seed: int,
    chains: int,
    draws: int,
    years: Sequence[float] | None = None,
    code: str | None = None,
    created: datetime | None = None,
    propagate_draws: int | None = None,
) -> dict[str, Any]:
    """Every root attribute of a published forecast (the one place they are set).

    ``inputs`` is a :class:`forecast.pipeline.Inputs`.  Includes the ``id`` (from the
    :func:`fingerprint`), the fingerprint itself (``run_fingerprint``), the code version and hash,
    the data hash and folder (``data_dir``, so that analyses refit against the same tables), the
    priors and scenario texts, the units and the platform (:mod:`forecast.platform`).
    """
    from forecast import __version__
    from forecast.platform import platform_json

    code = code_hash() if code is None else code
    created = now_utc() if created is None else created
    scenario_texts = {n: inputs.scenarios[n].text for n in scenario_names}
    run_fp = fingerprint(
        data_hash=inputs.data_hash,
        priors_text=inputs.priors.text,
        scenario_texts=scenario_texts,
        seed=seed,
        chains=chains,
        draws=draws,
        years=years,
        code=code,
        propagate_draws=propagate_draws,
    )
    data_dir = getattr(inputs, "data_dir", None)
    return {
        "id": forecast_id(created, run_fp),
        "created": created.isoformat(),
        "code_version": __version__,
        "code_hash": code,
        "run_fingerprint": run_fp,
        "seed": int(seed),
        "chains": int(chains),
        "draws": int(draws),
        "propagate_draws": -1 if propagate_draws is None else int(propagate_draws),
        "data_hash": inputs.data_hash,
        "data_dir": str(Path(data_dir).resolve()) if data_dir is not None else "",
        "priors_name": inputs.priors.name,
        "priors_path": str(inputs.priors.path),
        "priors_text": inputs.priors.text,
        "scenarios": ",".join(scenario_names),
        **{f"scenario_text_{n}": t for n, t in scenario_texts.items()},
        "hardware_rows": int(len(inputs.hardware)),
        "frontier_rows": int(len(inputs.frontier_runs)),
        **{
            f"{table}_rows": int(len(df))
            for table in ("model_shapes", "scaleup_domains")
            if (df := getattr(inputs, table, None)) is not None
        },
        "units": UNITS,
        # where the propagation ran; the fit's own platform is ``fit_platform`` (it may come
        # from a cached fit made elsewhere)
        "platform": platform_json(),
        "wall_definitions": WALL_DEFINITIONS,
    }


# ============================================================================ locking


def _holder_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


@contextmanager
def exclusive_lock(path: str | Path, what: str = "refresh", *, wait: float = 0.0) -> Iterator[Path]:
    """Hold an exclusive ``fcntl.flock`` on ``path`` for the ``with`` block.

    The kernel releases the lock when the holder exits, even on SIGKILL, so a crashed refresh
    never leaves a stale lock.  The holder writes its pid into the file.  ``wait`` = 0: fail at
    once with :class:`LockBusyError` ("another refresh is running (pid N)"); ``wait`` > 0: poll
    for up to ``wait`` seconds first.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    pid = _holder_pid(path)
                    who = f"pid {pid}" if pid is not None else "pid unknown"
                    raise LockBusyError(
                        f"another {what} is running ({who}); lock file {path}", pid
                    ) from None
                time.sleep(min(0.5, max(deadline - time.monotonic(), 0.01)))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# ============================================================================ publishing


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


def _forecast_dirs(forecasts: Path) -> list[Path]:
    """Published forecast folders, oldest first (ids sort by time)."""
    if not forecasts.is_dir():
        return []
    return sorted(p for p in forecasts.iterdir() if p.is_dir() and not p.name.startswith("."))


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
    tree: Any, outputs_dir: str | Path, forecast_id: str, *, keep: int = DEFAULT_KEEP
) -> tuple[Path, list[str]]:
    """Clean leftovers, publish atomically, apply retention; returns (folder, removed ids).

    Call it while holding ``<outputs>/.lock`` (:func:`exclusive_lock`).
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


def add_group(forecast_path: str | Path, name: str, ds: xr.Dataset) -> Path:
    """Write ``ds`` as group ``/name`` into a published forecast file, replacing that group.

    Used to attach analyses (sensitivity, backtest) to a forecast after it is published.  The
    tree is read into memory, the group set, and the tree written (compressed) to a temporary
    file in the same folder with the original's permissions, which then replaces the original
    (``os.replace``): a crash leaves the old file intact.  Other groups and root attrs are kept.
    """
    import xarray as xr

    path = resolve_forecast_path(forecast_path)
    tree = load_forecast(path)
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


# ============================================================================ finding


def latest_forecast_path(outputs_dir: str | Path | None = None) -> Path:
    """The forecast file that ``<outputs>/latest`` points to (default: the resolver's outputs)."""
    outputs_dir = paths.outputs_dir(outputs_dir)
    pointer = outputs_dir / LATEST_POINTER
    if not pointer.exists():
        raise ForecastNotFoundError(
            f"{pointer}: no published forecast yet; run `wallcast run` first"
        )
    try:
        target = outputs_dir / pointer.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ForecastReadError(f"{pointer}: cannot read the latest pointer: {exc}") from None
    path = target / FORECAST_FILE
    if not path.exists():
        raise ForecastNotFoundError(f"{pointer} points to {target}, which has no {FORECAST_FILE}")
    return path


def resolve_forecast_path(path: str | Path | None = None) -> Path:
    """A forecast file from a file, a forecast folder, an outputs folder (via ``latest``), or
    None (``latest`` of :func:`forecast.paths.outputs_dir`, which honours WALLCAST_OUTPUTS_DIR)."""
    if path is None:
        return latest_forecast_path()
    path = Path(path)
    if path.is_dir():
        if (path / FORECAST_FILE).exists():
            return path / FORECAST_FILE
        return latest_forecast_path(path)
    if not path.exists():
        raise ForecastNotFoundError(f"{path}: no such forecast file")
    return path


def previous_forecast_path(path: str | Path | None = None) -> Path | None:
    """The published forecast before ``path`` (by id order in its ``forecasts/`` folder)."""
    here = resolve_forecast_path(path).resolve().parent
    earlier = [
        d
        for d in _forecast_dirs(here.parent)
        if d.name < here.name and (d / FORECAST_FILE).exists()
    ]
    return earlier[-1] / FORECAST_FILE if earlier else None


# ============================================================================ reading


def open_forecast(path: str | Path | None = None) -> xr.DataTree:
    """Open a forecast lazily as a DataTree (close it, or use ``with``)."""
    import xarray as xr

    path = resolve_forecast_path(path)
    with reading_forecast(path):
        tree = xr.open_datatree(path, engine=ENGINE)
    if FORECAST_GROUP not in tree.children:
        tree.close()
        raise ForecastReadError(
            f"{path}: not a wallcast forecast (no '{FORECAST_GROUP}' group); "
            "publish one with `wallcast run` or pass another --forecast"
        )
    return tree


def load_forecast(path: str | Path | None = None) -> xr.DataTree:
    """A forecast read fully into memory (the file is closed again)."""
    path = resolve_forecast_path(path)
    tree = open_forecast(path)
    try:
        with reading_forecast(path):
            return tree.load()
    finally:
        tree.close()


_SKIP_ATTRS = frozenset(
    {
        "DIMENSION_LIST",
        "_Netcdf4Coordinates",
        "_Netcdf4Dimid",
        "_FillValue",
        "REFERENCE_LIST",
        "CLASS",
        "NAME",
        "_NCProperties",
    }
)


def _attr(v: Any) -> Any:
    """An HDF5 attribute as a plain Python value (h5netcdf stores scalars as 1-element arrays)."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return _attr(v[0]) if v.size == 1 else [_attr(x) for x in v.ravel()]
    return v


def _dim_names(dset: Any) -> list[str]:
    return [next(iter(d.keys())).rsplit("/", 1)[-1] if len(d) else "" for d in dset.dims]


def _coord_values(node: Any, dim: str) -> list:
    raw = node[dim][...].ravel()
    if raw.dtype.kind in "OSU":
        return [str(_attr(v)) for v in raw]
    return [v.item() for v in raw]


def read_layout(
    path: str | Path | None = None, group: str = "forecast"
) -> tuple[dict[str, Any], list[str], dict[str, dict[str, Any]], dict[str, list]]:
    """What a forecast file holds, without reading its data (h5py only).

    Returns (root attrs, group names, variables of ``group`` as name -> {"dims", "units"},
    coordinate values of the dimensions those variables use).
    """
    import h5py

    path = resolve_forecast_path(path)
    with reading_forecast(path), h5py.File(path, "r") as h5:
        attrs = {k: _attr(v) for k, v in h5.attrs.items() if k not in _SKIP_ATTRS}
        groups = sorted(k for k in h5 if isinstance(h5[k], h5py.Group))
        node = h5[group]
        variables: dict[str, dict[str, Any]] = {}
        dims_seen: set[str] = set()
        for name, dset in node.items():
            if not isinstance(dset, h5py.Dataset) or not dset.dims:
                continue
            dims = _dim_names(dset)
            if dims == [name]:  # a dimension coordinate
                continue
            dims_seen.update(dims)
            variables[name] = {"dims": dims, "units": str(_attr(dset.attrs.get("units", "")))}
        coords = {dim: _coord_values(node, dim) for dim in sorted(dims_seen) if dim in node}
    return attrs, groups, dict(sorted(variables.items())), coords


def read_attrs(path: str | Path | None = None) -> dict[str, Any]:
    """Root attributes of a forecast file (h5py only: no xarray import)."""
    import h5py

    path = resolve_forecast_path(path)
    with reading_forecast(path), h5py.File(path, "r") as h5:
        return {k: _attr(v) for k, v in h5.attrs.items() if k not in _SKIP_ATTRS}


def read_variable(
    path: str | Path, group: str, name: str
) -> tuple[tuple[str, ...], np.ndarray, dict, dict, dict]:
    """One variable of a group read with h5py: (dims, values, attrs, string coords, root attrs).

    Opening a group with xarray parses every variable of it (~130 ms for a forecast) and
    importing xarray costs ~0.4 s; a query needs one variable and two string coordinates,
    which h5py reads in a few milliseconds.
    """
    import h5py

    path = resolve_forecast_path(path)
    with reading_forecast(path), h5py.File(path, "r") as h5:
        node = h5[group]
        dset = node[name]
        dims = tuple(_dim_names(dset))
        attrs = {k: _attr(v) for k, v in dset.attrs.items() if k not in _SKIP_ATTRS}
        coords = {
            dim: [str(_attr(v)) for v in node[dim][...].ravel()]
            for dim in dims
            if dim in node and node[dim].dtype.kind in "OSU"
        }
        root_attrs = {k: _attr(v) for k, v in h5.attrs.items() if k not in _SKIP_ATTRS}
        values = dset[...]
    return dims, values, attrs, coords, root_attrs


def load_forecast_group(
    path: str | Path | None = None, variables: list[str] | None = None
) -> tuple[xr.Dataset, dict]:
    """The ``/forecast`` group (optionally only some variables, via h5py) and the root attrs."""
    import xarray as xr

    path = resolve_forecast_path(path)
    if variables:
        data_vars, coords, attrs = {}, {}, {}
        for name in variables:
            dims, values, var_attrs, var_coords, attrs = read_variable(path, "forecast", name)
            data_vars[name] = xr.Variable(dims, values, var_attrs)
            coords.update(var_coords)
        return xr.Dataset(data_vars, coords=coords), attrs
    with reading_forecast(path), xr.open_dataset(path, group="forecast", engine=ENGINE) as ds:
        ds = ds.load()
    return ds, read_attrs(path)
