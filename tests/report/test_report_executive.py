"""Issue 14: every number on a slide and in the executive summary is read back and equals the
dataset's (recomputed here with NumPy from the published file); no text frame overflows its box
(measured with the font's metrics); every cited source is listed in docs/sources.md.

Uses the synthetic published forecast of ``test_report.py`` (with its cost variables).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from support.synthetic_forecast import FIRST_ID, SECOND_ID, synthetic_tree

from forecast.store.publisher import publish

REPO = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?(?![\d.])")
CITE = re.compile(r"\[([a-z0-9][a-z0-9-]*)\]")


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    from pptx import Presentation

    from forecast.report import write_deck_file, write_report_files

    out = tmp_path_factory.mktemp("outputs")
    path = publish(synthetic_tree(SECOND_ID, seed=2), out, SECOND_ID) / "forecast.nc"
    deck_path = write_deck_file(path, out / "r", previous=False)
    report = write_report_files(path, out / "r", previous=False, accelerators=False)
    return path, Presentation(str(deck_path)), report


def fc_ds(path: Path) -> xr.Dataset:
    with xr.open_dataset(path, group="forecast", engine="h5netcdf") as ds:
        return ds.load()


def inputs_ds(path: Path) -> xr.Dataset:
    with xr.open_dataset(path, group="forecast_inputs", engine="h5netcdf") as ds:
        return ds.load()


def q(values, p: float) -> float:
    """np.quantile, +inf when it touches a never-hit (+inf) draw."""
    v = np.sort(np.asarray(values, float).ravel())
    h = (v.size - 1) * p
    lo, hi = int(np.floor(h)), min(int(np.floor(h)) + 1, v.size - 1)
    if np.isinf(v[hi]) and h > lo or np.isinf(v[lo]):
        return math.inf
    return float(v[lo] + (h - lo) * (v[hi] - v[lo]))


def slide_texts(slide) -> list[str]:
    from forecast.report.deck import slide_texts as texts

    return texts(slide)


def mult(x: float) -> str:
    """The multiplier as the slides print it; the formatter's own rule (two significant figures)
    is checked on literal values in test_cost_multipliers_carry_two_significant_figures_at_most."""
    from forecast.queries.formatting import fmt_multiplier

    return fmt_multiplier(x)


def cal_year(year: float) -> str:
    """A hit year in prose: the calendar year it falls in, after the tables' one-decimal rounding."""
    return str(math.floor(round(year, 1)))


def sci0(x: float) -> str:
    m, e = f"{x:.0e}".split("e")
    return f"{m}e{int(e)}"


def sig3(x: float) -> str:
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        m, e = f"{x:.1e}".split("e")
        return f"{m}e{int(e)}"
    return f"{x:.3g}"


def quantity(key: str, v: float) -> str:
    """An input's value as every surface writes it: the shared formatter, the registry unit."""
    from forecast.priors.registry import input_unit
    from forecast.queries.formatting import fmt_quantity

    return fmt_quantity(v, input_unit(key))


def draw_effects(path: Path, wall: str = "data_movement"):
    """The signpost numbers recomputed: slope of the hit year on log10(input) over the draws."""
    ds, inp = fc_ds(path), inputs_ds(path)
    y = ds["hit_year"].sel(scenario="baseline", wall=wall).values.ravel()
    ok = np.isfinite(y)
    out = {}
    for name in inp.data_vars:
        x = inp[name].sel(scenario="baseline").values.ravel()
        if np.ptp(x[ok]) == 0:
            continue
        t = np.log10(x[ok])
        slope = np.polyfit(t, y[ok], 1)[0]
        tq = np.quantile(t, [0.1, 0.5, 0.9])
        out[name.replace("__", ".")] = (tq, slope)
    return out


