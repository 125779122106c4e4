"""Issue 12 in the report and deck: each fitted input's prior against its posterior (chart and one
sentence each), where every input comes from (``input_provenance``), and old forecasts without
either still rendering.

The fixture is the synthetic published forecast of ``test_report.py`` with a ``/prior`` group,
the scaling-law variables in ``/posterior`` (plausible numbers from docs/evidence.md) and the
``input_provenance`` attr; every expected number is recomputed from the published file.
"""

from __future__ import annotations

import io
import json
import math
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st
from support.synthetic_forecast import SECOND_ID, synthetic_tree
from test_report import md_table

from forecast.priors.registry import FITTED_INPUTS, PARAMETERS, PROPAGATED_KEYS, input_label
from forecast.queries.formatting import fmt_count, fmt_value
from forecast.report.fitted_inputs import data_words
from forecast.store.publisher import publish

REPO = Path(__file__).resolve().parents[2]
HEADING = "## What the data says"
PROVENANCE_HEADING = "## Where each input comes from"
ROWS = {"depth": 88, "batch": 54, "utilization": 9, "domain": 6}


def _lognormal10(rng, median: float, dex: float, shape) -> np.ndarray:
    return 10.0 ** rng.normal(np.log10(median), dex, shape)


def evidence_draws(rng: np.random.Generator, shape) -> tuple[dict, dict]:
    """(prior, posterior) draws of the joint model's variables: priors as in docs/evidence.md,
    posteriors near its per-law fits (batch 29M, 20-40M; depth exponent 0.27; ...)."""
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    expit = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    prior = {
        "layer_exponent": rng.normal(0.27, 0.15, shape),
        "layers_at_reference": _lognormal10(rng, 119.8, 0.3, shape),
        "depth_noise_dex": np.abs(rng.normal(0, 0.2, shape)),
        "batch_tokens_2024": _lognormal10(rng, 60e6, 1.0, shape),
        "batch_exponent": rng.normal(0.36, 0.2, shape),
        "batch_shortfall_dex": np.abs(rng.normal(0, 0.5, shape)),
        "max_utilization": expit(rng.normal(logit(0.7), 0.6, shape)),
        "domain_growth_per_year": 10 ** rng.uniform(0.0, np.log10(1.8), shape),
    }
    post = {
        "layer_exponent": rng.normal(0.268, 0.011, shape),
        "layers_at_reference": _lognormal10(rng, 108, 0.021, shape),
        "depth_noise_dex": rng.normal(0.095, 0.007, shape),
        "batch_tokens_2024": _lognormal10(rng, 29e6, 0.11, shape),
        "batch_exponent": rng.normal(0.48, 0.06, shape),
        "batch_shortfall_dex": rng.normal(0.46, 0.1, shape),
        "max_utilization": expit(rng.normal(logit(0.57), 0.12, shape)),
        "domain_growth_per_year": _lognormal10(rng, 1.5, 0.03, shape),
    }
    return prior, post


def provenance_attr(priors_text: str, scenarios: list[str]) -> str:
    """``input_provenance`` for every propagated key of the priors: fitted keys with their
    law's row count, the others prior or fixed with their source; the second scenario overrides
    the batch level (a what-if)."""
    priors = tomllib.loads(priors_text)

    def entry(key: str) -> dict:
        section, name = key.split(".", 1)
        spec = priors.get(section, {}).get(name, {})
        if key in FITTED_INPUTS:
            f = FITTED_INPUTS[key]
            return {
                "kind": "fitted",
                "law": f.law,
                "table": f"data/{f.table}",
                "rows": ROWS[f.law],
                "prior_source": spec.get("source", ""),
            }
        kind = "fixed" if "value" in spec else "prior"
        return {"kind": kind, "source": spec.get("source", "")}

    out = {}
    for i, scenario in enumerate(scenarios):
        entries = {k: entry(k) for k in PROPAGATED_KEYS}
        if i == 1:
            entries["scaling.batch_tokens_2024"] = {
                "kind": "scenario",
                "source": "[mccandlish2018]",
            }
        out[scenario] = entries
    return json.dumps(out)


