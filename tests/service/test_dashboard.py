"""The dashboard in a real headless Chromium, against the API serving a forecast published by the
flow in this session.

Skipped with a reason when Chromium is absent, except in CI (``CI=true``), where that is a failure
(``.ci/run`` installs Debian's ``chromium``).  Screenshots go to ``WALLCAST_SCREENSHOTS`` when it is
set (look at them), else to the test's temporary folder.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import xarray as xr
from support.browser import Browser, chromium_path, screenshot_dir

from forecast.queries.formatting import calendar_year, fmt_calendar_year

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chromium() -> str:
    path = chromium_path()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is required in CI (apt-get install chromium)")
        pytest.skip("chromium not installed (apt-get install chromium): browser tests skipped")
    return path


@contextlib.contextmanager
def serving(outputs: Path) -> Iterator[str]:
    """The app over ``outputs`` served by uvicorn in a thread on a free loopback port."""
    import uvicorn

    from forecast.service import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(create_app(outputs), host="127.0.0.1", port=port, log_level="warning")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not uv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        uv.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def server(published_forecast: Path):
    """The app over the session's published forecast."""
    with serving(published_forecast.parents[2]) as url:
        yield url


@pytest.fixture(scope="module")
def page(chromium, server, tmp_path_factory):
    shots = screenshot_dir(tmp_path_factory.mktemp("screenshots"))
    with Browser(chromium, timeout=240) as browser:
        browser.goto(server + "/")
        browser.wait_for("document.body.dataset.state === 'ready'")
        browser.wait_for("document.getElementById('explorer').dataset.state === 'ready'")
        browser.screenshot(shots / "dashboard-baseline.png")
        yield browser, server, shots


def shown_interval(browser: Browser, wall: str) -> dict:
    return browser.evaluate(
        f"(() => {{ const c = document.getElementById('interval-{wall}');"
        " return {...c.dataset, text: c.querySelector('[data-role=year]').textContent}; })()"
    )


def test_dashboard_loads_without_console_errors_and_draws_its_charts(page):
    browser, server, _ = page
    browser.pump(1.0)
    assert browser.errors == []
    for chart in ("fan-chart", "hit-chart", "explorer-chart"):
        traces = browser.evaluate(f"document.getElementById('{chart}').data.length")
        svg = browser.evaluate(f"document.querySelectorAll('#{chart} .main-svg').length")
        assert traces >= 2 or chart == "explorer-chart", chart
        assert svg >= 1, chart
    # the fan chart: frontier bands and median, and both walls
    names = browser.evaluate("document.getElementById('fan-chart').data.map(t => t.name)")
    assert {"frontier run", "data-movement wall", "latency wall"} <= set(names)
    headline = browser.evaluate("document.querySelector('#headline .sentence').textContent")
    api = httpx.get(f"{server}/v1/forecasts/latest/headline").json()
    assert headline == api["sentence"]
    # the plans the walls were searched over, as /v1/forecasts lists them
    meta = browser.evaluate("document.getElementById('forecast-meta').textContent")
    listed = httpx.get(f"{server}/v1/forecasts").json()["forecasts"][0]
    assert f"; {listed['regime']} plans;" in meta and listed["regime"] == "realistic"
    # ... and the paper's idealized bound beside them, under the headline (issue 22)
    beside = browser.evaluate("document.getElementById('paper-beside').textContent")
    assert beside == api["paper_beside"] and "years later" in beside
    # Plotly came from this server, not from a CDN
    sources = browser.evaluate("[...document.scripts].map(s => s.src)")
    assert all(src.startswith(server) for src in sources), sources


def test_choosing_a_scenario_shows_the_apis_interval(page):
    browser, server, shots = page
    before = shown_interval(browser, "latency")
    renders = int(browser.evaluate("document.body.dataset.renders"))
    browser.evaluate(
        "(() => { const s = document.getElementById('scenario'); s.value = 'six-month-runs';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    browser.wait_for(
        f"document.body.dataset.renders > {renders} && document.body.dataset.state === 'ready'"
    )
    browser.screenshot(shots / "dashboard-six-month-runs.png")
    for wall in ("data_movement", "latency"):
        shown = shown_interval(browser, wall)
        api = httpx.get(
            f"{server}/v1/query", params={"wall": wall, "scenario": "six-month-runs"}
        ).json()
        assert shown["scenario"] == "six-month-runs"
        for key in ("median", "lower", "upper"):
            assert shown[key] == str(api[key]) or float(shown[key]) == api[key], (wall, key)
        last = 2045  # issue 25: the headline figure in calendar years, as the report prints it
        expected = (
            f"{fmt_calendar_year(float(api['median']), last)} (80%: "
            f"{fmt_calendar_year(float(api['lower']), last)}–"
            f"{fmt_calendar_year(float(api['upper']), last)})"
        )
        assert shown["text"] == expected
    # six-month runs allow more serial steps: the latency wall moves later
    after = shown_interval(browser, "latency")
    assert float(after["median"]) > float(before["median"])
    assert browser.errors == []


