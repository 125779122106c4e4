"""The what-if reweighting (forecast.queries.whatif) on draws whose answer is known: when the
stored "hit year" is the input itself, reweighting from its prior to a new prior must give the
new prior's quantiles (within Monte Carlo error); and the parts that need no forecast."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from forecast.priors import load_priors
from forecast.queries import whatif
from forecast.queries.whatif import (
    StoredDraws,
    WhatIfInputError,
    changed_priors_text,
    parse_change,
    whatif_answer,
)

REPO = Path(__file__).resolve().parents[2]
BASE = load_priors(REPO / "priors" / "baseline.toml")
N = 4000


def _synthetic(key: str, kind: str = "prior") -> StoredDraws:
    """Stored draws whose two walls' hit years are the draws of ``key`` from its baseline prior
    (and +1 year), as a forecast would store them."""
    rng = np.random.default_rng(7)
    x = BASE[key].sample(rng, N)
    attrs = {
        "id": "synthetic",
        "input_provenance": json.dumps({"baseline": {key: {"kind": kind}}}),
        "priors_text": BASE.text,
        "scenario_text_baseline": BASE.text,
    }
    hit = np.stack([x, x + 1.0], axis=-1)[None]
    draws = StoredDraws(
        "synthetic", attrs, ["baseline"], ["data_movement", "latency"], hit, 10**hit, Path("."), {}
    )
    draws._values[("baseline", key)] = x
    return draws


@pytest.fixture
def stored(monkeypatch):
    def use(key: str, kind: str = "prior") -> StoredDraws:
        draws = _synthetic(key, kind)
        monkeypatch.setattr(whatif, "load_draws", lambda forecast=None: draws)
        return draws

    return use


def test_reweighting_recovers_the_new_prior(stored):
    """latency.change_per_year: baseline 0.90-1.00-1.05 (10/50/90); a new prior 0.92-0.97-1.02
    inside it: the reweighted 'hit year' (the input itself) has the new prior's quantiles."""
    stored("latency.change_per_year")
    out = whatif_answer(["latency.change_per_year=0.92,0.97,1.02"])
    assert out["reliable"] and out["pareto_k"] <= 0.7
    after = out["walls"][0]["after"]["hit_year"]
    new = parse_change("latency.change_per_year=0.92,0.97,1.02").prior
    ess = out["effective_draws"]
    assert 500 < ess < N
    se = 1.0 / np.sqrt(ess)  # quantiles of this spread move by ~0.04 per 1/sqrt(ess)
    assert after["median"] == pytest.approx(new.median(), abs=0.05 * 4 * se + 0.003)
    assert after["lower"] == pytest.approx(new.quantile(0.1), abs=0.01)
    assert after["upper"] == pytest.approx(new.quantile(0.9), abs=0.01)
    # the second wall moved by exactly the same weights
    latency = out["walls"][1]["after"]["hit_year"]
    assert latency["median"] == pytest.approx(after["median"] + 1.0)
    before = out["walls"][0]["before"]["hit_year"]
    assert before["median"] == pytest.approx(BASE["latency.change_per_year"].median(), abs=0.01)


def test_a_far_prior_is_unreliable_and_a_fixed_one_unreachable(stored):
    stored("latency.change_per_year")
    far = whatif_answer(["latency.change_per_year=0.60,0.65,0.70"])
    assert not far["reliable"] and (far["pareto_k"] is None or far["pareto_k"] > 0.7)
    stored("training.duration_days", kind="fixed")
    fixed = whatif_answer(["training.duration_days=180"])
    assert not fixed["reliable"] and fixed["pareto_k"] is None
    assert fixed["walls"][0]["after"] is None and "fixed" in fixed["message"]
    same = whatif_answer(["training.duration_days=90"])  # the stored value: nothing to move
    assert same["reliable"]


