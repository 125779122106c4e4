"""The HTTP API (``wallcast api``) against a real forecast published by the flow in this session.

Every endpoint, the 404 and 422 answers, path-traversal attempts, equality with
``wallcast query --json`` and ``wallcast walls --json``, a newly published forecast served without a
restart, no JAX on the query paths, and one real ``wallcast api`` process on a loopback port.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import xarray as xr
from conftest import (
    PUBLISHED_PROPAGATE_DRAWS,
    PUBLISHED_SCENARIOS,
    PUBLISHED_YEARS,
    own_prefect_cache,
    refresh_small_forecast,
)
from fastapi.testclient import TestClient
from support.fit_settings import GATED_CHAINS, GATED_DRAWS, GATED_SEED
from typer.testing import CliRunner

from forecast.cli import app as cli_app
from forecast.queries.formatting import fmt_calendar_year
from forecast.service import create_app

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def outputs(published_forecast: Path) -> Path:
    return published_forecast.parents[2]


@pytest.fixture(scope="module")
def forecast_id(published_forecast: Path) -> str:
    return published_forecast.parent.name


@pytest.fixture(scope="module")
def client(outputs: Path) -> TestClient:
    return TestClient(create_app(outputs))


@pytest.fixture(scope="module")
def dataset(published_forecast: Path):
    with xr.open_datatree(published_forecast, engine="h5netcdf") as dt:
        return dt["forecast"].to_dataset().load(), dict(dt.attrs)


def as_served(answer: dict) -> dict:
    """The CLI's query answer as the API serves it: the same numbers, with the forecast file
    named relative to the outputs folder (no server path leaves the API)."""
    return {**answer, "forecast": f"forecasts/{answer['forecast_id']}/forecast.nc"}


def health_of(client: TestClient) -> dict:
    """/healthz without the expensive-work queue's counters."""
    body = client.get("/healthz").json()
    assert set(body["expensive_work"]) >= {"admitted", "refused", "dropped"}
    return {k: body[k] for k in ("status", "latest", "forecasts")}