def evidence_tree(fid: str, seed: int = 0, provenance: bool = True) -> xr.DataTree:
    tree = synthetic_tree(fid, seed=seed)
    rng = np.random.default_rng(100 + seed)
    post = tree["posterior"].to_dataset()
    shape = (post.sizes["chain"], post.sizes["draw"])
    prior, posterior = evidence_draws(rng, shape)
    dims = ("chain", "draw")
    for name, v in posterior.items():
        post[name] = (dims, v)
    tree["posterior"] = post
    tree["prior"] = xr.Dataset({name: (dims, v) for name, v in prior.items()})
    tree["predictive_checks"] = CHECKS
    if provenance:
        tree.attrs["input_provenance"] = provenance_attr(
            tree.attrs["priors_text"], tree.attrs["scenarios"].split(",")
        )
    return tree


CHECKS = xr.Dataset(
    {
        "n_rows": ("likelihood", np.array([88, 6])),
        "loo_coverage": (("likelihood", "prob"), np.array([[0.58, 0.82, 0.94], [0.5, 0.67, 1.0]])),
        "loo_pit_mean": ("likelihood", np.array([0.48, 0.52])),
        "pareto_k_max": ("likelihood", np.array([0.36, 0.75])),
        "n_high_pareto_k": ("likelihood", np.array([0, 1])),
        "observed_site": ("likelihood", np.array(["log10_layers", "log10_domain"])),
        "table": ("likelihood", np.array(["data/model_shapes.csv", "data/scaleup_domains.csv"])),
    },
    coords={"likelihood": ["depth", "domain"], "prob": [0.5, 0.8, 0.95]},
)
"""A ``/predictive_checks`` group (the layout of :func:`forecast.inference.loo.loo_checks`)."""


def group(path: Path, name: str) -> xr.Dataset:
    with xr.open_dataset(path, group=name, engine="h5netcdf") as ds:
        return ds.load()


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    from forecast.report import generate_reports

    out = tmp_path_factory.mktemp("outputs")
    path = publish(evidence_tree(SECOND_ID, seed=2), out, SECOND_ID) / "forecast.nc"
    written = generate_reports(path, out / "r", accelerators=False, previous=False)
    return path, written


def quantiles(path: Path, group_name: str, variable: str) -> tuple[float, float, float]:
    v = group(path, group_name)[variable].values.ravel()
    lo, med, hi = np.quantile(v, [0.1, 0.5, 0.9])
    return float(lo), float(med), float(hi)


def section(md: str, heading: str) -> str:
    return md.split(heading, 1)[1].split("\n## ", 1)[0]


def slide_text(slide) -> str:
    from forecast.report.deck import slide_texts

    return "\n".join(slide_texts(slide))


# ----------------------------------------------------------------------------- formatting


@given(st.floats(min_value=1.0, max_value=9.9e14))
def test_count_reads_back_within_its_two_significant_digits(x):
    text = fmt_count(x)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kMBT]?)", text)
    assert m, text
    value = float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m.group(2)]
    assert abs(value - x) <= 0.05 * x  # two significant digits: within half a unit of the 2nd
    assert float(m.group(1)) < 1000  # the largest suffix that fits


def test_value_in_its_unit():
    assert [fmt_count(v) for v in (2.94e7, 3.6e8, 1.6e7, 1.24e9, 119.8)] == [
        "29M",
        "360M",
        "16M",
        "1.2B",
        "120",
    ]
    assert fmt_value(2.9e7, "tokens") == "29M"
    assert fmt_value(0.568, "fraction") == "57%"
    assert fmt_value(1.504, "x/yr") == "1.50x"
    assert fmt_value(108.4, "layers") == "108"
    assert fmt_value(0.2681, "1") == "0.27"