def expected_numbers(path: Path) -> dict[int, set[str]]:
    """Per slide, the numbers it may show, each recomputed from the dataset."""
    ds = fc_ds(path)
    base = ds.sel(scenario="baseline")
    last = int(ds["year"].values[-1])
    dm = base["hit_year"].sel(wall="data_movement").values.ravel()
    cal = [str(math.floor(round(q(dm, p), 1))) for p in (0.5, 0.1, 0.9)]
    c = base["cost_multiplier"].sel(year=2032).values.ravel()
    days = q(base["min_run_days"].sel(year=2032).values, 0.5)
    meds = [
        q(ds["hit_year"].sel(scenario=s, wall="data_movement").values, 0.5)
        for s in ds["scenario"].values
    ]
    effects = draw_effects(path)
    ranked = sorted(effects.items(), key=lambda kv: -abs(kv[1][1] * (kv[1][0][2] - kv[1][0][0])))
    key = ranked[0][0]
    signpost = set()
    for k, (tq_i, slope_i) in ranked[:4]:  # each value with its unit: its digits are allowed
        signpost |= set(NUMBER.findall(quantity(k, 10 ** tq_i[1])))
        for dy in (-1.0, 1.0):
            t = tq_i[1] + dy / slope_i
            span = tq_i[2] - tq_i[0]
            if tq_i[0] - span <= t <= tq_i[2] + span:
                signpost |= set(NUMBER.findall(quantity(k, 10**t)))
    dm_now = q(base["wall_flop"].sel(wall="data_movement", year=2024).values, 0.5)
    lat_now = q(base["wall_flop"].sel(wall="latency", year=2024).values, 0.5)
    lat_2030 = q(base["wall_flop"].sel(wall="latency", year=2030).values, 0.5)
    dm_med = q(dm, 0.5)
    return (
        {
            1: set(cal) | {"80", "50", "95"},
            2: {
                mult(q(c, 0.5)).rstrip("x"),
                mult(q(c, 0.1)).rstrip("x"),
                mult(q(c, 0.9)).rstrip("x"),
                "2032",
                "1",
                "80",
                f"{np.mean(np.isinf(c)):.0%}".rstrip("%"),
                f"{days:.0f}" if days >= 10 else f"{days:.1f}",
            },
            3: {cal_year(min(meds)), cal_year(max(meds))},
            # the leader's swing, and those of the inputs tied with it (named beside it)
            4: {f"{abs(sl * (t[2] - t[0])):.1f}" for _, (t, sl) in ranked[:3]} | {"10", "90"},
            6: signpost,
            # what to decide: the hit years, the hit FLOP, the cost, the leader's swing, a signpost
            7: {cal[1], cal[0], sci0(q(base["hit_flop"].sel(wall="data_movement").values, 0.5))}
            | {mult(q(c, 0.5)).rstrip("x"), mult(q(c, 0.9)).rstrip("x"), "2032"}
            | {f"{np.mean(np.isinf(c)):.0%}".rstrip("%")}  # infeasible share, when the 90th is
            | {f"{days:.0f}" if days >= 10 else f"{days:.1f}"}
            | {f"{abs(sl * (t[2] - t[0])):.1f}" for _, (t, sl) in ranked[:3]}
            | signpost,
            5: {
                sci0(dm_now),
                sci0(lat_now),
                sci0(lat_2030),
                "2e28",  # the paper's blog and simulator [erdil2024-blog]
                "1e31",
                "2e31",
                f"{dm_med - 2024:.1f}",
                cal_year(dm_med),
                "2024",
                "2030",
                "1e28",
                "3e31",
                "3e30",
                "1e32",
                "3",
                str(last),
            },
        },
        key,
    )


def test_every_number_on_the_main_slides_equals_the_datasets(deck):
    path, prs, _ = deck
    expected, top_input = expected_numbers(path)
    slides = list(prs.slides)
    for i, allowed in expected.items():
        found = set()
        for text in slide_texts(slides[i]):
            text = CITE.sub("", text).replace("80%", "").replace("10th", "").replace("90th", "")
            text = re.sub(r"arXiv:\S+", "", text)
            found |= set(NUMBER.findall(text))
        stray = found - allowed
        assert not stray, (i, slides[i].shapes.title.text, stray, allowed)
        assert found, i  # every main slide states numbers
    assert (
        top_input in " ".join(slide_texts(slides[4]))
        or "critical batch" in slides[4].shapes.title.text
    )


