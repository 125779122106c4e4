"""Imported by the fork server of tests/store/test_publish_kill.py: one small publish, so that the
publishers it forks start with the lazy imports of a first write done (xarray's chunk managers
pull in dask and distributed, h5py and h5netcdf their writers: ~600 modules). Without it every
forked publisher paid them before it was ready to be killed: 0.44 s each instead of 0.08 s, the
SIGKILL test's 25 kills 16 s instead of 7 s here, 42 s on a clean clone (BENCHMARKS.md section
7)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from forecast.store.publisher import publish_forecast


def _publish_once() -> None:
    folder = Path(tempfile.mkdtemp(prefix="wallcast-warm-publish-"))
    try:
        tree = xr.DataTree.from_dict(
            {
                "/forecast": xr.Dataset({"n": ((), 1)}),
                "/posterior": xr.Dataset({"s": ("d", np.ones(2))}),
            }
        )
        publish_forecast(tree, folder, "warm")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_publish_once()
