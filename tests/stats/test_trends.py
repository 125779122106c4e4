"""Tests of the trend models (forecast.stats.trends) and their runner (forecast.inference.fit)."""

from __future__ import annotations

import math
import re

import arviz as az
import jax
import numpy as np
import pandas as pd
import pytest
from numpyro.handlers import condition
from numpyro.infer import Predictive
from support.fits import fit_trends
from support.validation import H100_SXM5

from forecast.config.errors import WallcastError
from forecast.inference.draws import posterior_draws, posterior_predictive, prior_predictive
from forecast.inference.fit import fit_observations
from forecast.inference.gate import ConvergenceError, check_convergence, convergence_report
from forecast.stats.trends import (
    METRIC_COLUMNS,
    METRICS,
    FrontierObservations,
    HardwareObservations,
    TrendPriors,
    frontier_observations,
    project,
    resolve_intercepts,
    trend_model,
    trend_observations,
    trend_priors_from_prior_set,
)

H100_FLOPS = H100_SXM5.flops


# ------------------------------------------------------------------------------------ data


def _hardware_frame() -> pd.DataFrame:
    from forecast.data.hardware import load_hardware

    return load_hardware()


def _frontier_frame() -> pd.DataFrame:
    from forecast.data.hardware import load_frontier_runs

    return load_frontier_runs()


def _project_priors() -> TrendPriors:
    from forecast.priors import default_priors_path, load_priors

    return trend_priors_from_prior_set(load_priors(default_priors_path()))


@pytest.fixture(scope="module")
def hardware_df() -> pd.DataFrame:
    return _hardware_frame()


@pytest.fixture(scope="module")
def frontier_df() -> pd.DataFrame:
    return _frontier_frame()


@pytest.fixture(scope="module")
def real_fit(hardware_df, frontier_df):
    """The production fit at the default settings (4 chains x 1000 draws after 1000 warm-up).

    (Its speed is measured in benchmarks/, not asserted here.)
    """
    dt = fit_trends(hardware_df, frontier_df, _project_priors(), rng_key=jax.random.PRNGKey(0))
    return dt, None


def _growth(dt, metric: str) -> np.ndarray:
    draws = posterior_draws(dt)
    if metric == "frontier":
        return 10 ** draws["frontier_slope"]
    return 10 ** draws["slope"][:, METRICS.index(metric)]


# ------------------------------------------------------------------------------------ priors


class _FakePrior:
    def __init__(self, q10: float, q50: float, q90: float) -> None:
        self.q = {0.1: q10, 0.5: q50, 0.9: q90}

    def quantile(self, q: float) -> float:
        return self.q[q]

    def median(self) -> float:
        return self.q[0.5]


def test_trend_priors_from_prior_set_maps_quantiles_to_log10_slopes():
    prior_set = {
        "hardware.flops_growth_per_year": _FakePrior(1.3, 1.45, 1.65),
        "hardware.hbm_bandwidth_growth_per_year": _FakePrior(1.2, 1.27, 1.35),
        "hardware.hbm_capacity_growth_per_year": _FakePrior(1.2, 1.3, 1.4),
        "hardware.scaleup_bandwidth_growth_per_year": _FakePrior(1.18, 1.3, 1.4),
        "hardware.scaleout_bandwidth_growth_per_year": _FakePrior(1.18, 1.3, 1.4),
        "hardware.trend_noise_dex": _FakePrior(0.07, 0.11, 0.18),
        "frontier.compute_growth_per_year": _FakePrior(3.5, 4.4, 5.5),
        "frontier.compute_2024_flop": _FakePrior(3.5e25, 5e25, 1e26),
    }
    priors = trend_priors_from_prior_set(prior_set)
    loc, scale = priors.slope_prior("flops")
    assert loc == pytest.approx(math.log10(1.45))
    assert scale == pytest.approx((math.log10(1.65) - math.log10(1.3)) / (2 * 1.2815516))
    assert priors.frontier_slope_loc == pytest.approx(math.log10(4.4))
    assert priors.frontier_intercept_loc == pytest.approx(math.log10(5e25))
    # HalfNormal noise prior whose median equals the PriorSet's median noise
    assert priors.noise_scale * 0.6744898 == pytest.approx(0.11)
    assert priors.intercept_loc is None and priors.intercept_scale == 2.0
    assert TrendPriors.from_dict(priors.to_dict()) == priors


