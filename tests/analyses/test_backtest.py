"""Backtest: coverage, PIT and log score on synthetic draws; one real rolling-origin run."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from scipy import stats
from support.backtest import frontier_result
from support.compiles import compiled_programs
from typer.testing import CliRunner

from forecast.analyses.backtest import (
    PROBS,
    backtest_dataset,
    interval_coverage,
    mixture_log_density,
    pit_values,
    split_at_origin,
)
from forecast.queries.analyses import coverage_rows

# ----------------------------------------------------------------------------- array layer


def _synthetic(sd_draws: float, n_obs: int = 4000, n_draws: int = 2000, seed: int = 0):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n_obs)  # each observation has its own predictive centre
    observed = mu + rng.normal(size=n_obs)
    draws = mu[None, :] + sd_draws * rng.normal(size=(n_draws, n_obs))
    return draws, observed


def test_coverage_of_calibrated_draws_is_nominal():
    draws, observed = _synthetic(1.0)
    cov = interval_coverage(draws, observed, PROBS).mean(axis=1)
    np.testing.assert_allclose(cov, PROBS, atol=0.03)


def test_coverage_of_too_narrow_draws_is_low_and_too_wide_is_high():
    narrow = interval_coverage(*_synthetic(0.5), PROBS).mean(axis=1)
    wide = interval_coverage(*_synthetic(2.0), PROBS).mean(axis=1)
    # analytic: P(|Z| < z_p * s) for predictive sd s
    z = stats.norm.ppf((1 + np.asarray(PROBS)) / 2)
    np.testing.assert_allclose(narrow, 2 * stats.norm.cdf(0.5 * z) - 1, atol=0.03)
    np.testing.assert_allclose(wide, 2 * stats.norm.cdf(2.0 * z) - 1, atol=0.03)
    assert np.all(narrow < np.asarray(PROBS) - 0.1) and np.all(wide > np.asarray(PROBS))


def test_pit_uniform_when_calibrated_and_u_shaped_when_too_narrow():
    pit = pit_values(*_synthetic(1.0, n_obs=2000, n_draws=1000))
    assert stats.kstest(pit, "uniform").pvalue > 0.001
    pit_narrow = pit_values(*_synthetic(0.5, n_obs=2000, n_draws=1000))
    tails = np.mean((pit_narrow < 0.1) | (pit_narrow > 0.9))
    assert tails > 0.35  # 0.2 if calibrated


def test_mixture_log_density_of_one_draw_is_the_student_t():
    samples = {
        "slope": np.array([[0.1, 0.2]]),
        "intercept": np.array([[15.0, 12.0]]),
        "sigma": np.array([[0.1, 0.2]]),
        "nu": np.array([5.0]),
    }
    y, years, m = np.array([15.3, 12.0]), np.array([2026.0, 2024.0]), np.array([0, 1])
    got = mixture_log_density(y, years, m, samples)
    expected = [stats.t.logpdf(15.3, 5, 15.2, 0.1), stats.t.logpdf(12.0, 5, 12.0, 0.2)]
    np.testing.assert_allclose(got, expected)
    # two identical draws: the same mixture
    doubled = {k: np.concatenate([v, v]) for k, v in samples.items()}
    np.testing.assert_allclose(mixture_log_density(y, years, m, doubled), expected)


def test_split_at_origin():
    from forecast.data.hardware import load_hardware

    df = load_hardware()
    train, test = split_at_origin(df, 2022)
    assert (train["release_year"] < 2022).all() and (test["release_year"] >= 2022).all()
    assert len(train) + len(test) == df["release_year"].notna().sum()


# ----------------------------------------------------------------------------- real run


@pytest.fixture(scope="module")
def origin_2022():
    from forecast.analyses.backtest import run_backtest
    from forecast.config.paths import default_priors_path
    from forecast.config.runtime import init_jax
    from forecast.data.hardware import load_frontier_runs, load_hardware
    from forecast.priors import load_priors
    from forecast.stats.trends import trend_priors_from_prior_set

    init_jax()
    priors = trend_priors_from_prior_set(load_priors(default_priors_path()))
    return run_backtest(
        load_hardware(), load_frontier_runs(), priors, [2022], chains=2, warmup=200, draws=200
    )


def test_real_origin_structure_and_coverage(origin_2022):
    (r,) = origin_2022
    n = r.observed.size
    assert n > 40  # 14 flagships shipped since 2022, 5 metrics, a few without scale-out
    assert r.covered.shape == (len(PROBS), n) and r.pit.shape == (n,)
    assert np.all((r.pit >= 0) & (r.pit <= 1)) and np.all(np.isfinite(r.log_density))
    assert np.all(r.years >= 2022)
    assert r.n_train["flops"] == 5  # P100, V100, A100, TPU v4, MI250X
    assert r.rhat_max < 1.1
    ds = backtest_dataset(origin_2022)
    assert ds.sizes["origin"] == 1 and list(ds["metric"].values)[-1] == "all"
    all_ = ds.sel(origin=2022, metric="all")
    assert int(all_["n_held_out"]) == n
    assert float(all_["coverage_80"]) == pytest.approx(r.covered[1].mean())
    # coverages nest; the acceptance band (60-95%) is measured by the CLI run in the docs
    assert float(all_["coverage_50"]) <= float(all_["coverage_80"]) <= float(all_["coverage_95"])
    assert 0.5 <= float(all_["coverage_80"]) <= 1.0
    curve = ds["coverage_curve"].sel(origin=2022, metric="all").values
    assert np.all(np.diff(curve) >= 0)


def test_cli_backtest_json(origin_2022, monkeypatch, tmp_path):
    from forecast.analyses import backtest, frontier_backtest
    from forecast.cli import app

    monkeypatch.setattr(backtest, "run_backtest", lambda *a, **k: origin_2022)
    frontier = [frontier_result(2022, [1.1, 0.8], [1.0, 1.0], [True, False])]
    monkeypatch.setattr(frontier_backtest, "run_frontier_backtest", lambda *a, **k: frontier)
    path = tmp_path / "forecast.nc"
    xr.DataTree.from_dict({"/forecast": xr.Dataset({"x": ("a", [1.0])})}).to_netcdf(
        path, engine="h5netcdf"
    )
    res = CliRunner().invoke(app, ["backtest", "--json", "--forecast", str(path)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    rows = out["hardware"]
    keys = {"metric", "origin", "coverage_50", "coverage_80", "coverage_95", "n_held_out"}
    assert all(keys | {"log_score"} <= set(r) for r in rows)
    assert [r["metric"] for r in rows][-1] == "all"
    assert rows == coverage_rows(backtest_dataset(origin_2022))
    assert [r["origin"] for r in out["frontier_compute"]] == ["2022", "pooled"]
    assert out["frontier_compute"][-1]["coverage_80"] == 0.5
    tree = xr.open_datatree(path, engine="h5netcdf")
    assert set(tree.children) == {"forecast", "backtest", "frontier_backtest"}
    tree.close()


# ----------------------------------------------------------------------------- frontier compute


def test_interval_coverage_and_pit_of_a_constructed_case():
    """Draws uniform on [0, 1]: the central 50% interval is [0.25, 0.75], the 80% one [0.1, 0.9],
    and the PIT of an observation is the observation itself."""
    draws = np.linspace(0.0, 1.0, 100_001)[:, None].repeat(5, axis=1)
    observed = np.array([0.05, 0.2, 0.5, 0.85, 0.97])
    covered = interval_coverage(draws, observed, (0.5, 0.8))
    assert covered.tolist() == [
        [False, False, True, False, False],
        [False, True, True, True, False],
    ]
    np.testing.assert_allclose(covered.mean(axis=1), [0.2, 0.6])
    np.testing.assert_allclose(pit_values(draws, observed), observed, atol=1e-4)


def test_frontier_dataset_pools_every_held_out_record():
    """Origin A: 3 of 4 records inside the 80% interval, errors +0.1, -0.2, +0.3, +0.4 dex;
    origin B: 1 of 2, errors -0.6, -0.4.  Pooled: 4 of 6; median error of all six -0.05, absolute 0.35."""
    from forecast.analyses.frontier_backtest import frontier_backtest_dataset
    from forecast.queries.analyses import frontier_coverage_rows

    a = frontier_result(2018, [1.1, 0.8, 1.3, 1.4], [1.0] * 4, [True, True, True, False])
    b = frontier_result(2022, [0.4, 0.6], [1.0, 1.0], [False, True], n_train=9)
    ds = frontier_backtest_dataset([a, b])
    assert list(ds["row"].values) == ["2018", "2022", "pooled"]
    np.testing.assert_allclose(ds["coverage_80"].values, [0.75, 0.5, 4 / 6])
    np.testing.assert_allclose(ds["n_held_out"].values, [4, 2, 6])
    np.testing.assert_allclose(ds["median_error_dex"].values, [0.2, -0.5, -0.05], atol=1e-12)
    np.testing.assert_allclose(ds["median_abs_error_dex"].values, [0.25, 0.5, 0.35], atol=1e-12)
    assert ds["held_out_name"].sel(origin=2022).values.tolist() == ["run0", "run1", "", ""]
    rows = frontier_coverage_rows(ds)
    assert [r["origin"] for r in rows] == ["2018", "2022", "pooled"]
    assert rows[-1]["growth_median"] is None and rows[0]["growth_median"] == 4.5


def test_frontier_split_on_the_shipped_records():
    """From 2018 as the forecast does where that leaves >= 3 records (2020: 4, 2022: 8); the
    2016 and 2018 origins have none from 2018 and train on every earlier record."""
    from forecast.analyses.frontier_backtest import FRONTIER_ORIGINS, frontier_split
    from forecast.data.hardware import load_frontier_runs

    df = load_frontier_runs()
    counts = {}
    for origin in FRONTIER_ORIGINS:
        train, held, start = frontier_split(df, origin)
        assert np.all(train.years < origin) and np.all(held.years >= origin)
        assert np.all(train.years >= start)
        counts[origin] = (len(train.years), len(held.years), start)
    assert counts[2020][2] == counts[2022][2] == 2018.0
    assert counts[2016][2] < 2013 and counts[2018][2] < 2013
    assert counts[2020][0] == 4 and counts[2016][0] == 8 and counts[2018][0] == 10
    assert all(n_held > 0 for _, n_held, _ in counts.values())
    # every held-out set ends with the latest record
    assert len({frontier_split(df, o)[1].names[-1] for o in FRONTIER_ORIGINS}) == 1


@pytest.fixture(scope="module")
def frontier_run():
    from forecast.analyses.frontier_backtest import run_frontier_backtest
    from forecast.config.paths import default_priors_path
    from forecast.config.runtime import init_jax
    from forecast.data.hardware import load_frontier_runs
    from forecast.priors import load_priors
    from forecast.stats.trends import trend_priors_from_prior_set

    init_jax()
    priors = trend_priors_from_prior_set(load_priors(default_priors_path()))
    return run_frontier_backtest(load_frontier_runs(), priors, chains=2, warmup=200, draws=200)


def test_frontier_backtest_on_the_shipped_data(frontier_run):
    from forecast.analyses.frontier_backtest import FRONTIER_ORIGINS, frontier_backtest_dataset

    assert [r.origin for r in frontier_run] == list(FRONTIER_ORIGINS)
    for r in frontier_run:
        n = r.observed.size
        assert n > 0 and r.n_train >= 3
        assert r.covered.shape == (len(PROBS), n)
        assert np.all(r.covered[0] <= r.covered[1]) and np.all(r.covered[1] <= r.covered[2])
        assert np.all((r.pit >= 0) & (r.pit <= 1)) and np.all(np.isfinite(r.log_density))
        assert np.all(r.lower[1] <= r.median) and np.all(r.median <= r.upper[1])
        assert r.rhat_max < 1.05 and r.divergences == 0
        assert 2.0 < r.growth_median < 10.0  # x/yr: the slope prior is 3.5-5.5 at 80%
        # the predictive is conditioned on beating the standing record: no draw below it
        assert np.all(r.lower[-1] > r.standing_log10_flop)
        assert np.all(r.observed > r.standing_log10_flop)  # records are running maxima
        assert 1.0 < r.nu_median < 60.0  # fitted tail weight (Gamma(2, 0.1) prior, median 16.8)
    ds = frontier_backtest_dataset(frontier_run)
    pooled = ds.sel(row="pooled")
    assert int(pooled["n_held_out"]) == sum(r.observed.size for r in frontier_run)
    assert float(pooled["coverage_80"]) == pytest.approx(
        np.mean(np.concatenate([r.covered[1] for r in frontier_run]))
    )


def test_padded_rows_leave_the_frontier_likelihood_unchanged():
    """The backtest pads its training records (masked out) so origins share one program: the
    padded model's log density equals the unpadded one's at any parameters."""
    import jax.numpy as jnp
    from numpyro.infer.util import log_density

    from forecast.config.paths import default_priors_path
    from forecast.priors import load_priors
    from forecast.stats.trends import frontier_compute_model, trend_priors_from_prior_set

    priors = trend_priors_from_prior_set(load_priors(default_priors_path()))
    years, flop = np.array([2019.5, 2020.2, 2021.9]), np.array([23.1, 23.9, 24.6])
    spec = np.array([False, True, False])
    params = {
        "frontier_slope": 0.6,
        "frontier_intercept": 25.0,
        "frontier_sigma": 0.3,
        "frontier_speculative_extra": 0.5,
        "frontier_nu": 7.0,
    }
    plain, _ = log_density(frontier_compute_model, (years, flop, spec, priors), {}, params)
    pad = lambda a, v: np.concatenate([a, np.full(5, v, dtype=a.dtype)])  # noqa: E731
    padded, _ = log_density(
        frontier_compute_model,
        (pad(years, 0.0), pad(flop, 0.0), pad(spec, False), priors),
        {"mask": jnp.arange(8) < 3},
        params,
    )
    assert float(padded) == pytest.approx(float(plain), rel=1e-12)
    unmasked, _ = log_density(
        frontier_compute_model,
        (pad(years, 0.0), pad(flop, 0.0), pad(spec, False), priors),
        {},
        params,
    )
    assert float(unmasked) < float(plain) - 100  # the padding rows, were they counted


def _frontier_fit_inputs(origin: int):
    """The shipped records a backtest origin trains on and its priors (the baseline file's)."""
    from forecast.analyses.frontier_backtest import frontier_backtest_priors, frontier_split
    from forecast.config.paths import default_priors_path
    from forecast.data.hardware import load_frontier_runs
    from forecast.priors import load_priors
    from forecast.stats.trends import trend_priors_from_prior_set

    priors = trend_priors_from_prior_set(load_priors(default_priors_path()))
    train = frontier_split(load_frontier_runs(), origin)[0]
    return train, frontier_backtest_priors(priors, train)


FRONTIER_FIT_SETTINGS = {"chains": 2, "warmup": 200, "draws": 200, "seed": 0}
"""frontier_run's settings: the tests below run the program it compiled."""


def test_frontier_origins_share_one_compiled_fit():
    """A second origin, with other records, other priors' centres and another count of rows,
    runs the program the first compiled (nothing compiles); its intercept is on the data's
    scale (the centring is undone)."""

    from forecast.analyses.frontier_backtest import fit_frontier

    (first, first_priors), (second, second_priors) = map(_frontier_fit_inputs, (2022, 2020))
    assert len(first.years) != len(second.years)
    fit_frontier(first, first_priors, **FRONTIER_FIT_SETTINGS)
    with compiled_programs() as compiled:
        samples, rhat, _ = fit_frontier(second, second_priors, **FRONTIER_FIT_SETTINGS)
    assert compiled == []
    level = float(np.median(samples["frontier_intercept"]))
    flop = np.asarray(second.log10_flop)
    assert flop.min() - 0.5 < level < flop.max() + 0.5 and rhat < 1.05


def test_a_frontier_fit_that_cannot_start_is_refused_by_name():
    """A NaN record makes the log density NaN everywhere: inside the compiled fit NumPyro cannot
    refuse the start, so the chains' last potential energy does."""
    from forecast.analyses.frontier_backtest import fit_frontier
    from forecast.inference.sampler import SamplerStartError

    train, p = _frontier_fit_inputs(2022)
    flop = np.asarray(train.log10_flop, dtype=float).copy()
    flop[0] = np.nan
    broken = train._replace(log10_flop=flop)
    with pytest.raises(SamplerStartError, match="chain\\(s\\) 0, 1 of 2 began"):
        fit_frontier(broken, p, **FRONTIER_FIT_SETTINGS)


def test_frontier_priors_that_cannot_key_the_cache_still_fit():
    """Priors built in Python may hold an array (unhashable): the fit then compiles a program of
    its own instead of failing on the cache's key."""
    import dataclasses

    from forecast.analyses.frontier_backtest import fit_frontier

    train, p = _frontier_fit_inputs(2022)
    p = dataclasses.replace(p, frontier_slope_loc=np.asarray(p.frontier_slope_loc))
    with pytest.raises(TypeError):
        hash(p)
    samples, rhat, divergences = fit_frontier(train, p, chains=2, warmup=50, draws=50, seed=0)
    assert samples["frontier_slope"].shape == (100,) and np.isfinite(rhat)


def test_frontier_group_round_trips_through_a_forecast_file(frontier_run, tmp_path):
    from forecast.analyses.frontier_backtest import frontier_backtest_dataset
    from forecast.store.publisher import add_groups

    path = tmp_path / "forecast.nc"
    xr.DataTree.from_dict({"/forecast": xr.Dataset({"x": ("a", [1.0])})}).to_netcdf(
        path, engine="h5netcdf"
    )
    ds = frontier_backtest_dataset(frontier_run)
    add_groups(path, {"frontier_backtest": ds})
    with xr.open_dataset(path, group="frontier_backtest", engine="h5netcdf") as back:
        xr.testing.assert_allclose(back.load()[["coverage_80", "pit"]], ds[["coverage_80", "pit"]])
        assert back["held_out_name"].values.tolist() == ds["held_out_name"].values.tolist()
        assert back.attrs["pooled_row"] == "pooled"


def test_standing_record_is_the_largest_earlier_record():
    """GNMT (2016-09, 6.6e21 FLOP) is the record every post-2017 record beats; GPT-3 175B is the
    largest before 2021; nothing precedes the first record (data/frontier_runs.csv)."""
    from forecast.analyses.frontier_backtest import standing_record
    from forecast.data.hardware import load_frontier_runs

    df = load_frontier_runs()
    assert standing_record(df, 2018.0) == pytest.approx(np.log10(6.62e21), abs=0.01)
    assert standing_record(df, 2021.0) == pytest.approx(np.log10(3.14e23), abs=0.01)
    assert standing_record(df, 2000.0) == -np.inf


def test_truncated_student_t_draws_match_the_conditional_quantiles():
    """Draws above ``low`` follow F(y | y > low) = (F(y) - F(low)) / (1 - F(low)); with
    ``low = -inf`` they are the plain Student-t."""
    from scipy import stats

    from forecast.analyses.frontier_backtest import truncated_student_t_draws

    rng = np.random.default_rng(3)
    loc, scale, nu, low = 1.0, 0.5, 5.0, 0.8
    d = truncated_student_t_draws(np.full((200_000, 1), loc), scale, nu, low, rng)[:, 0]
    assert d.min() > low
    f_low = stats.t.cdf((low - loc) / scale, nu)
    for q in (0.1, 0.5, 0.9):
        expected = loc + scale * stats.t.ppf(f_low + q * (1 - f_low), nu)
        assert np.quantile(d, q) == pytest.approx(expected, abs=0.01)
    plain = truncated_student_t_draws(np.full((200_000, 1), loc), scale, nu, -np.inf, rng)
    assert np.quantile(plain, 0.1) == pytest.approx(loc + scale * stats.t.ppf(0.1, nu), abs=0.01)
    # far in the lower tail the survival-function inversion stays finite and above the bound
    far = truncated_student_t_draws(np.full((1000, 1), 0.0), 0.1, 4.0, 3.0, rng)
    assert np.all(np.isfinite(far)) and far.min() > 3.0


def test_truncated_mixture_density_integrates_to_one_above_the_bound():
    from forecast.analyses.frontier_backtest import truncated_student_t_mixture_log_density

    loc = np.array([[0.0], [0.4]])
    scale = np.array([[0.3], [0.5]])
    nu = np.array([4.0, 20.0])
    grid = np.linspace(-0.2, 40.0, 40_001)
    shape = (2, grid.size)
    log_dens = truncated_student_t_mixture_log_density(
        grid, np.broadcast_to(loc, shape), np.broadcast_to(scale, shape), nu, -0.2
    )
    assert np.trapezoid(np.exp(log_dens), grid) == pytest.approx(1.0, abs=0.002)
    below = truncated_student_t_mixture_log_density(np.array([-0.3]), loc, scale, nu, -0.2)
    assert below[0] == -np.inf