def test_recorded_figures_equal_their_text(deck):
    """Each number the deck builder records is shown on its slide, as formatted."""
    from forecast.queries.headline import load_forecast
    from forecast.report import deck as deck_module
    from forecast.report.changes import what_changed

    path, _, _ = deck
    fc = load_forecast(path)
    prs = deck_module.build_deck(fc, what_changed(fc, None))
    for i, figs in prs.wallcast_figures.items():
        text = " ".join(slide_texts(prs.slides[i]))
        for f in figs:
            assert f.text in text, (i, f)


DECIMAL_YEAR = re.compile(r"(?<![\d.])20\d\d\.\d(?!\d)")


def test_prose_gives_calendar_years_only(deck):
    """Issue 25 point 1: one year convention. Slide titles, slide text boxes and the report's
    executive summary give calendar years ('in 2029'); decimal years (2029.9) stay in tables
    and the 'what changed' list, whose moves are tenths of a year."""
    path, prs, report = deck
    from forecast.queries.headline import headline, load_forecast

    prose = [headline(load_forecast(path)).detail]
    for slide in prs.slides:
        prose.append(slide.shapes.title.text)
        if "changed" in slide.shapes.title.text:
            continue
        prose += [sh.text_frame.text for sh in slide.shapes if sh.has_text_frame]
    md = report["report_md"].read_text()
    prose.append(md.split("## Executive summary", 1)[1].strip().split("\n\n", 1)[0])
    for text in prose:
        assert not DECIMAL_YEAR.search(text), text


def test_the_headline_and_its_detail_round_the_hit_flop_alike(deck):
    """Issue 25 point 5: '6e29' in the headline and '5.8e29' in the next sentence read as two
    numbers; prose gives the hit FLOP to one significant figure in both."""
    path, _, _ = deck
    from forecast.queries.headline import headline, load_forecast

    h = headline(load_forecast(path))
    flops = re.findall(r"(\d(?:\.\d+)?e\d+) FLOP", f"{h.sentence} {h.detail}")
    assert len(flops) == 2 and flops[0] == flops[1], (h.sentence, h.detail)
    assert re.fullmatch(r"\de\d+", flops[0]), flops


def test_executive_summary_is_five_sentences_with_the_datasets_numbers(deck):
    path, _, report = deck
    md = report["report_md"].read_text()
    lead = md.split("## Executive summary", 1)[1].strip().split("\n\n", 1)[0]
    sentences = re.split(r"(?<=[.)])\s+(?=[A-Z])", lead.strip())
    assert len(sentences) == 5, sentences
    ds = fc_ds(path).sel(scenario="baseline")
    dm = ds["hit_year"].sel(wall="data_movement").values.ravel()
    cal = [math.floor(round(q(dm, p), 1)) for p in (0.5, 0.1, 0.9)]
    assert f"first, in {cal[0]} (80%: {cal[1]}–{cal[2]})" in sentences[0]
    c = ds["cost_multiplier"].sel(year=2032).values.ravel()
    assert f"cost {mult(q(c, 0.5))} what it would" in sentences[1]
    assert f"infeasible in {np.mean(np.isinf(c)):.0%} of draws" in sentences[1]
    days = q(ds["min_run_days"].sel(year=2032).values, 0.5)
    assert (
        f"no run shorter than {days:.0f} days" in sentences[2]
        or f"{days:.1f} days" in (sentences[2])
    )
    full = fc_ds(path)
    meds = [
        q(full["hit_year"].sel(scenario=s, wall="data_movement").values, 0.5)
        for s in full["scenario"].values
    ]
    # one year convention: calendar years in prose (decimal years only in tables)
    assert (
        f"falls in {cal_year(min(meds))} (" in sentences[3]
        and f"to {cal_year(max(meds))} (" in sentences[3]
    )
    effects = draw_effects(path)
    key, (tq, slope) = max(
        effects.items(), key=lambda kv: abs(kv[1][1] * (kv[1][0][2] - kv[1][0][0]))
    )
    assert f"now estimated at {quantity(key, 10 ** tq[1])}" in sentences[4]
    assert f"({key})" not in sentences[4]  # a plain name, never the registry key
    assert (
        f"{quantity(key, 10 ** (tq[1] - 1 / slope))} would bring it a year earlier" in sentences[4]
    )
    # the report also opens with the signposts
    assert md.index("## Executive summary") < md.index("## Signposts") < md.index("## Frontier")
    assert md.index("## Signposts") < md.index("Hit year and compute per scenario (table)")