def test_trend_priors_validate():
    with pytest.raises(ValueError, match="slope_loc has 2 entries"):
        TrendPriors(slope_loc=(0.1, 0.1), slope_scale=(0.1,) * 5)
    with pytest.raises(ValueError, match="noise_scale"):
        TrendPriors(slope_loc=(0.1,) * 5, slope_scale=(0.1,) * 5, noise_scale=0.0)


# ------------------------------------------------------------------------------------ rows


def test_trend_observations_long_format_selects_shipped_flagships(hardware_df):
    obs = trend_observations(hardware_df)
    fit_rows = hardware_df[hardware_df["flagship"] & (hardware_df["status"] == "shipped")]
    expected = sum(int(fit_rows[col].notna().sum()) for col in METRIC_COLUMNS.values())
    assert len(obs.years) == len(obs.log10_values) == len(obs.metric_index) == expected
    assert np.all(np.isfinite(obs.log10_values))
    names = {n.split("|")[0] for n in obs.names}
    assert not names & set(hardware_df.loc[hardware_df["status"] == "announced", "name"])
    assert not names & set(hardware_df.loc[~hardware_df["flagship"], "name"])
    # missing values are absent: AMD parts have no scale-out observation
    assert "AMD Instinct MI300X|scaleout_bandwidth" not in set(obs.names)
    h100 = list(obs.names).index("NVIDIA H100 SXM5|flops")
    assert obs.log10_values[h100] == pytest.approx(math.log10(H100_FLOPS))
    assert obs.metric_index[h100] == METRICS.index("flops")
    announced = trend_observations(hardware_df, statuses=("announced",))
    assert len(announced.years) > 0
    assert all("Rubin" in n or "MI455X" in n for n in announced.names)


def test_frontier_observations_records_since_2018_without_censored(frontier_df):
    obs = frontier_observations(frontier_df)
    assert obs.years.min() >= 2018 and np.all(np.diff(obs.years) >= 0)
    assert np.all(np.isfinite(obs.log10_flop))
    records = frontier_df[frontier_df["record"] & (frontier_df["year"] >= 2018)]
    assert len(obs.years) == int(records["training_compute_flop"].notna().sum())
    assert "Grok 4" in set(obs.names) and "GPT-3 175B (davinci)" in set(obs.names)
    assert "AlphaGo Lee" not in set(obs.names)  # a pre-2018 record
    spec = dict(zip(obs.names, obs.is_speculative, strict=True))
    assert spec["Grok 4"] and not spec["GPT-3 175B (davinci)"]


# ------------------------------------------------------------------------------------ recovery


TRUE_SLOPES = np.array([0.16, 0.11, 0.13, 0.12, 0.14])
TRUE_FRONTIER_SLOPE = 0.66


def _simulated_observations(seed: int) -> tuple[HardwareObservations, FrontierObservations]:
    """Data drawn from trend_model's own generative process at known parameters."""
    rng = np.random.default_rng(seed)
    n_per = 30
    years = np.tile(np.linspace(2016.0, 2025.5, n_per), len(METRICS))
    metric_index = np.repeat(np.arange(len(METRICS)), n_per).astype(np.int32)
    hardware = HardwareObservations(
        years, np.zeros_like(years), metric_index, np.array([f"p{i}" for i in range(len(years))])
    )
    f_years = np.sort(rng.uniform(2018.0, 2025.6, 20))
    frontier = FrontierObservations(
        f_years,
        np.zeros_like(f_years),
        rng.random(20) < 0.3,
        np.array([f"r{i}" for i in range(20)]),
    )
    truth = {
        "slope": TRUE_SLOPES,
        "intercept": np.array([15.0, 12.5, 11.0, 11.8, 10.5]),
        "sigma": np.full(len(METRICS), 0.1),
        "nu": 10.0,
        "frontier_slope": TRUE_FRONTIER_SLOPE,
        "frontier_intercept": 25.7,
        "frontier_sigma": 0.2,
        "frontier_speculative_extra": 0.5,
    }
    priors = TrendPriors.default()
    priors = TrendPriors(**{**priors.__dict__, "intercept_loc": tuple(truth["intercept"])})
    model = condition(trend_model, data=truth)
    sim = Predictive(model, num_samples=1)(
        jax.random.PRNGKey(seed), hardware, frontier, priors, observed=False
    )
    hardware = hardware._replace(log10_values=np.asarray(sim["log10_value"][0]))
    frontier = frontier._replace(log10_flop=np.asarray(sim["log10_compute"][0]))
    return hardware, frontier


