"""The joint model (forecast.stats.joint): recovery of known law parameters, the published tree's
posterior/prior groups, fitted inputs propagated from the posterior, scenario what-ifs, common
random numbers across scenarios, the convergence gate over law parameters, input provenance."""

from __future__ import annotations

import json
import math

import arviz as az
import jax
import numpy as np
import numpyro
import pytest
import xarray as xr

from forecast.config.runtime import init_jax
from forecast.inference.fit import fit_joint
from forecast.inference.gate import ConvergenceError, check_convergence
from forecast.inference.propagate import scenario_seed
from forecast.inference.run_predictions import predicted_runs
from forecast.jobs import forecast_job
from forecast.priors.registry import FITTED_INPUTS, PROPAGATED_KEYS
from forecast.stats.joint import (
    LAW_PARAMETERS,
    JointData,
    joint_data,
    law_prior_record,
    law_priors_from_prior_set,
    site_prior,
)
from forecast.stats.run_efficiency import run_efficiency_model
from forecast.stats.scaling_laws import (
    LawData,
    batch_law_model,
    depth_law_model,
    domain_growth_model,
    utilization_law_model,
)
from forecast.stats.sequence_length import sequence_law_model
from forecast.stats.trends import trend_priors_from_prior_set

pytestmark = pytest.mark.slow

SEED = 5
YEARS = [2024.0, 2030.0, 2036.0, 2045.0]
SCENARIOS = ["aggressive-batch", "large-domains", "six-month-runs"]
CHAINS, DRAWS, PROPAGATE = 2, 200, 200  # thinning step 2

SHARED_INTERFACE = (
    "layer_exponent",
    "layers_at_reference",
    "depth_noise_dex",
    "batch_tokens_2024",
    "batch_exponent",
    "moe_batch_offset_dex",
    "batch_shortfall_dex",
    "batch_noise_dex",
    "max_utilization",
    "mfu_shortfall_dex",
    "mfu_noise_dex",
    "domain_growth_per_year",
    "domain_size_2024",
    "domain_noise_dex",
    "log10_batch_2024",
)


# ----------------------------------------------------------------------------- prior mapping


def test_site_prior_maps_the_prior_file_exactly_where_it_can() -> None:
    inputs = forecast_job.load_inputs(scenarios=[])
    batch = site_prior(inputs.priors["scaling.batch_tokens_2024"], "log10")  # split log-normal
    # nearest Normal in log10: median 60M, 10-90 % width of 16M-360M
    assert float(batch.loc) == pytest.approx(math.log10(60e6))
    assert float(batch.scale) == pytest.approx(math.log10(360 / 16) / (2 * 1.2815515655446004))
    growth = site_prior(inputs.priors["hardware.scaleup_domain_size_growth_per_year"], "log10")
    assert isinstance(growth, numpyro.distributions.Uniform)  # log-uniform 1.0-1.8 x/yr, exactly
    assert (float(growth.low), float(growth.high)) == pytest.approx((0.0, math.log10(1.8)))
    exponent = site_prior(inputs.priors["scaling.batch_exponent"], "linear", 0.5)
    assert float(exponent.loc) == pytest.approx(0.18)  # 0.36 on N is 0.18 on C = 120 N^2
    # a fixed value in a prior file is a fixed (deterministic) parameter
    assert site_prior(inputs.priors["training.duration_days"], "log10") == pytest.approx(
        math.log10(90)
    )


# ----------------------------------------------------------------------------- recovery

TRUTH = {
    "log10_layers_ref": math.log10(110.0),
    "layer_exponent": 0.29,
    "depth_noise_dex": 0.08,
    "log10_batch_2024": math.log10(25e6),
    "batch_compute_exponent": 0.19,
    "moe_batch_offset_dex": 0.4,
    "batch_shortfall_dex": 0.3,
    "batch_noise_dex": 0.08,
    "logit_max_utilization": math.log(0.62 / 0.38),
    "mfu_shortfall_dex": 0.15,
    "mfu_noise_dex": 0.03,
    "log10_domain_2024": math.log10(40.0),
    "domain_growth_dex_per_year": 0.16,
    "domain_noise_dex": 0.12,
    "log10_software_efficiency": math.log10(0.8),
    "run_mfu_noise_dex": 0.07,
    "log10_sequence_2024": math.log10(6000.0),
    "sequence_growth_dex_per_year": 0.12,
    "sequence_noise_dex": 0.15,
}