def cli_json(*args: str) -> dict | list:
    result = CliRunner().invoke(cli_app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- forecasts


def test_list_and_latest_carry_the_forecasts_provenance(client, forecast_id, dataset):
    _, attrs = dataset
    listing = client.get("/v1/forecasts").json()
    assert listing["latest"] == forecast_id
    (entry,) = listing["forecasts"]
    assert entry["id"] == forecast_id == attrs["id"]
    assert entry["created"] == attrs["created"]
    assert entry["data_hash"] == attrs["data_hash"]
    assert entry["seed"] == attrs["seed"] == GATED_SEED
    assert entry["code_version"] == attrs["code_version"]
    # the published forecast leads with plans a run can launch (issue 22)
    assert entry["regime"] == attrs["regime"] == "realistic"
    assert entry["wall_year_step"] == attrs["wall_year_step"] == 1  # every year searched
    assert entry["scenarios"] == PUBLISHED_SCENARIOS
    # `draws` counts the propagated draws: thinned to 48 of 4 x 1,000, every 83rd of a chain
    # (of 4 x 2,000, every 166th, where the convergence gate had the fit run twice as long)
    propagated = attrs["propagated_draws_per_chain"]
    fitted = GATED_DRAWS * (2 if attrs.get("fit_gate_extension", "{}") != "{}" else 1)
    assert attrs["propagation_thinning"] == GATED_CHAINS * fitted // PUBLISHED_PROPAGATE_DRAWS
    assert propagated == -(-fitted // attrs["propagation_thinning"])
    assert (entry["chains"], entry["draws"], entry["latest"]) == (GATED_CHAINS, propagated, True)

    latest = client.get("/v1/forecasts/latest").json()
    assert latest == client.get(f"/v1/forecasts/{forecast_id}").json()
    assert latest["id"] == forecast_id and latest["years"] == PUBLISHED_YEARS
    assert latest["variables"]["hit_year"]["dims"] == ["scenario", "chain", "draw", "wall"]
    assert latest["variables"]["wall_flop"]["units"] == "FLOP"
    assert set(latest["files"]) == {"forecast.nc", "report.html", "deck.pptx"}


def test_healthz_names_the_latest_forecast(client, forecast_id):
    assert health_of(client) == {"status": "ok", "latest": forecast_id, "forecasts": 1}


def test_downloads_are_the_published_files(client, forecast_id, published_forecast):
    nc = client.get(f"/v1/forecasts/{forecast_id}/forecast.nc")
    assert nc.status_code == 200 and nc.content == published_forecast.read_bytes()
    assert nc.headers["content-type"] == "application/x-netcdf"
    assert f"{forecast_id}-forecast.nc" in nc.headers["content-disposition"]
    report = client.get("/v1/forecasts/latest/report.html")
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert report.text == (published_forecast.parent / "report.html").read_text()
    deck = client.get(f"/v1/forecasts/{forecast_id}/deck.pptx")
    assert deck.status_code == 200 and deck.content[:2] == b"PK"  # a zip (OOXML) file
    assert deck.content == (published_forecast.parent / "deck.pptx").read_bytes()


def test_openapi_documents_every_endpoint(client):
    spec = client.get("/openapi.json").json()
    for path in (
        "/v1/forecasts",
        "/v1/forecasts/latest",
        "/v1/query",
        "/v1/forecasts/{forecast_id}/intervals",
        "/v1/walls",
        "/v1/curve",
        "/healthz",
    ):
        assert path in spec["paths"], path
    assert client.get("/docs").status_code == 200


# ----------------------------------------------------------------------------- query == CLI


@pytest.mark.parametrize(
    ("wall", "what", "scenario", "prob"),
    [
        ("data_movement", "year", None, 0.8),
        ("latency", "year", None, 0.9),
        ("latency", "flop", "six-month-runs", 0.5),
        ("data_movement", "flop", "six-month-runs", 0.95),
    ],
)
def test_query_is_exactly_the_cli_json(client, outputs, wall, what, scenario, prob):
    params = {"wall": wall, "what": what, "prob": prob}
    args = ["query", "--wall", wall, "--what", what, "--prob", str(prob), "--json"]
    if scenario:
        params["scenario"] = scenario
        args += ["--scenario", scenario]
    got = client.get("/v1/query", params=params)
    assert got.status_code == 200
    assert got.json() == as_served(cli_json(*args, "--outputs-dir", str(outputs)))


@pytest.mark.parametrize(("year", "scenario"), [(2030, None), (2034, "six-month-runs")])
def test_cost_query_is_exactly_the_cli_json(client, outputs, dataset, year, scenario):
    params = {"what": "cost", "year": year}
    args = ["query", "--what", "cost", "--year", str(year), "--json"]
    if scenario:
        params["scenario"] = scenario
        args += ["--scenario", scenario]
    got = client.get("/v1/query", params=params)
    assert got.status_code == 200, got.text
    assert got.json() == as_served(cli_json(*args, "--outputs-dir", str(outputs)))
    ds, _ = dataset
    values = ds["cost_multiplier"].sel(year=year, scenario=scenario or "baseline").values.ravel()
    assert got.json()["infeasible_fraction"] == pytest.approx(np.mean(np.isinf(values)))


def test_query_of_a_named_forecast_is_the_cli_json_of_its_folder(client, outputs, forecast_id):
    got = client.get("/v1/query", params={"wall": "latency", "forecast": forecast_id}).json()
    folder = outputs / "forecasts" / forecast_id
    assert got == as_served(
        cli_json("query", "--wall", "latency", "--forecast", str(folder), "--json")
    )
    assert got["forecast_id"] == forecast_id


def test_query_numbers_are_the_dataset_quantiles(client, dataset):
    ds, _ = dataset
    got = client.get("/v1/query", params={"wall": "data_movement", "prob": 0.8}).json()
    draws = ds["hit_year"].sel(wall="data_movement", scenario="baseline").values.ravel()
    assert np.isfinite(draws).all()  # the baseline hits the data-movement wall in every draw here
    assert got["median"] == pytest.approx(np.quantile(draws, 0.5), rel=1e-12)
    assert got["lower"] == pytest.approx(np.quantile(draws, 0.1), rel=1e-12)
    assert got["upper"] == pytest.approx(np.quantile(draws, 0.9), rel=1e-12)
    assert got["draws"] == draws.size >= PUBLISHED_PROPAGATE_DRAWS  # every draw propagated
    # the paper's idealized bound beside it: the same quantiles of the paper variable
    paper = ds["paper_hit_year"].sel(wall="data_movement", scenario="baseline").values.ravel()
    assert got["paper_median"] == pytest.approx(np.quantile(paper, 0.5), rel=1e-12)
    assert got["paper_lower"] == pytest.approx(np.quantile(paper, 0.1), rel=1e-12)
    assert got["paper_upper"] == pytest.approx(np.quantile(paper, 0.9), rel=1e-12)


# ----------------------------------------------------------------------------- intervals


def test_intervals_equal_the_xarray_query_users_run(client, dataset):
    ds, _ = dataset
    params = {"var": "wall_flop", "wall": "latency", "scenario": "six-month-runs", "prob": 0.9}
    params["year"] = ["2030", "2045"]
    got = client.get("/v1/forecasts/latest/intervals", params=params).json()
    assert got["dims"] == ["scenario", "year", "wall"] and got["units"] == "FLOP"
    assert [r["year"] for r in got["rows"]] == [2030.0, 2045.0]
    for row in got["rows"]:
        da = ds["wall_flop"].sel(wall="latency", scenario="six-month-runs", year=row["year"])
        q = da.quantile([0.05, 0.5, 0.95], dim=["chain", "draw"]).values
        assert [row["lower"], row["median"], row["upper"]] == pytest.approx(q, rel=1e-12)
        assert row["scenario"] == "six-month-runs" and row["wall"] == "latency"


def test_intervals_without_a_selection_cover_every_coordinate(client, dataset):
    ds, _ = dataset
    got = client.get("/v1/forecasts/latest/intervals", params={"var": "frontier_flop"}).json()
    assert got["dims"] == ["scenario", "year"]
    assert len(got["rows"]) == len(PUBLISHED_SCENARIOS) * len(PUBLISHED_YEARS)
    last = got["rows"][-1]
    assert (last["scenario"], last["year"]) == ("six-month-runs", 2045.0)
    da = ds["frontier_flop"].sel(scenario="six-month-runs", year=2045.0)
    assert last["median"] == pytest.approx(float(da.median(["chain", "draw"])), rel=1e-12)


def test_probability_hit_by_year(client, dataset):
    ds, _ = dataset
    years = [2027, 2030.5, 2045]
    got = client.get(
        "/v1/forecasts/latest/intervals",
        params={"var": "hit_year", "scenario": "baseline", "year": [str(y) for y in years]},
    ).json()
    assert [r["wall"] for r in got["rows"]] == ["data_movement", "latency"]
    for row in got["rows"]:
        draws = ds["hit_year"].sel(scenario="baseline", wall=row["wall"]).values.ravel()
        expected = [float(np.mean(draws <= y)) for y in years]
        assert [p["probability"] for p in row["p_hit_by"]] == expected
        assert [p["year"] for p in row["p_hit_by"]] == years
        assert row["p_hit_by"][-1]["probability"] == pytest.approx(1 - row["not_hit_fraction"])


def test_headline_is_the_reports_sentence(client, published_forecast):
    from forecast.queries.headline import headline, load_forecast, paper_beside_sentence

    fc = load_forecast(published_forecast)
    for scenario in PUBLISHED_SCENARIOS:
        got = client.get("/v1/forecasts/latest/headline", params={"scenario": scenario}).json()
        expected = headline(fc, scenario)
        assert got["sentence"] == expected.sentence and got["detail"] == expected.detail
        assert got["others"] == expected.others
        # the paper's bound beside the realistic walls: the report's sentence for the scenario
        assert got["regime"] == "realistic"
        assert got["paper_beside"] == paper_beside_sentence(fc, scenario) != ""
        assert f"in the {scenario} scenario" in got["paper_beside"]
        assert f"hits it in {fmt_calendar_year(got['year']['median'])} (" in got["detail"]


# ----------------------------------------------------------------------------- 404 and 422


@pytest.mark.parametrize(
    "path",
    [
        "/v1/forecasts/20990101T000000Z-deadbeef",
        "/v1/forecasts/20990101T000000Z-deadbeef/intervals",
        "/v1/forecasts/20990101T000000Z-deadbeef/headline",
        "/v1/forecasts/20990101T000000Z-deadbeef/forecast.nc",
        "/v1/forecasts/nope/report.html",
        "/v1/query?wall=latency&forecast=20990101T000000Z-deadbeef",
    ],
)
def test_unknown_ids_are_404(client, path):
    r = client.get(path)
    assert r.status_code == 404
    assert "no published forecast" in r.json()["detail"]


@pytest.mark.parametrize(
    ("path", "parameter", "allowed"),
    [
        ("/v1/query?wall=bogus", "wall", ["data_movement", "latency"]),
        ("/v1/query?wall=latency&what=month", "what", ["cost", "flop", "year"]),
        ("/v1/query?what=cost", "year", None),
        ("/v1/query?what=cost&year=2031", "year", None),
        ("/v1/query?wall=latency&scenario=nope", "scenario", PUBLISHED_SCENARIOS),
        ("/v1/query?wall=latency&prob=1.5", "prob", "a number from 0.01 to 0.99"),
        ("/v1/query?wall=latency&prob=nan", "prob", "a number from 0.01 to 0.99"),
        ("/v1/forecasts/latest/intervals?var=bogus", "var", None),
        (
            "/v1/forecasts/latest/intervals?var=wall_flop&year=2031",
            "year",
            [int(y) for y in PUBLISHED_YEARS],
        ),
        ("/v1/forecasts/latest/intervals?var=frontier_flop&wall=latency", "wall", None),
        ("/v1/forecasts/latest/intervals?var=hit_year&year=soon", "year", "a number"),
        ("/v1/forecasts/latest/headline?scenario=x", "scenario", PUBLISHED_SCENARIOS),
        ("/v1/walls?accelerator=H100&precision=fp16", "precision", ["bf16", "fp8"]),
        ("/v1/walls?accelerator=H100&duration_days=-3", "duration_days", None),
        ("/v1/walls?accelerator=NoSuchChip", "accelerator", None),
        ("/v1/walls?accelerator=V100&precision=fp8", "precision", ["bf16"]),
        ("/v1/walls?accelerator=H100&regime=ideal", "regime", ["paper", "realistic"]),
        ("/v1/walls?accelerator=H100&assumptions=fitted", "assumptions", ["forecast", "paper"]),
        ("/v1/curve?accelerator=H100&assumptions=fitted", "assumptions", ["forecast", "paper"]),
        ("/v1/curve?accelerator=NoSuchChip", "accelerator", None),
        ("/v1/curve?accelerator=H100&regime=ideal", "regime", ["paper", "realistic"]),
        ("/v1/query?wall=latency&regime=ideal", "regime", ["paper", "realistic"]),
        ("/v1/forecasts?regime=ideal", "regime", ["paper", "realistic"]),
    ],
)
def test_bad_parameters_are_422_naming_the_parameter(client, path, parameter, allowed):
    r = client.get(path)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["parameter"] == parameter
    assert body["detail"].startswith(f"parameter '{parameter}'")
    if allowed is not None:
        assert body["allowed"] == allowed
        shown = allowed if isinstance(allowed, str) else ", ".join(map(str, allowed))
        assert shown in body["detail"]


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/v1/query", "wall"),
        ("/v1/query?wall=latency&prob=high", "prob"),
        ("/v1/curve", "accelerator"),
    ],
)
def test_malformed_or_missing_parameters_are_422_naming_the_parameter(client, path, parameter):
    r = client.get(path)
    assert r.status_code == 422
    assert r.json()["parameter"] == parameter and f"'{parameter}'" in r.json()["detail"]