@pytest.mark.machine_sensitive
def test_parameter_recovery_from_simulated_data():
    hardware, frontier = _simulated_observations(seed=7)
    # a vague slope prior so that recovery is the data's doing, not the prior's
    vague = TrendPriors(slope_loc=(0.0,) * 5, slope_scale=(1.0,) * 5, frontier_slope_scale=1.0)
    dt = fit_observations(
        hardware,
        frontier,
        vague,
        rng_key=jax.random.PRNGKey(1),
        num_chains=2,
        num_warmup=250,
        num_samples=250,
    )
    check_convergence(dt, rhat_max=1.05, ess_bulk_min=100)  # a short run: looser gate
    draws = posterior_draws(dt)
    # 99 % intervals: one simulated data set fixes where each truth falls in its posterior, and
    # NUTS's draws (so the interval's edges) differ between CPUs; 99 % leaves margin for that
    lo, hi = np.percentile(draws["slope"], [0.5, 99.5], axis=0)
    assert np.all((lo <= TRUE_SLOPES) & (hi >= TRUE_SLOPES)), (lo, hi)
    np.testing.assert_allclose(draws["slope"].mean(axis=0), TRUE_SLOPES, atol=0.015)
    f_lo, f_hi = np.percentile(draws["frontier_slope"], [0.5, 99.5])
    assert f_lo <= TRUE_FRONTIER_SLOPE <= f_hi
    assert abs(draws["frontier_slope"].mean() - TRUE_FRONTIER_SLOPE) < 0.05
    assert np.all(np.abs(np.median(draws["sigma"], axis=0) - 0.1) < 0.05)


# ------------------------------------------------------------------------------------ real data


def test_real_fit_structure(real_fit):
    dt, _ = real_fit
    for group in (
        "posterior",
        "sample_stats",
        "observed_data",
        "log_likelihood",
        "posterior_predictive",
    ):
        assert group in dt.children, group
    post = dt["posterior"]
    assert list(post["metric"].values) == list(METRICS)
    assert post["slope"].dims == ("chain", "draw", "metric")
    assert post.sizes["chain"] == 4 and post.sizes["draw"] == 1000
    assert dt["log_likelihood"]["log10_value"].dims == ("chain", "draw", "obs")
    assert dt["posterior_predictive"]["log10_compute"].dims == ("chain", "draw", "run")
    assert {"priors", "data_hash", "rng_key", "model_config"} <= set(dt.attrs)


def test_real_fit_growth_rates_match_published_ranges(real_fit):
    dt, _ = real_fit
    assert 1.3 <= np.median(_growth(dt, "flops")) <= 1.8  # [delsozzo2026] 1.62; fits 1.47-1.64
    assert 1.15 <= np.median(_growth(dt, "hbm_bandwidth")) <= 1.45  # [gholami2024] 1.26; fit 1.30
    assert 3.0 <= np.median(_growth(dt, "frontier")) <= 6.0  # [sevilla2024-compute]: 4-5x/yr
    for metric in ("hbm_capacity", "scaleup_bandwidth", "scaleout_bandwidth"):
        assert 1.1 <= np.median(_growth(dt, metric)) <= 1.6, metric


def test_convergence_gate_passes_on_real_fit(real_fit):
    dt, _ = real_fit
    check_convergence(dt)


@pytest.fixture(scope="module")
def short_fits(hardware_df, frontier_df):
    """Two deliberately short runs (5 warm-up, 20 draws) with the same seed."""
    kwargs = {"num_chains": 2, "num_warmup": 5, "num_samples": 20}
    return [
        fit_trends(
            hardware_df, frontier_df, TrendPriors.default(), rng_key=jax.random.PRNGKey(3), **kwargs
        )
        for _ in range(2)
    ]


def test_convergence_gate_rejects_a_short_run(short_fits):
    dt = short_fits[0]
    with pytest.raises(ConvergenceError) as info:
        check_convergence(dt)
    err = info.value
    assert isinstance(err, WallcastError)
    assert err.diagnostic in {"divergences", "r_hat", "ess_bulk"}
    assert re.search(r"(r_hat|ess_bulk) of [a-z_]+(\[[a-z_]+\])? is ", str(err)), str(err)