def test_probability_by_year_equals_the_api(page, published_forecast):
    """'By the end of 2033' (issue 25: 'by 2034' read as either end) is the share of draws whose
    hit year falls in 2033 or earlier by the report's calendar-year rule (calendar_year, applied
    here to the draws themselves), which the API gives as p_hit_by at 2033.95."""
    browser, server, _ = page
    browser.evaluate(
        "(() => { const s = document.getElementById('by-year'); s.value = '2033';"
        " s.dispatchEvent(new Event('input')); })()"
    )
    browser.wait_for("document.getElementById('p-hit-latency')?.dataset.year === '2033'")
    text = browser.evaluate("document.getElementById('p-hit-latency').textContent")
    assert "by the end of 2033" in text, text
    scenario = browser.evaluate("document.getElementById('scenario').value")
    api = httpx.get(
        f"{server}/v1/forecasts/latest/intervals",
        params={"var": "hit_year", "scenario": scenario, "year": "2033.95"},
    ).json()
    with xr.open_datatree(published_forecast, engine="h5netcdf") as tree:
        hits = tree["forecast"]["hit_year"].sel(scenario=scenario).load()
    for row in api["rows"]:
        v = hits.sel(wall=row["wall"]).values.ravel()
        by_rule = np.mean([math.isfinite(x) and calendar_year(x) <= 2033 for x in v])
        assert abs(row["p_hit_by"][0]["probability"] - by_rule) < 1e-12, row["wall"]
    for row in api["rows"]:
        shown = browser.evaluate(
            f"document.getElementById('p-hit-{row['wall']}').dataset.probability"
        )
        assert float(shown) == row["p_hit_by"][0]["probability"]
    assert browser.errors == []


def test_explorer_draws_the_h100_curve_with_both_walls(page):
    """By default the explorer shows the forecast's posterior: the median curve in its 80%
    band, both walls at the API's medians, and each wall's interval as ``/v1/walls`` gives it
    (the report's and the CLI's numbers)."""
    browser, server, shots = page
    explorer = "document.getElementById('explorer').dataset"
    assert "H100" in browser.evaluate(f"{explorer}.accelerator")
    assert browser.evaluate(f"{explorer}.assumptions") == "forecast"
    data = "document.getElementById('explorer-chart').data"
    median = browser.evaluate(f"{data}.find(t => t.name === 'best plan, median draw').y")
    lower, upper = browser.evaluate(f"[{data}[0].y, {data}[1].y]")
    assert len([v for v in median if v is not None]) > 50
    assert all(lo <= up + 1e-12 for lo, up in zip(lower, upper, strict=True))
    assert any(up - lo > 0.01 for lo, up in zip(lower, upper, strict=True))  # a real band
    walls = httpx.get(f"{server}/v1/walls", params={"accelerator": "H100"}, timeout=120).json()[0]
    assert walls["assumptions_source"] == "forecast"
    shapes = browser.evaluate(
        "document.getElementById('explorer-chart').layout.shapes.filter(s => s.xref === 'x')"
        ".map(s => s.x0)"
    )
    assert shapes == [walls["data_movement_wall_flop"], walls["latency_wall_flop"]]
    shown = browser.evaluate("document.getElementById('plan').textContent")
    lo, hi = walls["data_movement_wall_interval_log10_flop"]
    text = f"{10**lo:.1e}".replace("e+", "e")
    assert "posterior inputs" in shown and f"80%: {text}" in shown
    browser.screenshot(shots / "dashboard-explorer.png")
    # the paper's fixed assumptions, labelled, with the plan at the wall
    browser.evaluate(
        "(() => { const s = document.getElementById('assumptions');"
        " s.value = 'paper'; s.dispatchEvent(new Event('change')); })()"
    )
    browser.wait_for(f"{explorer}.assumptions === 'paper' && {explorer}.state === 'ready'")
    paper = httpx.get(
        f"{server}/v1/walls", params={"accelerator": "H100", "assumptions": "paper"}, timeout=120
    ).json()[0]
    shown = browser.evaluate("document.getElementById('plan').textContent")
    assert "paper's fixed assumptions" in shown
    assert f"{paper['plan_at_wall']['pipeline_parallel']}" in shown
    browser.evaluate(
        "(() => { const s = document.getElementById('assumptions');"
        " s.value = 'forecast'; s.dispatchEvent(new Event('change')); })()"
    )
    browser.wait_for(f"{explorer}.assumptions === 'forecast' && {explorer}.state === 'ready'")
    assert browser.errors == []


