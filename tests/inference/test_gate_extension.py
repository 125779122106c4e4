"""A fit the convergence gate refuses narrowly runs its chains twice as long once (issue 23's
fresh-machine finding: on an AVX2 CPU emulating AVX the Epoch-priors fit at the default 4 x 1,000
draws was refused with R-hat 1.0116 where the same seed natively gave 1.0038).

The gate itself is replaced by a recording function here, so the test decides which refusal the
run gets; the fits are small (the extension's mechanics, not convergence, are under test).
"""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest

import forecast.inference.fit as fit_module
from forecast.data.inputs import load_inputs
from forecast.inference.gate import (
    NEAR_MISS_ESS_SHARE,
    NEAR_MISS_RHAT_FACTOR,
    ConvergenceError,
    near_miss,
)
from forecast.jobs import forecast_job
from forecast.store.attrs import draws_description, gate_extension

CHAINS, DRAWS, SEED = 2, 60, 4
NARROW = ("r_hat", "batch_tokens_2024", 1.0116, 1.01)


def _refusal(*failures: tuple[str, str | None, float, float], **kw) -> ConvergenceError:
    return ConvergenceError(list(failures), chains=4, draws=kw.pop("draws", 1000), **kw)


@pytest.mark.parametrize(
    ("failures", "narrow"),
    [
        ([NARROW], True),  # the AVX refusal
        ([("r_hat", "x", 1.0 + NEAR_MISS_RHAT_FACTOR * 0.01, 1.01)], True),  # 1.02
        ([("r_hat", "x", 1.0201, 1.01)], False),
        ([("r_hat", "x", 1.09, 1.05)], True),  # a looser gate: twice as far above 1 as it
        ([("r_hat", "x", 1.11, 1.05)], False),
        ([("r_hat", "x", math.nan, 1.01)], False),
        ([("ess_bulk", "x", NEAR_MISS_ESS_SHARE * 400, 400.0)], True),
        ([("ess_bulk", "x", 199.0, 400.0)], False),
        ([("r_hat", "x", 1.012, 1.01), ("ess_bulk", "x", 300.0, 400.0)], True),
        ([("r_hat", "x", 1.012, 1.01), ("ess_bulk", "x", 120.0, 400.0)], False),
        ([("divergences", None, 1.0, 0.0)], False),
        ([("r_hat", "x", 1.011, 1.01), ("divergences", None, 3.0, 0.0)], False),
        ([("ess_tail", "x", 390.0, 400.0)], False),  # a check near_miss does not know
    ],
)
def test_a_near_miss_is_narrow_on_every_diagnostic(failures, narrow) -> None:
    assert near_miss(_refusal(*failures)) is narrow


def test_a_refusal_after_the_extension_says_so_once_and_survives_pickling() -> None:
    first = _refusal(NARROW)
    assert first.summary == "r_hat of batch_tokens_2024 is 1.0116 (max 1.01)"
    assert str(first).endswith(
        "increase --draws (now 1000) or --chains (now 4), or lengthen --warmup"
    )
    second = _refusal(
        ("r_hat", "batch_noise_dex", 1.0104, 1.01),
        draws=2000,
        extended_from=1000,
        first_refusal=first.summary,
    )
    assert str(second) == (
        "MCMC did not converge: r_hat of batch_noise_dex is 1.0104 (max 1.01) at 2000 draws per "
        "chain: the same chains run twice as long after a narrow refusal at 1000 (r_hat of "
        "batch_tokens_2024 is 1.0116 (max 1.01)); increase --draws beyond 2000 or --chains (now "
        "4), or try another --seed (this seed with --draws 1000 repeats this run)"
    )
    assert str(second).count("increase --draws") == 1
    second.add_note("raised by the fit task")
    divergent = _refusal(
        ("divergences", None, 2.0, 0.0), draws=2000, extended_from=1000, first_refusal="x"
    )
    assert str(divergent).endswith("; divergent transitions: check the priors")
    for error in (first, second, divergent):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is ConvergenceError and str(again) == str(error)
        assert (again.failures, again.draws, again.extended_from, again.hint) == (
            error.failures,
            error.draws,
            error.extended_from,
            error.hint,
        )
        assert getattr(again, "__notes__", None) == getattr(error, "__notes__", None)


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(scenarios=["baseline"])


@pytest.fixture(scope="module")
def extended(inputs):
    """A small fit whose gate refuses the first run narrowly and passes the second."""
    seen = []

    def gate(tree) -> None:
        seen.append(tree["posterior"].to_dataset().load())
        if len(seen) == 1:
            raise _refusal(NARROW, draws=DRAWS)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fit_module, "check_convergence", gate)
        tree = fit_module.fit(
            inputs, inputs.priors, chains=CHAINS, draws=DRAWS, warmup=DRAWS, seed=SEED
        )
    return tree, seen


