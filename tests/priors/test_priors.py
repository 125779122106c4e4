"""Tests of the prior files, their registry and their validating parser (forecast/priors/)."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import special

from forecast.config.errors import WallcastError
from forecast.priors import (
    PARAMETERS,
    PROPAGATED_KEYS,
    TREND_KEYS,
    PriorError,
    PriorSet,
    default_priors_path,
    load_overlay,
    load_priors,
    loads,
    parse_prior,
    registry,
)

PRIORS_DIR = Path(__file__).resolve().parents[2] / "priors"
SHIPPED = [PRIORS_DIR / "baseline.toml", PRIORS_DIR / "epoch-2030.toml"]


@pytest.fixture(scope="module")
def baseline() -> PriorSet:
    return load_priors(default_priors_path())


def write(tmp_path: Path, text: str, name: str = "bad.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


# ---- shipped files --------------------------------------------------------------------------


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_files_load_with_every_key(path: Path) -> None:
    ps = load_priors(path)
    assert set(ps.keys()) == set(PARAMETERS)
    assert ps.keys() == list(PARAMETERS)  # registry order
    for key, prior in ps.priors.items():
        assert prior.source.strip(), key
        assert prior.note.strip(), key
        assert prior.file == str(path)
        assert prior.line is not None and f"[{key}]" in ps.text.splitlines()[prior.line - 1]
        draws = prior.sample(np.random.default_rng(0), 1000)
        assert np.all(np.isfinite(draws)), key
        dom = PARAMETERS[key].domain
        if dom == "positive":
            assert np.all(draws > 0), key
        elif dom == "unit_interval":
            assert np.all((draws >= 0) & (draws <= 1)), key


def test_default_path_is_baseline(baseline: PriorSet) -> None:
    assert default_priors_path() == PRIORS_DIR / "baseline.toml"
    assert baseline.name == "baseline"
    assert baseline["training.duration_days"].params == {"value": 90.0}
    assert baseline["scaling.batch_reference_params"].median() == 5.6e11


def test_epoch_2030_values() -> None:
    ps = load_priors(PRIORS_DIR / "epoch-2030.toml")
    assert ps.name == "epoch-2030"
    assert ps["latency.allreduce_base_us"].median() == 7.4
    assert ps["latency.kernel_us"].median() == 4.5
    dur = ps["training.duration_days"]
    assert dur.quantile(0.0) == pytest.approx(60) and dur.quantile(1.0) == pytest.approx(274)
    for key, qs in {
        "scaling.batch_tokens_2024": (16e6, 60e6, 360e6),
        "scaling.batch_exponent": (0.31, 0.36, 0.41),
        "scaling.layer_exponent": (0.21, 0.27, 0.33),
    }.items():
        got = ps[key].ppf(np.array([0.1, 0.5, 0.9]))
        np.testing.assert_allclose(got, qs, rtol=1e-6)


# ---- fitting ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "quantiles", "dist"),
    [
        ("scaling.batch_tokens_2024", {"p10": 16e6, "p50": 60e6, "p90": 360e6}, "split_lognormal"),
        (
            "hardware.flops_growth_per_year",
            {"p10": 1.3, "p50": 1.45, "p90": 1.65},
            "split_lognormal",
        ),
        ("scaling.layer_exponent", {"p10": 0.21, "p50": 0.27, "p90": 0.33}, "normal"),
        ("scaling.batch_exponent", {"p10": 0.2, "p50": 0.36, "p90": 0.41}, "split_normal"),
        ("training.max_utilization", {"p10": 0.55, "p50": 0.7, "p90": 0.8}, "split_logitnormal"),
        ("latency.kernel_us", {"p25": 3.0, "p75": 6.0}, "lognormal"),
        ("latency.kernel_us", {"p05": 2.0, "p10": 2.5, "p50": 4.5, "p75": 5.0, "p95": 9.0}, None),
        ("latency.kernel_us", {"p10": 2.0, "p25": 3.0, "p90": 9.0}, "quantile_lognormal"),
    ],
)
def test_quantiles_reproduced_exactly(
    key: str, quantiles: dict[str, float], dist: str | None
) -> None:
    prior = parse_prior(key, {"quantiles": quantiles, "source": "test"})
    if dist is not None:
        assert prior.dist == dist
    probs = np.array([int(k[1:]) / 100 for k in quantiles])
    np.testing.assert_allclose(prior.ppf(probs), list(quantiles.values()), rtol=1e-6)
    if "p50" in quantiles:
        assert prior.median() == pytest.approx(quantiles["p50"], rel=1e-12)


def test_split_normal_scales() -> None:
    prior = parse_prior(
        "scaling.batch_tokens_2024",
        {"quantiles": {"p10": 16e6, "p50": 60e6, "p90": 360e6}, "source": "x"},
    )
    z90 = special.ndtri(0.9)
    assert prior.params["sigma_lo"] == pytest.approx(np.log(60 / 16) / z90)
    assert prior.params["sigma_hi"] == pytest.approx(np.log(360 / 60) / z90)
    assert prior.describe() == "split_lognormal median 6.00e7, 80% 1.60e7–3.60e8 tokens"


@pytest.mark.parametrize(
    ("key", "low", "high", "dist"),
    [
        ("latency.kernel_us", 2.0, 8.0, "lognormal"),
        ("scaling.batch_exponent", -0.1, 0.5, "normal"),
        ("network.collective_efficiency", 0.6, 0.95, "logitnormal"),
    ],
)
def test_interval90_gives_5_and_95_percent(key: str, low: float, high: float, dist: str) -> None:
    prior = parse_prior(key, {"interval90": [low, high], "source": "x"})
    assert prior.dist == dist
    np.testing.assert_allclose(prior.ppf(np.array([0.05, 0.95])), [low, high], rtol=1e-12)


def test_named_distributions() -> None:
    src = {"source": "x"}
    ln = parse_prior("latency.kernel_us", {"dist": "lognormal", "median": 4.5, "sigma": 0.3, **src})
    assert ln.quantile(0.5) == pytest.approx(4.5)
    assert ln.quantile(0.9) == pytest.approx(4.5 * np.exp(0.3 * special.ndtri(0.9)))
    nm = parse_prior("scaling.batch_exponent", {"dist": "normal", "mean": 0.36, "sd": 0.04, **src})
    assert nm.quantile(0.9) == pytest.approx(0.36 + 0.04 * special.ndtri(0.9))
    un = parse_prior(
        "training.max_utilization", {"dist": "uniform", "low": 0.5, "high": 0.8, **src}
    )
    assert un.quantile(0.25) == pytest.approx(0.575)
    lu = parse_prior(
        "training.duration_days", {"dist": "loguniform", "low": 60, "high": 240, **src}
    )
    assert lu.median() == pytest.approx(120)
    tr = parse_prior(
        "latency.kernel_us", {"dist": "triangular", "low": 2, "mode": 4, "high": 8, **src}
    )
    assert tr.quantile(1 / 3) == pytest.approx(4)  # F(mode) = (mode-low)/(high-low)
    be = parse_prior("network.collective_efficiency", {"dist": "beta", "a": 8, "b": 2, **src})
    assert 0.7 < be.median() < 0.9
    st_ = parse_prior(
        "scaling.layer_exponent", {"dist": "student_t", "df": 5, "loc": 0.27, "scale": 0.03, **src}
    )
    assert st_.median() == pytest.approx(0.27)
    pt = parse_prior("training.bytes_per_number", {"value": 2, **src})
    assert np.array_equal(pt.ppf(np.array([0.0, 0.3, 1.0])), [2.0, 2.0, 2.0])
    assert pt.describe() == "fixed 2 bytes"


def test_unit_checked(tmp_path: Path) -> None:
    ok = parse_prior("latency.kernel_us", {"value": 4.5, "unit": "µs", "source": "x"})
    assert ok.unit == "us"
    with pytest.raises(PriorError, match="unit"):
        parse_prior("latency.kernel_us", {"value": 4.5, "unit": "ms", "source": "x"})


# ---- sampling and sets ------------------------------------------------------------------------


def test_sample_reproducible_and_matches_quantiles(baseline: PriorSet) -> None:
    n = 200_000
    a = baseline.sample(n, seed=7)
    b = baseline.sample(n, seed=7)
    c = baseline.sample(n, seed=8)
    assert set(a) == set(PARAMETERS)
    for key in PARAMETERS:
        assert np.array_equal(a[key], b[key])
        assert a[key].shape == (n,)
    assert not np.array_equal(a["scaling.batch_tokens_2024"], c["scaling.batch_tokens_2024"])
    # empirical CDF at the given quantiles: sd of a proportion is sqrt(p(1-p)/n) <= 0.0011
    for key in ("scaling.batch_tokens_2024", "training.max_utilization", "latency.kernel_us"):
        x = a[key]
        for q in (0.1, 0.5, 0.9):
            frac = np.mean(x <= baseline[key].quantile(q))
            assert abs(frac - q) < 0.006, (key, q, frac)
    # different keys are independent streams
    r = np.corrcoef(np.log(a["scaling.batch_tokens_2024"]), np.log(a["latency.kernel_us"]))[0, 1]
    assert abs(r) < 0.02


def test_prior_sample_uses_ppf(baseline: PriorSet) -> None:
    prior = baseline["scaling.batch_tokens_2024"]
    x = prior.sample(np.random.default_rng(3), 5)
    u = np.random.default_rng(3).random(5)
    np.testing.assert_array_equal(x, prior.ppf(u))


def test_overlay_replaces_only_given_keys(tmp_path: Path, baseline: PriorSet) -> None:
    path = write(
        tmp_path,
        """
        [meta]
        name = "fp8-long"

        [training.bytes_per_number]
        value = 1
        source = "FP8"

        [training.duration_days]
        quantiles = { p10 = 90, p50 = 180, p90 = 270 }
        source = "longer runs"
        """,
        "fp8-long.toml",
    )
    scen = load_overlay(path)
    assert scen.keys() == ["training.duration_days", "training.bytes_per_number"]
    merged = baseline.overlay(scen)
    assert merged.name == "fp8-long"
    assert merged.base is baseline
    assert merged.keys() == list(PARAMETERS)
    assert merged["training.bytes_per_number"].median() == 1
    assert merged["training.duration_days"].quantile(0.9) == pytest.approx(270)
    for key in PARAMETERS:
        if key not in scen:
            assert merged[key] is baseline[key]
    # a key's draws do not change when the overlay replaces other keys
    s0, s1 = baseline.sample(100, seed=3), merged.sample(100, seed=3)
    assert np.array_equal(s0["scaling.batch_tokens_2024"], s1["scaling.batch_tokens_2024"])
    # an overlay file alone is not a full prior file
    with pytest.raises(PriorError, match="missing required parameter"):
        load_priors(path)


def test_uncertain_keys_and_uniform_design(baseline: PriorSet) -> None:
    unc = baseline.uncertain_keys()
    assert "scaling.batch_tokens_2024" in unc
    assert "training.duration_days" not in unc
    assert all(baseline[k].dist != "point" for k in unc)
    keys = ["scaling.batch_tokens_2024", "scaling.batch_exponent"]
    u = np.array([[0.1, 0.5], [0.5, 0.9], [0.9, 0.1]])
    out = baseline.sample_from_uniforms(u, keys)
    np.testing.assert_allclose(out["scaling.batch_tokens_2024"], [16e6, 60e6, 360e6], rtol=1e-9)
    np.testing.assert_allclose(out["scaling.batch_exponent"], [0.36, 0.41, 0.31], rtol=1e-9)
    assert set(out) == set(PARAMETERS)
    np.testing.assert_allclose(out["latency.kernel_us"], 4.5)
    assert set(baseline.sample_from_uniforms(u, keys, fill=None)) == set(keys)
    with pytest.raises(ValueError, match="shape"):
        baseline.sample_from_uniforms(u[:, :1], keys)


def test_unknown_key_lookup_suggests(baseline: PriorSet) -> None:
    with pytest.raises(KeyError, match="scaling.batch_exponent"):
        baseline["scaling.batch_exponant"]


# ---- validation errors: file name, key and line -------------------------------------------

GOOD_HEAD = """
[meta]
name = "t"