def test_explorer_shows_a_launchable_plan_in_the_realistic_regime(page):
    """Plans: realistic redraws the curve from ``/v1/curve?regime=realistic`` and shows the plan
    at the wall in whole numbers (layers, sequences per microbatch or its context-parallel
    split, replicas), with the sentence on what the regime is."""
    browser, server, shots = page
    explorer = "document.getElementById('explorer').dataset"
    browser.evaluate(
        "(() => { const a = document.getElementById('assumptions'); a.value = 'paper';"
        " const s = document.getElementById('regime');"
        " s.value = 'realistic'; s.dispatchEvent(new Event('change')); })()"
    )
    browser.wait_for(f"{explorer}.regime === 'realistic' && {explorer}.state === 'ready'")
    params = {"accelerator": "H100", "regime": "realistic", "assumptions": "paper"}
    walls = httpx.get(f"{server}/v1/walls", params=params, timeout=120).json()[0]
    plan, shown = (
        walls["plan_at_wall"],
        browser.evaluate("document.getElementById('plan').textContent"),
    )
    assert "realistic plans" in shown and walls["regime_note"] in shown
    for key in ("layers", "microbatches", "data_parallel"):
        assert f"{plan[key]:,}" in shown, key
    micro = (
        f"over {plan['context_parallel']} context-parallel ranks"
        if plan["context_parallel"] > 1
        else f"{plan['microbatch_sequences']} × "
    )
    assert micro in shown
    shapes = browser.evaluate(
        "document.getElementById('explorer-chart').layout.shapes.filter(s => s.xref === 'x')"
        ".map(s => s.x0)"
    )
    assert shapes == [walls["data_movement_wall_flop"], walls["latency_wall_flop"]]
    browser.screenshot(shots / "dashboard-explorer-realistic.png")
    browser.evaluate(  # back to the forecast's own (realistic) plans and inputs
        "(() => { const a = document.getElementById('assumptions'); a.value = 'forecast';"
        " const s = document.getElementById('regime');"
        " s.value = ''; s.dispatchEvent(new Event('change')); })()"
    )
    browser.wait_for(
        f"{explorer}.regime === 'realistic' && {explorer}.assumptions === 'forecast'"
        f" && {explorer}.state === 'ready'"
    )
    assert browser.errors == []


def test_explorer_offers_fp8_only_where_the_table_has_it(page):
    browser, server, _ = page
    browser.evaluate("document.getElementById('precision').value = 'fp8'")
    browser.evaluate(
        "(() => { const s = document.getElementById('accelerator');"
        " s.value = 'NVIDIA A100 SXM4 80GB'; s.dispatchEvent(new Event('change')); })()"
    )
    assert browser.evaluate("document.querySelector('#precision option[value=fp8]').disabled")
    assert browser.evaluate("document.getElementById('precision').value") == "bf16"
    browser.wait_for(
        "document.getElementById('explorer').dataset.accelerator === 'NVIDIA A100 SXM4 80GB'"
        " && document.getElementById('explorer').dataset.state === 'ready'"
    )
    walls = httpx.get(
        f"{server}/v1/walls", params={"accelerator": "A100 SXM4 80GB"}, timeout=120
    ).json()[0]
    plan = browser.evaluate("document.getElementById('plan').textContent")
    median = f"{walls['data_movement_wall_flop']:.1e}".replace("e+", "e")
    assert "bf16" in plan and f"{median} FLOP" in plan
    assert browser.errors == []