def test_quantity_carries_its_unit_for_every_registry_unit():
    """Every input a reader sees has its unit, through one formatter (no '2.3e7' beside '23M')."""
    from forecast.priors.registry import PARAMETERS
    from forecast.queries.formatting import fmt_quantity

    assert fmt_quantity(2.3e7, "tokens") == "23M tokens"
    assert fmt_quantity(4.05e11, "params") == "400B parameters"
    assert fmt_quantity(0.568, "fraction") == "57%"
    assert fmt_quantity(1.504, "x/yr") == "1.50x per year"
    assert fmt_quantity(5.82, "x") == "5.82x"
    assert fmt_quantity(3.2, "us") == "3.2 µs"
    assert fmt_quantity(90.0, "days") == "90 days"
    assert fmt_quantity(2.0e25, "FLOP") == "2.0e25 FLOP"
    assert fmt_quantity(0.2681, "1") == "0.27"
    assert fmt_quantity(20.0, "tokens/param") == "20 tokens per parameter"
    assert fmt_quantity(None, "tokens") == "n/a"
    assert (fmt_quantity(1.0, "experts"), fmt_quantity(8.0, "experts")) == ("1 expert", "8 experts")
    bare = [
        (2.3e7, "tokens", "23M"),
        (1.504, "x/yr", "1.50x"),
        (3.2, "us", "3.2"),
        (90.0, "days", "90"),
    ]
    assert [fmt_quantity(v, u, with_unit=False) for v, u, _ in bare] == [t for *_, t in bare]
    for spec in PARAMETERS.values():  # a unit the formatter does not know would print bare
        text = fmt_quantity(12.5, spec.unit)
        assert spec.unit == "1" or not re.fullmatch(r"[\d.]+", text), (spec.key, text)


def test_cost_multipliers_carry_two_significant_figures_at_most():
    """Issue 25 point 5: '83.2x' claimed a precision the draws lack; two figures everywhere."""
    from forecast.queries.formatting import fmt_multiplier

    cases = {1.0: "1.0x", 1.26: "1.3x", 9.96: "10x", 83.2: "83x", 125.0: "120x"}
    cases |= {2549.0: "2,500x", 9951.0: "1.0e4x", 123456.0: "1.2e5x", math.inf: "infeasible"}
    assert {x: fmt_multiplier(x) for x in cases} == cases
    for x in np.geomspace(1.0, 1e7, 200):  # never more than two significant digits
        digits = re.sub(r"e\d+", "", fmt_multiplier(float(x))).strip("x").replace(",", "")
        assert len(digits.replace(".", "").lstrip("0").rstrip("0")) <= 2, (x, digits)


def test_every_registry_key_has_a_plain_label():
    from forecast.priors.registry import PARAMETERS, ParameterSpec, input_label

    labels = [input_label(k) for k in PARAMETERS]
    assert len(set(labels)) == len(labels)  # one name, one input
    for key, label in zip(PARAMETERS, labels, strict=True):
        assert label and "_" not in label and key not in label, (key, label)
    assert input_label("scaling.some_new_thing") == "Some new thing"  # never the dotted key
    with pytest.raises(ValueError, match="plain label"):
        ParameterSpec("x.y", "1", "real", "propagated", "d", label="x_y")


# ----------------------------------------------------------------------------- report


def test_one_sentence_per_fitted_input_with_the_trees_quantiles(evidence):
    path, written = evidence
    md = written["report_md"].read_text()
    part = section(md, HEADING)
    bullets = [line[2:] for line in part.splitlines() if line.startswith("- ")]
    assert len(bullets) == len(FITTED_INPUTS)
    for key, spec in FITTED_INPUTS.items():
        unit = PARAMETERS[key].unit
        pr = [fmt_value(v, unit) for v in quantiles(path, "prior", spec.variable)]
        po = [fmt_value(v, unit) for v in quantiles(path, "posterior", spec.variable)]
        line = next(b for b in bullets if f"fitted to {ROWS[spec.law]} " in b and pr[1] in b)
        assert f"prior median {pr[1]}" in line and f"80%: {pr[0]}–{pr[2]})" in line, line
        assert f"posterior {po[1]}" in line and f"({po[0]}–{po[2]})" in line, line
        noun = data_words(spec.table)  # the data by what it holds, never its file (issue 25)
        assert f"{ROWS[spec.law]} {noun} ({spec.law} law)." in line and ".csv" not in line
    # independently of the formatter: the batch sentence's posterior median in tokens
    batch = next(b for b in bullets if b.startswith("The 2024 critical batch"))
    median = float(re.search(r"posterior (\d+(?:\.\d+)?)M tokens", batch).group(1)) * 1e6
    true = quantiles(path, "posterior", "batch_tokens_2024")[1]
    assert abs(median - true) <= 0.05 * true
    assert "report_files/prior_posterior.png" in part
    assert md.index(HEADING) < md.index("## What drives the uncertainty")


