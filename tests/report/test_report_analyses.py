"""Report and deck with the analyses of issue 6: the ``sensitivity`` group (Sobol indices,
tornado) and the ``backtest`` group (coverage, calibration) drawn from the forecast file, and
``wallcast analyse`` wiring them in.

A synthetic forecast in the published layout (``test_report.synthetic_tree``) gets synthetic
groups built with :func:`sensitivity_dataset` / :func:`backtest_dataset` from known arrays;
every expected number is read back from the stored groups, never hard-coded.
"""

from __future__ import annotations

import math
import stat
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from support.backtest import frontier_result
from support.synthetic_forecast import FIRST_ID, synthetic_tree
from test_report import md_table

from forecast.analyses.backtest import (
    CURVE_PROBS,
    PROBS,
    OriginResult,
    backtest_dataset,
)
from forecast.analyses.sensitivity import (
    TARGETS,
    SensitivityResult,
    sensitivity_dataset,
)
from forecast.priors.registry import input_label, input_unit
from forecast.queries.formatting import fmt_quantity
from forecast.report.executive import reader_label
from forecast.stats.trends import METRICS
from forecast.store.publisher import add_groups, publish

INPUTS = [
    "scaling.batch_tokens_2024",
    "scaling.layer_exponent",
    "frontier.compute_growth_per_year",
    "latency.change_per_year",
    "hardware.flops_growth_per_year",
]
ORIGINS = (2018, 2020, 2022)
BACKTEST_HEADING = "## Can the trends be trusted? (backtest)"


# ----------------------------------------------------------------------------- synthetic groups


def synthetic_sensitivity(seed: int = 0) -> SensitivityResult:
    """Known indices: batch size leads the data-movement hit year, the layer exponent the
    latency hit year (total indices strictly ordered)."""
    rng = np.random.default_rng(seed)
    k = len(INPUTS)
    total = np.array(
        [
            [0.41, 0.35, 0.18, 0.02, 0.08],  # data_movement_hit_year
            [0.30, 0.36, 0.24, 0.06, 0.01],  # latency_hit_year
            [0.48, 0.41, 0.01, 0.03, 0.09],
            [0.45, 0.46, 0.01, 0.08, 0.00],
        ]
    )
    first = total - rng.uniform(0.0, 0.04, total.shape)
    half = rng.uniform(0.02, 0.05, total.shape)
    baseline = np.array([2031.2, 2033.4, 30.33, 31.73])
    swing = np.sign(rng.normal(size=total.shape)) * 4 * np.sqrt(total)
    return SensitivityResult(
        targets=list(TARGETS),
        inputs=list(INPUTS),
        indices={
            "first_order": first,
            "total": total,
            "first_order_low": first - half,
            "first_order_high": first + half,
            "total_low": total - half,
            "total_high": total + half,
        },
        tornado_low=baseline[:, None] - swing / 2,
        tornado_high=baseline[:, None] + swing / 2,
        baseline=baseline,
        capped_fraction=np.zeros(4),
        variance=np.ones(4),
        input_p10=np.array([1.6e7, 0.21, 2.5, 0.9, 1.3]),
        input_p50=np.array([6e7, 0.27, 4.0, 0.95, 1.45]),
        input_p90=np.array([3.6e8, 0.33, 6.0, 1.0, 1.65]),
        settings={"samples": 256, "evaluations": 2 * 256 + 256 * k + 2 * k + 1, "bootstrap": 50},
    )


