"""Report and deck: numbers read back from report.md / report.html / deck.pptx equal the
quantiles of the dataset; slides in order; charts labelled; HTML self-contained; changes listed.

Most tests use a synthetic forecast with the published layout (cheap); one builds a small real
forecast (NUTS fit without the convergence gate, sparse years) and runs the CLI on it.
"""

from __future__ import annotations

import io
import math
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from support.synthetic_forecast import FIRST_ID, REPO, SECOND_ID, YEARS, synthetic_tree

from forecast.queries.headline import REGIME_PHRASES, REGIME_SENTENCES
from forecast.store.publisher import publish

LAST = int(YEARS[-1])


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """Two synthetic forecasts published in order; the second grows faster and has a new row."""
    out = tmp_path_factory.mktemp("outputs")
    first = publish(synthetic_tree(FIRST_ID, growth=0.55, seed=1), out, FIRST_ID)
    second = publish(synthetic_tree(SECOND_ID, seed=2, extra_point=True), out, SECOND_ID)
    return out, first / "forecast.nc", second / "forecast.nc"


@pytest.fixture(scope="module")
def report_files(published, tmp_path_factory):
    from forecast.report import write_report_files

    _, first, second = published
    out = tmp_path_factory.mktemp("report")
    written = write_report_files(second, out, accelerators=False)
    first_out = tmp_path_factory.mktemp("report_first")
    written_first = write_report_files(first, first_out, accelerators=False)
    return written, written_first


def draws(path: Path, var: str, scenario: str, wall: str) -> np.ndarray:
    with xr.open_dataset(path, group="forecast", engine="h5netcdf") as ds:
        return ds[var].sel(scenario=scenario, wall=wall).values.ravel()


def expect_year(v: np.ndarray, q: float) -> str:
    """What the report must print for the q-quantile of hit years, from np.quantile."""
    with np.errstate(invalid="ignore"):  # inf - inf between two never-hit draws: nan
        x = np.quantile(v, q)
    return f"{x:.1f}" if np.isfinite(x) else f"not by {LAST}"


def expect_flop(v: np.ndarray, q: float) -> str:
    with np.errstate(invalid="ignore"):
        x = np.quantile(v, q)
    if not np.isfinite(x):
        return "not hit"
    m, e = f"{x:.1e}".split("e")
    return f"{m}e{int(e)}"