TRAVERSALS = [
    "/v1/forecasts/..%2F..%2F..%2Fetc%2Fpasswd",
    "/v1/forecasts/..%2F..%2F..%2Fetc/passwd",
    "/v1/forecasts/%2e%2e/forecast.nc",
    "/v1/forecasts/..%2Flatest/forecast.nc",
    "/v1/forecasts/.%2e/%2e%2e/outputs/forecast.nc",
    "/v1/forecasts/%2Fetc%2Fpasswd/forecast.nc",
    "/v1/forecasts/..%5C..%5Cetc/forecast.nc",
    "/v1/forecasts/outside/forecast.nc",
    "/v1/forecasts/outside/intervals",
    "/v1/query?wall=latency&forecast=../../etc/passwd",
    "/v1/query?wall=latency&forecast=/etc/passwd",
    "/v1/query?wall=latency&forecast=outside",
    "/v1/query?wall=latency&forecast=forecasts/../outside",
    "/static/..%2F..%2Fbackend.py",
    "/static/..%2Fapp.py",
]


def test_no_request_reads_outside_the_outputs_folder(tmp_path, published_forecast):
    """A copy of the outputs with a symlinked 'forecast' that points outside; nothing leaks."""
    outputs = tmp_path / "outputs"
    fid = published_forecast.parent.name
    shutil.copytree(published_forecast.parent, outputs / "forecasts" / fid)
    (outputs / "latest").write_text(f"forecasts/{fid}\n")
    secret = tmp_path / "secret"
    secret.mkdir()
    shutil.copy(published_forecast, secret / "forecast.nc")
    (secret / "report.html").write_text("SECRET")
    (outputs / "forecasts" / "outside").symlink_to(secret, target_is_directory=True)
    client = TestClient(create_app(outputs))
    for path in TRAVERSALS:
        r = client.get(path)
        assert r.status_code in (404, 422), (path, r.status_code)
        assert (
            b"SECRET" not in r.content and b"root:" not in r.content and b"import" not in r.content
        )
    assert client.get("/v1/forecasts/outside/report.html").status_code == 404
    # a folder linked from outside is not listed either (it resolves outside the outputs)
    assert [f["id"] for f in client.get("/v1/forecasts").json()["forecasts"]] == [fid]


# ----------------------------------------------------------------------------- new forecasts


def test_a_new_forecast_is_served_without_restart(tmp_path, published_forecast, published_cache):
    outputs = tmp_path / "outputs"
    client = TestClient(create_app(outputs))
    assert health_of(client) == {"status": "ok", "latest": None, "forecasts": 0}
    r = client.get("/v1/query?wall=latency")
    assert r.status_code == 404 and "wallcast run" in r.json()["detail"]
    # the same flow and settings: fit and propagation come from the fixture's cache
    with own_prefect_cache(published_cache):
        result = refresh_small_forecast(outputs)
    assert result["cached"]
    new_id = result["forecast_id"]
    assert new_id != published_forecast.parent.name
    assert client.get("/v1/forecasts/latest").json()["id"] == new_id
    assert client.get("/v1/query?wall=latency").json()["forecast_id"] == new_id