def test_prior_posterior_chart_panels_show_the_trees_intervals(evidence):
    from forecast.queries.headline import load_forecast
    from forecast.report import charts
    from forecast.report.fitted_inputs import fitted_inputs

    path, _ = evidence
    items = fitted_inputs(load_forecast(path))
    fig = charts.prior_posterior_chart(items)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == len(FITTED_INPUTS) == len(items)
    for ax, it in zip(axes, items, strict=True):
        x = ax.get_xlabel()
        assert "(" in x and x.endswith(")"), x  # a unit
        assert ax.get_ylabel() == "Density (peak = 1)"
        spec = FITTED_INPUTS[it.key]
        for group_name in ("prior", "posterior"):
            lo, med, hi = quantiles(path, group_name, spec.variable)
            bars = [ln.get_xdata() for ln in ax.lines if len(ln.get_xdata()) == 2]
            assert any(np.allclose(b, [lo, hi]) for b in bars), (it.key, group_name)
            dots = [ln.get_xdata() for ln in ax.lines if len(ln.get_xdata()) == 1]
            assert any(np.allclose(d, [med]) for d in dots), (it.key, group_name)
        log = it.key in ("scaling.batch_tokens_2024", "scaling.layers_at_reference")
        assert ax.get_xscale() == ("log" if log else "linear"), it.key


def test_provenance_table_lists_every_input_of_the_baseline(evidence):
    path, written = evidence
    md = written["report_md"].read_text()
    part = section(md, PROVENANCE_HEADING)
    with xr.open_datatree(path, engine="h5netcdf") as tree:
        prov = json.loads(tree.attrs["input_provenance"])["baseline"]
    # the input by its plain name, then its priors-file key as code
    named = {r[0]: r for r in md_table(part, "input | kind | from")}
    rows = {re.fullmatch(r".+ \(`([\w.]+)`\)", name).group(1): r for name, r in named.items()}
    assert set(rows) == set(prov) == set(PROPAGATED_KEYS)
    for key, entry in prov.items():
        assert rows[key][0] == f"{input_label(key)} (`{key}`)"
        assert rows[key][1] == entry["kind"]
        if entry["kind"] == "fitted":  # the data by what it holds, not by its file
            assert rows[key][2].startswith(f"fitted to {entry['rows']} ")
            assert data_words(entry["table"]) in rows[key][2] and ".csv" not in rows[key][2]
        else:  # the cite keys of its source, each listed in docs/sources.md
            cites = re.findall(r"\[([a-z0-9][a-z0-9.+-]*)\]", entry["source"])
            assert cites and all(f"[{c}]" in rows[key][2] for c in cites), key
    fitted = sum(e["kind"] == "fitted" for e in prov.values())
    prior = sum(e["kind"] == "prior" for e in prov.values())
    assert f"{fitted} fitted to data" in part and f"{prior} drawn from a prior" in part
    batch = input_label("scaling.batch_tokens_2024")
    assert f"late-walls: {batch} (`scaling.batch_tokens_2024`)." in part  # the scenario's what-if
    # the propagated count reconciled with the deck's count of the priors file (issue 25)
    with xr.open_datatree(path, engine="h5netcdf") as tree:
        priors = tomllib.loads(str(tree.attrs["priors_text"]))
    from test_report import _prior_keys

    entries = dict(_prior_keys(priors))
    fixed = sum("value" in e for e in entries.values())
    uncertain = len(entries) - fixed
    scen = sum(e["kind"] == "scenario" for e in prov.values())
    assert uncertain > fitted + prior + scen  # the baseline's trend inputs
    assert (
        f"The priors file holds {uncertain} uncertain and {fixed} fixed assumptions (the "
        f"deck's count): the other {uncertain - fitted - prior - scen} uncertain ones are the "
        "hardware and frontier-compute trend inputs" in part
    )


def joint_sensitivity(kinds: bool = True) -> xr.Dataset:
    """The synthetic Sobol ranking of ``test_report_analyses`` as the joint model's: the fitted
    inputs (and trend growth) marked as drawn from the posterior, as ``wallcast analyse`` does."""
    from test_report_analyses import synthetic_sensitivity

    from forecast.analyses.sensitivity import sensitivity_dataset

    ds = sensitivity_dataset(synthetic_sensitivity())
    if kinds:
        fitted = [k in FITTED_INPUTS or k.startswith("frontier.") for k in ds["input"].values]
        ds["input_kind"] = ("input", np.where(fitted, "posterior", "prior"))
    return ds