def _simulate(model, data: LawData, site: str, key) -> LawData:
    """Observations drawn from the law model itself with its parameters set to TRUTH."""
    conditioned = numpyro.handlers.condition(model, {k: np.asarray(v) for k, v in TRUTH.items()})
    trace = numpyro.handlers.trace(numpyro.handlers.seed(conditioned, key)).get_trace(
        data, observed=False
    )
    return data._replace(y=np.asarray(trace[site]["value"]))


@pytest.fixture(scope="module")
def synthetic_fit():
    """The joint model fitted to law data simulated from known parameters (and the real trends)."""
    init_jax()
    inputs = forecast_job.load_inputs(scenarios=[])
    predicted = predicted_runs(inputs.training_runs, inputs.hardware)
    real, tables = joint_data(
        inputs.hardware,
        inputs.frontier_runs,
        inputs.model_shapes,
        inputs.scaleup_domains,
        predicted,
    )
    rng = np.random.default_rng(0)
    keys = jax.random.split(jax.random.PRNGKey(1), 6)
    n = {
        "depth": 80,
        "batch": 80,
        "utilization": 40,
        "domain": 14,
        "run_efficiency": 30,
        "sequence": 60,
    }
    zeros = {law: np.zeros(k) for law, k in n.items()}
    depth = LawData(rng.uniform(-3.5, 0.5, n["depth"]), zeros["depth"], zeros["depth"])
    batch = LawData(
        rng.uniform(-5.0, 1.0, n["batch"]), zeros["batch"], (rng.random(n["batch"]) < 0.2) * 1.0
    )
    util = LawData(zeros["utilization"], zeros["utilization"], zeros["utilization"])
    domain = LawData(np.linspace(-6.0, 4.0, n["domain"]), zeros["domain"], zeros["domain"])
    runs = LawData(
        np.log10(rng.uniform(0.25, 0.65, n["run_efficiency"])),
        zeros["run_efficiency"],
        zeros["run_efficiency"],
    )
    sequence = LawData(rng.uniform(-6.0, 1.5, n["sequence"]), zeros["sequence"], zeros["sequence"])
    data = JointData(
        real.hardware,
        real.frontier,
        _simulate(depth_law_model, depth, "log10_layers", keys[0]),
        _simulate(batch_law_model, batch, "log10_batch", keys[1]),
        _simulate(utilization_law_model, util, "log10_mfu", keys[2]),
        _simulate(domain_growth_model, domain, "log10_domain", keys[3]),
        _simulate(run_efficiency_model, runs, "log10_run_mfu", keys[4]),
        _simulate(sequence_law_model, sequence, "log10_sequence", keys[5]),
    )
    synthetic_tables = {
        law: type(t)(
            data=getattr(data, law),
            names=tuple(f"{law}-{i}" for i in range(n[law])),
            groups=tuple(f"{law}-{i}" for i in range(n[law])),
            table=t.table,
            selection="synthetic",
        )
        for law, t in tables.items()
    }
    return fit_joint(
        data,
        synthetic_tables,
        trend_priors_from_prior_set(inputs.priors),
        law_priors_from_prior_set(inputs.priors),
        rng_key=jax.random.PRNGKey(2),
        num_chains=2,
        num_warmup=300,
        num_samples=300,
    )


POSITIVE = {site for site in TRUTH if site.endswith(("_noise_dex", "_shortfall_dex"))}
"""Scales bounded below by zero (HalfNormal priors): their posteriors are skewed against the
bound, so a central interval is the wrong test; they get the highest-density interval."""


def _interval(draws: np.ndarray, site: str, prob: float) -> tuple[float, float]:
    if site in POSITIVE:
        lo, hi = np.asarray(az.hdi(draws, prob=prob), dtype=float)
        return float(lo), float(hi)
    lo, hi = np.quantile(draws, [(1 - prob) / 2, (1 + prob) / 2])
    return float(lo), float(hi)


def test_positive_sites_are_the_bounded_ones(synthetic_fit) -> None:
    """The scales tested by HPD are the eight noise and shortfall scales, bounded below by zero
    (HalfNormal or LogNormal priors: every prior draw positive)."""
    prior = synthetic_fit["prior"]
    assert len(POSITIVE) == 8
    for site in POSITIVE:
        assert bool((prior[site].values > 0).all()), site


