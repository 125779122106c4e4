"""The planner's cost priors (priors/costs.toml, forecast.priors.costs): the shipped file, its
sources, and errors that name the file, key and line."""

from __future__ import annotations

import pytest

from forecast.priors.costs import COST_PARAMETERS, load_cost_priors, reference_accelerator
from forecast.priors.parsing import PriorError

SHIPPED = load_cost_priors()


def test_shipped_cost_priors_give_every_key_with_its_cited_range():
    assert list(SHIPPED) == list(COST_PARAMETERS)
    assert reference_accelerator(SHIPPED) == "NVIDIA H100 SXM5"
    pue = SHIPPED["cost.power_usage_effectiveness"]
    # [cottier2024]: PUE 1.1 (hyperscalers) to 1.25 (others), the 90 % interval
    assert (pue.quantile(0.05), pue.quantile(0.95)) == pytest.approx((1.10, 1.25))
    growth = SHIPPED["cost.price_performance_growth_per_year"]
    # [hobbhahn2022]: ML GPUs' FLOP/s per dollar doubles in 2.07 years: 2^(1/2.07) = 1.398x/yr
    assert growth.median() == pytest.approx(2 ** (1 / 2.07), rel=0.01)
    for key in SHIPPED:
        assert SHIPPED[key].source.startswith("["), key


def _text(**change: str) -> str:
    text = SHIPPED.text
    for old, new in change.items():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("[cost.power_usage_effectiveness]", "[cost.power_usage_efectiveness]", "unknown"),
        ("interval90 = [1.10, 1.25]", "interval90 = [1.25, 1.10]", "low"),
        ('reference_accelerator = "NVIDIA H100 SXM5"', "", "reference_accelerator"),
        (
            "[cost.average_power_fraction]\ninterval90 = [0.43, 0.80]",
            "[cost.average_power_fraction]\ninterval90 = [0.43, 1.80]",
            "cost.average_power_fraction",
        ),
    ],
)
def test_bad_cost_priors_name_the_file_and_key(tmp_path, old, new, says):
    path = tmp_path / "costs.toml"
    path.write_text(_text(**{old: new}), encoding="utf-8")
    with pytest.raises(PriorError) as info:
        load_cost_priors(path)
    assert "costs.toml" in str(info.value) and says in str(info.value)