def test_no_registry_key_reaches_a_slide(deck, tmp_path):
    """Readers see plain names: no dotted registry key in any slide's text or table, nor in the
    labels the tornado chart and the signposts draw; the appendix names every input plainly."""
    from forecast.priors.registry import PARAMETERS, input_label
    from forecast.queries.headline import load_forecast
    from forecast.report.executive import input_effects, signposts

    path, prs, _ = deck
    dotted = re.compile(r"\b(?:hardware|latency|network|training|scaling|frontier)\.[a-z0-9_]+")
    for i, slide in enumerate(prs.slides):
        text = "\n".join(slide_texts(slide))
        assert not dotted.search(text), (i, slide.shapes.title.text, dotted.findall(text))
    fc = load_forecast(path)
    labels = [e.label for e in input_effects(fc, "data_movement", top=8)]
    labels += [p.label for p in signposts(fc)]
    assert labels and not any(dotted.search(x) or "_" in x for x in labels), labels
    appendix = [
        c.text
        for s in prs.slides
        if "assumptions" in s.shapes.title.text
        for sh in s.shapes
        if sh.has_table
        for row in sh.table.rows
        for c in row.cells
    ]
    assert {input_label(k) for k in PARAMETERS if k in str(fc.attrs["priors_text"])} <= set(
        appendix
    )
    # the check itself bites: a slide with a key would fail it
    assert dotted.search("Total index of scaling.batch_tokens_2024")


def test_signposts_give_every_value_with_its_unit(deck):
    from forecast.queries.headline import load_forecast
    from forecast.report.executive import signposts

    path, prs, _ = deck
    posts = signposts(load_forecast(path))
    assert posts
    for p in posts:
        values = (p.today, p.earlier, p.later)
        cells = ["out of reach" if v is None else quantity(p.key, v) for v in values]
        assert p.cells()[1:4] == cells, (p.key, p.cells())
        # a value with a unit says it (a bare exponent has none)
        assert p.unit == "1" or re.search(r"[A-Za-zµ%]", cells[0].replace("e", "")), cells
    table = next(sh.table for sh in prs.slides[6].shapes if sh.has_table)
    shown = [[c.text for c in row.cells] for row in list(table.rows)[1:]]
    assert shown == [p.cells() for p in posts]


def test_no_text_frame_overflows(deck):
    from forecast.report.textfit import overflows

    _, prs, _ = deck
    assert overflows(prs) == []


def test_the_fit_check_catches_an_overflowing_box(deck):
    """The same check flags a box whose text does not fit, and a table that runs off the slide."""
    from pptx import Presentation
    from pptx.util import Inches, Pt

    from forecast.report.textfit import overflows, wrapped_lines

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(0.6))
    box.text_frame.word_wrap = True
    run = box.text_frame.paragraphs[0].add_run()
    run.text = "a sentence that is much too long for a box this small at this size"
    run.font.size = Pt(20)
    assert len(overflows(prs)) == 1
    run.text = "fits"
    assert overflows(prs) == []
    assert wrapped_lines("word " * 40, 100.0, 12.0) > 5
    shape = slide.shapes.add_table(12, 2, Inches(0.5), Inches(5), Inches(4), Inches(2))
    shape.table.cell(0, 0).text = "x"
    assert any("table" in p for p in overflows(prs))


