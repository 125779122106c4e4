"""Sobol sensitivity: estimators on functions with known indices, the wall model, storage, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

from forecast.analyses.sensitivity import (
    TARGETS,
    forecast_anchors,
    saltelli_design,
    sensitivity_dataset,
    sobol_indices,
)
from forecast.queries.analyses import ranking_rows
from forecast.store.publisher import add_groups

# ----------------------------------------------------------------------------- array layer


def ishigami(u: np.ndarray, a: float = 7.0, b: float = 0.1) -> np.ndarray:
    x = -np.pi + 2.0 * np.pi * u
    return np.sin(x[..., 0]) + a * np.sin(x[..., 1]) ** 2 + b * x[..., 2] ** 4 * np.sin(x[..., 0])


def test_saltelli_design_shapes_and_radial_columns():
    a, b, ab = saltelli_design(64, 4, seed=1)
    assert a.shape == b.shape == (64, 4) and ab.shape == (4, 64, 4)
    assert np.all((a > 0) & (a < 1)) and np.all((b > 0) & (b < 1))
    for i in range(4):
        others = [j for j in range(4) if j != i]
        np.testing.assert_array_equal(ab[i][:, i], b[:, i])
        np.testing.assert_array_equal(ab[i][:, others], a[:, others])
    # scrambled Sobol: columns of A and B are (close to) uniform and not identical
    assert abs(a.mean() - 0.5) < 0.02 and not np.allclose(a, b)


def test_ishigami_indices_match_analytic_values():
    # Ishigami (a=7, b=0.1): S1 = 0.314, 0.442, 0; ST = 0.558, 0.442, 0.244 (Saltelli 2010).
    a, b, ab = saltelli_design(4096, 3, seed=0)
    r = sobol_indices(ishigami(a), ishigami(b), ishigami(ab), n_bootstrap=200)
    np.testing.assert_allclose(r["first_order"], [0.314, 0.442, 0.0], atol=0.05)
    np.testing.assert_allclose(r["total"], [0.558, 0.442, 0.244], atol=0.05)
    # the bootstrap intervals bracket the estimates and are narrow at this n
    for name in ("first_order", "total"):
        assert np.all(r[f"{name}_low"] <= r[name]) and np.all(r[name] <= r[f"{name}_high"])
        assert np.all(r[f"{name}_high"] - r[f"{name}_low"] < 0.15)


def test_linear_additive_indices_equal_weight_shares():
    # g = sum c_i x_i, x_i ~ U(0, 1) independent: S1_i = ST_i = c_i^2 / sum c^2 (no interactions)
    c = np.array([1.0, 2.0, 3.0, 0.0])
    a, b, ab = saltelli_design(1024, c.size, seed=3)
    r = sobol_indices(a @ c, b @ c, ab @ c, n_bootstrap=0)
    expected = c**2 / np.sum(c**2)
    np.testing.assert_allclose(r["first_order"], expected, atol=0.03)
    np.testing.assert_allclose(r["total"], expected, atol=0.03)
    assert np.isnan(r["first_order_low"]).all()  # no bootstrap asked


def test_indices_do_not_depend_on_an_offset():
    # hit years are ~2030: the centred estimator must give the same answer as for years - 2030
    a, b, ab = saltelli_design(256, 3, seed=2)
    r0 = sobol_indices(ishigami(a), ishigami(b), ishigami(ab), n_bootstrap=0)
    r1 = sobol_indices(ishigami(a) + 2030, ishigami(b) + 2030, ishigami(ab) + 2030, n_bootstrap=0)
    np.testing.assert_allclose(r0["first_order"], r1["first_order"], atol=1e-9)
    np.testing.assert_allclose(r0["total"], r1["total"], atol=1e-9)


def test_sobol_indices_rejects_bad_shapes():
    with pytest.raises(ValueError):
        sobol_indices(np.zeros(4), np.zeros(4), np.zeros((2, 5)))


# ----------------------------------------------------------------------------- wall model


@pytest.fixture(scope="module")
def model_result():
    from forecast.analyses.sensitivity import data_anchors, run_sensitivity
    from forecast.config.paths import default_priors_path
    from forecast.data.hardware import load_hardware
    from forecast.priors import load_priors

    prior_set = load_priors(default_priors_path())
    anchors = data_anchors(load_hardware(), prior_set)
    return run_sensitivity(prior_set, anchors, n=64, seed=0, n_bootstrap=100)


def test_model_indices_in_range_and_drivers_of_the_latency_wall(model_result):
    ds = sensitivity_dataset(model_result)
    assert list(ds["target"].values) == list(TARGETS)
    assert "scaling.layer_exponent" in ds["input"].values
    assert "frontier.compute_growth_per_year" in ds["input"].values
    assert "training.duration_days" not in ds["input"].values  # a point mass in the baseline
    for name in ("first_order", "total"):
        v = ds[name].values
        assert np.all(np.isfinite(v)) and np.all((v >= -0.1) & (v <= 1.1)), name
    # Latency-wall FLOP: the wall is where t_layer * L * D / B reaches the run's duration, so the
    # critical batch (16M-360M tokens, 22x) sets it: total index 0.73 at n = 64.  Depth enters
    # too, but its exponent pivots at today's largest models (4e11 params), so 0.21-0.33 is a
    # factor (1e15 / 4e11)^0.12 ~ 2.5x in layers at the wall: total index 0.05.  The growth
    # rates of the hardware and of frontier compute barely enter it.
    lat = ds.sel(target="latency_hit_log10_flop")
    ranked = list(lat["input"].values[np.argsort(-lat["total"].values)])
    assert ranked[0] == "scaling.batch_tokens_2024"
    assert float(lat["total"].sel(input="scaling.batch_tokens_2024")) > 0.5
    assert float(lat["total"].sel(input="scaling.layer_exponent")) < 0.2
    # tornado: a deeper model (higher layer exponent) lowers the latency wall
    s = lat.sel(input="scaling.layer_exponent")
    assert float(s["tornado_high"]) < float(lat["baseline"]) < float(s["tornado_low"])
    # faster frontier growth reaches both walls earlier
    for wall in ("data_movement", "latency"):
        g = ds.sel(target=f"{wall}_hit_year", input="frontier.compute_growth_per_year")
        assert float(g["tornado_high"]) < float(g["tornado_low"])


def test_ranking_rows_sorted_by_total(model_result):
    rows = ranking_rows(sensitivity_dataset(model_result))
    assert len(rows) == len(TARGETS) * len(model_result.inputs)
    for target in TARGETS:
        totals = [r["total"] for r in rows if r["target"] == target]
        assert totals == sorted(totals, reverse=True)
    assert {"target", "input", "first_order", "total", "first_order_ci", "total_ci"} <= set(rows[0])


# ----------------------------------------------------------------------------- storage


def _tiny_forecast(path):
    post = xr.Dataset(
        {"intercept": (("chain", "draw", "metric"), np.arange(12.0).reshape(1, 4, 3))},
        coords={"chain": [0], "draw": np.arange(4), "metric": ["flops", "hbm", "cap"]},
    )
    fc = xr.Dataset({"hit_year": (("draw", "wall"), np.array([[2030.0, np.inf]] * 4))})
    tree = xr.DataTree.from_dict({"/posterior": post, "/forecast": fc})
    tree.attrs.update(id="test-id", priors_text="x")
    tree.to_netcdf(path, engine="h5netcdf")
    return tree


def test_add_group_keeps_other_groups_and_attrs(tmp_path):
    path = tmp_path / "forecast.nc"
    _tiny_forecast(path)
    path.chmod(0o644)
    ds = xr.Dataset(
        {"total": (("target", "input"), np.ones((2, 3)))},
        coords={"target": ["a", "b"], "input": ["x", "y", "z"]},
    )
    add_groups(path, {"sensitivity": ds})
    assert path.stat().st_mode & 0o777 == 0o644  # a published file stays readable by everyone
    add_groups(path, {"sensitivity": ds * 0.5})  # replacing a group works too
    tree = xr.open_datatree(path, engine="h5netcdf")
    assert set(tree.children) == {"posterior", "forecast", "sensitivity"}
    assert tree.attrs["id"] == "test-id"
    np.testing.assert_array_equal(tree["sensitivity"]["total"].values, 0.5)
    assert np.isinf(tree["forecast"]["hit_year"].values[0, 1])
    assert forecast_anchors(tree) == {"flops": 4.5, "hbm": 5.5, "cap": 6.5}
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind
    tree.close()


# ----------------------------------------------------------------------------- CLI


def test_cli_sensitivity_json(model_result):  # the fixture has compiled the fast walls already
    from forecast.cli import app

    res = CliRunner().invoke(app, ["sensitivity", "--samples", "16", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert {r["target"] for r in rows} == set(TARGETS)
    for r in rows:
        assert {"target", "input", "first_order", "total", "first_order_ci", "total_ci"} <= set(r)
        assert {"tornado_low", "tornado_high"} <= set(r)


def test_the_tornado_in_the_forecasts_regime_leaves_the_sobol_indices_alone(model_result):
    """``tornado_regime="realistic"`` (a realistic forecast's `wallcast analyse`): the 2k + 1
    tornado points are the realistic walls (with the sequence length of the anchors' law), the
    Sobol indices the paper regime's, the same numbers as without it; the group says which."""
    from forecast.analyses.sensitivity import data_anchors, evaluate_targets, run_sensitivity
    from forecast.config.paths import default_priors_path
    from forecast.data.hardware import load_hardware
    from forecast.priors import load_priors

    prior_set = load_priors(default_priors_path())
    anchors = data_anchors(load_hardware(), prior_set)
    anchors |= {"log10_sequence_2024": np.log10(8192.0), "sequence_growth_dex_per_year": 0.1}
    real = run_sensitivity(
        prior_set, anchors, n=64, seed=0, n_bootstrap=100, tornado_regime="realistic"
    )
    for name, values in model_result.indices.items():  # the paper's, untouched
        np.testing.assert_array_equal(real.indices[name], values, err_msg=name)
    assert not np.allclose(real.baseline, model_result.baseline)
    # the realistic baseline is the realistic walls at every input's median
    medians = {
        k: np.atleast_1d(v)
        for k, v in prior_set.sample_from_uniforms(
            np.full((1, len(real.inputs)), 0.5), real.inputs, fill="median"
        ).items()
    }
    targets, _ = evaluate_targets(medians, anchors, regime="realistic")
    for t, name in enumerate(real.targets):
        if name in targets:
            assert real.baseline[t] == pytest.approx(float(targets[name][0]), abs=1e-9), name
    ds = sensitivity_dataset(real)
    assert ds.attrs["sensitivity_tornado_regime"] == "realistic"
    assert ds.attrs["sensitivity_indices_regime"] == "paper"