def test_query_paths_do_not_import_jax(outputs):
    code = f"""
import sys
from fastapi.testclient import TestClient
from forecast.service import create_app
c = TestClient(create_app({str(outputs)!r}))
for path in ("/v1/query?wall=latency", "/v1/forecasts", "/v1/forecasts/latest",
             "/v1/forecasts/latest/intervals?var=wall_flop", "/v1/forecasts/latest/headline",
             "/healthz", "/"):
    assert c.get(path).status_code == 200, path
assert "jax" not in sys.modules, "a query path imported jax"
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


# ----------------------------------------------------------------------------- walls (JAX, cached)


def test_walls_equal_the_cli_and_are_searched_once(client, monkeypatch):
    from forecast.model import search
    from forecast.service import backend

    calls = []
    real = search.find_walls

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "find_walls", counting)
    params = {"accelerator": "H100", "duration_days": 120, "precision": "bf16"}
    params["assumptions"] = "paper"
    first = client.get("/v1/walls", params=params)
    assert first.status_code == 200
    searched = len(calls)
    assert searched <= 1  # 0 if this process searched these numbers before
    assert client.get("/v1/walls", params=params).json() == first.json()
    assert len(calls) == searched  # the second answer came from the cache
    (row,) = first.json()
    cli = cli_json(
        "walls", "--accelerator", "H100", "--duration-days", "120", "--json",
        "--assumptions", "paper",
    )[0]  # fmt: skip
    for key, value in row.items():
        assert cli[key] == value, key
    assert row["accelerator"] == "NVIDIA H100 SXM5" and row["plan_at_wall"]["utilization"] > 0
    assert backend.model_cache_size() >= 1


def test_curve_has_both_walls_and_the_plan(client):
    params = {"accelerator": "H100", "assumptions": "paper"}
    got = client.get("/v1/curve", params=params).json()
    walls = client.get("/v1/walls", params=params).json()[0]
    assert {k: got[k] for k in walls} == walls
    x = np.array(got["curve"]["log10_flop"])
    u = np.array([np.nan if v is None else v for v in got["curve"]["utilization"]])
    assert x[0] == 22.0 and x[-1] == pytest.approx(33.0)
    # the curve peaks at the maximum utilization and is infeasible past the latency wall
    assert np.nanmax(u) == pytest.approx(walls["max_utilization"], rel=0.02)
    assert np.isnan(u[x > walls["latency_wall_log10_flop"] + 0.1]).all()
    dm = walls["data_movement_wall_log10_flop"]
    below = u[(x > dm + 0.1) & ~np.isnan(u)]
    assert below.size and (below < walls["utilization_threshold"] * walls["max_utilization"]).all()
    assert client.get("/v1/accelerators").json()[0].keys() == {"name", "release_year", "fp8"}


def test_one_accelerator_has_one_wall_on_every_surface(client, published_forecast):
    """The H100's walls over the forecast's posterior draws (issue 24): ``/v1/walls``,
    ``/v1/curve``, ``wallcast walls --json``, the report's table and the frozen-hardware reading
    (report and deck) print the same median and interval; the paper's fixed assumptions give
    another number, labelled as such."""
    from forecast.analyses import forecast_walls
    from forecast.jobs.analyse_job import frozen_hardware
    from forecast.report.hardware_walls import (
        accelerator_table_cells,
        accelerator_walls_of_forecast,
        wall_cell,
    )

    (api,) = client.get("/v1/walls", params={"accelerator": "H100"}).json()
    assert api["assumptions_source"] == "forecast" and api["draws"] >= PUBLISHED_PROPAGATE_DRAWS
    assert api["forecast_id"] == published_forecast.parent.name
    cli = cli_json("walls", "-a", "H100", "--json", "--forecast", str(published_forecast))[0]
    assert cli == api
    curve = client.get("/v1/curve", params={"accelerator": "H100"}).json()
    assert {k: curve[k] for k in api} == api
    with xr.open_datatree(published_forecast, engine="h5netcdf") as dt:
        group = dt["accelerator_walls"].to_dataset().load()
        tree = dt.load()
    draws = group["wall_log10_flop"].sel(accelerator="NVIDIA H100 SXM5")
    for wall in ("data_movement", "latency"):
        lo, med, hi = np.quantile(draws.sel(wall=wall).values, [0.1, 0.5, 0.9])
        assert api[f"{wall}_wall_log10_flop"] == pytest.approx(med, abs=1e-12)
        assert api[f"{wall}_wall_interval_log10_flop"] == pytest.approx([lo, hi], abs=1e-12)
        assert lo < med < hi  # a distribution, not a point
    header, body = accelerator_table_cells(accelerator_walls_of_forecast(group))
    (row,) = [r for r in body if r[0].startswith("NVIDIA H100 SXM5")]
    assert row[2] == wall_cell(api, "data_movement") and row[3] == wall_cell(api, "latency")
    assert "median (80% interval)" in header[2]
    frozen = frozen_hardware(published_forecast, attach=False, tree=tree).dataset
    assert float(frozen["wall_flop"].sel(wall="data_movement")) == pytest.approx(
        api["data_movement_wall_flop"], rel=1e-12
    )
    assert float(frozen["wall_flop_lower"].sel(wall="data_movement")) == pytest.approx(
        10 ** api["data_movement_wall_interval_log10_flop"][0], rel=1e-12
    )
    # each frozen hit year pairs a draw's wall with the same draw's frontier run: sample i is
    # flat (chain, draw) index sample_index[i] of forecast_inputs and of the forecast group
    from forecast.inference.crossing import first_crossing

    fc = tree["forecast"].to_dataset().sel(scenario=group.attrs["scenario"])
    per_chain = fc.sizes["draw"]
    run = np.log10(fc["frontier_flop"].transpose("chain", "draw", "year").values)
    grid_years = fc["year"].values.astype(float)
    index = group["sample_index"].values
    wall_draws = draws.sel(wall="data_movement").values
    for i in (0, index.size // 3, index.size - 1):
        chain, draw = divmod(int(index[i]), per_chain)
        line = run[chain, draw][None, :]
        hit, _, _ = first_crossing(grid_years, line, np.full_like(line, wall_draws[i]))
        assert float(frozen["hit_year"].sel(wall="data_movement")[i]) == pytest.approx(
            float(hit[0]), abs=1e-9
        )
    assert fc.sizes["chain"] > 1  # a multi-chain forecast: the pairing is not trivial
    # the stored group answers without a computation (and without JAX); another run length is
    # computed over the same draws (a longer run: the latency wall moves out)
    assert forecast_walls.stored_group_answers(published_forecast, ["NVIDIA H100 SXM5"])
    code = (
        "import sys; from forecast.analyses.forecast_walls import forecast_walls_records; "
        f"r = forecast_walls_records({str(published_forecast)!r}, ['H100']); "
        "assert 'jax' not in sys.modules, 'jax imported'; print(r[0]['data_movement_wall_flop'])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert float(proc.stdout) == api["data_movement_wall_flop"]
    (longer,) = client.get("/v1/walls", params={"accelerator": "H100", "duration_days": 180}).json()
    assert longer["assumptions_source"] == "forecast"
    assert longer["latency_wall_log10_flop"] > api["latency_wall_log10_flop"]
    # a chip without an FP8 figure is refused at FP8 (not silently left out)
    r = client.get("/v1/walls", params={"accelerator": "A100 SXM4 80GB", "precision": "fp8"})
    assert r.status_code == 422 and r.json()["parameter"] == "precision"
    res = CliRunner().invoke(
        cli_app,
        ["walls", "-a", "A100 SXM4 80GB", "-a", "H100", "--precision", "fp8",
         "--forecast", str(published_forecast)],
    )  # fmt: skip
    assert res.exit_code == 2 and "A100 SXM4 80GB has no FP8 figure" in res.output
    (paper,) = client.get(
        "/v1/walls", params={"accelerator": "H100", "assumptions": "paper"}
    ).json()
    assert (
        paper["assumptions_source"] == "paper" and "fixed assumptions" in paper["assumptions_note"]
    )
    assert paper["data_movement_wall_log10_flop"] != pytest.approx(
        api["data_movement_wall_log10_flop"], abs=0.01
    )


def test_plan_search_is_the_cli_s_with_integer_plans(client, published_forecast):
    """``/v1/plan`` answers what ``wallcast plan --json`` (search form) prints: per accelerator,
    distributions over the forecast's draws and the median draw's plan in whole numbers, whose
    accelerators run the budget in the run's length at its utilization (issue 24)."""
    from forecast.data.hardware import get_accelerator, load_hardware

    params = {"accelerator": ["H100 SXM5", "B200"], "flop": 1e28, "draws": 48}
    r = client.get("/v1/plan", params=params)
    assert r.status_code == 200, r.text
    got = r.json()
    cli = cli_json(
        "plan", "-a", "H100 SXM5", "-a", "B200", "--flop", "1e28", "--draws", "48", "--json",
        "--forecast", str(published_forecast),
    )  # fmt: skip
    assert got == cli
    assert got["draws"] == 48 and got["regime"] == "realistic"
    assert got["forecast_id"] == published_forecast.parent.name
    df = load_hardware(REPO / "data" / "hardware.csv")
    for row in got["accelerators"]:
        assert 0 <= row["feasible_probability"] <= 1
        u = row["utilization"]
        assert 0 < u["lower"] <= u["median"] <= u["upper"] < 1
        assert row["cost_multiplier"]["median"] >= 1.0
        p = row["plan_median_draw"]
        whole = ("tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel")
        assert all(isinstance(p[k], int) and p[k] >= 1 for k in (*whole, "microbatches"))
        assert p["microbatch_sequences"] >= 1  # whole sequences, or one over cp ranks
        assert p["accelerators"] == math.prod(p[k] for k in whole)
        # its step time in parts, from the evaluator of a given plan: the same utilization
        assert p["evaluated_utilization"] == pytest.approx(p["utilization"], rel=2e-3)
        parts = {"compute", "hbm", "tensor", "pipeline", "latency", "bubble", "data_parallel"}
        assert parts <= set(p["step_breakdown_s"]) and p["bound_by"]
        assert p["step_breakdown_s"]["compute"] <= p["step_time_s"] * (1 + 1e-6)
        flops = get_accelerator(df, row["accelerator"]).flops_16bit
        # the plan's accelerators at its utilization train the budget in its run, within 90 days
        assert 0 < p["run_days"] <= 90 * (1 + 1e-9)
        delivered = p["accelerators"] * flops * p["utilization"] * p["run_days"] * 86400
        assert delivered == pytest.approx(1e28, rel=1e-9)
        # accelerator-hours: the budget over the delivered FLOP/s, never more than the deadline's
        hours = row["accelerator_hours"]
        assert hours["lower"] <= hours["median"] <= hours["upper"]
        assert hours["median"] <= row["accelerators"]["upper"] * 90 * 24
    # energy and money (issue 24): hours x sourced TDP and listed price, with the cost priors
    h100, b200 = got["accelerators"]
    price = h100["price_usd_per_accelerator_hour"]
    # data/accelerator_costs.csv: H100 rental listings 2.45-12.29 USD/h read as a 90 % interval
    assert price["median"] == pytest.approx(math.sqrt(2.45 * 12.29), rel=0.25)
    assert 2.45 < price["upper"] < 12.29 and 2.45 < price["lower"] < price["median"]
    money, hours = h100["money_usd"], h100["accelerator_hours"]
    assert hours["lower"] * 2.45 * 0.5 < money["median"] < hours["upper"] * 12.29 * 1.5
    # 700 W x server ratio (1.5-2.1) x average fraction (0.43-0.80) x PUE (1.10-1.25) per hour
    mwh = h100["energy_mwh"]["median"]
    assert hours["lower"] * 700 * 1.5 * 0.43 * 1.10 / 1e6 < mwh
    assert mwh < hours["upper"] * 700 * 2.1 * 0.80 * 1.25 / 1e6
    assert h100["power_per_accelerator_w"]["median"] == 700.0
    mw = h100["facility_power_mw"]["median"]
    acc = h100["accelerators"]
    assert acc["lower"] * 700 * 1.5 * 1.10 / 1e6 < mw < acc["upper"] * 700 * 2.1 * 1.25 / 1e6
    # B200 has a TDP but no rental listing: energy, no money, and the answer says why
    assert b200["energy_mwh"]["median"] > 0 and b200["money_usd"]["median"] is None
    assert "no rental price" in b200["cost_sources"]["price"]
    assert set(got["cost_priors"]) == {
        "cost.server_watts_per_accelerator_watt",
        "cost.average_power_fraction",
        "cost.power_usage_effectiveness",
        "cost.energy_efficiency_growth_per_year",
        "cost.price_performance_growth_per_year",
    }
    bigger = client.get(
        "/v1/plan", params={"accelerator": "H100 SXM5", "flop": 1e33, "draws": 48}
    ).json()["accelerators"][0]
    assert bigger["feasible_probability"] < got["accelerators"][0]["feasible_probability"]
    # the shortest run: within the 90 days where every draw finishes in them, beyond where not
    for row in got["accelerators"]:
        shortest = row["shortest_run_days"]
        assert row["shortest_run_draws"] == 48
        if row["feasible_probability"] == 1.0:
            assert shortest["upper"] is not None and shortest["upper"] <= 90 * (1 + 1e-9)
    longer = bigger["shortest_run_days"]
    assert longer["upper"] is None or longer["upper"] > 90
    assert longer["median"] is None or longer["median"] > h100["shortest_run_days"]["median"]


