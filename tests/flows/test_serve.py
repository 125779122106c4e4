"""`wallcast serve` for real (issue 24): a bad file is rejected, a good one yields a new
forecast, and a what-if runs through the served deployment.

In a file of its own (it was in tests/flows/test_flows.py): it starts its own Prefect server and
API in a subprocess and shares no fixture with the refresh-flow tests, so the test run's two
workers (``--dist loadfile``) can run it beside them.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import xarray as xr
from support.fit_settings import GATED_DRAWS, GATED_SEED

from forecast.config.paths import DATA_TABLE_FILES
from forecast.data.hardware import load_hardware
from forecast.store.reader import latest_forecast_path

REPO = Path(__file__).resolve().parents[2]
DRAWS, SEED = GATED_DRAWS, GATED_SEED
NEW_ROW = (
    "Test Accel X1,TestCo,2026-03,announced,true,2.5e15,5.0e15,1.2e13,2.88e11,1.8e12,72,switched,"
    "1.0e11,https://example.com/x1,Synthetic accelerator for tests"
)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # its own waits add up to 1,380 s on a loaded machine
def test_serve_ingests_a_landed_file_and_publishes(tmp_path: Path):
    """`wallcast serve` for real: a bad file is rejected, a good one yields a new forecast, and
    a what-if that reweighting cannot answer runs for real through the served what-if
    deployment, submitted and followed over the API, beside the served forecast (issue 24)."""
    data, outputs = tmp_path / "data", tmp_path / "outputs"
    (data / "incoming").mkdir(parents=True)
    for name in DATA_TABLE_FILES:
        shutil.copy(REPO / "data" / name, data / name)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(tmp_path / "home"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    cmd = [sys.executable, "-m", "forecast", "serve", "--data-dir", str(data)]
    cmd += ["--outputs-dir", str(outputs), "--poll-seconds", "1", "--settle-seconds", "0.5"]
    cmd += ["--draws", str(DRAWS), "--seed", str(SEED), "--year-step", "7", "--no-report"]
    # 48 propagated draws (the default is 400): the test checks serving, ingest and the what-if
    # run end to end, not Monte Carlo precision (BENCHMARKS.md section 10)
    cmd += ["--scenario", "baseline", "--propagate-draws", "48"]
    with socket.socket() as s:  # the API and dashboard that serve runs beside its schedule
        s.bind(("127.0.0.1", 0))
        api_port = s.getsockname()[1]
    cmd += ["--api-port", str(api_port)]
    log = tmp_path / "serve.log"
    header = (REPO / "data" / "hardware.csv").read_text().splitlines()[0]
    rows_before = len(load_hardware(data / "hardware.csv"))

    def drop(name: str, text: str) -> None:
        tmp = data / "incoming" / f".{name}.part"
        tmp.write_text(text)
        tmp.rename(data / "incoming" / name)  # atomic arrival

    def wait_for(pred, timeout: float) -> float:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            assert proc.poll() is None, log.read_text()[-3000:]
            # a refresh that failed (e.g. refused by the convergence gate) never publishes
            assert "did not converge" not in log.read_text(), log.read_text()[-3000:]
            if pred():
                return time.monotonic() - t0
            time.sleep(0.5)
        raise AssertionError(f"timed out after {timeout} s:\n{log.read_text()[-3000:]}")

    t_start = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        wait_for(lambda: "Ctrl-C to stop" in log.read_text(), 180)
        t_ready = time.monotonic() - t_start
        drop("bad.csv", f"{header}\n{NEW_ROW.replace('1.2e13', '12')}\n")
        t_bad = wait_for(lambda: (data / "rejected" / "bad.csv.reason").exists(), 120)
        assert (
            "field 'hbm_bandwidth_bytes_per_s'"
            in (data / "rejected" / "bad.csv.reason").read_text()
        )
        assert not (outputs / "latest").exists()
        drop("x1.csv", f"{header}\n{NEW_ROW}\n")
        t_good = wait_for(lambda: (outputs / "latest").exists(), 480)
        with xr.open_datatree(latest_forecast_path(outputs), engine="h5netcdf") as dt:
            assert dt.attrs["hardware_rows"] == rows_before + 1
        assert (data / "processed" / "x1.csv").exists()
        api = httpx.get(f"http://127.0.0.1:{api_port}/v1/forecasts/latest", timeout=30).json()
        assert api["id"] == latest_forecast_path(outputs).parent.name  # served, no restart
        # what-if: twice the run length is a fixed input, so reweighting offers a real run
        base, spec = f"http://127.0.0.1:{api_port}", "training.duration_days=180"
        offer = httpx.get(f"{base}/v1/whatif", params={"prior": spec}, timeout=30).json()
        assert not offer["reliable"] and offer["run"]["submit"] == "POST /v1/whatif/runs"
        sub = httpx.post(f"{base}/v1/whatif/runs", params={"prior": spec}, timeout=120)
        assert sub.status_code == 200, sub.text
        run_url = base + sub.json()["status_url"]
        served = latest_forecast_path(outputs).parent.name

        def whatif_published() -> bool:
            state = httpx.get(run_url, timeout=30).json()
            assert state["state"] not in ("Failed", "Crashed", "Cancelled"), state
            return state["published"]

        t_whatif = wait_for(whatif_published, 600)
        done = httpx.get(run_url, timeout=30).json()
        assert done["state"] == "Completed" and done["prior"] == [spec]
        for wall in done["walls"]:  # longer runs push both walls out: hit no earlier
            before, after = wall["before"]["hit_year"], wall["after"]["hit_year"]
            assert after["median"] is None or after["median"] >= before["median"], wall
        assert latest_forecast_path(outputs).parent.name == served  # the served one stays
        # the run's length is not among the inputs of today's accelerators' walls (they fix it
        # at 90 days): the what-if reuses the forecast's walls instead of searching them again
        assert re.search(r"accelerator-walls-\w+' - Finished in state Cached", log.read_text())
        assert (outputs / "whatif").is_dir()
        print(
            f"serve: ready {t_ready:.0f} s; bad file rejected in {t_bad:.0f} s; "
            f"good file -> published forecast in {t_good:.0f} s; what-if run {t_whatif:.0f} s"
        )
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
