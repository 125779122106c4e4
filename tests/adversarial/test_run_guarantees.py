"""Guarantees of issue 13 (runs half) that a corpus case cannot show: a publish onto a full disk
leaves no temporary folder and ``latest`` unchanged; a read-only outputs folder is refused before
the flow; WallcastErrors are not retried; the embedded Prefect server dies with a SIGKILLed parent.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from adversarial.harness import (
    REPO_ROOT,
    assert_clean_error,
    processes_mentioning,
    run_main,
    snapshot,
)


def _small_tree(forecast_id: str):
    import xarray as xr

    with xr.open_dataset(REPO_ROOT / "tests" / "reference" / "small_forecast.nc") as ref:
        forecast = ref[["wall_flop", "frontier_flop", "hit_year", "hit_flop"]].load()
    return xr.DataTree.from_dict(
        {"/": xr.Dataset(attrs={"id": forecast_id}), "/forecast": forecast}
    )


def _published(outputs: Path) -> Path:
    from forecast import store

    published, _ = store.publish_forecast(
        _small_tree("20260101T000000Z-first"), outputs, "20260101T000000Z-first"
    )
    return published


def test_publish_onto_a_full_disk_cleans_up_and_keeps_latest(tmp_path: Path, monkeypatch) -> None:
    """ENOSPC half-way through writing the file: StorageError naming the folder, no temporary
    folder left, ``latest`` still names the previous forecast."""
    from forecast import store

    outputs = tmp_path / "outputs"
    first = _published(outputs)
    before = snapshot(outputs)

    def full_disk(tree, path):
        Path(path).write_bytes(b"\x89HDF partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    from forecast.store import publisher as store_publish

    monkeypatch.setattr(store_publish, "write_tree", full_disk)
    with pytest.raises(store.StorageError, match="No space left on device"):
        store.publish_forecast(_small_tree("x"), outputs, "20260102T000000Z-second")
    assert sorted(p.name for p in (outputs / "forecasts").iterdir()) == [first.name]
    assert snapshot(outputs) == before
    assert store.latest_forecast_path(outputs) == first / store.FORECAST_FILE


def _can_mount_tmpfs(where: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir()
    ok = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True
    )
    return ok.returncode == 0


def test_publish_onto_a_real_full_tmpfs_does_not_crash(tmp_path: Path) -> None:
    """The crash of the issue (HDF5 on ENOSPC: SIGSEGV, temporary folder left): a 1 MiB tmpfs
    nearly filled, publish in a subprocess; it must exit cleanly with StorageError."""
    mnt = tmp_path / "mnt"
    if not _can_mount_tmpfs(mnt):
        pytest.skip("needs root and mount to make a small tmpfs (the monkeypatched test covers it)")
    try:
        (mnt / "filler").write_bytes(b"\0" * 950_000)
        code = f"""
import sys
sys.path[:0] = [{str(REPO_ROOT)!r}, {str(REPO_ROOT / "tests")!r}]
from adversarial.test_run_guarantees import _small_tree
from forecast import store
try:
    store.publish_forecast(_small_tree("x"), {str(mnt / "out")!r}, "20260101T000000Z-x")
except store.StorageError as e:
    print("StorageError:", e)
"""
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        assert "No space left on device" in proc.stdout
        assert list((mnt / "out" / "forecasts").iterdir()) == []
        assert not (mnt / "out" / "latest").exists()
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_read_only_outputs_folder_is_refused_before_the_flow(tmp_path: Path, monkeypatch) -> None:
    """As root chmod does not stop writes, so the probe write is made to fail with EROFS."""
    import tempfile

    real = tempfile.TemporaryFile

    def read_only(*args, **kwargs):
        if str(kwargs.get("dir", "")).startswith(str(tmp_path)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), kwargs["dir"])
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", read_only)
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    proc = run_main(["run", "--outputs-dir", str(outputs), "--draws", "50", "--chains", "1"])
    assert_clean_error(proc, str(outputs), "Read-only file system")
    assert "refresh-forecast" not in proc.stderr  # refused before the flow was started
    assert processes_mentioning(str(tmp_path)) == []


def test_user_errors_are_not_retried_and_io_errors_are() -> None:
    from flows.refresh import retry_unless_user_error
    from forecast.priors import PriorError
    from forecast.priors.parsing import Problem

    bad_priors = PriorError("p.toml", [Problem("training.duration_days", 3, "implausible")])
    assert retry_unless_user_error(None, None, SimpleNamespace(data=bad_priors)) is False
    assert retry_unless_user_error(None, None, SimpleNamespace(data=OSError("nfs hiccup"))) is True


def _children(pid: int) -> list[tuple[int, str]]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if int(stat[1]) == pid:
            found.append((int(entry.name), cmd))
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_embedded_prefect_server_dies_with_a_sigkilled_parent(tmp_path: Path) -> None:
    """Start ``wallcast run`` (small), wait for its embedded server, SIGKILL the parent only (as
    the OOM killer does): the server must be gone soon after (it used to live on under PID 1)."""
    env = dict(
        os.environ,
        PREFECT_HOME=str(tmp_path / "prefect"),
        PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    )
    args = ["run", "--outputs-dir", str(tmp_path / "out"), "--draws", "50", "--chains", "1"]
    args += ["--scenario", "baseline", "--no-report"]
    parent = subprocess.Popen(
        [sys.executable, "-m", "forecast", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = None
    try:
        deadline = time.monotonic() + 240  # a wait, not a timed assertion
        while server is None and parent.poll() is None and time.monotonic() < deadline:
            server = next((pid for pid, cmd in _children(parent.pid) if "uvicorn" in cmd), None)
            time.sleep(0.2)
        assert server is not None, "the embedded Prefect server never started"
        cmd = dict(_children(parent.pid))[server]
        assert "flows.server_lifecycle" in cmd and str(parent.pid) in cmd
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 30
        while _alive(server) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(server), f"server {server} outlived its SIGKILLed parent"
    finally:
        if parent.poll() is None:
            os.kill(parent.pid, signal.SIGKILL)
            parent.wait()
        if server is not None and _alive(server):
            os.kill(server, signal.SIGKILL)


def test_scenario_names_are_unique_and_the_same_file_twice_is_one_scenario() -> None:
    from forecast.config.errors import WallcastError
    from forecast.jobs import forecast_job

    cases = Path(__file__).resolve().parent / "cases" / "run"
    twin = str(cases / "twin-a.toml")
    inputs = forecast_job.load_inputs(scenarios=["baseline", twin, twin])
    assert list(inputs.scenarios) == ["baseline", "twin"]
    assert inputs.scenarios["twin"]["training.duration_days"].median() == 120.0
    assert inputs.scenarios["baseline"]["training.duration_days"].median() == 90.0
    with pytest.raises(WallcastError, match="'twin'.*twin-a.toml") as info:
        forecast_job.load_inputs(scenarios=[twin, str(cases / "twin-b.toml")])
    assert str(info.value).startswith(str(cases / "twin-b.toml"))