def test_convergence_gate_names_worst_parameter_of_disagreeing_chains():
    rng = np.random.default_rng(0)
    slope = rng.normal(0.15, 0.01, size=(4, 500, len(METRICS)))
    slope[2:, :, 1] += 0.2  # chains 2 and 3 disagree about hbm_bandwidth only
    dt = az.from_dict(
        {
            "posterior": {"slope": slope, "nu": rng.gamma(2, 10, size=(4, 500))},
            "sample_stats": {"diverging": np.zeros((4, 500), dtype=bool)},
        },
        dims={"slope": ["metric"]},
        coords={"metric": list(METRICS)},
    )
    with pytest.raises(ConvergenceError, match=r"r_hat of slope\[hbm_bandwidth\] is \d") as info:
        check_convergence(dt)
    assert info.value.parameter == "slope[hbm_bandwidth]"
    assert info.value.value > 1.5

    ok = slope.copy()
    ok[2:, :, 1] -= 0.2
    diverging = np.zeros((4, 500), dtype=bool)
    diverging[1, [3, 30, 300]] = True
    dt = az.from_dict(
        {"posterior": {"slope": ok}, "sample_stats": {"diverging": diverging}},
        dims={"slope": ["metric"]},
        coords={"metric": list(METRICS)},
    )
    with pytest.raises(ConvergenceError, match="3 divergent transitions") as info:
        check_convergence(dt)
    assert info.value.diagnostic == "divergences"


def test_prior_predictive_spans_h100_class_flops(hardware_df, frontier_df):
    hardware = trend_observations(hardware_df)
    priors = resolve_intercepts(_project_priors(), hardware.log10_values, hardware.metric_index)
    query = HardwareObservations(
        np.array([2024.0]), np.array([np.nan]), np.array([0], dtype=np.int32), np.array(["H100"])
    )
    draws = prior_predictive(priors, query, None, rng_key=jax.random.PRNGKey(5), num_samples=2000)
    pred = draws["log10_value"][:, 0]
    assert pred.shape == (2000,)
    lo, hi = np.percentile(pred, [1, 99])
    assert lo < math.log10(H100_FLOPS) < hi
    assert hi - lo > 1.0  # the prior is weak: wider than one decade
    # the frontier prior predictive for 2024 spans the 2024-25 records too
    frontier = frontier_observations(frontier_df)
    draws = prior_predictive(
        priors, None, frontier, rng_key=jax.random.PRNGKey(6), num_samples=2000
    )
    lo, hi = np.percentile(draws["log10_compute"], [1, 99], axis=0)
    recent = frontier.years >= 2023
    assert np.all(
        (lo[recent] < frontier.log10_flop[recent]) & (frontier.log10_flop[recent] < hi[recent])
    )


def test_posterior_predictive_covers_observed_flagships(real_fit):
    dt, _ = real_fit
    observed = dt["observed_data"]["log10_value"].values
    stored = (
        dt["posterior_predictive"]["log10_value"].stack(s=("chain", "draw")).transpose("s", ...)
    )
    fresh = posterior_predictive(dt, rng_key=jax.random.PRNGKey(9))["log10_value"]
    assert fresh.shape == (4000, observed.size)
    for draws in (np.asarray(stored.values), fresh):
        lo, hi = np.percentile(draws, [2.5, 97.5], axis=0)
        assert np.mean((lo <= observed) & (observed <= hi)) >= 0.85
    compute = dt["observed_data"]["log10_compute"].values
    pc = posterior_predictive(dt, rng_key=jax.random.PRNGKey(10))["log10_compute"]
    lo, hi = np.percentile(pc, [2.5, 97.5], axis=0)
    assert np.mean((lo <= compute) & (compute <= hi)) >= 0.85


def test_project_mean_trend_and_predictive_noise(real_fit):
    dt, _ = real_fit
    draws = posterior_draws(dt)
    years = np.array([2024.0, 2030.0])
    mean = project(draws, years)
    assert set(mean) == {*METRICS, "frontier_compute"}
    assert mean["flops"].shape == (4000, 2)
    np.testing.assert_allclose(mean["flops"][:, 0], draws["intercept"][:, 0])
    np.testing.assert_allclose(
        mean["frontier_compute"][:, 1] - mean["frontier_compute"][:, 0], 6 * draws["frontier_slope"]
    )
    noisy = project(draws, years, rng_key=jax.random.PRNGKey(2))
    spread = np.std(noisy["flops"] - mean["flops"])
    assert 0.5 * np.median(draws["sigma"][:, 0]) < spread < 5 * np.median(draws["sigma"][:, 0])
    # frontier compute in 2030 on the fitted trend: ~1e29-1e31 FLOP
    assert 28.5 < np.median(mean["frontier_compute"][:, 1]) < 31.0