def test_cited_sources_are_listed_in_docs_sources(deck):
    _, prs, report = deck
    text = (REPO / "docs/sources.md").read_text()
    listed = set(re.findall(r"^- \*\*\[([a-z0-9][a-z0-9.+-]*)\]\*\*", text, re.M))
    cited = set()
    for slide in prs.slides:
        for text in slide_texts(slide):
            cited |= set(CITE.findall(text))
    cited |= set(CITE.findall(report["report_md"].read_text()))
    from forecast.report.bibliography import DECK_SOURCES
    from forecast.report.executive import WATCH

    for _, watch in WATCH.values():
        cited |= set(CITE.findall(watch))
    cited |= {key for key, _ in DECK_SOURCES}
    assert {"erdil2024", "sevilla2024-2030"} <= cited
    assert cited <= listed, cited - listed


def test_the_sources_slide_lists_every_source_the_slides_cite(deck):
    """The deck stands alone: each cite key on a slide (short labels resolved) has its line on
    the sources slide, and the slide lists nothing uncited."""
    from forecast.report.bibliography import load_sources

    _, prs, _ = deck
    refs, aliases = load_sources()
    *slides, sources = list(prs.slides)
    assert sources.shapes.title.text == "Appendix: sources"
    cited_keys = {
        aliases.get(k, k) for s in slides for text in slide_texts(s) for k in CITE.findall(text)
    }
    listed = [
        m.group(1)
        for text in slide_texts(sources)
        for line in text.split("\n")
        if (m := re.match(r"\[([a-z0-9][a-z0-9-]*)\] \S", line))
    ]
    assert {"erdil2024", "erdil2024-blog", "epoch-simulator"} <= cited_keys
    assert set(listed) == cited_keys and len(listed) == len(set(listed))


def test_deck_of_a_forecast_without_cost_variables_still_builds(tmp_path):
    from pptx import Presentation

    from forecast.report import write_deck_file
    from forecast.report.textfit import overflows

    path = publish(synthetic_tree(FIRST_ID, seed=4, cost=False), tmp_path / "o", FIRST_ID)
    prs = Presentation(str(write_deck_file(path / "forecast.nc", tmp_path / "d")))
    titles = [s.shapes.title.text for s in prs.slides]
    assert 9 <= len(titles) <= 14 and not any("cost" in t for t in titles)
    assert not any("first forecast" in t for t in titles)  # no empty "what changed" slide
    assert overflows(prs) == []


def test_deck_of_a_one_scenario_forecast_gives_both_walls_not_a_range(tmp_path):
    """One scenario: the scenarios slide states each wall's median hit year, not "between 2029.9
    and 2029.9"."""
    from pptx import Presentation

    from forecast.queries.formatting import fmt_calendar_year
    from forecast.report import write_deck_file

    tree = synthetic_tree(FIRST_ID, seed=5).map_over_datasets(
        lambda ds: ds.sel(scenario=["baseline"]) if "scenario" in ds.dims else ds
    )
    path = publish(tree, tmp_path / "o", FIRST_ID) / "forecast.nc"
    prs = Presentation(str(write_deck_file(path, tmp_path / "d")))
    titles = [s.shapes.title.text for s in prs.slides]
    (title,) = [t for t in titles if t.startswith("Only the baseline scenario")]
    hit = xr.open_datatree(path, engine="h5netcdf")["forecast"]["hit_year"].sel(scenario="baseline")
    medians = [
        fmt_calendar_year(float(np.median(hit.sel(wall=w).values)), 2045)
        for w in ("data_movement", "latency")
    ]
    assert title == (
        f"Only the baseline scenario: data-movement wall in {medians[0]}, latency wall in "
        f"{medians[1]} (medians)"
    )
    assert not any(t.startswith("Across scenarios") for t in titles)


def _effect(key: str, swing: float, interval: tuple[float, float] | None):
    from forecast.report.executive import InputEffect

    base = 2029.0
    return InputEffect(
        key,
        np.array([1.0, 2.0, 3.0]),
        np.array([base - swing / 2, base, base + swing / 2]),
        base,
        "sensitivity",
        interval,
    )