[latency.kernel_us]
value = 4.5
source = "x"

"""  # the next table header is on line 8


@pytest.mark.parametrize(
    ("body", "key", "match"),
    [
        (
            '[scaling.batch_tokens_2042]\nvalue = 1\nsource = "x"\n',
            "scaling.batch_tokens_2042",
            "did you mean 'scaling.batch_tokens_2024'",
        ),
        (
            '[latency.allreduce_base_us]\ndist = "gamma"\nsource = "x"\n',
            "latency.allreduce_base_us",
            "unknown distribution 'gamma'",
        ),
        (
            '[scaling.batch_exponent]\nquantiles = { p50 = 0.3, p10 = 0.2 }\nsource = "x"\n',
            "scaling.batch_exponent",
            "out of order",
        ),
        (
            '[scaling.batch_exponent]\nquantiles = { p10 = 0.3, p90 = 0.2 }\nsource = "x"\n',
            "scaling.batch_exponent",
            "values out of order",
        ),
        (
            '[scaling.batch_exponent]\nquantiles = { p10 = 0.2, median = 0.3 }\nsource = "x"\n',
            "scaling.batch_exponent",
            "not like pNN",
        ),
        (
            '[scaling.batch_exponent]\nquantiles = { p1 = 0.2, p50 = 0.3 }\nsource = "x"\n',
            "scaling.batch_exponent",
            "not like pNN",
        ),
        (
            '[scaling.batch_exponent]\ndist = "normal"\nmean = 0.3\nsd = 0\nsource = "x"\n',
            "scaling.batch_exponent",
            "non-positive sd",
        ),
        (
            '[latency.intra_domain_hop_us]\ndist = "lognormal"\nmedian = 0.6\nsigma = -0.1\nsource = "x"\n',
            "latency.intra_domain_hop_us",
            "non-positive sigma",
        ),
        (
            '[scaling.layer_exponent]\ndist = "student_t"\ndf = 3\nloc = 0.3\nscale = 0\nsource = "x"\n',
            "scaling.layer_exponent",
            "non-positive scale",
        ),
        (
            '[training.duration_days]\ndist = "uniform"\nlow = 90\nhigh = 60\nsource = "x"\n',
            "training.duration_days",
            "low = 90 >= high = 60",
        ),
        (
            '[training.duration_days]\ninterval90 = [90, 90]\nsource = "x"\n',
            "training.duration_days",
            "low = 90 >= high = 90",
        ),
        (
            "[training.duration_days]\nvalue = 90\n",
            "training.duration_days",
            "missing source",
        ),
        (
            '[training.duration_days]\nvalue = 90\nsource = "  "\n',
            "training.duration_days",
            "missing source",
        ),
        (
            '[training.duration_days]\nsource = "x"\nnote = "no distribution"\n',
            "training.duration_days",
            "no distribution given",
        ),
        (
            '[training.duration_days]\nvalue = 90\ninterval90 = [60, 120]\nsource = "x"\n',
            "training.duration_days",
            "two distributions given",
        ),
        (
            '[hardware.flops_growth_per_year]\nvalue = -1.2\nsource = "x"\n',
            "hardware.flops_growth_per_year",
            "outside the domain",
        ),
        (
            '[training.max_utilization]\nvalue = 1.2\nsource = "x"\n',
            "training.max_utilization",
            "outside the domain",
        ),
        (
            '[training.max_utilization]\nquantiles = { p10 = 0.6, p90 = 1.1 }\nsource = "x"\n',
            "training.max_utilization",
            "outside the domain",
        ),
        (
            '[hardware.flops_growth_per_year]\ndist = "normal"\nmean = 1.4\nsd = 0.1\nsource = "x"\n',
            "hardware.flops_growth_per_year",
            "support outside the domain",
        ),
        (
            '[training.duration_days]\nvalue = 90\nsorce = "x"\nsource = "x"\n',
            "training.duration_days",
            "unknown field",
        ),
    ],
)
def test_invalid_tables_report_file_key_and_line(
    tmp_path: Path, body: str, key: str, match: str
) -> None:
    path = write(tmp_path, GOOD_HEAD + body)
    assert path.read_text().splitlines()[7].startswith(f"[{key}]")
    with pytest.raises(PriorError, match=match) as info:
        load_overlay(path)
    err = info.value
    msg = str(err)
    assert isinstance(err, WallcastError) and isinstance(err, ValueError)
    assert "bad.toml" in msg
    assert key in msg
    assert "line 8" in msg
    assert (err.file, err.key, err.line) == (str(path), key, 8)


def test_missing_required_key_in_full_file(tmp_path: Path) -> None:
    text = (PRIORS_DIR / "baseline.toml").read_text(encoding="utf-8")
    start = text.index("[scaling.layers_at_reference]")
    end = text.index("[scaling.layer_reference_params]")
    path = write(tmp_path, text[:start] + text[end:], "partial.toml")
    with pytest.raises(PriorError) as info:
        load_priors(path)
    msg = str(info.value)
    assert (
        "partial.toml" in msg and "scaling.layers_at_reference" in msg and "missing required" in msg
    )
    assert info.value.key == "scaling.layers_at_reference"
    assert len(info.value.problems) == 1
    load_overlay(path)  # fine as an overlay


def test_invalid_toml_reports_tomllib_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_HEAD + "[training.duration_days]\nvalue = = 90\n")
    with pytest.raises(PriorError, match="invalid TOML") as info:
        load_overlay(path)
    assert "bad.toml" in str(info.value)
    assert info.value.line == 9 and "line 9" in str(info.value)


def test_unknown_group_and_several_problems(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        GOOD_HEAD
        + '[hardwar.flops_growth_per_year]\nvalue = 1.4\nsource = "x"\n\n'
        + "[training.duration_days]\nvalue = 90\n",
    )
    with pytest.raises(PriorError) as info:
        load_overlay(path)
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert "line 8" in lines[0] and "hardwar.flops_growth_per_year" in lines[0]
    assert "did you mean 'hardware.flops_growth_per_year'" in lines[0]
    assert "line 12" in lines[1] and "training.duration_days" in lines[1]


def test_line_found_for_inline_tables(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        [training]
        duration_days = { value = 90, source = "x" }
        max_utilization = { value = 1.5, source = "x" }
        """,
    )
    with pytest.raises(PriorError) as info:
        load_overlay(path)
    assert info.value.key == "training.max_utilization" and info.value.line == 3


