"""Every error wallcast reports survives pickling: Prefect, process pools and the Dask task
runner pickle the exceptions of the tasks they run, and an error that cannot be rebuilt reaches
the user as a TypeError from pickle instead of its one ``error:`` line."""

from __future__ import annotations

import importlib
import pickle
import pkgutil

import pytest

import flows
import forecast
from forecast.config.errors import WallcastError


def _every_module() -> None:
    for package in (forecast, flows):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def _examples() -> dict[str, WallcastError]:
    """One instance of every subclass, built the way the code raises it."""
    from forecast.analyses.accelerator_walls import WallsInputError
    from forecast.config.errors import DataValidationError, UnknownAcceleratorError
    from forecast.config.filelock import LockBusyError
    from forecast.data.ingest import IngestRefusedError, IngestWriteError
    from forecast.inference.gate import ConvergenceError
    from forecast.inference.sampler import SamplerStartError
    from forecast.model.accelerators import PrecisionUnavailableError
    from forecast.priors.parsing import PriorError, Problem
    from forecast.queries.answers import QueryError
    from forecast.queries.posterior_walls import NoAcceleratorWallsError
    from forecast.queries.whatif import WhatIfInputError
    from forecast.service.backend import (
        BadParameterError,
        ForecastUnreadableError,
        ServerDataError,
        UnknownForecastError,
    )
    from forecast.store.catalog import CatalogError
    from forecast.store.layout import ForecastNotFoundError
    from forecast.store.publisher import StorageError
    from forecast.store.reader import ForecastReadError

    examples = [
        WallsInputError("no accelerator matches 'X9'"),
        DataValidationError("data/hardware.csv", 7, "hbm_bandwidth_bytes_per_s", "must be > 0"),
        UnknownAcceleratorError("H1OO", ["H100 SXM", "H200"]),
        LockBusyError("another refresh is running (pid 4242)", 4242),
        IngestRefusedError("incoming/x.csv: no new rows"),
        IngestWriteError(28, "No space left on device", "data/hardware.csv"),
        ConvergenceError(
            [("r_hat", "slope[flops]", 1.0116, 1.01), ("divergences", None, 3.0, 0.0)],
            chains=4,
            draws=2000,
            extended_from=1000,
            first_refusal="r_hat of slope[flops] is 1.0116 (max 1.01)",
        ),
        PrecisionUnavailableError("TPU v2 has no fp8 FLOP/s"),
        SamplerStartError("NUTS could not start: chain(s) 0, 1 of 4"),
        PriorError("priors/x.toml", [Problem("latency.kernel_us", 12, "p10 above p50")]),
        QueryError("unknown wall 'memory'"),
        NoAcceleratorWallsError("this forecast holds no accelerator walls"),
        WhatIfInputError("unknown key 'foo'", parameter="prior", allowed=["a", "b"]),
        BadParameterError("percentile", 120, "0-100", "out of range"),
        ForecastUnreadableError("20261206T230000Z", "truncated file", "h5py: bad symbol table"),
        ServerDataError("catalog unreadable", "detail", "20261206T230000Z"),
        UnknownForecastError("no forecast 'nope'"),
        CatalogError("index unreadable", "line 3"),
        ForecastNotFoundError(2, "No such file or directory", "outputs/latest"),
        StorageError("disk full while publishing"),
        ForecastReadError("outputs/x/forecast.nc: not HDF5"),
    ]
    return {type(e).__name__: e for e in examples}


def test_every_wallcast_error_has_an_example() -> None:
    """The round trip below covers every subclass there is (a new one must be added here)."""
    _every_module()
    assert {cls.__name__ for cls in _subclasses(WallcastError)} == set(_examples())


@pytest.mark.parametrize("name", sorted(_examples()))
def test_a_wallcast_error_survives_pickling(name: str) -> None:
    error = _examples()[name]
    error.add_note("raised in a task")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error)
    assert str(again) == str(error) and again.args == error.args
    assert vars(again) == vars(error)  # every attribute its __init__ set, and the notes
    if isinstance(error, OSError):
        assert (again.errno, again.strerror, again.filename) == (
            error.errno,
            error.strerror,
            error.filename,
        )
