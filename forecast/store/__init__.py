"""Published forecasts on disk: the one way into and out of an outputs folder (no JAX).

Layout of an outputs folder (:func:`forecast.config.paths.outputs_dir`)::

    outputs/
      forecasts/<id>/forecast.nc   one published forecast
      latest                       text file naming the current forecast (relative path)
      .lock                        held (fcntl.flock) by a running refresh

Modules, lowest first:

* :mod:`~forecast.store.layout` - file and folder names, the "no forecast here" error;
* :mod:`~forecast.store.schema` - the DataTree's groups, units and definitions; building and
  writing a tree;
* :mod:`~forecast.store.identity` - the code hash, the run fingerprint and the forecast id;
* :mod:`~forecast.store.attrs` - the root attributes: their one writer (:func:`provenance_attrs`)
  and their one reader (:func:`read_attrs`);
* :mod:`~forecast.store.reader` - finding a forecast (``latest``, a folder, a file) and reading
  it whole (xarray) or one variable at a time (h5py);
* :mod:`~forecast.store.publisher` - atomic publishing, retention, and attaching analysis groups;
* :mod:`~forecast.store.catalog` - the list of published forecasts (the service's index).

This package is the public face: ``from forecast import store; store.load_forecast(...)``.
"""

from __future__ import annotations

from forecast.config.filelock import LockBusyError, exclusive_lock
from forecast.store.attrs import provenance_attrs, read_priors, recorded_data_dir
from forecast.store.identity import (
    code_hash,
    digest,
    fingerprint,
    forecast_id,
    inputs_fingerprint,
    now_utc,
)
from forecast.store.layout import (
    FORECAST_FILE,
    FORECAST_GROUP,
    FORECASTS_DIR,
    LATEST_POINTER,
    LOCK_FILE,
    ForecastNotFoundError,
)
from forecast.store.publisher import (
    DEFAULT_KEEP,
    StorageError,
    add_groups,
    apply_retention,
    check_outputs_writable,
    clean_stale,
    publish,
    publish_forecast,
)
from forecast.store.reader import (
    ForecastReadError,
    latest_forecast_path,
    load_forecast,
    load_forecast_group,
    open_forecast,
    previous_forecast_path,
    read_attrs,
    read_layout,
    read_variable,
    reading_forecast,
    resolve_forecast_path,
)
from forecast.store.schema import ENGINE, UNITS, WALL_DEFINITIONS, build_tree, write_tree

__all__ = [
    "DEFAULT_KEEP",
    "ENGINE",
    "FORECASTS_DIR",
    "FORECAST_FILE",
    "FORECAST_GROUP",
    "LATEST_POINTER",
    "LOCK_FILE",
    "UNITS",
    "WALL_DEFINITIONS",
    "ForecastNotFoundError",
    "ForecastReadError",
    "LockBusyError",
    "StorageError",
    "add_groups",
    "apply_retention",
    "build_tree",
    "check_outputs_writable",
    "clean_stale",
    "code_hash",
    "digest",
    "exclusive_lock",
    "fingerprint",
    "forecast_id",
    "inputs_fingerprint",
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
    "read_layout",
    "read_priors",
    "read_variable",
    "reading_forecast",
    "recorded_data_dir",
    "resolve_forecast_path",
    "write_tree",
]