def priors_only_sensitivity() -> xr.Dataset:
    """The priors-only ranking: the same inputs, the batch level's total index twice as large."""
    ds = joint_sensitivity(kinds=False)
    batch = ds["input"] == "scaling.batch_tokens_2024"
    for name in ("total", "total_low", "total_high"):
        ds[name] = xr.where(batch, ds[name] + 0.2, ds[name]).transpose("target", "input")
    return ds


def test_sobol_caption_says_fitted_inputs_enter_through_the_posterior(tmp_path):
    from forecast.report import write_report_files
    from forecast.store.publisher import add_groups

    path = publish(evidence_tree(SECOND_ID, seed=6), tmp_path / "o", SECOND_ID) / "forecast.nc"
    add_groups(path, {"sensitivity": joint_sensitivity()})
    md = write_report_files(path, tmp_path / "r", accelerators=False)["report_md"].read_text()
    part = section(md, "## What drives the uncertainty")
    sens = group(path, "sensitivity")
    fitted = sens["input"].values[sens["input_kind"].values == "posterior"].astype(str)
    assert len(fitted) == 3  # batch level, depth exponent, frontier growth
    assert f"the {len(fitted)} inputs the forecast fitted to data" in part
    rows = md_table(part, "wall | rank | input")
    for r in rows:  # 'Plain name (`key`)': the key a priors file uses, after the name
        r[2] = re.fullmatch(r".+ \(`([\w.]+)`\)", r[2]).group(1)
    kinds = dict(zip(sens["input"].values.astype(str), sens["input_kind"].values, strict=True))
    assert rows and all(r[-1] == kinds[r[2]] for r in rows)  # column "drawn from"
    assert {r[2] for r in rows if r[-1] == "posterior"} == set(fitted)
    assert "inputs fitted to data enter through their joint posterior" in part  # the caption
    assert "Before → after" not in part  # no priors-only ranking stored
    from forecast.priors.registry import input_label
    from forecast.queries.headline import load_forecast
    from forecast.report import charts
    from forecast.report.drivers import sobol_drivers

    fig = charts.sobol_chart(sobol_drivers(load_forecast(path)))
    for ax in fig.axes:
        for label in (t.get_text() for t in ax.get_yticklabels()):
            plain = {input_label(k) for k in fitted}
            assert label.endswith(" *") == (label.removesuffix(" *") in plain), label


def test_sobol_before_after_for_the_batch_level(tmp_path):
    from pptx import Presentation

    from forecast.report import generate_reports
    from forecast.store.publisher import add_groups

    path = publish(evidence_tree(SECOND_ID, seed=8), tmp_path / "o", SECOND_ID) / "forecast.nc"
    add_groups(
        path, {"sensitivity": joint_sensitivity(), "sensitivity_prior": priors_only_sensitivity()}
    )
    written = generate_reports(path, tmp_path / "r", accelerators=False, previous=False)
    part = section(written["report_md"].read_text(), "## What drives the uncertainty")
    after, before = group(path, "sensitivity"), group(path, "sensitivity_prior")
    for wall, label in (("data_movement", "data-movement"), ("latency", "latency")):
        target = f"{wall}_hit_year"

        def ci(ds, target=target):
            s = ds.sel(target=target, input="scaling.batch_tokens_2024")
            return f"{float(s['total']):.2f} [{float(s['total_low']):.2f}, {float(s['total_high']):.2f}]"

        def rank(ds, target=target):
            total = ds["total"].sel(target=target).values
            order = list(ds["input"].values[np.argsort(-total, kind="stable")])
            return order.index("scaling.batch_tokens_2024") + 1

        assert (
            f"{label} wall: total index of scaling.batch_tokens_2024 {ci(before)} "
            f"(rank {rank(before)}) with every input from its prior → {ci(after)} "
            f"(rank {rank(after)}) with the fitted inputs from the posterior." in part
        )
    prs = Presentation(str(written["deck"]))
    tornado = next(s for s in prs.slides if "the wall most" in s.shapes.title.text)
    key = {"target": "data_movement_hit_year", "input": "scaling.batch_tokens_2024"}
    b, a = (float(ds["total"].sel(key)) for ds in (before, after))
    text = slide_text(tornado)
    assert f"critical batch size: {b:.2f} with priors only → {a:.2f} now" in text
    assert "posterior when fitted to data" in text