def test_a_new_prior_outside_the_old_support_is_refused(stored):
    """hardware.scaleup_domain_size_growth_per_year's baseline prior is log-uniform on
    [1.0, 1.8]: a prior centred on 1.8 puts half its mass where no draw is."""
    stored("hardware.scaleup_domain_size_growth_per_year")
    out = whatif_answer(["hardware.scaleup_domain_size_growth_per_year=1.6,1.8,2.0"])
    assert not out["reliable"] and "outside the old prior's support" in out["message"]


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("latency.change_per_year", "expected"),
        ("latency.change_per_year=", "expected"),
        ("latency.change_per_year=1,2", "1 or 3 numbers"),
        ("latency.change_per_year=a,b,c", "numbers"),
        ("latency.change_per_year=nan", "finite"),
        ("latency.change_per_year=1.0,0.9,0.8", "out of order"),
        ("latency.chnge_per_year=1", "did you mean 'latency.change_per_year'"),
        ("training.max_utilization=1.5", ""),
    ],
)
def test_bad_specs_say_what_is_wrong(spec, says):
    with pytest.raises(WhatIfInputError) as info:
        parse_change(spec)
    assert says in str(info.value)


def test_a_real_run_s_prior_file_is_the_base_with_the_changed_tables():
    """The what-if run refits the base prior file with each changed key's table replaced: the
    other tables (and their sources) are untouched, and the file is a full, valid prior set."""
    from forecast.priors import loads

    text = changed_priors_text(
        BASE.text, ["scaling.batch_exponent=0.33,0.38,0.43", "training.duration_days=180"]
    )
    changed = loads(text, "whatif.toml")
    assert changed["training.duration_days"].median() == 180.0
    assert changed["scaling.batch_exponent"].quantile(0.1) == pytest.approx(0.33)
    assert "what-if (training.duration_days=180)" in changed["training.duration_days"].source
    for key in BASE:
        if key not in ("training.duration_days", "scaling.batch_exponent"):
            assert (
                changed[key].params == BASE[key].params and changed[key].source == BASE[key].source
            )


def test_the_input_itself_is_reported_before_and_after(stored):
    stored("latency.change_per_year")
    out = whatif_answer(["latency.change_per_year=0.92,0.97,1.02"])
    (row,) = out["changes"]
    assert row["input_median_before"] == pytest.approx(1.0, abs=0.01)
    assert row["input_median_after"] == pytest.approx(0.97, abs=0.01)


def test_a_fitted_linear_input_uses_the_density_the_fit_used(stored):
    """Review finding: a 3-quantile change of a fitted input on a linear site becomes, in the
    fit, the nearest Normal of its family (prior.to_numpyro()); 0.24/0.27/0.36 for the layer
    exponent is exactly the baseline's Normal(0.27, 0.0468) there, so nothing moves."""
    draws = stored("scaling.layer_exponent", kind="fitted")
    base = BASE["scaling.layer_exponent"]
    draws.attrs["fit_law_priors"] = json.dumps(
        {
            "scaling.layer_exponent": {
                "dist": base.dist,
                "params": dict(base.params),
                "site": "layer_exponent",
            }
        }
    )
    same = whatif_answer(["scaling.layer_exponent=0.24,0.27,0.36"])
    assert same["pareto_k"] == pytest.approx(0.0, abs=1e-9)
    assert same["effective_draws"] == pytest.approx(N)
    (row,) = same["changes"]
    assert row["input_median_after"] == pytest.approx(row["input_median_before"])
    moved = whatif_answer(["scaling.layer_exponent=0.26,0.30,0.34"])
    assert moved["changes"][0]["input_median_after"] > row["input_median_before"] + 0.01


@pytest.mark.parametrize(
    "header", ["[scaling.layer_exponent]", "[ scaling.layer_exponent ]  # the depth law"]
)
def test_the_changed_table_is_found_and_only_it_replaced(header):
    text = BASE.text.replace("[scaling.layer_exponent]", header)
    out = changed_priors_text(text, ["scaling.layer_exponent=0.2,0.27,0.4\n"])
    assert out.count("layer_exponent]") == 1
    assert 'source = "what-if (scaling.layer_exponent=0.2,0.27,0.4)"' in out
    with pytest.raises(WhatIfInputError, match="once"):
        changed_priors_text(text, ["scaling.layer_exponent=0.3", "scaling.layer_exponent=0.2"])