def md_table(text: str, first_header: str) -> list[list[str]]:
    """Rows of the Markdown table whose header starts with ``first_header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


# ----------------------------------------------------------------------------- report numbers


def test_report_table_matches_dataset_quantiles(published, report_files):
    _, _, second = published
    md = report_files[0]["report_md"].read_text()
    rows = md_table(md, "scenario | wall | hit year, median")
    assert len(rows) == 4
    seen_not_hit = False
    for scenario, wall, med, interval_, fmed, finterval, p_hit in rows:
        key = {"data-movement": "data_movement", "latency": "latency"}[wall]
        v = draws(second, "hit_year", scenario, key)
        f = draws(second, "hit_flop", scenario, key)
        assert med == expect_year(v, 0.5)
        assert interval_ == f"{expect_year(v, 0.1)} – {expect_year(v, 0.9)}"
        assert fmed == expect_flop(f, 0.5)
        assert finterval == f"{expect_flop(f, 0.1)} – {expect_flop(f, 0.9)}"
        assert p_hit == f"{np.mean(np.isfinite(v)):.0%}"
        seen_not_hit |= "not by" in interval_
    assert seen_not_hit  # the late-walls latency wall exercises the +inf path


def test_headline_numbers_come_from_the_dataset(published, report_files):
    _, _, second = published
    md = report_files[0]["report_md"].read_text()
    page = report_files[0]["report_html"].read_text()
    m = re.search(
        r"hits the (data-movement|latency) wall in (\d{4}) \(80%: (\d{4})–(\d{4})\) "
        r"at about (\S+) FLOP",
        md,
    )
    assert m, md[:500]
    wall = m.group(1).replace("-", "_")
    v = draws(second, "hit_year", "baseline", wall)
    other = draws(
        second, "hit_year", "baseline", "latency" if wall == "data_movement" else "data_movement"
    )
    assert np.median(v) <= np.median(other)  # the headline names the wall hit first
    cal = [math.floor(round(float(np.quantile(v, q)), 1)) for q in (0.5, 0.1, 0.9)]
    assert [int(m.group(i)) for i in (2, 3, 4)] == cal
    mant, exp = f"{np.median(draws(second, 'hit_flop', 'baseline', wall)):.0e}".split("e")
    assert m.group(5) == f"{mant}e{int(exp)}"
    assert m.group(0) in page  # the HTML says the same


COLOUR_WORDS = re.compile(
    r"\b(red|orange|amber|blue|sky blue|green|purple|yellow|vermillion|pink|teal|brown)\b"
)


def test_captions_name_colours_as_the_palette_names_them(report_files):
    """Issue 25 point 6: a caption said orange for amber bars. Every colour word in the report
    is the name the chart palette gives one of its colours (charts.COLOUR_NAMES)."""
    from forecast.report.charts import COLOUR_NAMES

    md = report_files[0]["report_md"].read_text()
    used = {m.group(1) for m in COLOUR_WORDS.finditer(md.lower())}
    assert used and used <= set(COLOUR_NAMES.values()), used
    assert "orange" not in used


def test_html_is_self_contained(report_files):
    page = report_files[0]["report_html"].read_text()
    assert "<link" not in page and "<script" not in page and "@import" not in page
    assert not re.search(r"url\(\s*['\"]?(?!data:)", page)
    srcs = re.findall(r"""src\s*=\s*["']([^"']*)["']""", page)
    assert len(srcs) >= 4 and all(s.startswith("data:image/") for s in srcs)
    # links leave the page only from the references list (a link, not a resource it loads)
    refs_html = page.split('<ol class="refs">')[1].split("</ol>")[0]
    assert not re.search(r"href\s*=\s*[\"'](?!#)", page.replace(refs_html, ""))
    # printed, a figure keeps its caption and a table its rows (issue 25: captions split)
    assert re.search(r"@media print \{[^}]*figure[^}]*break-inside: avoid", page)
    for section in ("Provenance", "What uncertainty the model does not include", "Trend fits"):
        assert section in page
    assert SECOND_ID in page and "hash-26" in page  # provenance: id and data hash
    # which plans the walls come from, in one sentence (no regime recorded: the paper's)
    md = report_files[0]["report_md"].read_text()
    assert REGIME_SENTENCES["paper"] in md


def test_report_lists_every_source_it_cites_with_its_link(report_files):
    """Issue 25: the report stands alone. Every cite key it uses resolves to an entry of its
    References (from docs/sources.md, with the source's link), every in-page citation link
    lands on an entry, and no sentence sends the reader to docs/sources.md."""
    from forecast.report.bibliography import CITE, load_sources

    md = report_files[0]["report_md"].read_text()
    page = report_files[0]["report_html"].read_text()
    body, refs_md = md.split("## References", 1)
    refs, aliases = load_sources()
    keys = {aliases.get(m.group(1), m.group(1)) for m in CITE.finditer(body)}
    listed = re.findall(r"^- \*\*\[([^\]]+)\]\*\*", refs_md, flags=re.M)
    assert keys and keys <= set(refs)  # every citation is a listed source
    assert set(listed) == keys  # each cited source listed once, nothing uncited
    assert len(listed) == len(set(listed))
    assert (
        "- **[erdil2024]** Erdil, E. and Schneider-Joseph, D. (2024). Data movement limits " in md
    )
    assert "<https://arxiv.org/abs/2411.01137>" in refs_md
    for key in keys:
        assert f'id="ref-{key}"' in page
        if refs[key].url:
            assert f'href="{refs[key].url}"' in page
    for target in re.findall(r'href="#ref-([^"]+)"', page):
        assert f'id="ref-{target}"' in page
    assert "docs/sources.md" not in md
    # issue 25: the report stands alone, so it names no repository file, document or module
    # (a reader has the report, not the repository); the data go by what they hold
    outside = re.compile(r"\bdocs/|\bdata/\w|\.csv\b|\.py\b|\bforecast/|\bpriors/")
    body_md = md.split("## References", 1)[0]  # the references' URLs may hold such paths
    assert not outside.search(body_md), outside.search(body_md)
    # nor to a path on the machine that ran it (the prior file by name)
    assert "/srv/wallcast" not in md and "| priors | baseline |" in md


def test_stand_alone_leaves_no_repository_path_in_any_shipped_prior_source():
    """The priors files cite the data files and documents they were inferred from; the report
    (issue 25: it stands alone) says what the data holds and drops pointers to documents."""
    from forecast.queries.headline import assumptions
    from forecast.report.standalone import stand_alone

    outside = re.compile(r"\bdocs/|\bdata/\w|\.csv\b|\.py\b|\bforecast/|\bpriors/|\.toml\b")
    texts = []
    for path in sorted((REPO / "priors").rglob("*.toml")):
        texts += [it["source"] for it in assumptions(path.read_text()) if it["source"]]
    named = [t for t in texts if outside.search(t)]
    assert len(named) >= 5  # the priors do name files: the rewrite has work to do
    for text in texts:
        out = stand_alone(text)
        assert not outside.search(out), (text, out)
        assert "()" not in out and "( " not in out and " ," not in out, out
    assert stand_alone("fits to data/hardware.csv 1.47x/yr") == (
        "fits to the data on shipped accelerators 1.47x/yr"
    )
    assert stand_alone("dominates the wall (docs/validation.md §4)") == "dominates the wall"
    assert stand_alone("(docs/validation.md §4: H100 wall 2.3e28)") == "(H100 wall 2.3e28)"
    assert stand_alone("priors/scenarios/mixture-of-experts.toml changes it") == (
        "the mixture-of-experts scenario changes it"
    )
    # review findings: a sentence keeps its grammar, a URL and a longer path stay as they are
    assert stand_alone("a knob whose sensitivity docs/validation.md §4 shows.") == (
        "a knob whose sensitivity the project's validation notes shows."
    )
    assert stand_alone("fitted (see forecast/fit/joint.py) to data") == "fitted to data"
    url = "<https://example.org/data/hardware.csv> and https://example.org/b.toml"
    assert stand_alone(url) == url
    assert (
        stand_alone("Our choice (as baseline.toml): x")
        == "Our choice (as the baseline priors file): x"
    )
    assert stand_alone("pyproject.toml") == "pyproject.toml"


def test_report_glossary_defines_terms_scenarios_and_inputs(report_files):
    """Issue 25: a glossary generated from the scenario files (as the forecast recorded them)
    and the input registry, after the hand-written terms; plain names, no registry key."""
    from forecast.priors.registry import PARAMETERS
    from forecast.report.glossary import TERMS

    md = report_files[0]["report_md"].read_text()
    section = md.split("## Glossary", 1)[1].split("\n## ", 1)[0]
    for term, _ in TERMS:
        assert f"| {term} |" in section
    assert "| late-walls | Synthetic: both walls 2.5 years later. |" in section
    assert "| baseline | Best current view:" in section
    for key in ("training.duration_days", "scaling.batch_tokens_2024"):
        spec = PARAMETERS[key]
        assert f"| {spec.label} | {spec.unit} |" in section
    assert not re.search(
        r"\b(?:hardware|latency|network|training|scaling|frontier)\.[a-z_]+", section
    )


def test_report_has_a_method_page_with_its_diagram(report_files):
    """Issue 25 point 2: one section says what the step-time model, the plan search, each
    year's frontier and '80% of the small-scale maximum' are, with a diagram of the flow and
    the 'why faster chips can hit the wall sooner' box, before the per-chip sections."""
    from forecast.report.method import METHOD_HEADING

    md = report_files[0]["report_md"].read_text()
    section = md.split(f"## {METHOD_HEADING}", 1)[1].split("\n## ", 1)[0]
    for phrase in (
        "The step-time model and the plan search.",
        "Each year's frontier.",
        "80% of that maximum [epoch-simulator]",
        "Why faster chips can hit the wall sooner.",
        "lower efficient scale than the A100 [erdil2024]",
    ):
        assert phrase in section, phrase
    assert "![The forecast's flow" in section and "report_files/method.png" in section
    assert md.index(f"## {METHOD_HEADING}") < md.index("## Walls of shipped accelerators")
    assert "method" in report_files[0]["figures"]  # the diagram is one of the report's figures


def test_sources_parse_entries_labels_and_links():
    from forecast.report.bibliography import cited, parse_sources

    text = (
        "# Sources\n\n## Short labels\n\n- **[P]** = [paper2024]\n\n## Group\n\n"
        "- **[paper2024]** Doe, J. (2024). *A title*. arXiv:1.2. https://arxiv.org/abs/1.2\n"
        "  What the project takes, with another link https://example.org/x.\n"
        "- **[list]** The model cards, by model: GPT-1 (OpenAI 2018, https://example.org/g1),\n"
        "  GPT-2 (https://example.org/g2).\n"
        "- **[nolink]** Someone (2020). *Book*. Publisher.\n"
    )
    refs, aliases = parse_sources(text)
    assert aliases == {"P": "paper2024"}
    assert refs["paper2024"].text == "Doe, J. (2024). A title. arXiv:1.2."
    assert refs["paper2024"].url == "https://arxiv.org/abs/1.2"
    assert refs["list"].text == "The model cards, by model: GPT-1."
    assert refs["list"].url == "https://example.org/g1"
    assert refs["nolink"].url is None and refs["nolink"].text == "Someone (2020). Book. Publisher."
    assert cited(["see [P] and [nolink], [unknown], [paper2024]"], refs, aliases) == [
        "paper2024",
        "nolink",
    ]


def test_what_changed_lists_moved_medians_and_data_rows(published, report_files):
    _, first, second = published
    md = report_files[0]["report_md"].read_text()
    section = md.split("## What changed since the previous forecast")[1].split("\n## ")[0]
    assert FIRST_ID in section
    old = draws(first, "hit_year", "baseline", "data_movement")
    new = draws(second, "hit_year", "baseline", "data_movement")
    assert abs(np.median(new) - np.median(old)) > 0.1  # the fixture moves it
    line = (
        f"baseline, data-movement wall: median hit year {np.median(old):.1f} → "
        f"{np.median(new):.1f} ({np.median(new) - np.median(old):+.1f} years)"
    )
    assert line in section
    assert "hardware data points added (1): new-acc|flops" in section
    assert "hardware rows: 24 → 25" in section
    first_md = report_files[1]["report_md"].read_text()
    assert "This is the first forecast" in first_md


def test_previous_forecast_is_found_by_id_order(published):
    from forecast.store.reader import previous_forecast_path

    out, first, second = published
    assert previous_forecast_path(second) == first.resolve()
    assert previous_forecast_path(first) is None
    assert previous_forecast_path(out) == first.resolve()  # via outputs/latest


# ----------------------------------------------------------------------------- deck


def _prior_keys(table: dict, prefix: str = ""):
    """(key, table) of every parameter of a priors file, in the file's order."""
    for name, value in table.items():
        key = f"{prefix}.{name}" if prefix else name
        if isinstance(value, dict) and "source" in value:
            yield key, value
        elif isinstance(value, dict) and key != "meta":
            yield from _prior_keys(value, key)


def test_deck_slides_titles_and_numbers(published, tmp_path):
    """8-10 slides with action titles; the answer's numbers equal the dataset's quantiles;
    readable sizes (titles >= 28 pt, body >= 16 pt, the appendix >= 13 pt)."""
    from pptx import Presentation
    from pptx.util import Pt

    from forecast.report import write_deck_file

    _, _, second = published
    path = write_deck_file(second, tmp_path)
    prs = Presentation(str(path))
    titles = [s.shapes.title.text for s in prs.slides]
    assert 10 <= len(titles) <= 17, titles  # a title slide, 8-10 main, 4-7 appendix
    v = draws(second, "hit_year", "baseline", "data_movement")
    med, lo, hi = (math.floor(round(float(np.quantile(v, q)), 1)) for q in (0.5, 0.1, 0.9))
    # the title slide: what, when, which forecast and data, and the answer up front
    assert titles[0].startswith(
        "Frontier AI training against the data-movement and latency walls: "
    )
    first_text = " ".join(sh.text_frame.text for sh in prs.slides[0].shapes if sh.has_text_frame)
    assert SECOND_ID in first_text and "hash-26" in first_text
    assert f"wall in {med} (80%: {lo}–{hi})" in first_text
    assert titles[1] == f"Frontier training hits the data-movement wall around {med} ({lo}–{hi})"
    assert titles[2].startswith("Data movement makes each FLOP of the 2032 frontier run cost")
    assert titles[3].startswith("Across scenarios the data-movement wall arrives between")
    assert titles[-1] == "Appendix: sources"
    # the assumptions appendix: a table of every input of the priors file under its plain name,
    # counting what is uncertain apart from what is fixed, as its rows show them
    pages = [
        (i, re.fullmatch(r"Appendix: (\d+) uncertain assumptions, (\d+) fixed( \(\d of \d\))?", t))
        for i, t in enumerate(titles)
        if t.startswith("Appendix: ") and "assumptions" in t
    ]
    assert pages and all(m for _, m in pages) and pages[-1][0] == len(titles) - 4, titles
    # then what each scenario assumes, from its file (recorded in the forecast), the method and
    # the sources
    assert titles[-2] == "Appendix: how the forecast is made"
    assert any(s.shape_type == 13 for s in prs.slides[len(titles) - 2].shapes)  # the diagram
    with xr.open_datatree(second, engine="h5netcdf") as tree:
        scenarios = [str(s) for s in tree["forecast"]["scenario"].values]
        described = {
            s: tomllib.loads(str(tree.attrs[f"scenario_text_{s}"])).get("meta", {})
            for s in scenarios
            if f"scenario_text_{s}" in tree.attrs
        }
    assert titles[-3] == f"Appendix: the {len(scenarios)} scenarios"
    (table,) = [sh.table for sh in prs.slides[len(titles) - 3].shapes if sh.has_table]
    rows_s = [[c.text for c in row.cells] for row in list(table.rows)[1:]]
    assert [r[0] for r in rows_s] == scenarios
    for name, text in rows_s:
        if described.get(name, {}).get("description"):
            assert text == described[name]["description"]
        assert text
    rows = [
        [c.text for c in row.cells]
        for i, _ in pages
        for sh in prs.slides[i].shapes
        if sh.has_table
        for row in list(sh.table.rows)[1:]
    ]
    with xr.open_datatree(second, engine="h5netcdf") as tree:
        priors_text = str(tree.attrs["priors_text"])
    from forecast.priors.registry import input_label

    keys = [k for k, _ in _prior_keys(tomllib.loads(priors_text))]
    assert [r[0] for r in rows] == [input_label(k) for k in keys]
    fixed = sum(r[1].startswith("fixed at ") for r in rows)
    counted = pages[0][1]
    assert (int(counted[1]), int(counted[2])) == (len(rows) - fixed, fixed) and fixed > 0
    days = rows[keys.index("training.duration_days")][1]
    assert days.endswith("days)") or days.startswith("fixed at ") and days.endswith(" days")
    for title in titles[:-2]:  # action titles: a sentence with its number
        assert re.search(r"\d", title) or title.startswith("This is the first forecast"), title
    assert any(s.shape_type == 13 for s in prs.slides[1].shapes)  # the fan chart picture
    first = " ".join(sh.text_frame.text for sh in prs.slides[1].shapes if sh.has_text_frame)
    assert f"walls of {REGIME_PHRASES['paper']};" in first  # which plans, said once
    assert any(s.shape_type == 13 for s in prs.slides[3].shapes)  # dot-and-interval, no table
    assert not any(s.has_table for s in prs.slides[3].shapes)

    for i, slide in enumerate(prs.slides):
        for shape in slide.shapes:
            frames = [shape.text_frame] if shape.has_text_frame else []
            if shape.has_table:
                frames += [c.text_frame for row in shape.table.rows for c in row.cells]
            appendix = {p for p, _ in pages} | {len(titles) - k for k in (1, 2, 3)}
            body = Pt(13) if i in appendix else Pt(16)
            # a title steps down from 28 pt to no less than the body's 20 pt to fit its box
            minimum = Pt(20) if shape == slide.shapes.title else body
            for tf in frames:
                for p in tf.paragraphs:
                    for r in p.runs:
                        assert r.font.size is not None and r.font.size >= minimum, r.text


# ----------------------------------------------------------------------------- charts and drivers


UNIT_WORDS = ("FLOP", "year", "Year", "fraction", "bytes", "unitless", "input", "Scenario")


DOTTED_KEY = re.compile(
    r"\b(?:hardware|latency|network|training|scaling|frontier)(?:\.|__)[a-z0-9_]+"
)
"""A registry key (or its variable form) as it must never reach a reader's chart or slide."""


def test_every_chart_has_labelled_axes_with_units(published):
    from forecast.queries.headline import load_forecast, summary_rows
    from forecast.report import charts
    from forecast.report.drivers import uncertainty_drivers

    fc = load_forecast(published[2])
    grid = np.arange(22.0, 33.0, 0.5)
    curve = {  # a forecast.analyses.accelerator_walls.curve_record
        "accelerator": "X",
        "precision": "bf16",
        "duration_days": 90.0,
        "utilization_threshold": 0.8,
        "log10_flop": grid.tolist(),
        "utilization": np.linspace(0.7, 0, grid.size).tolist(),
        "data_movement_wall_log10_flop": 28.0,
        "latency_wall_log10_flop": 31.0,
        "assumptions": [],
        "note": None,
    }
    drivers, _ = uncertainty_drivers(fc)
    figures = {
        "fan": charts.fan_chart(fc),
        "hit": charts.hit_year_chart(fc),
        "trend": charts.trend_chart(fc),
        "util": charts.utilization_chart([curve]),
        "drivers": charts.drivers_chart(drivers, "data_movement"),
        "scenarios": charts.scenario_chart(summary_rows(fc.forecast), LAST),
    }
    for name, fig in figures.items():
        axes = [ax for ax in fig.axes if ax.get_visible()]
        assert axes, name
        for ax in axes:
            x, y = ax.get_xlabel(), ax.get_ylabel()
            assert x and y, (name, x, y)
            assert any(w in x for w in UNIT_WORDS) and any(w in y for w in UNIT_WORDS), (name, x, y)
            assert ax.has_data(), name  # no empty charts
    assert figures["fan"].axes[0].get_yscale() == "log"
    assert "FLOP" in figures["fan"].axes[0].get_ylabel()

    # no offset notation ("+2.03e3") beside any axis: each tick is the number it reads
    from forecast.report.executive import input_effects

    effects = input_effects(fc, "data_movement", top=6)
    figures["tornado"] = charts.tornado_chart(effects, "data_movement")
    for name, fig in figures.items():
        fig.savefig(io.BytesIO(), format="png")  # lays out and formats the ticks
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                assert axis.get_offset_text().get_text() == "", (name, axis)
            # plain names, no registry key (drivers and tornado label inputs)
            ticks = [t.get_text() for t in (*ax.get_xticklabels(), *ax.get_yticklabels())]
            assert not [t for t in ticks if DOTTED_KEY.search(t)], (name, ticks)
    assert [t.get_text() for t in figures["drivers"].axes[0].get_yticklabels()] != []
    # the tornado's ticks are shifts from the all-median hit year, which its label gives
    ax = figures["tornado"].axes[0]
    assert f"{effects[0].baseline:.1f})" in ax.get_xlabel() and "years" in ax.get_xlabel()
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert "0" in ticks and all(len(t) <= 5 for t in ticks), ticks
    left, right = ax.get_xlim()
    assert left < 0 < right and right - left < 10  # years of shift, not calendar years


def test_uncertainty_drivers_rank_the_input_that_moves_the_wall_first(published):
    from forecast.queries.headline import load_forecast
    from forecast.report.drivers import uncertainty_drivers

    fc = load_forecast(published[2])
    drivers, method = uncertainty_drivers(fc, wall="data_movement")
    names = [n for n, _ in drivers]
    assert names[0] == "scaling.batch_tokens_2024" and drivers[0][1] > 0.5
    assert "training.duration_days" not in names  # constant inputs carry no information
    assert "Spearman" in method


# ----------------------------------------------------------------------------- a real forecast


@pytest.fixture(scope="module")
def real_forecast(tmp_path_factory):
    """A small real forecast: NUTS fit (2 chains x 150 draws, no convergence gate: this checks
    the report, not the fit), propagation on sparse years, assembled and published."""
    import jax
    from support.fits import fit_trends

    from forecast.config.runtime import init_jax
    from forecast.jobs import forecast_job
    from forecast.stats.trends import trend_priors_from_prior_set

    init_jax()
    out = tmp_path_factory.mktemp("real")
    inputs = forecast_job.load_inputs(scenarios=[])
    fit = fit_trends(
        inputs.hardware,
        inputs.frontier_runs,
        trend_priors_from_prior_set(inputs.priors),
        rng_key=jax.random.PRNGKey(5),
        num_chains=2,
        num_warmup=150,
        num_samples=150,
    )
    years = np.arange(2024, 2046, 3)
    results = {
        name: forecast_job.propagate_scenario(fit, ps, seed=5, years=years)
        for name, ps in inputs.scenarios.items()
    }
    tree, fid = forecast_job.assemble(inputs, fit, results, seed=5, chains=2, draws=150)
    return publish(tree, out, fid) / "forecast.nc"


def test_report_and_deck_commands_on_a_real_forecast(real_forecast, tmp_path):
    from pptx import Presentation
    from typer.testing import CliRunner

    from forecast.cli import app

    runner = CliRunner()
    r = runner.invoke(
        app, ["report", "--forecast", str(real_forecast), "--out", str(tmp_path), "-a", "H100"]
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["deck", "--forecast", str(real_forecast.parent)])
    assert r.exit_code == 0, r.output
    assert (real_forecast.parent / "deck.pptx").exists()  # default: beside the forecast
    md = (tmp_path / "report.md").read_text()
    v = draws(real_forecast, "hit_year", "baseline", "data_movement")
    row = next(
        r for r in md_table(md, "scenario | wall | hit year, median") if r[1] == "data-movement"
    )
    assert row[2] == expect_year(v, 0.5)
    acc = md_table(md, "accelerator")
    assert len(acc) == 1 and acc[0][0].startswith("NVIDIA H100") and "e" in acc[0][2]
    assert "This is the first forecast" in md
    assert "H100" in (tmp_path / "report.html").read_text()
    prs = Presentation(str(real_forecast.parent / "deck.pptx"))
    assert prs.slides[1].shapes.title.text.startswith("Frontier training hits the")
    assert prs.slides[2].shapes.title.text.startswith("Data movement makes each FLOP")


# ----------------------------------------------------------------------------- structure


REPORT_MODULES = (
    "forecast.report",
    "forecast.report.changes",
    "forecast.report.charts",
    "forecast.report.checks",
    "forecast.report.deck",
    "forecast.report.decisions",
    "forecast.report.drivers",
    "forecast.report.fitted_inputs",
    "forecast.report.hardware_walls",
    "forecast.report.html",
    "forecast.report.not_modelled",
    "forecast.report.slides",
    "forecast.queries.headline",
)


def test_report_does_not_run_its_own_plan_search():
    """Walls come from the walls service: no report module imports forecast.model, and
    importing them all leaves JAX unimported (the service imports it when it computes)."""
    import ast

    for path in sorted((REPO / "forecast" / "report").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                assert not name.startswith("forecast.model"), (path.name, name)
    code = (
        "import sys\n"
        f"for m in {REPORT_MODULES!r}: __import__(m)\n"
        "bad = [m for m in ('jax', 'forecast.model', 'forecast.model.search') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def _validation_leaves_out_bullets() -> list[str]:
    """The bullets of docs/validation.md's 'What the model leaves out', bold markers removed."""
    lines = (REPO / "docs" / "validation.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"#+ .*leaves out", line))
    bullets: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        stripped = line.strip()
        if stripped.startswith(("* ", "- ")):
            bullets.append(stripped[2:])
        elif stripped and bullets:
            bullets[-1] += " " + stripped
    return [" ".join(b.replace("**", "").split()) for b in bullets]


def test_not_modelled_follows_validation_doc():
    from forecast.report.not_modelled import NOT_MODELLED, not_modelled

    bullets = _validation_leaves_out_bullets()
    openings = [item.doc_opening for item in NOT_MODELLED if item.doc_opening]
    assert len(bullets) >= 5
    for bullet in bullets:  # every bullet of the docs has its item in the report ...
        matches = [o for o in openings if bullet.startswith(o)]
        assert len(matches) == 1, f"docs/validation.md bullet without one report item: {bullet!r}"
    for opening in openings:  # ... and every item naming a bullet still has it
        assert any(b.startswith(opening) for b in bullets), opening
    items = not_modelled()
    assert items == [item.text for item in NOT_MODELLED]
    # a forecast of launchable plans: the same items, none saying the forecast searches the
    # paper's relaxed plans or that the realistic regime does not feed it
    realistic = not_modelled("realistic")
    assert len(realistic) == len(items) and realistic != items
    assert not any("searches the paper's relaxed plans" in t for t in realistic)
    assert not any("does not feed the forecast" in t for t in realistic + items)
    assert any("plans a run can launch, from a shortlist of 979" in t for t in realistic)
    # mixture of experts is modelled (expert parallelism): the report must not say otherwise
    moe = [t for t in items if "mixture of experts" in t.lower() or "expert" in t.lower()]
    assert moe and all("modelled simply" in t for t in moe), moe
    assert not any("dense transformers only" in t for t in items)


def test_accelerator_walls_are_cached_on_the_table_bytes(monkeypatch, tmp_path):
    """The refresh flow computes the report's accelerator section beside the fit; the report
    reads it back. A second call with the same table is served from the cache (a copy), an
    edited table is searched again."""
    import shutil

    from forecast.report import hardware_walls as hwm

    calls = []

    def search(names, curve_names, **settings):
        calls.append(settings["hardware"])
        return hwm.AcceleratorWalls(rows=[{"accelerator": "x", "n": len(calls)}])

    monkeypatch.setattr(hwm, "_accelerator_walls", search)
    monkeypatch.setattr(hwm, "_CACHE", {})
    table = tmp_path / "hardware.csv"
    from forecast.analyses.accelerator_walls import hardware_table_path

    shutil.copy(hardware_table_path(None), table)
    first = hwm.accelerator_walls(None, ("H100",), hardware=table)
    first.rows[0]["n"] = 99  # a caller's edit does not reach the cache
    second = hwm.accelerator_walls(None, ("H100",), hardware=table)
    assert len(calls) == 1 and second.rows[0]["n"] == 1
    table.write_text(table.read_text() + "\n")
    hwm.accelerator_walls(None, ("H100",), hardware=table)
    assert len(calls) == 2


@given(
    p_hit=st.floats(min_value=0.0, max_value=1.0),
    median=st.one_of(st.just(math.inf), st.floats(min_value=2025.0, max_value=2044.0)),
)
@settings(max_examples=300, deadline=None)
def test_headline_words_match_the_probability_they_state(p_hit, median):
    """The likelihood word sits beside the share of draws it describes and lies in that share's
    band of the IPCC's calibrated language [ipcc-uncertainty]; the median year carries no word."""
    from forecast.queries.headline import LIKELIHOOD_WORDS, wall_sentence

    row = {
        "wall": "data_movement",
        "year": {
            "median": median,
            "lower": median - 1.0,
            "upper": median + 1.5,
            "prob": 0.8,
            "not_hit_fraction": 1.0 - p_hit,
        },
        "flop": {"median": 2.3e28},
    }
    text = wall_sentence(row, 2045)
    m = re.search(r"is ([a-z ]+) \((\d+)% of the draws\)", text)
    assert m, text
    bands = {word: (low, high) for word, low, high in LIKELIHOOD_WORDS}
    low, high = bands[m[1]]
    shown = int(m[2]) / 100
    assert low <= shown <= high, text
    assert abs(shown - p_hit) <= 0.005 + 1e-12, text
    if math.isfinite(median):
        assert text.startswith(
            f"Frontier training hits the data-movement wall in {math.floor(round(median, 1))} "
        )
        assert "by 2045 is" in text  # the word is about the hit by the last year
    # the words tile [0, 1] without gaps or overlaps, strongest first
    edges = [(low, high) for _, low, high in LIKELIHOOD_WORDS]
    assert edges[0][1] == 1.0 and edges[-1][0] == 0.0
    assert all(a[0] == b[1] for a, b in zip(edges, edges[1:], strict=False))