# ---- numpyro --------------------------------------------------------------------------------


def test_to_numpyro(baseline: PriorSet) -> None:
    pytest.importorskip("numpyro")
    z90 = special.ndtri(0.9)
    # split fits map to the nearest family member: same median, same 10%-90% width in g-space
    batch = baseline["scaling.batch_tokens_2024"].to_numpyro()
    assert float(batch.loc) == pytest.approx(np.log(60e6))
    assert float(batch.scale) == pytest.approx(np.log(360 / 16) / (2 * z90))
    util = baseline["training.max_utilization"].to_numpyro()
    assert float(util.base_dist.loc) == pytest.approx(special.logit(0.7))
    width = special.logit(0.8) - special.logit(0.55)
    assert float(util.base_dist.scale) == pytest.approx(width / (2 * z90))
    layer = baseline["scaling.layer_exponent"].to_numpyro()  # exact normal
    assert float(layer.loc) == pytest.approx(0.27) and float(layer.scale) == pytest.approx(
        0.06 / z90
    )
    assert float(baseline["training.duration_days"].to_numpyro().v) == 90
    tri = parse_prior(
        "latency.kernel_us", {"dist": "triangular", "low": 2, "mode": 4, "high": 8, "source": "x"}
    ).to_numpyro()
    u = np.array([0.1, 1 / 3, 0.9])
    np.testing.assert_allclose(
        np.asarray(tri.transforms[0](u)), [2 + np.sqrt(1.2), 4, 8 - np.sqrt(2.4)], rtol=1e-5
    )
    assert float(tri.log_prob(4.0)) == pytest.approx(np.log(2 / 6), abs=1e-5)


