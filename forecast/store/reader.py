"""Finding a published forecast file and reading it: whole with xarray, or in parts with h5py.

Layout of an outputs folder (:func:`forecast.config.paths.outputs_dir`)::

    outputs/
      forecasts/<id>/forecast.nc   one published forecast (replaced atomically, never edited in place)
      latest                       text file naming the current forecast (relative path)
      .lock                        held (fcntl.flock) by a running refresh

* **Finding** - :func:`resolve_forecast_path` turns a file, a forecast folder, an outputs folder
  (via its ``latest``, :func:`latest_forecast_path`) or nothing (the resolver's outputs folder)
  into a forecast file; :func:`previous_forecast_path` gives the one published before it.
* **Reading whole** (xarray) - :func:`open_forecast` / :func:`load_forecast` give the DataTree,
  :func:`load_forecast_group` the ``/forecast`` group (or some of its variables, via h5py) and
  the root attributes.
* **Reading one variable at a time** (h5py only, ``wallcast query``) - :func:`read_layout` what a
  file holds without its data, :func:`read_variable` one variable with its string coordinates,
  :func:`read_attrs` the root attributes.
* **Read errors** - :func:`reading_forecast` turns any failure to read a file as a forecast
  (truncated, empty, corrupted, not a forecast) into :class:`ForecastReadError`, which names the
  file; no forecast where one was asked for is
  :class:`~forecast.store.layout.ForecastNotFoundError`.

This module imports neither JAX nor xarray at module level (the query path needs neither).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from forecast.config import paths
from forecast.config.errors import WallcastError
from forecast.store.catalog import CatalogError, read_pointer
from forecast.store.layout import (
    FORECAST_FILE,
    FORECAST_GROUP,
    LATEST_POINTER,
    ForecastNotFoundError,
    forecast_dirs,
)
from forecast.store.schema import ENGINE

if TYPE_CHECKING:  # imported lazily: resolving paths and querying must not pay for xarray
    import xarray as xr


def _h5py() -> Any:
    """h5py, imported when a file is first read."""
    # why here: resolving paths and pointers (every reading command) needs no HDF5 library
    import h5py

    return h5py


def _xarray() -> Any:
    """xarray, imported when a whole tree or group is read."""
    # why here: `wallcast query` and the API read single variables with h5py, without xarray
    import xarray as xr

    return xr


SKIP_ATTRS = frozenset(
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


def attr_value(v: Any) -> Any:
    """An HDF5 attribute as a plain Python value (h5netcdf stores scalars as 1-element arrays)."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return attr_value(v[0]) if v.size == 1 else [attr_value(x) for x in v.ravel()]
    return v


class ForecastReadError(WallcastError, OSError):
    """A forecast file that cannot be read (truncated, empty, corrupted, not a forecast); an
    OSError too, so readers that skip unreadable files (the service) keep doing so."""


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


def latest_forecast_path(outputs_dir: str | Path | None = None) -> Path:
    """The forecast file that ``<outputs>/latest`` points to (default: the resolver's outputs)."""
    outputs_dir = paths.outputs_dir(outputs_dir)
    pointer = outputs_dir / LATEST_POINTER
    try:  # the service's reader: never through a symlink, never blocking on a FIFO
        text = read_pointer(pointer)
    except CatalogError as exc:
        detail = f" ({exc.detail})" if exc.detail and exc.detail != str(pointer) else ""
        raise ForecastReadError(f"{pointer}: {exc.reason}{detail}") from None
    if text is None:
        raise ForecastNotFoundError(
            f"{pointer}: no published forecast yet; run `wallcast run` first"
        )
    target = outputs_dir / text
    path = target / FORECAST_FILE
    if not path.exists():
        raise ForecastNotFoundError(f"{pointer} points to {target}, which has no {FORECAST_FILE}")
    return path


def resolve_forecast_path(path: str | Path | None = None) -> Path:
    """A forecast file from a file, a forecast folder, an outputs folder or its ``latest`` pointer
    (both via ``latest``), or None (``latest`` of :func:`forecast.config.paths.outputs_dir`, which
    honours WALLCAST_OUTPUTS_DIR)."""
    if path is None:
        return latest_forecast_path()
    path = Path(path)
    if path.is_dir():
        if (path / FORECAST_FILE).exists():
            return path / FORECAST_FILE
        return latest_forecast_path(path)
    if not path.exists():
        raise ForecastNotFoundError(f"{path}: no such forecast file")
    if path.name == LATEST_POINTER and path.is_file():
        return latest_forecast_path(path.parent)  # `--forecast outputs/latest`: the file it names
    return path