# ----------------------------------------------------------------------------- old forecasts


def test_old_forecast_renders_without_the_sections(tmp_path):
    from pptx import Presentation

    from forecast.report import generate_reports
    from forecast.report.html import NO_EVIDENCE

    path = publish(synthetic_tree(SECOND_ID, seed=4), tmp_path / "o", SECOND_ID) / "forecast.nc"
    written = generate_reports(path, tmp_path / "r", accelerators=False, previous=False)
    md = written["report_md"].read_text()
    assert section(md, HEADING).strip() == NO_EVIDENCE
    assert PROVENANCE_HEADING not in md and "prior_posterior.png" not in md
    titles = [s.shapes.title.text for s in Presentation(str(written["deck"])).slides]
    assert not any(t.startswith("Appendix: fitted to data") for t in titles)


@pytest.mark.parametrize("attr", [None, "{not json", "[]"])
def test_forecast_with_prior_group_but_no_provenance(tmp_path, attr):
    """Without a readable ``input_provenance`` the chart and sentences stay, without row counts."""
    from forecast.report import write_report_files
    from forecast.report.html import NO_PROVENANCE

    tree = evidence_tree(SECOND_ID, seed=5, provenance=False)
    if attr is not None:
        tree.attrs["input_provenance"] = attr
    path = publish(tree, tmp_path / "o", SECOND_ID) / "forecast.nc"
    md = write_report_files(path, tmp_path / "r", accelerators=False)["report_md"].read_text()
    part = section(md, HEADING)
    assert NO_PROVENANCE in part and PROVENANCE_HEADING not in md
    assert "fitted to published models (batch law)." in part  # no row count to give


# ----------------------------------------------------------------------------- deck


def test_deck_slide_reads_back_and_fits(evidence, tmp_path):
    """The prior-against-posterior slide with every analysis present (9 slides at most before
    the appendix, which holds the assumptions table and the sources)."""
    from pptx import Presentation
    from test_report_analyses import synthetic_backtest

    from forecast.analyses.backtest import backtest_dataset
    from forecast.report import write_deck_file
    from forecast.report.textfit import overflows
    from forecast.store.publisher import add_groups

    path = publish(evidence_tree(SECOND_ID, seed=7), tmp_path / "o", SECOND_ID) / "forecast.nc"
    add_groups(
        path, {"sensitivity": joint_sensitivity(), "sensitivity_prior": priors_only_sensitivity()}
    )
    add_groups(path, {"backtest": backtest_dataset(synthetic_backtest())})
    prs = Presentation(str(write_deck_file(path, tmp_path / "d", previous=False)))
    titles = [s.shapes.title.text for s in prs.slides]
    main = [t for t in titles if not t.startswith("Appendix: ")]
    # the title slide, the answer, 3-5 evidence slides, what to watch and what to decide; the
    # appendix: what the data says, assumptions (1-2 slides), the scenarios, method, sources
    assert 9 <= len(main) <= 10 and 5 <= len(titles) - len(main) <= 6, titles
    assert titles[: len(main)] == main  # the appendix comes last
    assert main[-1].startswith("What to decide") and main[-2].startswith("Watch the ")
    assert overflows(prs) == []
    i = next(k for k, t in enumerate(titles) if t.startswith("Appendix: fitted to data"))
    assert i == len(main)  # the appendix opens with the evidence behind the inputs
    lo, med, hi = (fmt_count(v) for v in quantiles(path, "posterior", "batch_tokens_2024"))
    prior_med = fmt_count(quantiles(path, "prior", "batch_tokens_2024")[1])
    assert titles[i] == (
        f"Appendix: fitted to data, the 2024 critical batch is {med} tokens (80%: {lo}–{hi}), "
        f"not the prior's {prior_med}"
    )
    slide = prs.slides[i]
    assert any(s.shape_type == 13 for s in slide.shapes)  # the chart
    with xr.open_datatree(path, engine="h5netcdf") as tree:
        prov = json.loads(tree.attrs["input_provenance"])["baseline"]
    kinds = [e["kind"] for e in prov.values()]
    text = slide_text(slide)
    assert (
        f"Inputs: {kinds.count('fitted')} fitted to data (published models, "
        f"shipped systems), {kinds.count('prior')} priors with a public source, "
        f"{kinds.count('fixed')} fixed" in text
    )
    tornado = next(k for k, t in enumerate(titles) if "the wall most" in t)
    assert "posterior when fitted to data" in slide_text(prs.slides[tornado])