def test_the_sensitivity_title_names_every_input_the_ranking_cannot_separate():
    """Issue 25 point 4: the leader alone only when the runner-up's swing is under 80% of the
    leader's and the Sobol total-index intervals do not overlap (0.27 [0.22, 0.33] vs
    0.26 [0.20, 0.35] overlap: both are named)."""
    from forecast.report.executive import lead_title, leading_effects, reader_label

    batch, flops, dom = (
        "scaling.batch_tokens_2024",
        "hardware.flops_growth_per_year",
        "hardware.scaleup_domain_size_growth_per_year",
    )
    # the case: 0.9 vs 0.8 years, overlapping intervals
    tied = [
        _effect(batch, 0.9, (0.22, 0.33)),
        _effect(flops, -0.8, (0.20, 0.35)),
        _effect(dom, 0.1, (0.0, 0.02)),
    ]
    assert [e.key for e in leading_effects(tied)] == [batch, flops]
    title = lead_title(tied)
    assert reader_label(batch) in title and reader_label(flops) in title
    assert "about equally (0.9 and 0.8 years)" in title
    # overlapping intervals alone tie them, even with a smaller swing
    assert (
        len(leading_effects([_effect(batch, 0.9, (0.22, 0.33)), _effect(flops, 0.3, (0.1, 0.25))]))
        == 2
    )
    # close swings alone tie them, even with separated intervals
    assert (
        len(leading_effects([_effect(batch, 0.9, (0.5, 0.6)), _effect(flops, 0.75, (0.1, 0.2))]))
        == 2
    )
    # a clear leader: far apart on both counts
    clear = [_effect(batch, 0.9, (0.5, 0.6)), _effect(flops, 0.3, (0.1, 0.2))]
    assert leading_effects(clear) == clear[:1]
    assert lead_title(clear) == (
        f"The {reader_label(batch)} moves the wall most: 0.9 years between its 10th and 90th percentile"
    )
    # without intervals (the draws fallback) only the swings decide
    assert len(leading_effects([_effect(batch, 0.9, None), _effect(flops, 0.5, None)])) == 1
    # three tied: all named, the largest swing quoted; four: two named and a count
    three = [
        _effect(batch, 0.9, (0.2, 0.3)),
        _effect(flops, 0.85, (0.2, 0.3)),
        _effect(dom, 1.0, (0.2, 0.3)),
    ]
    assert lead_title(three) == (
        f"The {reader_label(batch)}, the {reader_label(flops)} and the {reader_label(dom)} move "
        "the wall about equally (up to 1.0 years)"
    )
    four = [*three, _effect("scaling.batch_exponent", 0.9, (0.2, 0.3))]
    assert " and 2 more move the wall about equally (up to 1.0 years)" in lead_title(four)
    assert leading_effects([]) == []


def test_the_paper_comparison_shows_both_of_its_figures(deck):
    """Issue 25 point 7: the abstract's ~1e28 / ~1e31 and the blog's and simulator's 2e28 / 2e31,
    in the slide's title and text and as markers on its chart."""
    from forecast.queries.headline import load_forecast
    from forecast.report.executive import comparison

    path, prs, _ = deck
    slide = next(s for s in prs.slides if "against the paper's" in s.shapes.title.text)
    title = slide.shapes.title.text
    assert "~1e28 (abstract), 2e28 (blog)" in title
    text = " ".join(slide_texts(slide))
    assert "2e28 in [erdil2024-blog] and [epoch-simulator]" in text
    assert "latency wall: ~1e31 (blog: 2e31)" in text
    rows = comparison(load_forecast(path)).rows
    pairs = {r["label"]: (r["published"], r.get("published_also")) for r in rows}
    assert pairs["data-movement wall, 2024 frontier chip (trend)"] == (1e28, 2e28)
    assert pairs["latency wall, 2024 frontier chip (trend)"] == (1e31, 2e31)
    assert pairs["latency wall, 2030"] == (3e31, None)  # [sevilla2024-2030]