# ---- property: fitted quantile function -----------------------------------------------------


@st.composite
def quantile_triples(draw: st.DrawFn) -> tuple[list[int], list[float]]:
    probs = sorted(draw(st.lists(st.integers(1, 99), min_size=3, max_size=3, unique=True)))
    # bounded so the tails at u = 1e-4 stay finite in float64 once exponentiated (a slope of
    # 3 / (z50 - z49) extrapolated to z = 3.7 is exp(~460)); wider triples overflow legitimately
    start = draw(st.floats(-10, 10))
    gaps = draw(st.lists(st.floats(1e-3, 3), min_size=2, max_size=2))
    return probs, [start, start + gaps[0], start + gaps[0] + gaps[1]]


@pytest.mark.properties
@settings(max_examples=150, deadline=None)
@given(triple=quantile_triples(), positive=st.booleans())
def test_fitted_ppf_monotone_and_through_quantiles(
    triple: tuple[list[int], list[float]], positive: bool
) -> None:
    probs, ys = triple
    if positive:  # values exp(y): log-space gaps >= 1e-3
        key, values = "latency.kernel_us", [float(np.exp(y)) for y in ys]
    else:
        key, values = "scaling.batch_exponent", ys
    assume(all(b > a for a, b in zip(values, values[1:], strict=False)))
    table = {
        "quantiles": {f"p{p:02d}": v for p, v in zip(probs, values, strict=True)},
        "source": "x",
    }
    # the fitting maths over any triple, so without the key's plausible range (tested apart)
    unbounded = {key: dataclasses.replace(PARAMETERS[key], plausible=None)}
    with mock.patch.dict(PARAMETERS, unbounded):
        prior = parse_prior(key, table)
    got = prior.ppf(np.array(probs) / 100)
    scale = max(abs(v) for v in values)
    np.testing.assert_allclose(got, values, rtol=1e-6, atol=1e-9 * scale)
    u = np.linspace(1e-4, 1 - 1e-4, 2001)
    x = prior.ppf(u)
    assert np.all(np.isfinite(x))
    assert np.all(np.diff(x) >= 0)
    coarse = prior.ppf(np.linspace(0.01, 0.99, 99))
    assert np.all(np.diff(coarse) > 0)