@pytest.mark.machine_sensitive
@pytest.mark.parametrize("site", sorted(TRUTH))
def test_joint_fit_recovers_known_law_parameters(synthetic_fit, site: str) -> None:
    """Truth inside the 99 % interval (HPD for the positive scales, central otherwise).

    One simulated data set fixes where each truth falls in its posterior (percentiles 0.07 to
    0.91 here); a 90 % interval would put the edge within Monte Carlo error of a truth, and
    NUTS's draws differ between CPUs. 99 % leaves several standard errors of margin."""
    draws = synthetic_fit["posterior"][site].values.ravel()
    lo, hi = _interval(draws, site, 0.99)
    assert lo <= TRUTH[site] <= hi, (
        f"{site}: truth {TRUTH[site]:.3g} outside 99 % [{lo:.3g}, {hi:.3g}]"
    )


@pytest.mark.machine_sensitive
def test_joint_fit_covers_most_truths_at_90_percent(synthetic_fit) -> None:
    """Calibration at 90 %: 14 truths, 12.6 expected inside; at least 11 (all 14 here, two of
    them within 0.02 of the edge, so on another CPU one or two may fall out)."""
    inside = []
    for site in TRUTH:
        lo, hi = _interval(synthetic_fit["posterior"][site].values.ravel(), site, 0.9)
        inside.append(lo <= TRUTH[site] <= hi)
    assert sum(inside) >= 11, dict(zip(TRUTH, inside, strict=True))


def test_recovered_levels_are_informative(synthetic_fit) -> None:
    """The data, not the prior, set the fitted levels: intervals far narrower than the priors."""
    post, prior = synthetic_fit["posterior"], synthetic_fit["prior"]
    for site in ("log10_batch_2024", "layer_exponent", "domain_growth_dex_per_year"):
        width = np.subtract(*np.quantile(post[site].values, [0.9, 0.1]))
        prior_width = np.subtract(*np.quantile(prior[site].values, [0.9, 0.1]))
        assert width < 0.6 * prior_width, site


# ----------------------------------------------------------------------------- the published tree


@pytest.fixture(scope="module")
def joint_forecast():
    """A small forecast through forecast_job.fit (joint model, no gate), thinned propagation."""
    inputs = forecast_job.load_inputs(scenarios=SCENARIOS)
    fit = forecast_job.fit(
        inputs, inputs.priors, chains=CHAINS, draws=DRAWS, warmup=DRAWS, seed=SEED, gate=False
    )
    results = {
        name: forecast_job.propagate_scenario(
            fit, ps, seed=SEED, years=YEARS, propagate_draws=PROPAGATE
        )
        for name, ps in inputs.scenarios.items()
    }
    tree, _ = forecast_job.assemble(
        inputs,
        fit,
        results,
        seed=SEED,
        chains=CHAINS,
        draws=DRAWS,
        years=YEARS,
        propagate_draws=PROPAGATE,
    )
    return inputs, tree


def test_posterior_and_prior_hold_the_law_parameters(joint_forecast) -> None:
    _, tree = joint_forecast
    post, prior = tree["posterior"], tree["prior"]
    for name in (*SHARED_INTERFACE, *(f.variable for f in FITTED_INPUTS.values())):
        assert post[name].dims == ("chain", "draw"), name
        assert prior[name].dims == ("chain", "draw") and prior[name].shape == post[name].shape
    assert "slope" in post and "frontier_slope" in post  # the trends are in the same posterior
    # the prior group is the prior: batch level centred on the prior file's 60M, wide
    assert np.median(prior["batch_tokens_2024"]) == pytest.approx(60e6, rel=0.15)
    # the posterior is the data's: the batch ceiling of published runs is far narrower
    post_width = np.log10(np.quantile(post["batch_tokens_2024"], [0.1, 0.9]))
    prior_width = np.log10(np.quantile(prior["batch_tokens_2024"], [0.1, 0.9]))
    assert np.diff(post_width)[0] < 0.5 * np.diff(prior_width)[0]