def test_the_sensitivity_title_fits_with_the_longest_input_names():
    """However the inputs tie, the title fits its box: the three longest reader labels."""
    from pptx import Presentation

    from forecast.priors.registry import PARAMETERS
    from forecast.report import slides as slides_module
    from forecast.report.executive import lead_title, reader_label
    from forecast.report.textfit import overflows

    longest = sorted(PARAMETERS, key=lambda k: -len(reader_label(k)))[:3]
    prs = Presentation()
    prs.slide_width, prs.slide_height = slides_module.WIDTH, slides_module.HEIGHT
    for n in (1, 2, 3):
        effects = [_effect(k, 10.0 - i, (0.2, 0.3)) for i, k in enumerate(longest[:n])]
        slides_module.new_slide(prs, lead_title(effects))
    assert overflows(prs) == [], [s.shapes.title.text for s in prs.slides]


# ----------------------------------------------------------------------------- what to decide


def _decision_text(d) -> str:
    return " ".join([d.title, *d.points])


def test_decisions_read_whole_on_a_forecast_with_infeasible_costs(tmp_path):
    """Review finding: with an infinite median cost the budget point read 'costs infeasible per
    FLOP'. Every recorded figure is on the slide, and no 'inf', 'never' or 'infeasible per'."""
    from forecast.queries.headline import load_forecast
    from forecast.report.decisions import decisions
    from forecast.report.executive import cost_summary

    path = publish(synthetic_tree(FIRST_ID, seed=1), tmp_path, FIRST_ID) / "forecast.nc"
    fc = load_forecast(path)
    d = decisions(fc)
    text = _decision_text(d)
    for bad in ("infeasible per", "up to infeasible", "than never", " inf ", "nan"):
        assert bad not in text, (bad, text)
    for f in d.figures:
        assert f.text in text, (f, text)
    c = cost_summary(fc)
    assert math.isinf(c.multiplier["median"])  # this synthetic forecast is past the wall
    assert f"cannot be trained in its run length in {c.figures['infeasible_fraction'].text}" in text


def test_decisions_lever_gives_the_largest_swing_of_the_tied_inputs(monkeypatch, deck):
    """Review finding: the leaders are ranked by Sobol index, so the runner-up may swing more;
    the lever point gives the largest swing, as the sensitivity slide's title does."""
    from forecast.queries.headline import load_forecast
    from forecast.report import decisions as module
    from forecast.report.executive import lead_title

    path, _, _ = deck
    effects = [
        _effect("scaling.batch_tokens_2024", 0.6, (0.2, 0.3)),
        _effect("hardware.flops_growth_per_year", 0.9, (0.19, 0.31)),
    ]
    monkeypatch.setattr(module, "input_effects", lambda fc, wall, top=6: effects)
    d = module.decisions(load_forecast(path))
    lever = next(p for p in d.points if p.startswith("Lever:"))
    assert "up to 0.9 years" in lever and "0.9" in lead_title(effects)
    assert "critical batch" in lever and "FLOP/s" in lever


def test_decisions_when_the_wall_is_rarely_hit(monkeypatch, deck):
    """A wall that fewer than one draw in ten reaches by the last year: the share is stated, no
    hit year is invented, and nothing recorded is missing from the text."""
    from dataclasses import replace

    from forecast.queries.headline import headline, load_forecast
    from forecast.report import decisions as module

    path, _, _ = deck
    fc = load_forecast(path)
    h = headline(fc)
    inf = math.inf
    rare = replace(
        h,
        year={**h.year, "median": inf, "lower": inf, "upper": inf},
        flop={**h.flop, "median": inf},
        p_hit=0.04,
    )
    monkeypatch.setattr(module, "headline", lambda fc: rare)
    d = module.decisions(fc)
    text = _decision_text(d)
    assert d.title == f"What to decide: the {h.wall.replace('_', '-')} wall is not expected by 2045"
    assert d.points[0].startswith("Timing: 4% of the draws reach the")
    assert not any(p.startswith("Size:") for p in d.points)  # no hit FLOP to plan around
    for f in d.figures:
        assert f.text in text, f