def test_retired_layer_coef_key_names_its_replacement(tmp_path: Path) -> None:
    """A prior file written before the depth law was pivoted gets told what replaced the key."""
    path = tmp_path / "old.toml"
    path.write_text('[scaling.layer_coef]\nvalue = 0.088\nsource = "[R]"\n', encoding="utf-8")
    with pytest.raises(PriorError) as info:
        load_overlay(path)
    msg = str(info.value)
    assert "old.toml" in msg and "line 1" in msg and "scaling.layer_coef" in msg
    assert "scaling.layers_at_reference" in msg and "scaling.layer_reference_params" in msg


# ---- registry: one role per key, every key list derives from it ------------------------------


def test_every_key_has_one_role_and_the_key_lists_partition_the_registry() -> None:
    roles = {key: spec.role for key, spec in PARAMETERS.items()}
    assert set(roles.values()) <= set(registry.ROLES)
    assert not set(PROPAGATED_KEYS) & set(TREND_KEYS)
    assert set(PROPAGATED_KEYS) | set(TREND_KEYS) == set(PARAMETERS)
    assert tuple(k for k in PARAMETERS if roles[k] == "propagated") == PROPAGATED_KEYS
    assert (
        tuple(k for k in PARAMETERS if roles[k] in ("trend_growth", "trend_level"))
        == registry.TREND_SAMPLED_KEYS
    )
    assert len(TREND_KEYS) == 8 and len(PROPAGATED_KEYS) == 20
    assert registry.growth_key("frontier_compute") == "frontier.compute_growth_per_year"
    assert registry.level_key("frontier_compute") == "frontier.compute_2024_flop"
    with pytest.raises(KeyError, match="no trend_growth key for series 'tpu'"):
        registry.growth_key("tpu")
    with pytest.raises(ValueError, match="unknown role"):
        registry.keys_with_role("scenario")  # type: ignore[arg-type]