def test_fitted_inputs_are_thinned_posterior_draws_not_prior_draws(joint_forecast) -> None:
    inputs, tree = joint_forecast
    fi, post = tree["forecast_inputs"], tree["posterior"]
    assert tree.attrs["propagation_thinning"] == 2
    assert fi.sizes["draw"] == DRAWS // 2
    np.testing.assert_array_equal(fi["draw"].values, np.arange(0, DRAWS, 2))
    n = CHAINS * DRAWS // 2
    prior_draws = inputs.priors.sample(n, scenario_seed(SEED))
    for key, fitted in FITTED_INPUTS.items():
        values = fi[key.replace(".", "__")].sel(scenario="baseline").values
        expected = post[fitted.variable].sel(draw=fi["draw"]).values
        np.testing.assert_array_equal(values, expected, err_msg=key)
        assert not np.allclose(values.ravel(), prior_draws[key]), key


def test_scenario_override_replaces_exactly_its_key_and_keeps_common_random_numbers(
    joint_forecast,
) -> None:
    inputs, tree = joint_forecast
    fi = tree["forecast_inputs"]
    n = CHAINS * DRAWS // 2
    changed = {
        "aggressive-batch": {"scaling.batch_exponent"},
        "large-domains": {"hardware.scaleup_domain_size_growth_per_year"},
        "six-month-runs": {"training.duration_days"},
    }
    from forecast.stats.joint import draw_free_inputs

    rng_key = jax.random.PRNGKey(scenario_seed(SEED))
    posterior_vars = tree["posterior"].data_vars
    for scenario, keys in changed.items():
        # the scenario's own free block (the joint program's, drawn by Predictive)
        own = draw_free_inputs(inputs.scenarios[scenario], posterior_vars, n, rng_key)
        for key in PROPAGATED_KEYS:
            here = fi[key.replace(".", "__")].sel(scenario=scenario).values.ravel()
            base = fi[key.replace(".", "__")].sel(scenario="baseline").values.ravel()
            if key in keys:
                np.testing.assert_array_equal(here, own[key], err_msg=f"{scenario} {key}")
                assert not np.array_equal(here, base)
            else:  # unchanged keys: identical draws in every scenario
                np.testing.assert_array_equal(here, base, err_msg=f"{scenario} {key}")
    # the large-domains what-if is its own distribution, log-uniform 1.5-2.2 x/yr
    growth = fi["hardware__scaleup_domain_size_growth_per_year"].sel(scenario="large-domains")
    assert float(growth.min()) >= 1.5 and float(growth.max()) <= 2.2


def test_input_provenance(joint_forecast) -> None:
    inputs, tree = joint_forecast
    prov = json.loads(tree.attrs["input_provenance"])
    assert set(prov) == {"baseline", *SCENARIOS}
    assert all(set(p) == set(PROPAGATED_KEYS) for p in prov.values())
    batch = prov["baseline"]["scaling.batch_tokens_2024"]
    rows = int(
        (
            inputs.model_shapes["batch_size_tokens"].notna()
            & inputs.model_shapes["training_compute_flop"].notna()
        ).sum()
    )
    assert batch["kind"] == "fitted" and batch["law"] == "batch"
    assert batch["table"] == "data/model_shapes.csv" and batch["rows"] == rows
    assert "[sevilla2024-2030]" in batch["prior_source"]
    domain = prov["baseline"]["hardware.scaleup_domain_size_growth_per_year"]
    assert (domain["kind"], domain["table"], domain["rows"]) == (
        "fitted",
        "data/scaleup_domains.csv",
        6,
    )
    assert prov["baseline"]["scaling.layers_at_reference"]["kind"] == "fitted"
    assert prov["baseline"]["latency.kernel_us"]["kind"] == "prior"
    assert prov["baseline"]["training.duration_days"]["kind"] == "fixed"
    what_if = prov["aggressive-batch"]["scaling.batch_exponent"]
    assert what_if["kind"] == "scenario" and "[erdil2024]" in what_if["source"]
    assert prov["aggressive-batch"]["scaling.batch_tokens_2024"]["kind"] == "fitted"
    assert prov["six-month-runs"]["training.duration_days"]["kind"] == "fixed"