def test_plan_for_a_year_uses_the_forecast_s_frontier_run_and_accelerator(
    client, published_forecast
):
    """``year`` without a budget or an accelerator: the frontier run of that year on the
    frontier accelerator of that year, both per draw from the forecast."""
    with xr.open_datatree(published_forecast, engine="h5netcdf") as dt:
        fc = dt["forecast"].to_dataset().load()
    year = int(fc["year"].values[1])  # an early year: the frontier run is feasible in most draws
    got = client.get("/v1/plan", params={"year": year, "draws": 32}).json()
    (row,) = got["accelerators"]
    assert row["accelerator"] == f"frontier accelerator of {year}"
    assert got["budget"] == f"frontier run of {year}" and got["year"] == year
    frontier = fc["frontier_flop"].sel(scenario=fc["scenario"].values[0], year=year).values.ravel()
    lo, hi = np.quantile(frontier, [0.02, 0.98])
    assert lo <= got["training_flop"]["median"] <= hi
    assert row["feasible_probability"] > 0.5
    # FP8 doubles the frontier chip's peak: the same run needs fewer of them
    fp8 = client.get("/v1/plan", params={"year": year, "draws": 32, "precision": "fp8"}).json()
    assert fp8["training_flop"] == got["training_flop"]
    assert fp8["accelerators"][0]["accelerators"]["median"] < row["accelerators"]["median"]
    # the frontier chip's power and price: the H100's per FLOP/s, carried by the two trends,
    # the same at either precision (they follow the 16-bit peak)
    for key in ("power_per_accelerator_w", "price_usd_per_accelerator_hour"):
        assert row[key]["median"] > 0
        assert fp8["accelerators"][0][key] == row[key]
    assert row["money_usd"]["median"] > 0 and row["energy_mwh"]["median"] > 0