def test_code_key_lists_are_the_registrys() -> None:
    from forecast.analyses import sensitivity
    from forecast.inference import propagate
    from forecast.stats import trends

    assert propagate.PROPAGATED_KEYS is registry.PROPAGATED_KEYS
    assert sensitivity.TREND_KEYS is registry.TREND_SAMPLED_KEYS
    assert {m: registry.growth_key(m) for m in trends.METRICS} == trends.PRIOR_KEYS
    series = {s.series for s in PARAMETERS.values() if s.role == "trend_growth"}
    assert series == {*trends.METRICS, registry.FRONTIER_SERIES}


def test_readme_registry_table_lists_exactly_the_registry() -> None:
    text = (PRIORS_DIR / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Registry") : text.index("## Errors")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].startswith("`") and "." in cells[0]:
            rows[cells[0].strip("`")] = tuple(cells[1:4])
    assert list(rows) == list(PARAMETERS)
    for key, (unit, domain, role) in rows.items():
        spec = PARAMETERS[key]
        assert (unit, domain, role) == (spec.unit, spec.domain, spec.role), key


# ---- parsing from text ----------------------------------------------------------------------


def test_loads_text_equals_load_from_path(baseline: PriorSet) -> None:
    same = loads(baseline.text, "baseline.toml")
    assert same.name == "baseline" and same.path is None
    assert same.keys() == baseline.keys()
    for key in baseline:
        a, b = baseline[key], same[key]
        assert (a.dist, a.params, a.line, a.source) == (b.dist, b.params, b.line, b.source), key
        assert b.file == "baseline.toml"
    # no [meta] name: the name comes from the label without .toml
    overlay = loads('[latency.kernel_us]\nvalue = 3\nsource = "x"\n', "fast.toml", overlay=True)
    assert overlay.name == "fast" and overlay["latency.kernel_us"].median() == 3.0
    with pytest.raises(PriorError, match="missing required parameter"):
        loads('[latency.kernel_us]\nvalue = 3\nsource = "x"\n', "fast.toml")
    with pytest.raises(PriorError) as info:
        loads('[latency.kernel_us]\nvalue = -3\nsource = "x"\n', "stored priors", overlay=True)
    assert str(info.value).startswith("stored priors, line 1, 'latency.kernel_us': value = -3")


def test_default_priors_path_honours_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WALLCAST_PRIORS_DIR", str(tmp_path))
    assert default_priors_path() == tmp_path / "baseline.toml"
    monkeypatch.delenv("WALLCAST_PRIORS_DIR")
    assert default_priors_path() == PRIORS_DIR / "baseline.toml"


def test_sensitivity_reads_a_forecasts_priors_from_its_text(baseline: PriorSet) -> None:
    from types import SimpleNamespace

    from forecast.store.attrs import read_priors

    tree = SimpleNamespace(
        attrs={"priors_text": baseline.text, "priors_name": "baseline", "priors_path": "x.toml"}
    )
    got = read_priors(tree.attrs)
    assert got.name == "baseline" and got.keys() == baseline.keys()
    assert got.medians() == baseline.medians()
    assert got["latency.kernel_us"].file == "baseline.toml"


# ---- fixed values anywhere; values the forecast cannot use refused at load -------------------


def _all_fixed_text(baseline: PriorSet) -> str:
    lines = ['[meta]\nname = "all-fixed"\n']
    for key, prior in baseline.priors.items():
        lines.append(f'[{key}]\nvalue = {prior.median()!r}\nsource = "test"\n')
    return "\n".join(lines)


def test_a_fixed_value_is_accepted_for_every_key(baseline: PriorSet) -> None:
    fixed = loads(_all_fixed_text(baseline), "all-fixed.toml")
    assert fixed.uncertain_keys() == []
    for key, prior in fixed.priors.items():
        assert prior.is_point and prior.median() == pytest.approx(baseline[key].median()), key
    from forecast.stats.trends import trend_priors_from_prior_set

    trend = trend_priors_from_prior_set(fixed)
    assert trend.slope_scale == (0.0,) * 5 and all(trend.fixed_slopes)
    assert trend.frontier_slope_scale == 0.0 and trend.frontier_intercept_scale == 0.0
    assert trend.frontier_slope_loc == pytest.approx(
        np.log10(baseline["frontier.compute_growth_per_year"].median())
    )


UNUSABLE = [
    # (key, body, reason): each a value the fit or the propagation cannot use
    (
        "frontier.compute_growth_per_year",
        "value = 5000",
        "value 5000 x/yr is outside the plausible range [0.5, 100] x/yr",
    ),
    (
        "hardware.flops_growth_per_year",
        "value = 1e301",
        "value 1e+301 x/yr is outside the plausible range [0.5, 10] x/yr",
    ),
    (
        "training.duration_days",
        "value = 1e300",
        "value 1e+300 days is outside the plausible range [1, 3650] days",
    ),
    (
        "training.max_utilization",
        "quantiles = { p10 = 0.0001, p50 = 0.0002, p90 = 0.0005 }",
        "the 1% quantile 5.68285e-05 fraction is outside the plausible range [0.001, 1]",
    ),
    (
        "hardware.flops_growth_per_year",
        "quantiles = { p10 = 1.3, p50 = 1.45, p90 = 1e200 }",
        "99.9% quantile is inf: the distribution overflows",
    ),
    (
        "latency.change_per_year",
        'dist = "lognormal"\nmedian = 1.0\nsigma = 400',
        "0.1% quantile is 0: the distribution underflows",
    ),
    ("hardware.trend_noise_dex", "value = 0", "value = 0 is outside the domain"),
    ("frontier.compute_2024_flop", "interval90 = [5e25, 5e25]", "for a fixed value write value"),
    (
        "frontier.compute_growth_per_year",
        "quantiles = { p10 = 4.0, p90 = 4.0 }",
        "for a fixed value write value",
    ),
]


@pytest.mark.parametrize(("key", "body", "reason"), UNUSABLE, ids=[u[2][:30] for u in UNUSABLE])
def test_values_the_forecast_cannot_use_are_refused_at_load_with_file_key_and_line(
    tmp_path: Path, key: str, body: str, reason: str
) -> None:
    path = write(tmp_path, GOOD_HEAD + f'[{key}]\n{body}\nsource = "x"\n')
    with pytest.raises(PriorError) as info:
        load_overlay(path)
    err = info.value
    assert (err.file, err.key, err.line) == (str(path), key, 8)
    assert reason in err.reason, err.reason
    assert str(err).startswith(f"{path}, line 8, '{key}': ")


def test_growth_at_the_edge_of_its_plausible_range_is_accepted(tmp_path: Path) -> None:
    # 100x/yr of frontier compute: absurd as a forecast, but inside the registry's range [0.5, 100]
    path = write(
        tmp_path, GOOD_HEAD + '[frontier.compute_growth_per_year]\nvalue = 100\nsource = "x"\n'
    )
    assert load_overlay(path)["frontier.compute_growth_per_year"].median() == 100.0


def test_every_registry_key_has_a_plausible_range_holding_the_shipped_medians() -> None:
    shipped = load_priors(PRIORS_DIR / "baseline.toml")
    for key, spec in PARAMETERS.items():
        assert spec.plausible is not None, key
        low, high = spec.plausible
        assert low <= shipped[key].median() <= high, key


@pytest.mark.parametrize(
    "text",
    [
        "quantiles = { p10 = 1.3, p50 = 1.45, p90 = 1.65 }",  # split log-normal
        "quantiles = { p10 = 0.55, p50 = 0.7, p90 = 0.8 }",  # split logit-normal
        "quantiles = { p05 = 2.0, p25 = 4.0, p50 = 5.0, p75 = 7.0, p95 = 12.0 }",  # piecewise
        'dist = "lognormal"\nmedian = 2.0\nsigma = 0.4',
        'dist = "triangular"\nlow = 1.0\nmode = 2.0\nhigh = 4.0',
        "value = 3.0",
    ],
)
def test_exact_numpyro_distribution_is_the_prior(text):
    """``to_numpyro_exact`` samples the prior's own distribution (its ppf's quantiles) and its
    ``log_prob`` is the density dF/dx of that ppf, for split and piecewise fits too."""
    import jax

    from forecast.config.runtime import init_jax
    from forecast.priors import loads

    init_jax()
    key = "training.max_utilization" if "0.55" in text else "latency.kernel_us"
    prior = loads(f'[{key}]\n{text}\nsource = "test"\n', "t.toml", overlay=True)[key]
    d = prior.to_numpyro_exact()
    x = np.asarray(d.sample(jax.random.PRNGKey(1), (200_000,)))
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        assert np.quantile(x, q) == pytest.approx(prior.quantile(q), rel=0.01), q
    if prior.is_point:
        return
    u = np.linspace(0.02, 0.98, 48)  # off the knots (a kink has no derivative there)
    xs, h = prior.ppf(u), 1e-6
    density = 2 * h / (prior.ppf(u + h) - prior.ppf(u - h))  # dF/dx = 1 / (dx/du)
    np.testing.assert_allclose(np.exp(np.asarray(d.log_prob(xs))), density, rtol=1e-4)