def synthetic_origin(origin: int, n: int, seed: int) -> OriginResult:
    """Held-out values whose PIT values are drawn at random; coverage follows from them."""
    rng = np.random.default_rng(seed)
    pit = rng.uniform(0.0, 1.0, n)
    metrics = np.array([METRICS[i % len(METRICS)] for i in range(n)])
    observed = rng.normal(14.0, 1.0, n)
    covered = np.array([np.abs(pit - 0.5) <= p / 2 for p in PROBS])
    curve = np.array([np.abs(pit - 0.5) <= p / 2 for p in CURVE_PROBS])
    return OriginResult(
        origin=origin,
        names=np.array([f"acc{i}|{m}" for i, m in enumerate(metrics)]),
        metrics=metrics,
        years=np.full(n, origin + 2.0),
        observed=observed,
        median=observed + rng.normal(0, 0.1, n),
        lower=np.tile(observed - 0.3, (len(PROBS), 1)),
        upper=np.tile(observed + 0.3, (len(PROBS), 1)),
        covered=covered,
        curve_covered=curve,
        pit=pit,
        log_density=rng.normal(0.0, 0.5, n),
        n_train={m: 2 + (origin - 2018) // 2 for m in METRICS},
        rhat_max=1.004,
        rhat_worst="slope[0]",
        divergences=0,
        fit_seconds=1.0,
        settings={"chains": 2, "warmup": 60, "draws": 60, "seed": 0},
    )


def synthetic_backtest() -> list[OriginResult]:
    return [synthetic_origin(o, n, seed=o) for o, n in zip(ORIGINS, (40, 40, 31), strict=True)]


def group(path: Path, name: str) -> xr.Dataset:
    with xr.open_dataset(path, group=name, engine="h5netcdf") as ds:
        return ds.load()


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """A synthetic forecast, published, with both groups added (as `wallcast analyse` does)."""
    out = tmp_path_factory.mktemp("outputs")
    path = publish(synthetic_tree(FIRST_ID, seed=3), out, FIRST_ID) / "forecast.nc"
    add_groups(path, {"sensitivity": sensitivity_dataset(synthetic_sensitivity())})
    add_groups(path, {"backtest": backtest_dataset(synthetic_backtest())})
    return path


@pytest.fixture(scope="module")
def written(analysed, tmp_path_factory):
    from forecast.report import generate_reports

    return generate_reports(analysed, tmp_path_factory.mktemp("report"), accelerators=False)


def slide_text(slide) -> str:
    from forecast.report.deck import slide_texts

    return "\n".join(slide_texts(slide))


# ----------------------------------------------------------------------------- report


def test_report_shows_sobol_ranking_and_tornado(analysed, written):
    sens = group(analysed, "sensitivity")
    md = written["report_md"].read_text()
    page = written["report_html"].read_text()
    section = md.split("## What drives the uncertainty")[1].split("\n## ")[0]
    assert "Spearman" not in section
    assert f"N = {sens.attrs['sensitivity_samples']:,} base samples" in section
    assert "report_files/sobol.png" in section
    rows = md_table(section, "wall")
    for wall, label in (("data_movement", "data-movement"), ("latency", "latency")):
        sub = sens.sel(target=f"{wall}_hit_year")
        order = np.argsort(-sub["total"].values, kind="stable")
        top = str(sub["input"].values[order[0]])
        first = next(r for r in rows if r[0] == label and r[1] == "1")
        assert first[2] == f"{input_label(top)} (`{top}`)"  # plain name first (issue 25)
        t = sub.isel(input=int(order[0]))
        p10, p90, unit = float(t["input_p10"]), float(t["input_p90"]), input_unit(top)
        # the one formatter, with the unit: '18M – 30M tokens', never '1.8e7 – 3.0e7'
        assert first[3] == f"{fmt_quantity(p10, unit, with_unit=False)} – {fmt_quantity(p90, unit)}"
        t = sub.isel(input=int(order[0]))
        assert first[5] == (
            f"{float(t['total']):.2f} [{float(t['total_low']):.2f}, {float(t['total_high']):.2f}]"
        )
        assert first[6] == f"{float(t['tornado_low']):.1f} → {float(t['tornado_high']):.1f}"
        assert f"{reader_label(top)} ({float(t['total']):.2f})" in section  # names the leader
        ranks = [int(r[1]) for r in rows if r[0] == label]
        assert ranks == list(range(1, len(ranks) + 1))
    assert "scaling.layer_exponent" in page and "Sobol total-order indices" in page


def test_report_shows_backtest_coverage_per_origin(analysed, written):
    bt = group(analysed, "backtest")
    md = written["report_md"].read_text()
    assert BACKTEST_HEADING in md
    section = md.split(BACKTEST_HEADING)[1].split("\n## ")[0]
    assert "report_files/calibration.png" in section
    rows = md_table(section, "origin")
    pooled = [r for r in rows if len(r) == 7]
    assert [int(r[0]) for r in pooled] == list(ORIGINS)
    for r in pooled:
        s = bt.sel(origin=int(r[0]), metric="all")
        assert r[1] == str(int(s["n_train"]))
        assert r[2] == str(int(s["n_held_out"]))
        for col, p in zip(r[3:6], (50, 80, 95), strict=True):
            assert col == f"{float(s[f'coverage_{p}']):.0%}"
        assert r[6] == f"{float(s['log_score']):.2f}"
        cov80 = f"{float(s['coverage_80']):.0%} of {int(s['n_held_out'])} held-out values"
        assert f"{cov80} (origin {int(r[0])})" in section
    # the coverage really is computed from the PIT values of the fixture
    pit = bt["pit"].sel(origin=2022).values
    pit = pit[np.isfinite(pit)]
    assert float(bt["coverage_80"].sel(origin=2022, metric="all")) == pytest.approx(
        np.mean(np.abs(pit - 0.5) <= 0.4)
    )
    per_metric = md_table(section.split("Per metric:")[1], "origin")
    assert len(per_metric) == len(ORIGINS) * len(METRICS)
    assert BACKTEST_HEADING[3:] in written["report_html"].read_text()


def test_report_without_groups_keeps_spearman_and_no_backtest(tmp_path):
    from forecast.report import write_report_files

    path = publish(synthetic_tree(FIRST_ID, seed=4), tmp_path / "o", FIRST_ID) / "forecast.nc"
    md = write_report_files(path, tmp_path / "r", accelerators=False)["report_md"].read_text()
    assert "Spearman" in md and "`wallcast analyse` adds" in md
    assert "Sobol total-order" not in md and BACKTEST_HEADING not in md


def test_rewritten_report_drops_charts_it_no_longer_uses(tmp_path):
    from forecast.report import write_report_files

    path = publish(synthetic_tree(FIRST_ID, seed=5), tmp_path / "o", FIRST_ID) / "forecast.nc"
    stale = tmp_path / "r" / "report_files" / "old_chart.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"png")
    write_report_files(path, tmp_path / "r", accelerators=False)
    assert not stale.exists()
    assert list(stale.parent.glob("*.png"))  # the current charts are there


# ----------------------------------------------------------------------------- deck


def test_deck_tornado_from_sobol_and_backtest_slide(analysed, written):
    from pptx import Presentation

    sens = group(analysed, "sensitivity")
    bt = group(analysed, "backtest")
    prs = Presentation(str(written["deck"]))
    titles = [s.shapes.title.text for s in prs.slides]
    assert 10 <= len(titles) <= 17, titles
    i = next(k for k, t in enumerate(titles) if "the wall most" in t)
    drivers = slide_text(prs.slides[i])
    assert "from the sensitivity analysis" in drivers
    lead = sens.sel(target="data_movement_hit_year")
    order = np.argsort(-lead["total"].values, kind="stable")
    top, second = (int(k) for k in order[:2])

    def swing(k: int) -> float:
        return abs(float(lead["tornado_high"].values[k]) - float(lead["tornado_low"].values[k]))

    # the runner-up shares the title when the ranking cannot separate it from the leader
    tied = swing(second) >= 0.8 * swing(top) or float(lead["total_high"].values[second]) >= float(
        lead["total_low"].values[top]
    )
    if tied:
        assert "about equally" in titles[i]
        assert reader_label(str(lead["input"].values[second])) in titles[i]
    else:
        assert f"{swing(top):.1f} years between its 10th and 90th percentile" in titles[i]
    assert reader_label(str(lead["input"].values[top])) in titles[i]
    assert any(s.shape_type == 13 for s in prs.slides[i].shapes)  # the tornado chart

    assert titles[i + 1].startswith("Our 2024 data-movement wall")  # the paper, then the backtest
    assert titles[i + 2].startswith("Backtest: the trends' 80% intervals covered")
    slide = prs.slides[i + 2]
    text = slide_text(slide)
    covs = []
    for origin in ORIGINS:
        s = bt.sel(origin=origin, metric="all")
        covs.append(float(s["coverage_80"]))
        line = f"origin {origin}: {float(s['coverage_80']):.0%} of {int(s['n_held_out'])} held out"
        assert line in text
    assert f"covered {np.mean(covs):.0%} of later" in titles[i + 2]
    assert any(s.shape_type == 13 for s in slide.shapes)  # the calibration chart


def test_deck_without_sensitivity_says_fallback(tmp_path):
    from pptx import Presentation

    from forecast.report import write_deck_file

    path = publish(synthetic_tree(FIRST_ID, seed=5), tmp_path / "o", FIRST_ID) / "forecast.nc"
    prs = Presentation(str(write_deck_file(path, tmp_path / "d")))
    titles = [s.shapes.title.text for s in prs.slides]
    i = next(k for k, t in enumerate(titles) if "the wall most" in t)
    assert "no sensitivity analysis in this forecast" in slide_text(prs.slides[i])
    assert not any(t.startswith("Backtest") for t in titles)


# ----------------------------------------------------------------------------- charts


def test_new_charts_have_labelled_axes_with_units(analysed):
    from forecast.queries.headline import load_forecast
    from forecast.report import charts
    from forecast.report.drivers import backtest_summary, sobol_drivers

    fc = load_forecast(analysed)
    sd, bt = sobol_drivers(fc), backtest_summary(fc)
    assert sd is not None and bt is not None
    assert [t.wall for t in sd.targets] == ["data_movement", "latency"]
    figures = {"sobol": charts.sobol_chart(sd), "calibration": charts.calibration_chart(bt)}
    for name, fig in figures.items():
        axes = [ax for ax in fig.axes if ax.get_visible()]
        assert len(axes) == 2, name
        for ax in axes:
            x, y = ax.get_xlabel(), ax.get_ylabel()
            assert x and y, (name, x, y)
            assert "(" in x and x.endswith(")"), (name, x)  # a unit in brackets
            assert ("(" in y and y.endswith(")")) or y == "Uncertain input", (name, y)
            assert ax.has_data(), name
            assert ax.get_title(), name
    sobol_ax = figures["sobol"].axes[0]
    ticks = dict(
        zip(sobol_ax.get_yticks(), [t.get_text() for t in sobol_ax.get_yticklabels()], strict=True)
    )
    # largest total index at the top, under its plain name
    assert ticks[max(ticks)] == "Critical batch of a 2024 frontier model"
    assert len(sobol_ax.containers) >= 2  # total and first-order bars (with whiskers)


# ----------------------------------------------------------------------------- wallcast analyse


def test_analyse_command_stores_groups_and_regenerates_reports(tmp_path, monkeypatch):
    """The CLI wiring: sensitivity and backtest replaced by the synthetic results (their own
    tests cover the computations), reports without the per-accelerator plan search."""
    from typer.testing import CliRunner

    import forecast.report as report_module
    from forecast.analyses import backtest as backtest_module
    from forecast.analyses import frontier_backtest as frontier_backtest_module
    from forecast.analyses import sensitivity as sensitivity_module
    from forecast.cli import app

    calls: dict = {}

    def fake_sensitivity(prior_set, anchors, *, n, **kwargs):
        calls["samples"] = n
        calls["anchors"] = dict(anchors)
        return synthetic_sensitivity()

    def fake_backtest(hardware, frontier, priors, origins, *, draws, warmup, **kwargs):
        calls["draws"] = (draws, warmup)
        return synthetic_backtest()

    real_generate = report_module.generate_reports

    def fast_generate(path, out_dir=None, **kwargs):
        calls["reports"] = Path(path)
        return real_generate(path, out_dir, accelerators=False, previous=False)

    monkeypatch.setattr(sensitivity_module, "run_sensitivity", fake_sensitivity)
    monkeypatch.setattr(backtest_module, "run_backtest", fake_backtest)
    frontier = [frontier_result(2022, [25.4, 26.6], [25.5, 26.5], [True, False])]
    monkeypatch.setattr(frontier_backtest_module, "run_frontier_backtest", lambda *a, **k: frontier)
    monkeypatch.setattr(report_module, "generate_reports", fast_generate)

    outputs = tmp_path / "outputs"
    path = publish(synthetic_tree(FIRST_ID, seed=6), outputs, FIRST_ID) / "forecast.nc"
    mode = stat.S_IMODE(path.stat().st_mode)
    r = CliRunner().invoke(
        app,
        ["analyse", "--forecast", str(outputs), "--samples", "16", "--backtest-draws", "60"],
    )
    assert r.exit_code == 0, r.output
    assert calls["samples"] == 16 and calls["draws"] == (60, 60)
    assert set(calls["anchors"]) == set(METRICS)  # anchored on the forecast's posterior
    assert calls["reports"] == path.resolve() or calls["reports"] == path
    assert stat.S_IMODE(path.stat().st_mode) == mode  # still readable by everyone
    sens, bt = group(path, "sensitivity"), group(path, "backtest")
    assert list(sens["input"].values) == INPUTS
    for origin in ORIGINS:
        s = bt.sel(origin=origin, metric="all")
        assert (
            f"origin {origin}: {float(s['coverage_80']):.0%} of {int(s['n_held_out'])}" in r.output
        )
    assert "scaling.batch_tokens_2024" in r.output
    with xr.open_dataset(path, group="forecast", engine="h5netcdf") as ds:
        assert "hit_year" in ds  # the forecast itself is kept
    assert float(group(path, "frontier_backtest")["coverage_80"].sel(row="pooled")) == 0.5
    frozen = group(path, "frozen_hardware")  # the real plan search for the H100
    assert frozen.attrs["accelerator"] == "NVIDIA H100 SXM5" and "Frozen hardware" in r.output
    md = (path.parent / "report.md").read_text()
    assert "Sobol total-order indices" in md and BACKTEST_HEADING in md
    assert (path.parent / "deck.pptx").exists()
    assert str(path.parent / "report.html") in r.output

    r = CliRunner().invoke(
        app, ["analyse", "--forecast", str(path), "--samples", "16", "--no-report"]
    )
    assert r.exit_code == 0, r.output
    assert "wrote" not in r.output and not math.isnan(float(sens["total"].max()))


def test_origins_with_the_same_data_count_as_one_backtest(tmp_path):
    """Issue 25 point 7: no accelerator was released between the 2018 and 2020 origins, so
    both train on the same rows and score the same held-out rows; report and deck count them
    once (the title's mean is over distinct backtests)."""
    import dataclasses

    from pptx import Presentation

    from forecast.queries.headline import load_forecast
    from forecast.report import write_deck_file
    from forecast.report.drivers import backtest_sentence, backtest_summary, backtest_table_cells

    first = synthetic_origin(2018, 40, seed=1)
    twin = dataclasses.replace(first, origin=2020)
    last = synthetic_origin(2022, 31, seed=2)
    path = publish(synthetic_tree(FIRST_ID, seed=3), tmp_path / "o", FIRST_ID) / "forecast.nc"
    add_groups(path, {"backtest": backtest_dataset([first, twin, last])})

    bt = backtest_summary(load_forecast(path))
    assert bt.origins == [2018, 2022] and bt.same_data == {2018: [2020]}
    _, body = backtest_table_cells(bt)
    assert [r[0] for r in body] == ["2018 = 2020", "2022"]
    assert "(origin 2018 = 2020)" in backtest_sentence(bt) and "count as one" in bt.twins_note

    ds = group(path, "backtest")
    distinct = [float(ds["coverage_80"].sel(origin=o, metric="all")) for o in (2018, 2022)]
    prs = Presentation(str(write_deck_file(path, tmp_path / "d")))
    slide = next(s for s in prs.slides if s.shapes.title.text.startswith("Backtest"))
    assert f"covered {np.mean(distinct):.0%} of later" in slide.shapes.title.text
    text = slide_text(slide)
    assert "origin 2018 = 2020: " in text and "origin 2020:" not in text
    assert "same data count once" in text

    # an origin whose held-out values differ is a backtest of its own
    # the CLI (wallcast backtest, wallcast analyse) says so in one line, from the same grouping
    from forecast.queries.analyses import same_data_note, same_data_origins

    assert same_data_origins(ds) == [[2018, 2020], [2022]]
    assert same_data_note(same_data_origins(ds)) == (
        "Origins 2018 and 2020 trained and scored on the same rows (no accelerator released "
        "between them): one check, not two."
    )

    other = dataclasses.replace(twin, observed=twin.observed + 0.5)
    add_groups(path, {"backtest": backtest_dataset([first, other, last])})
    assert backtest_summary(load_forecast(path)).origins == [2018, 2020, 2022]
    assert same_data_note(same_data_origins(group(path, "backtest"))) is None