def test_report_shows_the_loo_checks_of_the_tree(evidence):
    from forecast.report.checks import CHECKS_NOTE

    _, written = evidence
    md = written["report_md"].read_text()
    part = section(md, HEADING)
    assert CHECKS_NOTE in part
    lines = {line.split("|")[1].strip(): line for line in part.splitlines() if line.count("|") > 6}
    assert "| published models | 88 | 58% | 82% | 94% | 0.36 |" in lines["depth"]
    assert "| 6 | 50% | 67% | 100% | 0.75 (1 above 0.7) |" in lines["domain"]


def test_assumptions_appendix_reads_prior_and_posterior_with_units(evidence):
    """The deck's appendix row of each input: its plain name, the prior's quantiles and, where
    fitted (joint model or the trends), the posterior's, recomputed here from the stored draws."""
    from forecast.priors import parse_prior
    from forecast.queries.headline import load_forecast
    from forecast.report.fitted_inputs import assumption_rows

    path, _ = evidence
    fc = load_forecast(path)
    rows = {r.key: r for r in assumption_rows(fc)}
    priors = tomllib.loads(str(fc.attrs["priors_text"]))
    assert len(rows) == sum(
        1
        for table in priors.values()
        if isinstance(table, dict)
        for v in table.values()
        if isinstance(v, dict) and "source" in v
    )
    batch = rows["scaling.batch_tokens_2024"]
    lo, med, hi = quantiles(path, "posterior", "batch_tokens_2024")
    assert batch.label == "Critical batch of a 2024 frontier model"
    assert batch.fitted == f"{fmt_count(med)} tokens ({fmt_count(lo)}–{fmt_count(hi)})"
    pr = parse_prior("scaling.batch_tokens_2024", priors["scaling"]["batch_tokens_2024"])
    plo, pmed, phi = (fmt_count(pr.quantile(p)) for p in (0.1, 0.5, 0.9))
    assert batch.prior == f"{pmed} tokens ({plo}–{phi})"
    # a hardware growth: 10^slope of its series in the trends' posterior
    slope = group(path, "posterior")["slope"].sel(metric="flops").values.ravel()
    glo, gmed, ghi = np.quantile(10**slope, [0.1, 0.5, 0.9])
    assert rows["hardware.flops_growth_per_year"].fitted == (
        f"{gmed:.2f}x per year ({glo:.2f}x–{ghi:.2f}x)"
    )
    days = rows["training.duration_days"]
    assert days.fixed and days.prior.startswith("fixed at ") and days.prior.endswith(" days")
    assert days.fitted == "—"
    for r in rows.values():
        assert "_" not in r.label and "." not in r.label.split(" (")[0], r.label


def test_sobol_chart_names_inputs_plainly(tmp_path):
    """The Sobol chart's rows are the registry's plain names (fitted ones starred), no key."""
    from forecast.priors.registry import input_label
    from forecast.queries.headline import load_forecast
    from forecast.report import charts
    from forecast.report.drivers import sobol_drivers
    from forecast.store.publisher import add_groups

    path = publish(evidence_tree(SECOND_ID, seed=3), tmp_path / "o", SECOND_ID) / "forecast.nc"
    add_groups(path, {"sensitivity": joint_sensitivity()})
    sd = sobol_drivers(load_forecast(path))
    fig = charts.sobol_chart(sd)
    fig.savefig(io.BytesIO(), format="png")
    shown = {t.get_text().removesuffix(" *") for ax in fig.axes for t in ax.get_yticklabels()}
    expected = {input_label(k) for t in sd.targets for k in t.inputs}
    assert shown and shown <= expected and not any("." in x or "_" in x for x in shown), shown