@pytest.mark.machine_sensitive  # the prefix holds on every instruction set: also the AVX pass
def test_a_narrow_refusal_runs_the_same_chains_twice_as_long(extended) -> None:
    tree, seen = extended
    assert len(seen) == 2
    first, longer = seen
    assert first.sizes["draw"] == DRAWS and longer.sizes["draw"] == 2 * DRAWS
    post = tree["posterior"].to_dataset()
    assert post.sizes["chain"] == CHAINS and post.sizes["draw"] == 2 * DRAWS
    # the refused run, continued: its draws are the first half of every chain
    for name in ("batch_shortfall_dex", "log10_batch_2024", "slope"):
        np.testing.assert_array_equal(
            post[name].isel(draw=slice(0, DRAWS)).values, first[name].values
        )
    record = gate_extension(dict(tree.attrs))
    assert record is not None and json.loads(tree.attrs["gate_extension"]) == record
    assert (record["requested_samples"], record["samples"]) == (DRAWS, 2 * DRAWS)
    assert record["refusal"] == "r_hat of batch_tokens_2024 is 1.0116 (max 1.01)"
    assert record["r_hat"][1] >= 1.0 and record["ess_bulk"][1] > 0  # the passing run's worst
    assert len(record["nuts_seconds"]) == 2 and all(s > 0 for s in record["nuts_seconds"])
    assert tree.attrs["nuts_seconds"] == pytest.approx(sum(record["nuts_seconds"]))
    config = json.loads(tree.attrs["model_config"])
    assert config["num_samples"] == 2 * DRAWS
    assert config["chain_method"] == "unbatched"  # the fits' default: each chain its own run
    assert tree["prior"].sizes["draw"] == 2 * DRAWS  # shaped like the posterior
    assert draws_description(dict(tree.attrs), CHAINS, DRAWS) == (
        f"{CHAINS} chains × {2 * DRAWS} draws ({DRAWS} asked: run twice as long after a narrow "
        "convergence refusal)"
    )


def test_an_extended_fit_is_thinned_by_its_own_size(inputs, extended) -> None:
    """The propagation thins the posterior it gets; the forecast's provenance attribute and the
    accelerator walls' draws follow the same step, not the one the requested draws give."""
    tree, _ = extended
    propagate_draws = 24
    step = CHAINS * 2 * DRAWS // propagate_draws  # 10 (5 from the requested draws)
    result = forecast_job.propagate_scenario(
        tree,
        inputs.scenarios["baseline"],
        seed=SEED,
        years=[2024.0, 2030.0],
        propagate_draws=propagate_draws,
        regime="paper",
    )
    np.testing.assert_array_equal(result[0]["draw"].values, np.arange(0, 2 * DRAWS, step))
    forecast, _ = forecast_job.assemble(
        inputs,
        tree,
        {"baseline": result},
        seed=SEED,
        chains=CHAINS,
        draws=DRAWS,
        years=[2024.0, 2030.0],
        propagate_draws=propagate_draws,
    )
    assert forecast.attrs["propagation_thinning"] == step
    assert forecast.attrs["propagated_draws_per_chain"] == 2 * DRAWS // step
    assert gate_extension(dict(forecast.attrs))["samples"] == 2 * DRAWS  # fit_gate_extension
    _, kwargs = forecast_job._accelerator_walls_call(
        inputs, tree, result, CHAINS, DRAWS, propagate_draws, "paper", None
    )
    assert kwargs["thinning_step"] == step


def test_a_pass_is_kept_and_a_second_refusal_is_final(inputs, monkeypatch) -> None:
    calls = []

    def passes(tree) -> None:
        calls.append(tree["posterior"].sizes["draw"])

    monkeypatch.setattr(fit_module, "check_convergence", passes)
    tree = fit_module.fit(
        inputs, inputs.priors, chains=CHAINS, draws=DRAWS, warmup=DRAWS, seed=SEED
    )
    assert calls == [DRAWS] and tree.attrs["gate_extension"] == "{}"
    assert gate_extension(dict(tree.attrs)) is None

    # a wide refusal (divergences: near_miss's table above) is final as extend=False is, below
    calls.clear()

    def narrow_twice(tree) -> None:
        draws = tree["posterior"].sizes["draw"]
        calls.append(draws)
        raise _refusal(("r_hat", "batch_noise_dex", 1.013, 1.01), draws=draws)

    monkeypatch.setattr(fit_module, "check_convergence", narrow_twice)
    with pytest.raises(ConvergenceError) as info:
        fit_module.fit(inputs, inputs.priors, chains=CHAINS, draws=DRAWS, warmup=DRAWS, seed=SEED)
    assert calls == [DRAWS, 2 * DRAWS]
    assert info.value.extended_from == DRAWS and info.value.draws == 2 * DRAWS
    assert f"at {2 * DRAWS} draws per chain: the same chains run twice as long after a " in str(
        info.value
    )
    assert f"narrow refusal at {DRAWS} (r_hat of batch_noise_dex is 1.013 (max" in str(info.value)
    assert str(info.value).count("increase --draws") == 1
    assert info.value.__cause__ is None and info.value.__suppress_context__

    # extend=False, and no gate at all: the first run is the fit
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
