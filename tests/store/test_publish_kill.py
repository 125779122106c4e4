"""Atomic publishing under SIGKILL, the refresh lock, retention."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from forecast.config.filelock import LockBusyError, exclusive_lock
from forecast.store.layout import LATEST_POINTER
from forecast.store.publisher import apply_retention, clean_stale, publish_forecast
from forecast.store.reader import latest_forecast_path

KEEP = 3
KILLS = 25


def _tree(fid: str) -> xr.DataTree:
    """Small synthetic forecast whose values are known (checked after every kill)."""
    years = np.arange(2024, 2046, dtype=float)
    hit = np.broadcast_to(years[None, None, :], (2, 50, years.size)).copy()
    fc = xr.Dataset(
        {"hit_year": (("chain", "draw", "year"), hit), "n": ((), 1234)},
        coords={"year": years},
    )
    post = xr.Dataset({"slope": (("chain", "draw"), np.full((2, 50), 0.5))})
    tree = xr.DataTree.from_dict({"/forecast": fc, "/posterior": post})
    tree.attrs.update(id=fid, complete="yes")
    return tree


def _fid() -> str:
    return f"{time.time_ns():020d}"  # sorts by time, unique per publish


def _publish_forever(outputs: str, ready) -> None:
    """Child: publish (lock + clean + publish + retention) in a loop until killed."""
    warm = Path(outputs).parent / f"warm-{os.getpid()}"  # first write pays lazy imports
    publish_forecast(_tree("warm"), warm, "warm")
    ready.set()
    while True:
        fid = _fid()
        with exclusive_lock(Path(outputs) / ".lock"):
            publish_forecast(_tree(fid), outputs, fid, keep=KEEP)


def _assert_latest_complete(outputs: Path) -> str:
    path = latest_forecast_path(outputs)
    with xr.open_datatree(path, engine="h5netcdf") as dt:
        assert set(dt.children) == {"forecast", "posterior"}
        assert dt.attrs["complete"] == "yes" and dt.attrs["id"] == path.parent.name
        fc = dt["forecast"].to_dataset().load()
        assert fc["hit_year"].shape == (2, 50, 22)
        np.testing.assert_array_equal(fc["hit_year"].values[1, 49], np.arange(2024, 2046))
        assert int(fc["n"]) == 1234
        assert float(dt["posterior"]["slope"].values.mean()) == 0.5
    return path.parent.name


def test_sigkill_at_random_moments_leaves_latest_complete(tmp_path: Path, monkeypatch):
    out = tmp_path / "outputs"
    fid = _fid()
    publish_forecast(_tree(fid), out, fid, keep=KEEP)
    ctx = multiprocessing.get_context("forkserver")
    # the fork server imports these once; support.publish_warm publishes once, so each forked
    # publisher starts with a first write's lazy imports done. Python 3.12's fork server does
    # not take the parent's sys.path: the tests folder reaches it through PYTHONPATH
    tests = str(Path(__file__).resolve().parents[1])
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))
    )
    ctx.set_forkserver_preload(
        ["xarray", "h5netcdf", "forecast.store.reader", "support.publish_warm"]
    )
    rng = random.Random(20260101)
    seen = set()
    interrupted = 0  # kills that landed in the middle of writing a forecast
    for _ in range(KILLS):
        ready = ctx.Event()
        proc = ctx.Process(target=_publish_forever, args=(str(out), ready))
        proc.start()
        assert ready.wait(60)
        time.sleep(rng.uniform(0.0, 0.25))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        assert proc.exitcode == -signal.SIGKILL
        seen.add(_assert_latest_complete(out))
        leftovers = [p for p in (out / "forecasts").iterdir() if p.name.startswith(".")]
        interrupted += bool(leftovers)
        # the kernel released the lock with the dead process
        with exclusive_lock(out / ".lock"):
            pass
    assert len(seen) > 5  # the kills landed after different numbers of publishes
    assert interrupted >= 1, "no kill landed mid-publish"
    print(f"{KILLS} kills, {interrupted} mid-publish, {len(seen)} distinct latest forecasts")
    # the next publish cleans leftovers and applies retention
    fid = _fid()
    publish_forecast(_tree(fid), out, fid, keep=KEEP)
    names = sorted(p.name for p in (out / "forecasts").iterdir())
    assert not [n for n in names if n.startswith(".")]
    assert len(names) == KEEP and names[-1] == fid
    assert _assert_latest_complete(out) == fid
    assert not list(out.glob(".latest.*"))


def test_retention_never_deletes_latest(tmp_path: Path):
    out = tmp_path / "outputs"
    ids = [f"2026010{i}T000000Z-aaaaaaa{i}" for i in range(1, 6)]
    for fid in ids:
        publish_forecast(_tree(fid), out, fid, keep=100)
    # point latest at the oldest, then keep only 2: the oldest survives as latest
    (out / LATEST_POINTER).write_text(f"forecasts/{ids[0]}\n")
    removed = apply_retention(out, keep=2)
    assert removed == ids[1:3]
    left = sorted(p.name for p in (out / "forecasts").iterdir())
    assert left == [ids[0], *ids[3:]]
    assert latest_forecast_path(out).parent.name == ids[0]


def test_clean_stale_removes_only_hidden_leftovers(tmp_path: Path):
    out = tmp_path / "outputs"
    publish_forecast(_tree("a"), out, "a")
    (out / "forecasts" / ".b.xyz").mkdir()
    (out / "forecasts" / ".trash-c").mkdir()
    (out / ".latest.tmp1").write_text("x")
    assert sorted(clean_stale(out)) == [".b.xyz", ".latest.tmp1", ".trash-c"]
    assert [p.name for p in (out / "forecasts").iterdir()] == ["a"]


def test_lock_refuses_a_second_holder_with_its_pid(tmp_path: Path):
    lock = tmp_path / "outputs" / ".lock"
    code = (
        "import sys, time; from forecast.config.filelock import exclusive_lock\n"
        f"with exclusive_lock({str(lock)!r}):\n"
        "    print('held', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with (
            pytest.raises(LockBusyError, match=rf"another refresh is running \(pid {holder.pid}\)"),
            exclusive_lock(lock),
        ):
            pass
        t0 = time.monotonic()
        with pytest.raises(LockBusyError), exclusive_lock(lock, wait=1.0):
            pass
        assert time.monotonic() - t0 >= 0.9
    finally:
        holder.kill()
        holder.wait(10)
    with exclusive_lock(lock, wait=5.0):  # released when the holder died
        assert lock.read_text().strip() == str(os.getpid())