def test_requirements_is_the_cli_s_and_consistent_with_the_trend(client, published_forecast):
    """``/v1/requirements`` answers what ``wallcast requirements --json`` prints: per lever
    alone, the trend's value, the required value and the factor between them; a lever is on
    the trend exactly when its factor is at most 1 (issue 24, item 3)."""
    with xr.open_datatree(published_forecast, engine="h5netcdf") as dt:
        years = [int(y) for y in dt["forecast"]["year"].values]
    year = years[-1]  # a late year: the frontier run is past the walls in most draws
    r = client.get("/v1/requirements", params={"year": year, "draws": 12})
    assert r.status_code == 200, r.text
    got = r.json()
    cli = cli_json(
        "requirements", "--year", str(year), "--draws", "12", "--json",
        "--forecast", str(published_forecast),
    )  # fmt: skip
    assert got == cli
    assert got["year"] == year and got["draws"] == 12
    assert [lv["lever"] for lv in got["levers"]] == [
        "scaleup_domain_size",
        "scaleup_bandwidth",
        "scaleout_bandwidth",
        "latency_per_hop",
        "hbm_bandwidth",
    ]
    on_trend = got["on_trend_probability"]
    assert on_trend <= min(
        got["inside_data_movement_wall_probability"], got["inside_latency_wall_probability"]
    )
    for lv in got["levers"]:
        # the bisection is bracketed by the trend: on trend <=> factor <= 1, in every draw
        assert lv["on_trend_probability"] == pytest.approx(on_trend)
        assert lv["on_trend_probability"] <= lv["reachable_alone_probability"] <= 1
        t, req, fac = lv["trend"], lv["required"], lv["improvement_factor"]
        assert t["lower"] <= t["median"] <= t["upper"]
        if fac["median"] is not None and req["median"] is not None:
            ratio = req["median"] / t["median"]
            expected = fac["median"] if lv["direction"] == "higher is better" else 1 / fac["median"]
            # medians of per-draw products: the same order of magnitude, not equal
            assert 0.2 < ratio / expected < 5
    text = CliRunner().invoke(
        cli_app,
        [
            "requirements",
            "--year",
            str(year),
            "--draws",
            "12",
            "--forecast",
            str(published_forecast),
        ],
    )
    assert text.exit_code == 0, text.output
    assert "scaleout_bandwidth" in text.output and "On the trend" in text.output


