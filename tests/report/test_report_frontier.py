"""Report and deck with the frontier-compute backtest (group ``frontier_backtest``) and the
frozen-hardware framing (group ``frozen_hardware``), on a synthetic published forecast.

Every expected number is read back from the stored groups and the forecast, never hard-coded.
"""

from __future__ import annotations

import html

import numpy as np
import pytest
import xarray as xr
from support.backtest import frontier_result
from support.synthetic_forecast import FIRST_ID, synthetic_tree
from test_report import md_table
from test_report_analyses import synthetic_backtest

from forecast.analyses.backtest import backtest_dataset
from forecast.analyses.frontier_backtest import frontier_backtest_dataset
from forecast.analyses.frozen_hardware import frozen_dataset
from forecast.queries.answers import interval
from forecast.queries.formatting import fmt_calendar_year, fmt_flop, fmt_year
from forecast.report.frontier import FROZEN_HEADING
from forecast.store.publisher import add_groups, publish

BACKTEST_HEADING = "## Can the trends be trusted? (backtest)"


def group(path, name: str) -> xr.Dataset:
    with xr.open_dataset(path, group=name, engine="h5netcdf") as ds:
        return ds.load()


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """A synthetic forecast with a frontier backtest (two origins) and a frozen-hardware group
    whose data-movement wall 1e28.5 lies below the synthetic forecast's walls (1e29 and up)."""
    out = tmp_path_factory.mktemp("outputs")
    path = publish(synthetic_tree(FIRST_ID, seed=5), out, FIRST_ID) / "forecast.nc"
    results = [
        frontier_result(2018, [24.1, 24.8, 25.3, 26.4], [24.0] * 4, [True, True, True, False]),
        frontier_result(2022, [25.4, 26.6], [25.5, 26.5], [True, True], n_train=8),
    ]
    add_groups(path, {"frontier_backtest": frontier_backtest_dataset(results)})
    add_groups(
        path, {"backtest": backtest_dataset(synthetic_backtest())}
    )  # the deck's backtest slide
    tree = xr.open_datatree(path, engine="h5netcdf")
    post = tree["posterior"].to_dataset().load()
    years = tree["forecast"]["year"].values.astype(float)
    tree.close()
    ds = frozen_dataset(
        {"data_movement": 28.5, "latency": 30.5},
        post["frontier_slope"].values,
        post["frontier_intercept"].values,
        years,
        accelerator="NVIDIA H100 SXM5",
        values={"scaling.batch_tokens_2024": 6e7},
        sources={"scaling.batch_tokens_2024": "prior"},
        scenario="baseline",
        precision="bf16",
        duration_days=90.0,
    )
    add_groups(path, {"frozen_hardware": ds})
    return path


@pytest.fixture(scope="module")
def written(analysed, tmp_path_factory):
    from forecast.report import write_deck_file, write_report_files

    out = tmp_path_factory.mktemp("report")
    files = write_report_files(analysed, out, previous=False, accelerators=False)
    files["deck_pptx"] = write_deck_file(analysed, out, previous=False)
    return files


def test_report_backtest_section_shows_the_frontier_backtest(analysed, written):
    fb = group(analysed, "frontier_backtest")
    md = written["report_md"].read_text()
    assert BACKTEST_HEADING in md
    section = md.split(BACKTEST_HEADING)[1].split("\n## ")[0]
    assert "report_files/frontier_backtest.png" in section
    rows = md_table(section, "origin | trained on (from)")
    assert [r[0] for r in rows] == ["2018", "2022", "all origins"]
    for r, label in zip(rows, ["2018", "2022", "pooled"], strict=True):
        s = fb.sel(row=label)
        assert r[3] == str(int(s["n_held_out"]))
        assert r[5] == f"{float(s['coverage_80']):.0%}"
        assert r[7] == f"{float(s['median_error_dex']):+.2f}"
    pooled = fb.sel(row="pooled")
    assert (
        f"cover {float(pooled['coverage_80']):.0%} of {int(pooled['n_held_out'])} held-out "
        "records" in section
    )
    assert "frontier_backtest" in written["figures"]


def test_report_shows_the_frozen_hardware_beside_the_full_forecast(analysed, written):
    fz = group(analysed, "frozen_hardware")
    md = written["report_md"].read_text()
    page = written["report_html"].read_text()
    assert f"## {FROZEN_HEADING}" in md and html.escape(FROZEN_HEADING) in page
    section = md.split(f"## {FROZEN_HEADING}")[1].split("\n## ")[0]
    with xr.open_dataset(analysed, group="forecast", engine="h5netcdf") as f:
        full = f["hit_year"].sel(scenario="baseline", wall="data_movement").values
    frozen = interval(fz["hit_year"].sel(wall="data_movement").values)
    full_i = interval(full)
    last = 2045
    assert f"reaches it in {fmt_calendar_year(frozen['median'], last)}" in section
    assert f"hits the wall in {fmt_calendar_year(full_i['median'], last)}" in section
    assert f"{fmt_flop(float(fz['wall_flop'].sel(wall='data_movement')))} FLOP" in section
    assert "[erdil2024]" in section and "Why they differ" in section
    rows = md_table(section, "wall")
    assert rows[0][1] == fmt_flop(float(fz["wall_flop"].sel(wall="data_movement")))
    assert rows[0][2].startswith(fmt_year(frozen["median"], last))
    assert rows[0][3].startswith(fmt_year(full_i["median"], last))
    assert frozen["median"] < full_i["median"]  # a wall below the moving one is reached first
    assert "frozen_hardware" in written["figures"]


def test_deck_has_the_frozen_slide_and_the_frontier_coverage(analysed, written):
    from pptx import Presentation

    from forecast.report.textfit import overflows

    prs = Presentation(str(written["deck_pptx"]))
    titles = [s.shapes.title.text for s in prs.slides]
    fz = group(analysed, "frozen_hardware")
    frozen = interval(fz["hit_year"].sel(wall="data_movement").values)
    title = next(t for t in titles if t.startswith("Appendix: data-movement wall at frozen H100"))
    assert fmt_calendar_year(frozen["median"], 2045) in title
    # issue 25: the slide shows the two distributions, not text over half an empty slide
    assert any(sh.shape_type == 13 for sh in prs.slides[titles.index(title)].shapes)
    fb = group(analysed, "frontier_backtest")
    pooled = fb.sel(row="pooled")
    texts = "\n".join(
        sh.text_frame.text for s in prs.slides for sh in s.shapes if sh.has_text_frame
    )
    assert (
        f"frontier compute: {float(pooled['coverage_80']):.0%} of "
        f"{int(pooled['n_held_out'])} later records" in texts
    )
    assert overflows(prs) == []


def test_report_without_the_groups_has_no_frontier_sections(tmp_path):
    from forecast.report import write_report_files

    path = publish(synthetic_tree(FIRST_ID, seed=6), tmp_path, FIRST_ID) / "forecast.nc"
    out = write_report_files(path, tmp_path / "r", previous=False, accelerators=False)
    md = out["report_md"].read_text()
    assert FROZEN_HEADING not in md and "trained on (from)" not in md
    assert not np.any([k in out["figures"] for k in ("frozen_hardware", "frontier_backtest")])
