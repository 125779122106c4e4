"""The refresh-forecast flow: caching, locking, artifacts, Dask (`wallcast serve`: test_serve.py).

Every test here uses the session's Prefect test harness (tests/conftest.py).  MCMC settings:
tests/support/fit_settings.py (the default 4 x 1,000, which passes the gate on any CPU).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import xarray as xr
from support.fit_settings import GATED_CHAINS, GATED_DRAWS, GATED_SEED
from typer.testing import CliRunner

from flows.refresh import (
    fit_task,
    flow_with_task_runner,
    intervals_table,
    refresh_forecast,
    summary_markdown,
)
from forecast.config.filelock import LockBusyError, exclusive_lock
from forecast.config.paths import DATA_TABLE_FILES
from forecast.store.identity import code_hash
from forecast.store.reader import latest_forecast_path, read_attrs

pytestmark = pytest.mark.usefixtures("prefect_harness")

REPO = Path(__file__).resolve().parents[2]
CHAINS, DRAWS, SEED = GATED_CHAINS, GATED_DRAWS, GATED_SEED
YEARS = [2024.0, 2031.0, 2038.0, 2045.0]  # what `--year-step 7` gives
PROPAGATE_DRAWS = 40
OVERLAY = """[meta]
name = "fast-kernels"
description = "Test overlay: faster kernels (propagation only; shares the baseline fit)."