def previous_forecast_path(path: str | Path | None = None) -> Path | None:
    """The published forecast before ``path`` (by id order in its ``forecasts/`` folder)."""
    here = resolve_forecast_path(path).resolve().parent
    earlier = [
        d for d in forecast_dirs(here.parent) if d.name < here.name and (d / FORECAST_FILE).exists()
    ]
    return earlier[-1] / FORECAST_FILE if earlier else None


def open_forecast(path: str | Path | None = None) -> xr.DataTree:
    """Open a forecast lazily as a DataTree (close it, or use ``with``)."""
    xr = _xarray()

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


def _dim_names(dset: Any) -> list[str]:
    return [next(iter(d.keys())).rsplit("/", 1)[-1] if len(d) else "" for d in dset.dims]


def _coord_values(node: Any, dim: str) -> list:
    raw = node[dim][...].ravel()
    if raw.dtype.kind in "OSU":
        return [str(attr_value(v)) for v in raw]
    return [v.item() for v in raw]


def read_layout(
    path: str | Path | None = None, group: str = "forecast"
) -> tuple[dict[str, Any], list[str], dict[str, dict[str, Any]], dict[str, list]]:
    """What a forecast file holds, without reading its data (h5py only).

    Returns (root attrs, group names, variables of ``group`` as name -> {"dims", "units"},
    coordinate values of the dimensions those variables use).
    """
    h5py = _h5py()

    path = resolve_forecast_path(path)
    with reading_forecast(path), h5py.File(path, "r") as h5:
        attrs = {k: attr_value(v) for k, v in h5.attrs.items() if k not in SKIP_ATTRS}
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
            variables[name] = {"dims": dims, "units": str(attr_value(dset.attrs.get("units", "")))}
        coords = {dim: _coord_values(node, dim) for dim in sorted(dims_seen) if dim in node}
    return attrs, groups, dict(sorted(variables.items())), coords


def read_variable(
    path: str | Path, group: str, name: str
) -> tuple[tuple[str, ...], np.ndarray, dict, dict, dict]:
    """One variable of a group read with h5py: (dims, values, attrs, string coords, root attrs).

    Opening a group with xarray parses every variable of it, and importing xarray is slow; a
    query needs one variable and two string coordinates, which h5py reads directly (the query's
    time is measured in BENCHMARKS.md section 3).
    """
    h5py = _h5py()

    path = resolve_forecast_path(path)
    with reading_forecast(path), h5py.File(path, "r") as h5:
        node = h5[group]
        dset = node[name]
        dims = tuple(_dim_names(dset))
        attrs = {k: attr_value(v) for k, v in dset.attrs.items() if k not in SKIP_ATTRS}
        coords = {
            dim: [str(attr_value(v)) for v in node[dim][...].ravel()]
            for dim in dims
            if dim in node and node[dim].dtype.kind in "OSU"
        }
        root_attrs = {k: attr_value(v) for k, v in h5.attrs.items() if k not in SKIP_ATTRS}
        values = dset[...]
    return dims, values, attrs, coords, root_attrs


def has_variable(path: str | Path, group: str, name: str) -> bool:
    """Whether the forecast file holds variable ``name`` in ``group`` (h5py; nothing read)."""
    h5py = _h5py()

    path = resolve_forecast_path(path)
    with reading_forecast(path), h5py.File(path, "r") as h5:
        return group in h5 and name in h5[group]


def load_forecast_group(
    path: str | Path | None = None, variables: list[str] | None = None
) -> tuple[xr.Dataset, dict]:
    """The ``/forecast`` group (optionally only some variables, via h5py) and the root attrs."""
    xr = _xarray()

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


def read_group(path: str | Path | None, group: str) -> xr.Dataset:
    """One group of a forecast file, loaded into memory (KeyError when the file has none)."""
    xr = _xarray()

    path = resolve_forecast_path(path)
    with reading_forecast(path):
        try:
            with xr.open_dataset(path, group=group, engine=ENGINE) as ds:
                return ds.load()
        except OSError as exc:
            if "group not found" not in str(exc).lower() and group not in str(exc):
                raise
    raise KeyError(group)  # outside: reading_forecast reads a KeyError as a damaged file


def read_attrs(path: str | Path | None = None) -> dict[str, Any]:
    """Root attributes of a forecast file (h5py only: no xarray import)."""
    h5py = _h5py()

    path = resolve_forecast_path(path)
    with reading_forecast(path), h5py.File(path, "r") as h5:
        return {k: attr_value(v) for k, v in h5.attrs.items() if k not in SKIP_ATTRS}