def test_fit_records_law_rows_and_prior_sources(joint_forecast) -> None:
    inputs, tree = joint_forecast
    rows = json.loads(tree.attrs["fit_law_rows"])
    assert rows == {
        "depth": 88,
        "batch": 54,
        "utilization": 9,
        "domain": 6,
        "run_efficiency": 12,
        "sequence": 97,
    }
    assert json.loads(tree.attrs["fit_law_priors"]) == law_prior_record(inputs.priors)


# ----------------------------------------------------------------------------- convergence gate


def test_gate_fails_on_a_starved_run_naming_a_law_parameter(joint_forecast) -> None:
    _, tree = joint_forecast
    laws = [v for names in LAW_PARAMETERS.values() for v in names]
    starved = xr.DataTree.from_dict(
        {"/posterior": tree["posterior"].to_dataset().isel(draw=slice(0, 12))}
    )
    with pytest.raises(ConvergenceError) as info:
        check_convergence(starved, var_names=laws)
    assert info.value.parameter.split("[")[0] in laws
    assert info.value.parameter.split("[")[0] in str(info.value)


def test_gate_covers_law_parameters(joint_forecast) -> None:
    """A chain stuck elsewhere in one law parameter fails the default gate, naming it."""
    _, tree = joint_forecast
    post = tree["posterior"].to_dataset()
    shifted = post["batch_shortfall_dex"].values.copy()
    shifted[0] += 1.0
    post["batch_shortfall_dex"] = (post["batch_shortfall_dex"].dims, shifted)
    bad = xr.DataTree.from_dict({"/posterior": post})
    with pytest.raises(ConvergenceError, match="r_hat of batch_shortfall_dex"):
        check_convergence(bad, ess_bulk_min=0)


def test_published_forecast_holds_loo_checks_of_every_likelihood(joint_forecast) -> None:
    """``predictive_checks``: one row per likelihood, rows = its observed rows, coverages are
    shares that grow with the interval, and a PIT straight from arviz_stats gives the same."""
    import arviz_stats as azs

    from forecast.inference.loo import LIKELIHOODS, central_coverage
    from forecast.queries.analyses import check_rows

    _, tree = joint_forecast
    checks = tree["predictive_checks"].to_dataset()
    assert list(checks["likelihood"].values) == list(LIKELIHOODS)
    for name, (site, _) in LIKELIHOODS.items():
        row = checks.sel(likelihood=name)
        assert int(row["n_rows"]) == tree["observed_data"][site].size, name
        cov = row["loo_coverage"].values
        assert np.all((cov >= 0) & (cov <= 1)) and np.all(np.diff(cov) >= 0), name
        pit = np.asarray(azs.loo_pit(tree, var_names=[site])[site]).ravel()
        np.testing.assert_allclose(cov, central_coverage(pit), err_msg=name)
    # the laws' 80 % LOO intervals are calibrated on the shipped tables (60-95 %)
    for name in ("depth", "batch"):
        assert 0.6 <= float(checks["loo_coverage"].sel(likelihood=name, prob=0.8)) <= 0.95
    assert [r["likelihood"] for r in check_rows(checks)] == list(LIKELIHOODS)


def test_central_coverage_of_constructed_pits() -> None:
    from forecast.inference.loo import central_coverage

    pit = np.array([0.05, 0.2, 0.3, 0.5, 0.74, 0.85, 0.97, 0.99])
    np.testing.assert_allclose(central_coverage(pit, (0.5, 0.8, 0.95)), [3 / 8, 5 / 8, 7 / 8])
    assert np.all(np.isnan(central_coverage(np.array([]))))


def test_free_block_draws_in_concurrent_threads_match_serial_draws() -> None:
    """NumPyro's handler stack is process-global; the flow propagates scenarios in threads, so
    the draws are serialised (:mod:`forecast.config.runtime`). Eight threads give the serial draws."""
    from concurrent.futures import ThreadPoolExecutor

    from forecast.stats.joint import draw_free_inputs

    inputs = forecast_job.load_inputs()
    key = jax.random.PRNGKey(3)
    sets = list(inputs.scenarios.values())
    serial = [draw_free_inputs(ps, (), 64, key) for ps in sets]
    with ThreadPoolExecutor(8) as pool:
        threaded = list(pool.map(lambda ps: draw_free_inputs(ps, (), 64, key), sets * 3))
    for i, got in enumerate(threaded):
        want = serial[i % len(sets)]
        assert got.keys() == want.keys()
        for k in want:
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)