[latency.kernel_us]
quantiles = { p10 = 1.5, p50 = 2.5, p90 = 3.5 }
source = "test"
note = "test"
"""


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("flows")
    data = root / "data"
    data.mkdir()
    for name in DATA_TABLE_FILES:
        shutil.copy(REPO / "data" / name, data / name)
    overlay = root / "fast-kernels.toml"
    overlay.write_text(OVERLAY)
    return {"root": root, "data": data, "outputs": root / "outputs", "overlay": overlay}


def _params(ws, **kw):
    return {
        "data_dir": str(ws["data"]),
        "outputs_dir": str(ws["outputs"]),
        "scenarios": ["baseline", str(ws["overlay"])],
        "chains": CHAINS,
        "draws": DRAWS,
        "seed": SEED,
        "years": YEARS,
        "reports": False,
        # 40 propagated draws (every 100th of each chain; `wallcast run` propagates 400): the
        # module checks caching, fan-out, publishing and locking, not Monte Carlo precision, and
        # the paper run below propagates the same draws (and so the same inputs)
        "propagate_draws": PROPAGATE_DRAWS,
        **kw,
    }


@pytest.fixture(scope="module")
def first_run(ws):
    t0 = time.perf_counter()
    result = refresh_forecast(**_params(ws))
    result["wall_seconds"] = time.perf_counter() - t0
    return result


def test_first_refresh_fits_fans_out_and_publishes(ws, first_run):
    states = first_run["task_states"]
    assert first_run["status"] == "published" and first_run["cached"] == []
    assert set(states) == {
        "load-inputs",
        "fit-joint-baseline",  # one fit: the overlay changes no trend prior
        "propagate-baseline",
        "propagate-fast-kernels",
        "accelerator-walls",  # today's accelerators over the first scenario's draws
        "publish",
    }
    assert all(v == "Completed" for v in states.values())
    assert str(latest_forecast_path(ws["outputs"])) == first_run["path"]
    # the realistic forecast the module's runs left published (the first one's numbers, from
    # cache: an earlier test republishes it and its retention removes the first file)
    with xr.open_datatree(latest_forecast_path(ws["outputs"]), engine="h5netcdf") as dt:
        assert dt.attrs["regime"] == "realistic" and "paper_hit_year" in dt["forecast"]
        assert list(dt["forecast"]["scenario"].values) == ["baseline", "fast-kernels"]
        assert list(dt["forecast"]["year"].values) == YEARS
        assert dt.attrs["code_hash"] == code_hash()
        assert len(dt.attrs["run_fingerprint"]) == 64
        walls = dt["accelerator_walls"]
        assert (
            walls.attrs["scenario"] == "baseline" and walls.attrs["forecast_id"] == dt.attrs["id"]
        )
        assert "NVIDIA H100 SXM5" in walls["accelerator"].values
        assert walls["wall_log10_flop"].sizes["sample"] == walls.attrs["draws"] > 1


def test_artifacts_have_stable_keys(first_run):
    from prefect.artifacts import Artifact

    summary = Artifact.get("wallcast-summary")
    assert summary is not None and first_run["forecast_id"] in summary.data
    assert "| baseline | data_movement |" in summary.data
    table = Artifact.get("wallcast-intervals")
    assert table is not None and "hit_year_median" in str(table.data)


def test_second_refresh_is_served_from_cache(ws, first_run):
    before = sorted((ws["outputs"] / "forecasts").iterdir())
    t0 = time.perf_counter()
    again = refresh_forecast(**_params(ws))
    seconds = time.perf_counter() - t0
    states = again["task_states"]
    assert states["fit-joint-baseline"] == "Cached"
    assert states["propagate-baseline"] == states["propagate-fast-kernels"] == "Cached"
    assert states["accelerator-walls"] == "Cached"
    assert states["load-inputs"] == states["publish"] == "Completed"  # never cached
    assert again["status"] == "unchanged" and again["path"] == first_run["path"]
    assert sorted((ws["outputs"] / "forecasts").iterdir()) == before  # no duplicate
    print(f"first run {first_run['wall_seconds']:.1f} s, cached run {seconds:.1f} s")
    # republish forces a new forecast from the cached results
    forced = refresh_forecast(**_params(ws, republish=True, keep=1))
    assert forced["status"] == "published" and forced["cached"] == again["cached"]
    assert forced["removed"] == [first_run["forecast_id"]]  # retention keep=1
    assert str(latest_forecast_path(ws["outputs"])) == forced["path"]


def test_cli_run_reports_cached_tasks(ws, first_run):
    args = ["run", "--data-dir", str(ws["data"]), "--outputs-dir", str(ws["outputs"])]
    args += ["--scenario", "baseline", "--scenario", str(ws["overlay"]), "--chains", "4"]
    args += ["--draws", str(DRAWS), "--seed", str(SEED), "--year-step", "7", "--no-report"]
    args += ["--propagate-draws", str(PROPAGATE_DRAWS)]
    from forecast.cli import app

    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "cached tasks: fit-joint-baseline, propagate-baseline, propagate-fast-kernels" in (
        res.output
    )
    assert "inputs unchanged: latest kept" in res.output
    assert "fast-kernels" in res.output and "data_movement" in res.output


def test_cli_run_regime_paper_publishes_a_paper_forecast(ws, first_run, tmp_path):
    """The flow's default is the realistic regime (issue 22); ``--regime paper`` reuses the fit,
    propagates the paper's idealized plans alone and records the regime; the same posterior
    draws' walls differ from the realistic forecast's (whole sequences, layers, degrees) and are
    exactly the paper walls it stores beside them (``paper_wall_flop``): both runs propagate the
    same draws with the same seed, so the same inputs. (It propagates the realistic run's 40
    draws, not fewer: the paper search then runs on the draw bucket the realistic run compiled,
    ~13 s less a run.)"""
    out = tmp_path / "outputs"
    args = ["run", "--data-dir", str(ws["data"]), "--outputs-dir", str(out)]
    args += ["--scenario", "baseline", "--chains", str(CHAINS), "--draws", str(DRAWS)]
    args += ["--seed", str(SEED), "--year-step", "7", "--no-report", "--regime", "paper"]
    args += ["--propagate-draws", str(PROPAGATE_DRAWS)]
    from forecast.cli import app

    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "cached tasks: fit-joint-baseline" in res.output  # the realistic run's fit
    with xr.open_datatree(latest_forecast_path(out), engine="h5netcdf") as dt:
        assert dt.attrs["regime"] == "paper"
        assert "paper_wall_flop" not in dt["forecast"]  # nothing beside the paper's own walls
        paper = np.log10(dt["forecast"]["wall_flop"].sel(scenario="baseline").load())
    # the realistic forecast the module's runs left published (the first one's numbers, from
    # cache: an earlier test republishes it and its retention removes the first file)
    with xr.open_datatree(latest_forecast_path(ws["outputs"]), engine="h5netcdf") as dt:
        assert dt.attrs["regime"] == "realistic"
        assert (
            dt.attrs["run_fingerprint"] != read_attrs(latest_forecast_path(out))["run_fingerprint"]
        )
        fc = dt["forecast"].to_dataset().sel(scenario="baseline", draw=paper["draw"]).load()
    real = np.log10(fc["wall_flop"])
    assert real.shape == paper.shape and np.isfinite(paper).all()
    # on the realistic forecast's own draws, its paper walls beside differ from its walls: the
    # regimes, not the inputs, make the difference
    beside = np.log10(fc["paper_wall_flop"])
    assert np.isfinite(beside).all()
    assert not np.allclose(real.values, beside.values, atol=0.01)
    # the same seed and draws: the same inputs, so the paper run's walls are exactly the paper
    # walls the realistic forecast stores beside its own
    np.testing.assert_array_equal(paper.values, beside.values)

    # the service's `regime` parameter picks the newest forecast of that regime, whichever one
    # `latest` names; a named forecast of the other regime is refused, naming the parameter
    from fastapi.testclient import TestClient

    from forecast.queries.answers import query_json
    from forecast.service import create_app

    both = tmp_path / "both"
    real_dir, paper_dir = (
        latest_forecast_path(ws["outputs"]).parent,
        latest_forecast_path(out).parent,
    )
    for folder in (paper_dir, real_dir):
        shutil.copytree(folder, both / "forecasts" / folder.name)
    (both / "latest").write_text(f"forecasts/{real_dir.name}\n")
    client = TestClient(create_app(both))
    latency = {"wall": "latency"}
    answer = client.get("/v1/query", params={**latency, "regime": "paper"}).json()
    assert (answer["forecast_id"], answer["regime"]) == (paper_dir.name, "paper")
    expected = query_json(latest_forecast_path(out), "latency")  # `wallcast query --json`
    assert {k: answer[k] for k in ("median", "lower", "upper")} == {
        k: expected[k] for k in ("median", "lower", "upper")
    }
    for params in (latency, {**latency, "regime": "realistic"}):
        answer = client.get("/v1/query", params=params).json()
        assert (answer["forecast_id"], answer["regime"]) == (real_dir.name, "realistic")
    listed = client.get("/v1/forecasts", params={"regime": "paper"}).json()["forecasts"]
    assert [(f["id"], f["regime"]) for f in listed] == [(paper_dir.name, "paper")]
    named = {**latency, "forecast": real_dir.name, "regime": "paper"}
    refused = client.get("/v1/query", params=named)
    assert refused.status_code == 422 and refused.json()["parameter"] == "regime"
    assert refused.json()["allowed"] == ["realistic"]


def test_second_refresh_is_refused_while_one_runs(ws):
    with exclusive_lock(ws["outputs"] / ".lock"):
        with pytest.raises(
            LockBusyError, match=rf"another refresh is running \(pid {os.getpid()}\)"
        ):
            refresh_forecast(**_params(ws))
        from forecast.cli import app

        res = CliRunner().invoke(app, ["run", "--outputs-dir", str(ws["outputs"]), "--draws", "50"])
        assert res.exit_code == 2 and "error: another refresh is running" in res.output


def test_dask_task_runner_on_a_local_cluster(ws, first_run):
    refresh = flow_with_task_runner(
        "dask", cluster_kwargs={"processes": False, "n_workers": 1, "threads_per_worker": 2}
    )
    result = refresh(**_params(ws, years=[2024.0, 2045.0]))  # new grid: propagation reruns
    states = result["task_states"]
    assert states["fit-joint-baseline"] == "Cached"
    assert states["propagate-baseline"] == states["propagate-fast-kernels"] == "Completed"
    assert (
        states["accelerator-walls"] == "Cached"
    )  # today's hardware: the year grid is not an input
    assert result["status"] == "published"
    with xr.open_datatree(result["path"], engine="h5netcdf") as dt:
        assert list(dt["forecast"]["year"].values) == [2024.0, 2045.0]


def test_dask_worker_processes_keep_their_searches_to_their_threads():
    """The helper threads a search borrows are counted per process: the local cluster's worker
    processes get ``WALLCAST_CHUNK_THREADS`` = their ``threads_per_worker`` (a cluster of
    threads in this process shares its count; a given ``env`` wins)."""

    def cluster_kwargs(**kw):
        return flow_with_task_runner("dask", cluster_kwargs=kw or None).task_runner.cluster_kwargs

    assert cluster_kwargs()["env"] == {"WALLCAST_CHUNK_THREADS": "1"}
    assert cluster_kwargs(threads_per_worker=3)["env"] == {"WALLCAST_CHUNK_THREADS": "3"}
    assert "env" not in cluster_kwargs(processes=False)
    assert cluster_kwargs(env={"A": "b"})["env"] == {"A": "b"}


def test_fit_cache_key_follows_data_priors_settings_and_code_not_dataframes():
    inputs_policy = next(p for p in fit_task.cache_policy.policies if hasattr(p, "exclude"))
    assert set(inputs_policy.exclude) == {"inputs", "prior_set"}
    base = {
        "inputs": object(),  # unhashable by design: must be excluded
        "prior_set": object(),
        "data_hash": "a" * 64,
        "fit_priors": "{}",
        "chains": 4,
        "draws": 400,
        "warmup": 2000,
        "seed": 3,
        "code": "c",
    }
    key = inputs_policy.compute_key(None, base, {})
    assert key == inputs_policy.compute_key(None, {**base, "inputs": object()}, {})
    changed = [("data_hash", "b" * 64), ("fit_priors", "{1}"), ("draws", 500), ("warmup", 50)]
    for field, value in changed:
        assert inputs_policy.compute_key(None, {**base, field: value}, {}) != key
    assert inputs_policy.compute_key(None, {**base, "code": "d"}, {}) != key


def test_summary_and_intervals_from_task_free_functions(ws, first_run):
    from forecast.queries.answers import summary_table
    from forecast.store.reader import load_forecast_group

    path = latest_forecast_path(ws["outputs"])  # first_run's may be gone (retention test)
    ds, attrs = load_forecast_group(path, ["hit_year", "hit_flop"])
    rows = summary_table(ds)
    table = intervals_table(rows)
    assert {r["scenario"] for r in table} == {"baseline", "fast-kernels"}
    info = {"status": "published", "path": str(path), "forecast_id": path.parent.name}
    md = summary_markdown(rows, attrs, info, {"fit-joint-baseline": "Cached"})
    assert md.startswith(f"# wallcast forecast `{path.parent.name}`")
    assert "fit-joint-baseline (Cached)" in md


def test_refresh_that_fails_the_convergence_gate_keeps_the_last_forecast(
    ws, first_run, monkeypatch
):
    """A refit that does not converge publishes nothing; `latest` keeps the last good forecast.
    The gate refuses it as soon as NUTS is done, before any predictive or prior draw."""
    import forecast.inference.fit as fit_module

    def no_draws(*args, **kwargs):
        raise AssertionError("predictive draws of a fit the gate refuses")

    monkeypatch.setattr(fit_module, "Predictive", no_draws)
    before = latest_forecast_path(ws["outputs"])
    published = sorted(p.name for p in (ws["outputs"] / "forecasts").iterdir())
    from forecast.cli import app

    args = ["run", "--data-dir", str(ws["data"]), "--outputs-dir", str(ws["outputs"])]
    # deliberately unconverged: 4 x 50 draws after 50 warm-up iterations cannot reach a bulk
    # ESS of 400 in every parameter
    args += ["--scenario", "baseline", "--chains", "4", "--draws", "50", "--warmup", "50"]
    args += ["--seed", "11"]
    args += ["--year-step", "7", "--no-report"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "did not converge" in res.output
    assert "4 chains x 50 draws after 50 warm-up iterations" in res.output
    assert latest_forecast_path(ws["outputs"]) == before
    assert sorted(p.name for p in (ws["outputs"] / "forecasts").iterdir()) == published
    xr.open_datatree(before, engine="h5netcdf").close()  # still a complete, loadable forecast


def test_a_prefect_server_that_does_not_answer_is_one_error_line(tmp_path: Path):
    """A start-up timeout too short for the embedded server (as on a loaded machine): three
    attempts, then exit 2 with one `error:` line naming the setting to raise; no traceback, no
    server left running, nothing published."""
    import psutil

    home, outputs = tmp_path / "home", tmp_path / "outputs"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")
    cmd = [sys.executable, "-m", "forecast", "run", "--outputs-dir", str(outputs)]
    cmd += ["--scenario", "baseline", "--draws", "50", "--no-report"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert lines[-1].startswith(
        "error: Prefect's embedded API server did not answer within 1 s in 3 attempts"
    ), lines[-1]
    assert "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=300" in lines[-1]
    assert sum(line.startswith("error:") for line in lines) == 1
    assert not (outputs / "latest").exists()
    time.sleep(1.0)
    left = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get("PREFECT_HOME") == str(home):
                left.append(p.pid)
        except (psutil.Error, OSError):
            continue
    assert left == [], f"processes left running: {left}"


def test_a_connection_lost_mid_run_is_one_error_line():
    """What the flow raises when Prefect's API stops answering mid-run (after its client's own
    retries) becomes a WallcastError (the CLI prints it as one `error:` line, exit 2); an
    overloaded server's 5xx too; a 4xx (a bug, not the machine's load) is left as it is."""
    from prefect.exceptions import PrefectHTTPStatusError

    from forecast.cli.refresh import prefect_connection_errors
    from forecast.config.errors import WallcastError

    lost = pytest.raises(WallcastError, match="lost the connection to Prefect's API")
    with lost as info, prefect_connection_errors():
        raise httpx.ConnectError("All connection attempts failed")
    assert "All connection attempts failed" in str(info.value)
    assert "nothing was published and the latest forecast is kept" in str(info.value)
    request = httpx.Request("POST", "http://127.0.0.1:1/api/flow_runs/")

    def status_error(code: int) -> PrefectHTTPStatusError:
        response = httpx.Response(code, request=request, text="database is locked")
        return PrefectHTTPStatusError.from_httpx_error(
            httpx.HTTPStatusError("failed", request=request, response=response)
        )

    with pytest.raises(WallcastError, match="failed with HTTP 503"), prefect_connection_errors():
        raise status_error(503)
    with pytest.raises(PrefectHTTPStatusError), prefect_connection_errors():
        raise status_error(404)