def test_same_seed_gives_identical_posterior(short_fits):
    a, b = short_fits
    for name in a["posterior"].data_vars:
        np.testing.assert_array_equal(a["posterior"][name].values, b["posterior"][name].values)
    for name in ("log10_value", "log10_compute"):
        np.testing.assert_array_equal(
            a["posterior_predictive"][name].values, b["posterior_predictive"][name].values
        )
    # the chains themselves are not copies of each other (distinct keys per chain)
    slope = a["posterior"]["slope"].values
    assert not np.array_equal(slope[0], slope[1])
    assert a.attrs["data_hash"] == b.attrs["data_hash"] and a.attrs["rng_key"] == b.attrs["rng_key"]


# ------------------------------------------------------------------------------------ fixed values


def test_a_fixed_growth_is_a_zero_scale_slope_prior():
    from forecast.stats.trends import _growth_to_slope

    loc, scale = _growth_to_slope(4.0, 4.0, 4.0)  # epoch-2030.toml: frontier growth value = 4
    assert loc == pytest.approx(math.log10(4.0)) and scale == 0.0
    with pytest.raises(ValueError, match="must not decrease"):
        _growth_to_slope(4.0, 3.0, 5.0)
    fixed = TrendPriors(
        slope_loc=(0.1,) * 5, slope_scale=(0.0, 0.1, 0.1, 0.1, 0.1), frontier_slope_scale=0.0
    )
    assert fixed.fixed_slopes == (True, False, False, False, False)
    with pytest.raises(ValueError, match="slope_scale must be >= 0"):
        TrendPriors(slope_loc=(0.1,) * 5, slope_scale=(-0.1,) + (0.1,) * 4)
    with pytest.raises(ValueError, match="frontier_intercept_scale must be finite and >= 0"):
        TrendPriors(slope_loc=(0.1,) * 5, slope_scale=(0.1,) * 5, frontier_intercept_scale=-1)


def test_fixed_trend_parameters_are_point_masses_in_the_fit():
    """A fixed slope / frontier slope / frontier intercept equals its value in every draw; the
    other parameters are still learnt from the data, and the gate passes (fixed entries left out)."""
    hardware, frontier = _simulated_observations(seed=7)
    fixed_flops = 0.2  # the truth is 0.16: the fit must not move it
    priors = TrendPriors(
        slope_loc=(fixed_flops, 0.0, 0.0, 0.0, 0.0),
        slope_scale=(0.0, 1.0, 1.0, 1.0, 1.0),
        frontier_slope_loc=TRUE_FRONTIER_SLOPE,
        frontier_slope_scale=0.0,
        frontier_intercept_loc=25.7,
        frontier_intercept_scale=0.0,
    )
    dt = fit_observations(
        hardware,
        frontier,
        priors,
        rng_key=jax.random.PRNGKey(1),
        num_chains=2,
        num_warmup=250,
        num_samples=250,
    )
    draws = posterior_draws(dt)
    for name in ("slope", "slope_sampled", "intercept", "sigma"):
        assert dt["posterior"][name].dims == ("chain", "draw", "metric"), name
    assert dt["log_likelihood"]["log10_value"].dims == ("chain", "draw", "obs")
    assert dt["posterior_predictive"]["log10_compute"].dims == ("chain", "draw", "run")
    assert np.all(draws["slope"][:, 0] == fixed_flops)
    assert np.all(draws["frontier_slope"] == TRUE_FRONTIER_SLOPE)
    assert np.all(draws["frontier_intercept"] == 25.7)
    np.testing.assert_allclose(draws["slope"][:, 1:].mean(axis=0), TRUE_SLOPES[1:], atol=0.015)
    report = convergence_report(dt)
    assert {"slope", "frontier_slope", "frontier_intercept"} <= set(report["fixed"])
    check_convergence(dt, rhat_max=1.05)  # default ESS minimum: 100 per chain
    projected = project(draws, np.array([2024.0, 2034.0]))
    np.testing.assert_allclose(np.diff(projected["frontier_compute"], axis=1), 6.6)


# ------------------------------------------------------------------------------------ gate size


