"""The persisted forecast: one DataTree with its provenance, its layout, building and writing.

Layout of ``outputs/forecasts/<id>/forecast.nc`` (open with ``xarray.open_datatree``):

* ``/posterior``, ``/sample_stats``, ``/log_likelihood``, ``/posterior_predictive``,
  ``/observed_data``, ``/constant_data``: the joint NumPyro fit of the trends and scaling laws
  (:mod:`forecast.stats.joint`; ArviZ 1.x conventions); ``/prior``: the same variables drawn from
  the joint model's priors;
* ``/forecast``: dims ``scenario``, ``chain``, ``draw``, ``year``, ``wall``; variables
  ``wall_flop``, ``frontier_flop``, ``hit_year``, ``hit_flop``, ``hit`` and the frontier
  accelerator's specs ``hardware_*``;
* ``/forecast_inputs``: the propagated inputs per scenario, chain and draw (posterior draws of
  the fitted inputs, prior draws of the others);
* root ``attrs``: id, created, code version, seed, data hash, priors and scenario texts, units
  (:func:`forecast.store.attrs.provenance_attrs`), ``input_provenance``
  (:mod:`forecast.priors.provenance`).

This module builds and writes the tree; :mod:`forecast.store.publisher` publishes it atomically
and :mod:`forecast.store.reader` finds and reads it.
It imports no JAX, and xarray only where a tree is built.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported lazily: resolving paths and querying must not pay for xarray
    import xarray as xr

ENGINE = "h5netcdf"


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
    # why here: the store's h5py readers must not pay for importing xarray
    import xarray as xr

    tree = xr.DataTree.from_dict(groups)
    merged = {k: v for k, v in fit.attrs.items() if isinstance(v, (str, int, float))}
    merged = {f"fit_{k}": v for k, v in merged.items()}
    merged.update(attrs)
    tree.attrs.update(merged)
    return tree


def netcdf_bytes(tree: xr.DataTree) -> bytes:
    """The tree as NetCDF file contents (h5netcdf engine), numeric arrays gzip-compressed (level 4)."""
    encoding = {}
    for node in tree.subtree:
        ds = node.to_dataset(inherit=False)
        encoding[node.path] = {
            name: {"compression": "gzip", "compression_opts": 4, "shuffle": True}
            for name, var in ds.data_vars.items()
            if var.dtype.kind in "fiub" and var.ndim > 0
        }
    return bytes(tree.to_netcdf(None, engine=ENGINE, encoding=encoding))


def write_tree(tree: xr.DataTree, path: str | Path) -> Path:
    """Write the tree to NetCDF (:func:`netcdf_bytes`), fsynced.

    The file is built in memory and written with plain file I/O: HDF5 writing straight to a full
    disk can crash the process (SIGSEGV) instead of raising, while ``write`` raises ``OSError``
    (ENOSPC) that the caller can clean up after.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = netcdf_bytes(tree)
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return path


UNITS = (
    "FLOP: floating-point operations; year: calendar year (fractional); "
    "bandwidth: bytes/s per direction"
)
WALL_DEFINITIONS = (
    "data_movement: largest training compute whose best parallel plan keeps utilization >= 80% "
    "of the small-scale maximum; latency: largest training compute feasible at any utilization "
    "(Erdil & Schneider-Joseph 2024)"
)
