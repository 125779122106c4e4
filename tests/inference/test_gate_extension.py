"""A fit the convergence gate refuses narrowly runs its chains twice as long once (issue 23's
fresh-machine finding: on an AVX2 CPU emulating AVX the Epoch-priors fit at the default 4 x 1,000
draws was refused with R-hat 1.0116 where the same seed natively gave 1.0038).

The gate itself is replaced by a recording function here, so the test decides which refusal the
run gets; the fits are small (the extension's mechanics, not convergence, are under test).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import forecast.inference.fit as fit_module
from forecast.data.inputs import load_inputs
from forecast.inference.gate import (
    NEAR_MISS_ESS_SHARE,
    NEAR_MISS_RHAT,
    ConvergenceError,
    near_miss,
)

CHAINS, DRAWS, SEED = 2, 60, 4


def _refusal(*failures: tuple[str, str | None, float, float]) -> ConvergenceError:
    return ConvergenceError(list(failures), chains=4, draws=1000)


@pytest.mark.parametrize(
    ("failures", "narrow"),
    [
        ([("r_hat", "batch_tokens_2024", 1.0116, 1.01)], True),  # the AVX refusal
        ([("r_hat", "x", NEAR_MISS_RHAT, 1.01)], True),
        ([("r_hat", "x", 1.0201, 1.01)], False),
        ([("r_hat", "x", math.nan, 1.01)], False),
        ([("ess_bulk", "x", NEAR_MISS_ESS_SHARE * 400, 400.0)], True),
        ([("ess_bulk", "x", 199.0, 400.0)], False),
        ([("r_hat", "x", 1.012, 1.01), ("ess_bulk", "x", 300.0, 400.0)], True),
        ([("r_hat", "x", 1.012, 1.01), ("ess_bulk", "x", 120.0, 400.0)], False),
        ([("divergences", None, 1.0, 0.0)], False),
        ([("r_hat", "x", 1.011, 1.01), ("divergences", None, 3.0, 0.0)], False),
    ],
)
def test_a_near_miss_is_narrow_on_every_diagnostic(failures, narrow) -> None:
    assert near_miss(_refusal(*failures)) is narrow


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(scenarios=[])


def test_a_narrow_refusal_runs_the_same_chains_twice_as_long(inputs, monkeypatch) -> None:
    seen = []

    def gate(tree) -> None:
        seen.append(tree["posterior"].to_dataset().load())
        if len(seen) == 1:
            raise _refusal(("r_hat", "batch_tokens_2024", 1.0116, 1.01))

    monkeypatch.setattr(fit_module, "check_convergence", gate)
    tree = fit_module.fit(
        inputs, inputs.priors, chains=CHAINS, draws=DRAWS, warmup=DRAWS, seed=SEED
    )
    assert len(seen) == 2
    first, extended = seen
    assert first.sizes["draw"] == DRAWS and extended.sizes["draw"] == 2 * DRAWS
    post = tree["posterior"].to_dataset()
    assert post.sizes["chain"] == CHAINS and post.sizes["draw"] == 2 * DRAWS
    # the refused run, continued: its draws are the first half of every chain
    for name in ("batch_shortfall_dex", "log10_batch_2024", "slope"):
        np.testing.assert_array_equal(
            post[name].isel(draw=slice(0, DRAWS)).values, first[name].values
        )
    assert not np.array_equal(
        post["batch_shortfall_dex"].isel(draw=slice(DRAWS, None)).values,
        first["batch_shortfall_dex"].values,
    )
    record = json.loads(tree.attrs["gate_extension"])
    assert record["requested_samples"] == DRAWS
    assert "r_hat of batch_tokens_2024 is 1.012" in record["refusal"]
    assert json.loads(tree.attrs["model_config"])["num_samples"] == 2 * DRAWS
    # the prior group is shaped like the posterior
    assert tree["prior"].sizes["draw"] == 2 * DRAWS


def test_a_wide_refusal_and_a_second_refusal_are_final(inputs, monkeypatch) -> None:
    calls = []

    def divergent(tree) -> None:
        calls.append(tree["posterior"].sizes["draw"])
        raise _refusal(("divergences", None, 2.0, 0.0))

    monkeypatch.setattr(fit_module, "check_convergence", divergent)
    with pytest.raises(ConvergenceError, match="2 divergent transitions"):
        fit_module.fit(inputs, inputs.priors, chains=CHAINS, draws=DRAWS, warmup=DRAWS, seed=SEED)
    assert calls == [DRAWS]  # not run again

    calls.clear()

    def narrow_twice(tree) -> None:
        calls.append(tree["posterior"].sizes["draw"])
        raise _refusal(("r_hat", "batch_noise_dex", 1.013, 1.01))

    monkeypatch.setattr(fit_module, "check_convergence", narrow_twice)
    with pytest.raises(ConvergenceError) as info:
        fit_module.fit(inputs, inputs.priors, chains=CHAINS, draws=DRAWS, warmup=DRAWS, seed=SEED)
    assert calls == [DRAWS, 2 * DRAWS]
    assert f"the run of {DRAWS} draws per chain was refused narrowly" in str(info.value)

    # extend=False: the gate's first word is final
    calls.clear()
    with pytest.raises(ConvergenceError):
        fit_module.fit(
            inputs,
            inputs.priors,
            chains=CHAINS,
            draws=DRAWS,
            warmup=DRAWS,
            seed=SEED,
            extend=False,
        )
    assert calls == [DRAWS]