def test_whatif_is_the_cli_s_fast_and_says_when_it_cannot_answer(
    client, published_forecast, monkeypatch
):
    """``/v1/whatif`` reweights the served forecast's draws (issue 24, item 4): the same JSON as
    ``wallcast whatif --json``; a change of a fixed input is answered by a real run instead, and
    with no ``wallcast serve`` to run it the submission is a 503 that says so."""
    spec = "latency.change_per_year=0.92,0.97,1.02"
    got = client.get("/v1/whatif", params={"prior": spec})
    assert got.status_code == 200, got.text
    got = got.json()
    cli = cli_json("whatif", "--prior", spec, "--json", "--forecast", str(published_forecast))
    assert got == cli
    assert got["forecast_id"] == published_forecast.parent.name
    assert got["changes"][0]["kind"] == "prior" and got["pareto_k"] is not None
    assert got["reliable"] == (got["pareto_k"] <= 0.7) and "run" not in got
    assert {w["wall"] for w in got["walls"]} == {"data_movement", "latency"}
    for w in got["walls"]:
        for answer in (w["before"], w["after"]):
            year = answer["hit_year"]
            assert year["lower"] <= year["median"] <= year["upper"]
    # slower latency improvement (median 0.97x/yr against 1.00): the latency wall comes no later
    latency = next(w for w in got["walls"] if w["wall"] == "latency")
    assert latency["after"]["hit_year"]["median"] <= latency["before"]["hit_year"]["median"] + 0.5
    fixed = client.get("/v1/whatif", params={"prior": "training.duration_days=180"}).json()
    assert not fixed["reliable"] and fixed["run"]["submit"] == "POST /v1/whatif/runs"
    bad = client.get("/v1/whatif", params={"prior": "hardware.flops_growth_per_year=1.3,1.4,1.5"})
    assert bad.status_code == 422 and "latency.change_per_year" in bad.json()["allowed"]
    assert client.get("/v1/whatif").status_code == 422
    assert client.get("/v1/whatif/runs/not-a-uuid").status_code == 422
    # a fitted input (the batch law's exponent, in its key's units): the data still count, and
    # a narrow prior pulls the posterior toward it; a point prior cannot be reweighted to
    narrow = client.get("/v1/whatif", params={"prior": "scaling.batch_exponent=0.35,0.36,0.37"})
    narrow = narrow.json()
    (row,) = narrow["changes"]
    assert row["kind"] == "fitted" and narrow["reliable"], narrow["message"]
    assert abs(row["input_median_after"] - 0.36) < abs(row["input_median_before"] - 0.36)
    point = client.get("/v1/whatif", params={"prior": "training.max_utilization=0.6"}).json()
    assert not point["reliable"] and "fixed value" in point["message"]
    # no Prefect API (or none that answers): one clear 503 that names `wallcast serve`
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    r = client.post("/v1/whatif/runs", params={"prior": "training.duration_days=180"})
    assert r.status_code == 503 and "wallcast serve" in r.json()["detail"]
    monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{free_port()}/api")
    monkeypatch.setenv("PREFECT_CLIENT_MAX_RETRIES", "0")
    r = client.post("/v1/whatif/runs", params={"prior": "training.duration_days=180"})
    assert r.status_code == 503 and "wallcast serve" in r.json()["detail"]


def test_plan_without_a_costs_table_reports_no_costs_and_says_why(published_forecast, tmp_path):
    """A data folder without accelerator_costs.csv: the plan answers, without energy or money,
    and names the missing file (review finding: it was a 404 'no published forecast')."""
    from forecast.analyses.planner import plan_answer

    answer = plan_answer(
        published_forecast,
        accelerators=["H100 SXM5"],
        training_flop=1e26,
        draws=8,
        accelerator_costs=tmp_path / "accelerator_costs.csv",
    )
    (row,) = answer["accelerators"]
    assert row["utilization"]["median"] > 0
    assert row["energy_mwh"]["median"] is None and row["money_usd"]["median"] is None
    assert "no accelerator_costs.csv" in row["cost_sources"]["price"]


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"year": 1990}, "year"),
        ({"year": 2030, "draws": 0}, "draws"),
        ({"year": 2030, "draws": 5000}, "draws"),
        ({"year": 2030, "precision": "fp4"}, "precision"),
        ({"year": 2030, "duration_days": -3}, "duration_days"),
    ],
)
def test_requirements_refuses_bad_parameters_with_the_allowed_values(client, params, parameter):
    r = client.get("/v1/requirements", params=params)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["parameter"] == parameter and "allowed" in body


def test_plan_search_in_the_paper_regime_is_labelled_and_relaxed(client, published_forecast):
    """``/v1/plan?regime=paper``: the paper's relaxed plans on the same draws, as the CLI's
    ``--regime paper``; the median draw's plan in continuous quantities, its accelerators the
    product of the degrees, run in the run's length at its utilization."""
    params = {"accelerator": "H100 SXM5", "flop": 1e28, "draws": 16, "regime": "paper"}
    r = client.get("/v1/plan", params=params)
    assert r.status_code == 200, r.text
    got = r.json()
    cli = cli_json(
        "plan", "-a", "H100 SXM5", "--flop", "1e28", "--draws", "16", "--regime", "paper",
        "--json", "--forecast", str(published_forecast),
    )  # fmt: skip
    assert got == cli
    assert got["regime"] == "paper" and "not a plan a run can launch" in got["note"]
    (row,) = got["accelerators"]
    p = row["plan_median_draw"]
    assert p["regime"] == "paper"
    dims = p["tensor_parallel"] * p["pipeline_parallel"] * p["data_parallel"]
    assert p["accelerators"] == pytest.approx(dims, rel=1e-9)
    assert p["run_days"] <= 90.0 * (1 + 1e-9)
    assert p["layers_per_stage"] == pytest.approx(p["layers"] / p["pipeline_parallel"])
    assert client.get("/v1/plan", params={**params, "regime": "idealized"}).status_code == 422


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"flop": 1e28}, "accelerator"),
        ({"accelerator": "H100"}, "flop"),
        ({"accelerator": "H100", "flop": -1}, "flop"),
        ({"accelerator": "H100", "flop": 1e28, "draws": 0}, "draws"),
        ({"accelerator": "H100", "flop": 1e28, "year": 1990}, "year"),
        ({"accelerator": "NoSuchChip", "flop": 1e28}, "accelerator"),
        ({"accelerator": "V100", "flop": 1e28, "precision": "fp8"}, "precision"),
    ],
)
def test_plan_refuses_bad_parameters_with_the_allowed_values(client, params, parameter):
    r = client.get("/v1/plan", params=params)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["parameter"] == parameter and "allowed" in body


# ----------------------------------------------------------------------------- a real process


