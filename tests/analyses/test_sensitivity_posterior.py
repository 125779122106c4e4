"""Sobol on the joint posterior (issue 12): posterior priors, correlated laws, bases, fallback."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from scipy import special, stats

from forecast.analyses.sensitivity import (
    BASIS_GROUPS,
    _correlate,
    posterior_basis,
    prior_basis,
    run_sensitivity,
    saltelli_design,
    sensitivity_dataset,
)
from forecast.priors import load_priors, loads
from forecast.priors.posterior import normal_scores_correlation, posterior_prior
from forecast.priors.registry import FITTED_INPUTS
from forecast.queries.analyses import comparison_rows

METRICS = ("flops", "hbm_bandwidth", "hbm_capacity", "scaleup_bandwidth", "scaleout_bandwidth")
BATCH_LOG10_SD = 0.02  # dex: the fixture's batch posterior, 25x narrower than the prior's 0.52


def _pair(rng, n, loc, scale, rho):
    """Two normal columns with correlation ``rho``."""
    z = rng.standard_normal((2, n))
    z[1] = rho * z[0] + np.sqrt(1 - rho**2) * z[1]
    return loc[0] + scale[0] * z[0], loc[1] + scale[1] * z[1]


ROWS = {"depth": 88, "batch": 54, "utilization": 9, "domain": 6}


def fixture_tree(
    *, fitted: bool = True, kinds: dict[str, str] | None = None, chains: int = 2, draws: int = 500
) -> xr.DataTree:
    """A small synthetic forecast tree with the shared interface's posterior variables and an
    ``input_provenance`` that says every fitted key was fitted (``kinds``: other kinds)."""
    from forecast.config.paths import default_priors_path

    provenance = {}
    for key, fit in FITTED_INPUTS.items():
        kind = (kinds or {}).get(key, "fitted" if fitted else "prior")
        provenance[key] = (
            {
                "kind": kind,
                "law": fit.law,
                "table": f"data/{fit.table}",
                "rows": ROWS[fit.law],
                "prior_source": "[sevilla2024-2030]",
            }
            if kind == "fitted"
            else {"kind": kind, "source": "a prior file"}
        )

    rng = np.random.default_rng(12)
    n = chains * draws
    shape = (chains, draws)
    coords = {"chain": np.arange(chains), "draw": np.arange(draws)}
    growth = [1.45, 1.27, 1.30, 1.30, 1.30]
    slope = np.log10(growth)[None, :] + 0.01 * rng.standard_normal((n, len(METRICS)))
    f_slope, f_level = _pair(rng, n, (np.log10(4.2), 25.7), (0.02, 0.05), 0.6)
    post = {
        # 2024 levels near the data anchors (log10 FLOP/s, B/s, B, B/s, B/s)
        "intercept": np.tile([15.09, 12.66, 11.17, 11.77, 10.68], (n, 1)),
        "slope": slope,
        "frontier_slope": f_slope,
        "frontier_intercept": f_level,
    }
    if fitted:
        log10_b, half_beta = _pair(rng, n, (np.log10(6e7), 0.18), (BATCH_LOG10_SD, 0.015), -0.7)
        alpha, log10_l = _pair(rng, n, (0.268, np.log10(108.0)), (0.01, 0.012), 0.5)
        post.update(
            log10_batch_2024=log10_b,
            batch_tokens_2024=10.0**log10_b,
            batch_exponent=2.0 * half_beta,
            layer_exponent=alpha,
            layers_at_reference=10.0**log10_l,
            max_utilization=special.expit(0.4 + 0.1 * rng.standard_normal(n)),
            domain_growth_per_year=10.0 ** (0.11 + 0.02 * rng.standard_normal(n)),
        )
    ds = xr.Dataset(
        {
            k: (
                ("chain", "draw", "metric") if np.ndim(v) == 2 else ("chain", "draw"),
                np.reshape(v, shape + np.shape(v)[1:]),
            )
            for k, v in post.items()
        },
        coords={**coords, "metric": list(METRICS)},
    )
    fc = xr.Dataset({"hit_year": (("draw", "wall"), np.full((4, 2), 2031.0))})
    tree = xr.DataTree.from_dict({"/posterior": ds, "/forecast": fc})
    tree.attrs.update(
        id="fixture",
        priors_text=default_priors_path().read_text(),
        priors_name="baseline",
        input_provenance=json.dumps({"baseline": provenance}),
    )
    return tree


@pytest.fixture(scope="module")
def baseline():
    from forecast.config.paths import default_priors_path

    return load_priors(default_priors_path())


# ----------------------------------------------------------------------------- posterior priors


@pytest.mark.parametrize(
    ("key", "draws"),
    [
        # skewed positive (a log-normal with a heavy right arm), positive near-normal, fraction
        ("scaling.batch_tokens_2024", np.exp(np.random.default_rng(0).gamma(2.0, 0.6, 4000)) * 1e7),
        ("scaling.batch_exponent", np.random.default_rng(1).normal(0.36, 0.03, 4000)),
        (
            "training.max_utilization",
            special.expit(np.random.default_rng(2).normal(0.4, 0.3, 4000)),
        ),
    ],
)
def test_posterior_prior_reproduces_the_draws_quantiles(key, draws):
    prior = posterior_prior(key, draws, "posterior of a test")
    assert prior.dist.startswith("quantile_") and prior.source == "posterior of a test"
    for q in (0.1, 0.5, 0.9):
        assert prior.quantile(q) == pytest.approx(np.quantile(draws, q), rel=0.01), q
    # sampling it gives the draws' distribution back (two-sample KS, 4000 vs 4000)
    resampled = prior.sample(np.random.default_rng(3), 4000)
    assert stats.ks_2samp(resampled, draws).pvalue > 0.01


def test_posterior_prior_point_mass_ties_and_bad_draws():
    assert posterior_prior("scaling.layer_exponent", np.full(10, 0.27), "s").is_point
    # draws piled on a few values: tied knots merged, still strictly increasing and usable
    piled = posterior_prior(
        "scaling.layer_exponent", np.repeat([0.25, 0.27, 0.3], [50, 900, 50]), "s"
    )
    values = list(piled.params.values())
    assert values == sorted(set(values))
    assert piled.median() == pytest.approx(0.27, rel=0.01)  # an atom is spread a little
    with pytest.raises(ValueError, match="> 0"):
        posterior_prior("scaling.batch_tokens_2024", np.array([1e7, -1.0, 2e7]), "s")
    with pytest.raises(ValueError, match="not finite"):
        posterior_prior("scaling.batch_exponent", np.array([0.3, np.nan, 0.4]), "s")
    with pytest.raises(ValueError, match="unknown prior key"):
        posterior_prior("scaling.no_such_key", np.array([0.3, 0.4]), "s")


def test_normal_scores_correlation_is_the_copula_correlation():
    rng = np.random.default_rng(4)
    x, y = _pair(rng, 20000, (0.0, 0.0), (1.0, 1.0), -0.7)
    r = normal_scores_correlation({"x": x, "y": 10.0**y})  # a monotone transform changes nothing
    assert r[0, 1] == pytest.approx(-0.7, abs=0.02) and r[0, 0] == 1.0
    assert normal_scores_correlation({"x": x, "c": np.ones_like(x)})[0, 1] == 0.0


def test_copula_keeps_marginals_and_gives_the_correlation():
    a, _, _ = saltelli_design(4096, 3, seed=5)
    corr = np.array([[1.0, 0.6], [0.6, 1.0]])
    from forecast.analyses.sensitivity import Basis

    basis = Basis("posterior", None, {}, {}, {"law": (("x", "y"), corr)})
    u = _correlate(a, ["x", "z", "y"], basis)
    np.testing.assert_array_equal(u[:, :2], a[:, :2])  # the law's first input and others: as is
    assert stats.kstest(u[:, 2], "uniform").pvalue > 0.01  # the later input stays uniform
    z = special.ndtri(u)
    assert np.corrcoef(z[:, 0], z[:, 2])[0, 1] == pytest.approx(0.6, abs=0.03)
    assert abs(np.corrcoef(z[:, 1], z[:, 2])[0, 1]) < 0.05


# ----------------------------------------------------------------------------- bases


def test_posterior_basis_draws_fitted_inputs_from_the_posterior(baseline):
    tree = fixture_tree()
    basis = posterior_basis(tree, baseline)
    assert not basis.notes
    for key, fit in FITTED_INPUTS.items():
        assert basis.kinds[key] == "posterior", key
        draws = tree["posterior"][fit.variable].values
        assert basis.prior_set[key].median() == pytest.approx(np.median(draws), rel=0.01)
    assert basis.kinds["frontier.compute_growth_per_year"] == "posterior"
    assert basis.kinds["hardware.flops_growth_per_year"] == "posterior"
    assert basis.kinds["latency.kernel_us"] == "prior"  # no data: its prior
    # the source cites the forecast's provenance (rows, table)
    assert basis.sources["scaling.batch_tokens_2024"] == (
        "posterior of the batch law fitted to 54 rows of data/model_shapes.csv"
    )
    assert "depth law" in basis.sources["scaling.layer_exponent"]
    # each law's inputs are drawn jointly, in registry order, with the draws' correlation
    keys, corr = basis.groups["batch"]
    assert keys == ("scaling.batch_tokens_2024", "scaling.batch_exponent")
    assert corr[0, 1] == pytest.approx(-0.7, abs=0.05)
    assert basis.groups["depth"][0] == ("scaling.layer_exponent", "scaling.layers_at_reference")
    assert basis.groups["frontier_compute"][1][0, 1] == pytest.approx(0.6, abs=0.05)
    assert "utilization" not in basis.groups  # a single input is independent


def test_scenario_overlay_keeps_its_distribution(baseline):
    from forecast.data.inputs import scenario_path
    from forecast.priors import load_overlay

    overlay = load_overlay(scenario_path("aggressive-batch"))
    prior_set = baseline.overlay(overlay)
    basis = posterior_basis(fixture_tree(), prior_set, overridden=tuple(overlay.keys()))
    for key in overlay:
        assert basis.kinds[key] == "scenario"
        assert basis.prior_set[key] == prior_set[key]
    assert "batch" not in basis.groups or all(k not in overlay for k in basis.groups["batch"][0])


def test_fixed_in_the_forecast_means_not_fitted(baseline):
    tree = fixture_tree(kinds={"scaling.batch_exponent": "fixed"})
    basis = posterior_basis(tree, baseline)
    assert basis.kinds["scaling.batch_exponent"] == "prior"
    assert basis.kinds["scaling.batch_tokens_2024"] == "posterior"
    assert "batch" not in basis.groups  # one fitted input left: nothing to correlate
    # without a provenance attribute, a fixed value in the priors is not fitted either
    del tree.attrs["input_provenance"]
    fixed = baseline.overlay(
        loads(
            '[scaling.batch_exponent]\nvalue = 0.36\nsource = "test"\n', "fixed.toml", overlay=True
        )
    )
    basis = posterior_basis(tree, fixed)
    assert basis.kinds["scaling.batch_exponent"] == "prior" and not basis.notes
    assert basis.kinds["scaling.batch_tokens_2024"] == "posterior"


def test_old_forecast_falls_back_to_the_priors_with_a_note(baseline):
    tree = fixture_tree(fitted=False)
    del tree.attrs["input_provenance"]  # made before the joint model: no provenance either
    basis = posterior_basis(tree, baseline)
    assert len(basis.notes) == 1 and "batch_tokens_2024" in basis.notes[0]
    assert "made before the joint model" in basis.notes[0]
    for key in FITTED_INPUTS:
        assert basis.kinds[key] == "prior" and basis.prior_set[key] == baseline[key]
    assert basis.kinds["frontier.compute_growth_per_year"] == "posterior"  # trends still fitted


# ----------------------------------------------------------------------------- indices


def _additive(draws, anchors, years, step):
    """y = log10 B + 2 log10 g_frontier: an analytic stand-in for the wall model."""
    y = np.log10(draws["scaling.batch_tokens_2024"]) + 2 * np.log10(
        draws["frontier.compute_growth_per_year"]
    )
    return {"y": y}, {"y": np.zeros(y.size, bool)}


def _expected_total(prior_set):
    """Total index of the batch in ``_additive``: its share of the variance (independent)."""
    z = special.ndtri(np.linspace(0.0005, 0.9995, 2000))
    u = special.ndtr(z)
    v_b = np.var(np.log10(prior_set["scaling.batch_tokens_2024"].ppf(u)))
    v_g = 4 * np.var(np.log10(prior_set["frontier.compute_growth_per_year"].ppf(u)))
    return v_b / (v_b + v_g)


def test_a_narrow_posterior_lowers_that_inputs_total_index(baseline):
    # the run length (90 days) is a fixed value: a column of its own gets indices of exactly 0
    keys = [
        "scaling.batch_tokens_2024",
        "frontier.compute_growth_per_year",
        "training.duration_days",
    ]
    tree = fixture_tree()
    before = run_sensitivity(prior_basis(baseline), {}, n=1024, keys=keys, model=_additive)
    after = run_sensitivity(posterior_basis(tree, baseline), {}, n=1024, keys=keys, model=_additive)
    t_before, t_after = before.indices["total"][0, 0], after.indices["total"][0, 0]
    for res in (before, after):
        assert res.indices["total"][0, 2] == 0.0 and res.indices["first_order"][0, 2] == 0.0
    # prior: batch 0.52 dex vs growth 0.077 dex/yr (x2): the batch has ~92 % of the variance
    assert t_before == pytest.approx(_expected_total(baseline), abs=0.03)
    assert t_before > 0.85
    # posterior: batch 0.02 dex vs growth 0.02 dex/yr (x2): 20 %
    assert t_after == pytest.approx(0.2, abs=0.05)
    assert after.input_kind == ["posterior", "posterior", "prior"] and after.basis == "posterior"
    ds_after, ds_before = sensitivity_dataset(after), sensitivity_dataset(before)
    assert ds_after.attrs["sensitivity_basis"] == "posterior"
    assert str(ds_after["input_kind"].sel(input=keys[0]).values) == "posterior"
    rows = comparison_rows(ds_after, ds_before)
    batch = next(r for r in rows if r["input"] == keys[0])
    assert batch["total_prior"] == pytest.approx(t_before)
    assert batch["total_posterior"] == pytest.approx(t_after)
    assert batch["rank_prior"] == 1 and batch["rank_posterior"] == 2
    from forecast.cli.tables import comparison_table

    table = comparison_table(rows, top=2)
    line = next(x for x in table.splitlines() if keys[0] in x)
    assert line.split()[:2] == ["1", "2"] and "posterior" in line  # rank before, after
    assert f"{t_before:.2f}" in line and f"{t_after:.2f}" in line
    assert "training.duration_days" not in table  # only the top 2 of the posterior ranking


def test_full_index_of_the_first_input_of_a_correlated_law(baseline):
    # y = log10 B only; B and the exponent correlated at r = -0.7: the exponent's independent
    # index is 0 (y does not depend on it), B's full index is 1; no leakage through the copula.
    keys = ["scaling.batch_tokens_2024", "scaling.batch_exponent"]

    def level_only(draws, anchors, years, step):
        y = np.log10(draws["scaling.batch_tokens_2024"])
        return {"y": y}, {"y": np.zeros(y.size, bool)}

    res = run_sensitivity(
        posterior_basis(fixture_tree(), baseline), {}, n=512, keys=keys, model=level_only
    )
    np.testing.assert_allclose(res.indices["total"][0], [1.0, 0.0], atol=0.03)
    assert res.input_group == ["batch", "batch"]

    # y = beta only: beta's independent index is 1 - r^2 = 0.51; B's full index r^2 = 0.49
    def exponent_only(draws, anchors, years, step):
        y = draws["scaling.batch_exponent"]
        return {"y": y}, {"y": np.zeros(y.size, bool)}

    res = run_sensitivity(
        posterior_basis(fixture_tree(), baseline), {}, n=2048, keys=keys, model=exponent_only
    )
    np.testing.assert_allclose(res.indices["total"][0], [0.49, 0.51], atol=0.05)


def test_stored_groups_by_basis(tmp_path, baseline):
    from forecast.analyses.sensitivity import sensitivity_dataset
    from forecast.store.publisher import add_groups

    keys = ["scaling.batch_tokens_2024", "frontier.compute_growth_per_year"]
    path = tmp_path / "forecast.nc"
    fixture_tree().to_netcdf(path, engine="h5netcdf")
    for basis in (prior_basis(baseline), posterior_basis(fixture_tree(), baseline)):
        res = run_sensitivity(basis, {}, n=64, keys=keys, model=_additive, n_bootstrap=10)
        add_groups(path, {BASIS_GROUPS[res.basis]: sensitivity_dataset(res)})
    tree = xr.open_datatree(path, engine="h5netcdf")
    assert set(BASIS_GROUPS.values()) <= set(tree.children)
    assert tree["sensitivity"].attrs["sensitivity_basis"] == "posterior"
    assert tree["sensitivity_prior"].attrs["sensitivity_basis"] == "prior"
    kinds = [str(v) for v in tree["sensitivity_prior"]["input_kind"].values]
    assert kinds == ["prior", "prior"]
    tree.close()


# ----------------------------------------------------------------------------- the wall model


def test_wall_model_on_a_posterior_forecast_stores_both_bases(tmp_path):
    """End to end on the real walls (N = 16): posterior basis in 'sensitivity', the priors-only
    comparison in 'sensitivity_prior', same inputs; the CLI prints before -> after."""
    from typer.testing import CliRunner

    from forecast.cli import app
    from forecast.jobs import analyse_job

    path = tmp_path / "forecast.nc"
    fixture_tree().to_netcdf(path, engine="h5netcdf")
    run = analyse_job.sensitivity(path, samples=16, compare_prior=True)
    assert run.basis == "posterior" and run.stored_in == path and not run.notes
    post, prior = run.dataset, run.prior_dataset
    assert list(post["input"].values) == list(prior["input"].values)
    assert "scaling.layers_at_reference" in post["input"].values  # the depth level is fitted
    kinds = dict(zip(post["input"].values, post["input_kind"].values, strict=True))
    assert kinds["scaling.batch_tokens_2024"] == "posterior"
    assert kinds["latency.kernel_us"] == "prior"
    assert json.loads(post.attrs["sensitivity_groups"])["batch"]["keys"][0] == (
        "scaling.batch_tokens_2024"
    )
    for ds in (post, prior):
        v = ds["total"].values
        assert np.all(np.isfinite(v)) and np.all((v > -0.5) & (v < 1.5))
    tree = xr.open_datatree(path, engine="h5netcdf")
    assert {"sensitivity", "sensitivity_prior"} <= set(tree.children)
    tree.close()

    res = CliRunner().invoke(
        app,
        ["sensitivity", "--forecast", str(path), "--samples", "8", "--compare-prior", "--json"],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    batch = next(
        r
        for r in out["compare"]
        if r["input"] == "scaling.batch_tokens_2024" and r["target"] == "data_movement_hit_year"
    )
    assert batch["kind"] == "posterior" and batch["total_prior"] is not None