def _iid_posterior(chains: int, draws: int, seed: int = 0, **extra) -> object:
    rng = np.random.default_rng(seed)
    return az.from_dict(
        {
            "posterior": {"slope": rng.normal(0.15, 0.01, size=(chains, draws)), **extra},
            "sample_stats": {"diverging": np.zeros((chains, draws), dtype=bool)},
        }
    )


def test_gate_ess_minimum_follows_the_number_of_chains():
    """Bulk ESS >= 100 per chain (Vehtari et al. 2021, doi:10.1214/20-BA1221): 200 for 2 chains,
    400 for 4. Independent draws have ESS close to their number."""
    two = _iid_posterior(chains=2, draws=150)  # ESS ~300: enough for 2 chains (200)
    assert 250 < convergence_report(two)["ess_bulk"][1] < 400
    loose = 1.1  # R-hat of short independent runs scatters around 1.01; this test is about ESS
    check_convergence(two, rhat_max=loose)
    with pytest.raises(ConvergenceError, match=r"min 400\)"):
        check_convergence(two, rhat_max=loose, ess_bulk_min=400)  # an explicit minimum applies
    four = _iid_posterior(chains=4, draws=75)  # ESS ~300: too few for 4 chains (400)
    with pytest.raises(ConvergenceError) as info:
        check_convergence(four, rhat_max=loose)
    err = info.value
    assert err.diagnostic == "ess_bulk" and err.failures[0][3] == 400
    assert (err.chains, err.draws) == (4, 75)
    assert "(min 400 = 100 per chain x 4 chains)" in str(err)
    assert str(err).endswith("increase --draws (now 75) or --chains (now 4), or lengthen --warmup")


def test_gate_leaves_out_parameters_fixed_by_their_prior():
    fixed = np.full((2, 300), 0.602)  # a fixed value: identical in every draw, R-hat NaN
    dt = _iid_posterior(chains=2, draws=300, frontier_slope=fixed)
    report = convergence_report(dt)
    assert report["fixed"] == ["frontier_slope"]
    assert report["r_hat"][0] == "slope" and report["ess_bulk"][0] == "slope"
    check_convergence(dt, rhat_max=1.1)
    # a parameter stuck at different values in different chains is not "fixed": it fails
    stuck = np.concatenate([np.full((1, 300), 0.6), np.full((1, 300), 0.7)])
    with pytest.raises(ConvergenceError, match="r_hat of frontier_slope"):
        check_convergence(_iid_posterior(chains=2, draws=300, frontier_slope=stuck), rhat_max=1.1)


def test_divergence_error_names_what_to_try():
    dt = _iid_posterior(chains=2, draws=300)
    dt["sample_stats"]["diverging"].values[0, :2] = True
    with pytest.raises(ConvergenceError, match="2 divergent transitions") as info:
        check_convergence(dt, rhat_max=1.1)
    assert "check the priors" in info.value.hint and "--seed" in info.value.hint


def test_frontier_tail_weight_is_fitted_by_default_and_fixed_when_given():
    """``frontier_nu`` is a sample site with the hardware ``nu``'s Gamma(2, 0.1) prior unless
    :class:`TrendPriors` fixes it; a fixed value is a deterministic site (so the gate skips it)."""
    from numpyro.handlers import seed, trace

    from forecast.stats.trends import frontier_compute_model

    years, y, spec = np.array([2019.0, 2021.0]), np.array([23.0, 24.3]), np.array([False, True])
    base = dict(slope_loc=(0.1,) * 5, slope_scale=(0.1,) * 5)
    fitted = trace(seed(frontier_compute_model, 0)).get_trace(years, y, spec, TrendPriors(**base))
    assert fitted["frontier_nu"]["type"] == "sample" and not fitted["frontier_nu"]["is_observed"]
    prior = fitted["frontier_nu"]["fn"]
    assert float(prior.concentration) == 2.0 and float(prior.rate) == 0.1
    fixed = trace(seed(frontier_compute_model, 0)).get_trace(
        years, y, spec, TrendPriors(**base, frontier_nu=4.0)
    )
    assert fixed["frontier_nu"]["type"] == "deterministic"
    assert float(fixed["frontier_nu"]["value"]) == 4.0
    assert np.all(np.asarray(fixed["log10_compute"]["fn"].df) == 4.0)
    with pytest.raises(ValueError, match="frontier_nu must be finite and > 0"):
        TrendPriors(**base, frontier_nu=0.0)