def test_wallcast_api_process_answers_as_the_cli(outputs):
    port = free_port()
    env = {**os.environ, "WALLCAST_OUTPUTS_DIR": str(outputs)}
    cmd = [sys.executable, "-m", "forecast", "api", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(
        cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()
            time.sleep(0.3)
        got = httpx.get(f"{base}/v1/query", params={"wall": "latency", "what": "year", "prob": 0.9})
        assert got.status_code == 200
        expected = cli_json(
            "query", "--wall", "latency", "--prob", "0.9", "--json", "--outputs-dir", str(outputs)
        )
        assert got.json() == as_served(expected)
        page = httpx.get(f"{base}/")
        assert page.status_code == 200 and '<div id="fan-chart"' in page.text
        js = httpx.get(f"{base}/static/plotly.min.js")
        assert js.status_code == 200 and b"plotly" in js.content[:2000].lower()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_api_port_in_use_is_one_error_line(outputs):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "forecast",
                "api",
                "--port",
                str(port),
                "--outputs-dir",
                str(outputs),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
        )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip().splitlines()[-1]
        == f"error: the API could not listen on 127.0.0.1:{port}"
    )


def test_plan_search_cache_is_keyed_by_the_hardware_table_and_bounded(tmp_path, monkeypatch):
    from forecast.service import backend

    data = tmp_path / "data"
    data.mkdir()
    table = (REPO / "data" / "hardware.csv").read_text()
    (data / "hardware.csv").write_text(table)
    same = backend.Backend(tmp_path / "outputs", data).walls(["H100"], assumptions="paper")[0]
    official = backend.Backend(tmp_path / "outputs").walls(["H100"], assumptions="paper")[0]
    assert same == official  # same bytes, same hash: the cached answer
    # H100 with half its scale-up bandwidth: another table hash, a new search, another answer
    h100 = next(line for line in table.splitlines() if line.startswith("NVIDIA H100 SXM5,"))
    (data / "hardware.csv").write_text(table.replace(h100, h100.replace("4.5e11", "2.25e11")))
    slower = backend.Backend(tmp_path / "outputs", data).walls(["H100"], assumptions="paper")[0]
    assert slower["hardware"]["scaleup_bandwidth"] == 2.25e11
    assert slower["data_movement_wall_flop"] <= official["data_movement_wall_flop"]  # never helps

    computed = []
    monkeypatch.setattr(backend, "MODEL_CACHE_SIZE", 3)
    for i in [1, 2, 1, 3, 4, 5, 1]:
        backend._model_cached(("test", i), lambda i=i: computed.append(i) or {"i": i})
    assert computed == [1, 2, 3, 4, 5, 1]  # 1 was dropped (oldest) once 4 and 5 came in
    assert len([k for k in backend._MODEL_CACHE if k[0] == "test"]) <= 3


def test_walls_in_the_realistic_regime_are_the_cli_s(client):
    """``regime=realistic``: the same record as ``wallcast walls --regime realistic --json``,
    a launchable plan in whole numbers, and the sentence that says what the regime is."""
    params = {"accelerator": "H100", "regime": "realistic", "assumptions": "paper"}
    r = client.get("/v1/walls", params=params)
    assert r.status_code == 200, r.text
    (row,) = r.json()
    cli = cli_json(
        "walls", "--accelerator", "H100", "--regime", "realistic", "--json",
        "--assumptions", "paper",
    )[0]  # fmt: skip
    assert row == cli
    assert row["regime"] == "realistic" and "launch" in row["regime_note"]
    plan = row["plan_at_wall"]
    assert all(
        isinstance(plan[k], int) for k in ("tensor_parallel", "data_parallel", "microbatches")
    )
    assert plan["microbatch_tokens"] * plan["context_parallel"] >= plan["sequence_length"]


def test_curve_in_the_realistic_regime(client):
    """``/v1/curve?regime=realistic``: the realistic walls record (as ``/v1/walls``) and the best
    launchable plan's utilization on the same budgets as the paper curve, read the same way."""
    params = {"accelerator": "H100", "regime": "realistic", "assumptions": "paper"}
    got = client.get("/v1/curve", params=params).json()
    walls = client.get("/v1/walls", params=params).json()[0]
    assert {k: got[k] for k in walls} == walls and got["regime"] == "realistic"
    paper = client.get("/v1/curve", params={"accelerator": "H100", "assumptions": "paper"}).json()
    assert got["curve"]["log10_flop"] == paper["curve"]["log10_flop"]
    x = np.array(got["curve"]["log10_flop"])
    u = np.array([np.nan if v is None else v for v in got["curve"]["utilization"]])
    p = np.array([np.nan if v is None else v for v in paper["curve"]["utilization"]])
    assert np.nanmax(u) == pytest.approx(walls["max_utilization"], rel=0.02)
    assert np.isnan(u[x > walls["latency_wall_log10_flop"] + 0.1]).all()
    dm = walls["data_movement_wall_log10_flop"]
    below = u[(x > dm + 0.1) & ~np.isnan(u)]
    assert below.size and (below < walls["utilization_threshold"] * walls["max_utilization"]).all()
    assert not np.allclose(np.nan_to_num(u), np.nan_to_num(p), atol=1e-3)  # another plan model


def test_a_regime_with_no_published_forecast_is_404(client, forecast_id):
    r = client.get("/v1/query", params={"wall": "latency", "regime": "paper"})
    assert r.status_code == 404 and "wallcast run --regime paper" in r.json()["detail"]
    assert client.get("/v1/forecasts", params={"regime": "paper"}).json()["forecasts"] == []
    listed = client.get("/v1/forecasts", params={"regime": "realistic"}).json()["forecasts"]
    assert forecast_id in [f["id"] for f in listed]
    real = client.get("/v1/query", params={"wall": "latency", "regime": "realistic"}).json()
    assert real == client.get("/v1/query", params={"wall": "latency"}).json()
    assert real["regime"] == "realistic"


def test_the_service_knows_the_model_s_regimes():
    from forecast.analyses import accelerator_walls, forecast_walls
    from forecast.model import search
    from forecast.queries import posterior_walls
    from forecast.service import backend

    assert backend.REGIMES == search.REGIMES == accelerator_walls.REGIMES
    assert set(posterior_walls.REGIME_NOTES) == set(search.REGIMES)
    assert backend.ASSUMPTION_SOURCES == forecast_walls.ASSUMPTION_SOURCES
    lo, hi = float(search.DEFAULT_LOG10_FLOP_GRID[0]), float(search.DEFAULT_LOG10_FLOP_GRID[-1])
    assert posterior_walls.SEARCH_LOG10_FLOP_RANGE == accelerator_walls.SEARCH_LOG10_FLOP_RANGE
    assert (lo, hi) == posterior_walls.SEARCH_LOG10_FLOP_RANGE