def test_an_unreadable_forecast_is_reported_as_unreadable_not_missing(
    chromium, published_forecast: Path, tmp_path: Path
):
    """The only forecast corrupted (truncated): the API answers 503, and the page says the
    forecast cannot be read, never that none has been published."""
    import shutil

    outputs = tmp_path / "outputs"
    shutil.copytree(published_forecast.parents[2], outputs, symlinks=True)
    nc = outputs / "forecasts" / published_forecast.parent.name / "forecast.nc"
    data = nc.read_bytes()
    nc.write_bytes(data[: len(data) // 4])
    with serving(outputs) as url, Browser(chromium, timeout=120) as browser:
        browser.goto(f"{url}/")
        browser.wait_for("document.body.dataset.state === 'unreadable'")
        meta = browser.evaluate("document.getElementById('forecast-meta').textContent")
        assert "cannot be read" in meta and published_forecast.parent.name in meta
        assert "No published forecast" not in meta
        browser.screenshot(screenshot_dir(tmp_path) / "dashboard-unreadable.png")


def test_plan_a_run_shows_the_api_s_plans_costs_and_curves(page):
    """The "plan a run" view (issue 24, item 5): H100 and B200 side by side at the compute
    cursor; the table holds ``/v1/plan``'s numbers for the same query (integer plans, energy,
    money only where a price is listed), the chart one median curve per accelerator with its
    band and the cursor, and the downloads the answer."""
    browser, server, shots = page
    planner = "document.getElementById('planner').dataset"
    # the search runs when asked (not on every page load): press Plan
    browser.wait_for(f"{planner}.state === 'idle'", timeout=120)
    browser.evaluate("document.getElementById('plan-go').click()")
    browser.wait_for(f"{planner}.state === 'ready'", timeout=300)
    query = browser.evaluate(f"{planner}.query")
    api = httpx.get(f"{server}/v1/plan?{query}", timeout=300).json()  # cached: the same query
    rows = browser.evaluate(
        "[...document.querySelectorAll('#plan-table tr[data-accelerator]')].map(r => ({...r.dataset,"
        " plan: r.querySelector('[data-col=plan]').textContent,"
        " money: r.querySelector('[data-col=money]').textContent}))"
    )
    assert [r["accelerator"] for r in rows] == [a["accelerator"] for a in api["accelerators"]]
    assert {"NVIDIA H100 SXM5", "NVIDIA B200 (HGX/DGX)"} == {r["accelerator"] for r in rows}
    for shown, answer in zip(rows, api["accelerators"], strict=True):
        assert float(shown["utilization"]) == pytest.approx(answer["utilization"]["median"])
        plan = answer["plan_median_draw"]
        assert f"tp {plan['tensor_parallel']} × pp {plan['pipeline_parallel']}" in shown["plan"]
        assert f"= {plan['accelerators']:,}" in shown["plan"]
        if answer["money_usd"]["median"] is None:  # B200: no rental listing in the sources
            assert shown["money"] == "–"
        else:
            assert shown["money"].startswith("$")
    data = "document.getElementById('plan-chart').data"
    names = browser.evaluate(f"{data}.filter(t => t.name).map(t => t.name)")
    assert names == ["NVIDIA H100 SXM5", "NVIDIA B200 (HGX/DGX)"]
    bands = browser.evaluate(f"{data}.filter(t => t.fill === 'tonexty').length")
    assert bands == 2
    cursor = browser.evaluate("document.getElementById('plan-chart').layout.shapes[0].x0")
    assert cursor == pytest.approx(1e28)
    assert browser.evaluate("!!document.getElementById('plan-json').href") is True
    browser.screenshot(shots / "dashboard-planner.png")
    assert browser.errors == []


def test_whatif_panel_shows_the_api_s_reweighted_answer(page):
    """The what-if panel (issue 24, items 4-5): the slider's prior goes to ``/v1/whatif`` and
    the table shows its answer; a fixed input offers the real run instead."""
    browser, server, shots = page
    box = "document.getElementById('whatif').dataset"
    browser.wait_for(f"{box}.state === 'ready'", timeout=120)
    browser.evaluate(
        "(() => { const s = document.getElementById('whatif-key');"
        " s.value = 'latency.change_per_year'; s.dispatchEvent(new Event('change')); })()"
    )
    browser.wait_for(f"{box}.state === 'ready' && {box}.spec.startsWith('latency.')")
    spec = browser.evaluate(f"{box}.spec")
    scenario = browser.evaluate("document.getElementById('scenario').value")
    api = httpx.get(f"{server}/v1/whatif", params={"prior": spec, "scenario": scenario}).json()
    assert api["scenario"] == scenario
    shown = browser.evaluate(
        "Object.fromEntries([...document.querySelectorAll('#whatif-table tr[data-wall]')]"
        ".map(r => [r.dataset.wall, r.dataset.afterMedian]))"
    )
    for wall in api["walls"]:
        assert float(shown[wall["wall"]]) == pytest.approx(wall["after"]["hit_year"]["median"])
    assert browser.evaluate(f"{box}.reliable") == str(api["reliable"]).lower()
    k = browser.evaluate("document.getElementById('whatif-k').textContent")
    assert f"Pareto k {api['pareto_k']:.2f}" in k
    browser.screenshot(shots / "dashboard-whatif.png")
    browser.evaluate(
        "(() => { const s = document.getElementById('whatif-key');"
        " s.value = 'training.duration_days'; s.dispatchEvent(new Event('change')); })()"
    )
    browser.wait_for(f"{box}.state === 'ready' && {box}.spec.startsWith('training.duration')")
    assert browser.evaluate(f"{box}.reliable") == "false"
    assert browser.evaluate("document.getElementById('whatif-run').hidden") is False
    assert browser.errors == []
