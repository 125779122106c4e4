"""Probabilistic forecast: crossing math, queries, dataset round trip, publishing, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fit_settings import GATED_CHAINS, GATED_DRAWS, GATED_SEED

from forecast.inference.crossing import first_crossing
from forecast.queries.answers import QueryError, interval, wall_interval
from forecast.store.layout import ForecastNotFoundError
from forecast.store.publisher import publish
from forecast.store.reader import latest_forecast_path

YEARS = np.arange(2024, 2046, dtype=float)
SPARSE_YEARS = np.arange(2024, 2046, 3)  # 2024, 2027, ..., 2045: keeps the end-to-end tests fast


# ----------------------------------------------------------------------------- crossing (arrays)


def test_first_crossing_interpolates_between_years():
    f = np.array([25.0, 26.0, 27.0, 28.0, 29.0])
    y, flop, hit = first_crossing(np.arange(2024.0, 2029.0), f, np.full(5, 27.5))
    assert hit and y == pytest.approx(2026.5) and flop == pytest.approx(27.5)


def test_first_crossing_not_hit_is_explicit_inf_not_nan():
    y, flop, hit = first_crossing(YEARS, np.linspace(25, 30, YEARS.size), np.full(YEARS.size, 40.0))
    assert not hit and np.isinf(y) and np.isinf(flop)


def test_first_crossing_already_hit_in_first_year():
    y, flop, hit = first_crossing(YEARS, np.full(YEARS.size, 29.0), np.full(YEARS.size, 28.0))
    assert hit and y == 2024.0 and flop == 29.0


@settings(max_examples=60, deadline=None)
@given(
    start=st.floats(22, 28),
    growth=st.floats(0.1, 1.0),
    wall=st.floats(24, 40),
    wall_growth=st.floats(-0.2, 0.2),
)
def test_first_crossing_properties(start, growth, wall, wall_growth):
    f = start + growth * (YEARS - 2024)
    w = wall + wall_growth * (YEARS - 2024)
    y, flop, hit = first_crossing(YEARS, f, w)
    if hit:
        assert 2024 <= y <= 2045
        # at the crossing the frontier equals the wall (linear pieces) unless hit in year one
        if y > 2024:
            assert flop == pytest.approx(wall + wall_growth * (y - 2024), abs=1e-6)
        # a higher wall is never hit earlier
        y2, _, _ = first_crossing(YEARS, f, w + 0.5)
        assert y2 >= y
    else:
        assert np.all(f < w)


# ----------------------------------------------------------------------------- query (arrays, xarray)


def test_interval_values_and_not_hit_fraction():
    v = np.concatenate([np.arange(1.0, 101.0), np.full(25, np.inf)])
    out = interval(v, 0.8)
    assert out["median"] == pytest.approx(np.quantile(v, 0.5))
    assert out["lower"] == pytest.approx(np.quantile(v, 0.1))
    assert np.isinf(out["upper"])  # more than 10 % never hit
    assert out["not_hit_fraction"] == pytest.approx(25 / 125)
    with pytest.raises(QueryError):
        interval(v, 1.5)


def _toy_forecast() -> xr.Dataset:
    rng = np.random.default_rng(0)
    hit_year = rng.normal(2030, 2, size=(2, 3, 50, 2))
    hit_year[1, :, :5, 1] = np.inf
    return xr.Dataset(
        {
            "hit_year": (("scenario", "chain", "draw", "wall"), hit_year, {"units": "year"}),
            "hit_flop": (
                ("scenario", "chain", "draw", "wall"),
                10 ** (28 + (hit_year - 2030) / 2),
                {"units": "FLOP"},
            ),
        },
        coords={"scenario": ["baseline", "fast-batch"], "wall": ["data_movement", "latency"]},
    )


def test_wall_interval_selects_scenario_and_wall():
    ds = _toy_forecast()
    out = wall_interval(ds, "latency", "year", "fast-batch", 0.9)
    expected = ds["hit_year"].sel(scenario="fast-batch", wall="latency").values.ravel()
    assert out["median"] == pytest.approx(np.quantile(expected, 0.5))
    assert out["lower"] == pytest.approx(np.quantile(expected, 0.05))
    assert out["not_hit_fraction"] == pytest.approx(15 / 150)
    with pytest.raises(QueryError, match="unknown scenario"):
        wall_interval(ds, "latency", "year", "nope")
    with pytest.raises(QueryError, match="unknown wall"):
        wall_interval(ds, "memory", "year")


# ----------------------------------------------------------------------------- publishing


def test_publish_is_atomic_and_latest_points_to_complete_forecast(tmp_path: Path):
    tree = xr.DataTree.from_dict({"/forecast": _toy_forecast()})
    tree.attrs["id"] = "a"
    first = publish(tree, tmp_path, "20260101T000000Z-aaaaaaaa")
    assert latest_forecast_path(tmp_path) == first / "forecast.nc"
    second = publish(tree, tmp_path, "20260102T000000Z-bbbbbbbb")
    assert latest_forecast_path(tmp_path) == second / "forecast.nc"
    assert (first / "forecast.nc").exists()  # old forecasts are kept
    assert first.stat().st_mode & 0o777 == 0o755  # readable by everyone, like any published file
    assert (tmp_path / "latest").stat().st_mode & 0o777 == 0o644
    assert not [p for p in (tmp_path / "forecasts").iterdir() if p.name.startswith(".")]
    back = xr.open_datatree(second / "forecast.nc", engine="h5netcdf")
    xr.testing.assert_identical(back["forecast"].to_dataset().load(), tree["forecast"].to_dataset())


def test_the_latest_pointer_itself_resolves_to_the_forecast_it_names(tmp_path: Path):
    from forecast.store.reader import resolve_forecast_path

    tree = xr.DataTree.from_dict({"/forecast": _toy_forecast()})
    published = publish(tree, tmp_path, "20260101T000000Z-aaaaaaaa")
    assert resolve_forecast_path(tmp_path / "latest") == published / "forecast.nc"
    assert resolve_forecast_path(tmp_path) == published / "forecast.nc"
    (tmp_path / "latest").write_text("forecasts/20990101T000000Z-gone\n")
    with pytest.raises(ForecastNotFoundError, match="points to"):
        resolve_forecast_path(tmp_path / "latest")


def test_latest_missing_gives_clear_error(tmp_path: Path):
    with pytest.raises(ForecastNotFoundError, match="wallcast run"):
        latest_forecast_path(tmp_path)


def test_a_latest_pointer_that_is_a_fifo_or_a_symlink_is_refused_not_read(tmp_path: Path):
    """The commands read ``latest`` as the service does: a FIFO would block a plain read, a
    symlink could name any file; each is one clear error naming the pointer."""
    import os

    from forecast.store.reader import ForecastReadError

    os.mkfifo(tmp_path / "latest")
    with pytest.raises(ForecastReadError, match="latest: the latest pointer is not a regular"):
        latest_forecast_path(tmp_path)
    (tmp_path / "latest").unlink()
    (tmp_path / "elsewhere").write_text("forecasts/x\n")
    (tmp_path / "latest").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ForecastReadError, match="latest: the latest pointer is a symlink"):
        latest_forecast_path(tmp_path)


# ----------------------------------------------------------------------------- end to end


PROPAGATE = 1000  # the paper regime (the library default) on every 4th draw of the 4 x 1,000 fit


@pytest.fixture(scope="module")
def small_forecast(tmp_path_factory):
    """A real (small) forecast: NUTS fit, convergence gate, propagation, NetCDF."""
    from forecast.jobs import forecast_job
    from forecast.store.publisher import publish as do_publish

    out = tmp_path_factory.mktemp("outputs")
    inputs = forecast_job.load_inputs(scenarios=[])
    run = {"chains": GATED_CHAINS, "draws": GATED_DRAWS}
    fit = forecast_job.fit(inputs, inputs.priors, seed=GATED_SEED, **run)  # gated
    results = {
        name: forecast_job.propagate_scenario(
            fit, ps, seed=GATED_SEED, years=SPARSE_YEARS, propagate_draws=PROPAGATE
        )
        for name, ps in inputs.scenarios.items()
    }
    tree, fid = forecast_job.assemble(
        inputs, fit, results, seed=GATED_SEED, propagate_draws=PROPAGATE, **run
    )
    published = do_publish(tree, out, fid)
    return inputs, fit, tree, published, out


def test_forecast_file_opens_with_plain_xarray(small_forecast):
    _, _, tree, published, _ = small_forecast
    dt = xr.open_datatree(published / "forecast.nc", engine="h5netcdf")
    fc = dt["forecast"]
    for var in ("wall_flop", "frontier_flop", "hit_year", "hit_flop"):
        assert var in fc.data_vars
    assert set(fc["wall_flop"].dims) == {"scenario", "chain", "draw", "year", "wall"}
    assert list(fc["wall"].values) == ["data_movement", "latency"]
    assert fc["year"].values[0] == 2024 and fc["year"].values[-1] == 2045
    for group in ("posterior", "sample_stats", "observed_data"):
        assert group in dt.children
    for key in ("priors_text", "data_hash", "code_version", "seed", "created", "units", "id"):
        assert key in dt.attrs
    # the walls were searched at every year, and the file says so where readers look
    assert dt.attrs["wall_year_step"] == fc.attrs["wall_year_step"] == 1
    # any interval from plain xarray
    da = fc["hit_year"].sel(wall="data_movement").isel(scenario=0)
    q = da.quantile([0.1, 0.5, 0.9], dim=["chain", "draw"]).values
    assert np.all(np.diff(q) >= 0) and 2024 <= q[0] <= 2045
    assert q[1] == pytest.approx(wall_interval(fc.to_dataset(), "data_movement", "year")["median"])
    # NetCDF round trip keeps every value
    np.testing.assert_array_equal(fc["hit_year"].values, tree["forecast"]["hit_year"].values)


def test_forecast_records_the_platform_of_its_fit_and_propagation(small_forecast):
    """Draws are bitwise reproducible only on the same CPU and builds: the file says which."""
    from forecast.config.platform import cpu_isa

    _, _, _, published, _ = small_forecast
    with xr.open_datatree(published / "forecast.nc", engine="h5netcdf") as dt:
        attrs = dict(dt.attrs)
    for key in ("platform", "fit_platform"):
        info = json.loads(attrs[key])
        assert info["isa"] == cpu_isa(), key
        assert {"cpu", "xla_flags", "jax", "jaxlib", "numpyro", "arviz", "python"} <= set(info)
    fit = json.loads(attrs["fit_platform"])
    assert fit["jax_backend"] == "cpu" and fit["jax_x64"] is True  # NUTS ran in float64


def test_forecast_is_physically_consistent(small_forecast):
    _, _, tree, _, _ = small_forecast
    fc = tree["forecast"].to_dataset()
    walls = fc["wall_flop"]
    # the latency wall is never below the data-movement wall (infeasible implies inefficient)
    assert (
        float((walls.sel(wall="latency") >= walls.sel(wall="data_movement") * 0.999).mean()) > 0.99
    )
    # the frontier grows every year in every draw
    assert bool((fc["frontier_flop"].diff("year") > 0).all())
    # hit FLOP equals the frontier at the hit year, within the year grid
    hit = fc["hit"].values
    assert hit.mean() > 0.5
    # data-movement wall is hit before the latency wall in nearly every draw
    dy = fc["hit_year"].sel(wall="data_movement") <= fc["hit_year"].sel(wall="latency") + 1e-9
    assert float(dy.mean()) > 0.95


def test_posterior_predictive_covers_observed_specs(small_forecast):
    _, fit, _, _, _ = small_forecast
    obs = fit["observed_data"].to_dataset()
    ppc = fit["posterior_predictive"].to_dataset()
    name = next(iter(obs.data_vars))
    lo, hi = ppc[name].quantile([0.025, 0.975], dim=["chain", "draw"]).values
    inside = (obs[name].values >= lo) & (obs[name].values <= hi)
    assert inside.mean() >= 0.85


def test_same_seed_gives_identical_forecast(small_forecast):
    from forecast.jobs import forecast_job

    inputs, fit, tree, _, _ = small_forecast
    ps = inputs.scenarios[inputs.priors.name]
    again, _ = forecast_job.propagate_scenario(
        fit, ps, seed=GATED_SEED, years=SPARSE_YEARS, propagate_draws=PROPAGATE
    )
    xr.testing.assert_identical(
        again, tree["forecast"].to_dataset().sel(scenario=inputs.priors.name, drop=True)
    )
    other, _ = forecast_job.propagate_scenario(
        fit, ps, seed=GATED_SEED + 1, years=SPARSE_YEARS, propagate_draws=PROPAGATE
    )
    assert not np.array_equal(other["hit_year"].values, again["hit_year"].values)


def test_query_cli_matches_dataset_and_imports_no_jax(small_forecast):
    _, _, tree, published, out = small_forecast
    code = (
        "import sys, json; from typer.testing import CliRunner; from forecast.cli import app; "
        f"r = CliRunner().invoke(app, ['query', '--wall', 'data_movement', '--what', 'year', '--outputs-dir', {str(out)!r}, '--json']); "
        "print(r.output); assert 'jax' not in sys.modules, 'query imported jax'; assert 'xarray' not in sys.modules, 'query imported xarray'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    got = json.loads(proc.stdout)
    values = tree["forecast"]["hit_year"].sel(wall="data_movement").isel(scenario=0).values.ravel()
    assert got["median"] == pytest.approx(np.quantile(values, 0.5))
    assert got["lower"] == pytest.approx(np.quantile(values, 0.1))
    assert got["upper"] == pytest.approx(np.quantile(values, 0.9))
    assert set(got) >= {"median", "lower", "upper", "prob", "not_hit_fraction"}


def test_cost_query_cli_matches_dataset_and_imports_no_jax(small_forecast):
    """`wallcast query --what cost --year Y --json`: the dataset's quantiles of cost_multiplier,
    frontier_utilization and min_run_days for the frontier run of year Y, without JAX."""
    _, _, tree, _, out = small_forecast
    year = int(SPARSE_YEARS[2])  # 2030
    code = (
        "import sys; from typer.testing import CliRunner; from forecast.cli import app; "
        f"r = CliRunner().invoke(app, ['query', '--what', 'cost', '--year', '{year}', "
        f"'--outputs-dir', {str(out)!r}, '--json']); "
        "print(r.output); assert 'jax' not in sys.modules, 'query imported jax'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    got = json.loads(proc.stdout)
    fc = tree["forecast"].to_dataset().isel(scenario=0).sel(year=year)
    assert got["year"] == year and got["what"] == "cost"
    mult = fc["cost_multiplier"].values.ravel()
    assert got["infeasible_fraction"] == pytest.approx(np.mean(np.isinf(mult)))
    assert np.all(mult >= 1.0)
    if np.isfinite(np.quantile(mult, 0.9)):
        assert got["median"] == pytest.approx(np.quantile(mult, 0.5))
        assert got["upper"] == pytest.approx(np.quantile(mult, 0.9))
    u = fc["frontier_utilization"].values.ravel()
    assert got["frontier_utilization_median"] == pytest.approx(np.quantile(u, 0.5))
    assert got["frontier_utilization_lower"] == pytest.approx(np.quantile(u, 0.1))
    days = fc["min_run_days"].values.ravel()
    assert got["min_run_days_median"] == pytest.approx(np.quantile(days, 0.5))
    # where the run is feasible, its utilization is what the multiplier says
    ok = u > 0
    np.testing.assert_array_equal(np.isinf(mult), ~ok)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--what", "cost"], "needs --year"),
        (["--what", "cost", "--year", "2031"], "year 2031 is not in the forecast"),
        (["--what", "year"], "needs --wall"),
    ],
)
def test_cost_query_errors_are_one_line(small_forecast, args, message):
    from typer.testing import CliRunner

    from forecast.cli import app

    _, _, _, _, out = small_forecast
    r = CliRunner().invoke(app, ["query", *args, "--outputs-dir", str(out)])
    assert r.exit_code == 2
    assert r.output.startswith("error:") and message in r.output
    assert "Traceback" not in r.output


# ----------------------------------------------------------------------------- validation vs [R]


@pytest.fixture(scope="module")
def epoch_2030_latency():
    from support.validation import h100_wall_distribution

    from forecast.priors import load_priors

    path = Path(__file__).resolve().parents[2] / "priors" / "epoch-2030.toml"
    return h100_wall_distribution(load_priors(path), n=3000, seed=0)["latency"]


def test_epoch_2030_latency_wall_against_report(epoch_2030_latency):
    """Sevilla et al. 2024, Figure 6: median 3e31, 10th percentile 3e30 FLOP.

    Before issue 11 the full plan model gave median 6.4e31 and 10th percentile 2.7e30.  [R]
    charges every matmul a full all-reduce latency with (ranks in the pod - 1) NVLink hops; the
    model now charges the one-pass all-gather/reduce-scatter of sequence parallelism (the volume
    it already charged) and log2(ranks) hops inside a switched domain (docs/validation.md
    section 8), so the median moves above [R]'s, to 1.4e32 (x4.7; measured, n = 3000), while the
    10th percentile (4.9e30) stays within x3 of [R]'s.  Not tuned back.
    """
    median = 10 ** np.median(epoch_2030_latency)
    assert 3e31 * 2.5 < median <= 3e31 * 10
    low = 10 ** np.quantile(epoch_2030_latency, 0.1)
    assert 3e30 / 3 <= low <= 3e30 * 3


def test_epoch_2030_batch_range_alone_is_wider_than_reports_interval(epoch_2030_latency):
    """Why [R]'s 80 % interval (3e30..1e32, 1.5 dex) cannot be met with its own parameter table.

    Varying only the 2024 critical batch (16M / 60M / 360M tokens at 10/50/90 %) and holding
    every other input at its median already spreads the latency wall's 10-90 % range over more
    than the widest the criterion allows (3e30/3 .. 1e32*3 = 2.5 dex): the wall scales as
    B0^(2/(1 + layer exponent - batch exponent)) ~ B0^2.2, and 1.35 dex of B0 becomes ~2.8 dex.
    Adding the other inputs only widens it (measured: 3.0 dex).
    """
    from support.validation import h100_wall_distribution

    from forecast.priors import load_priors

    path = Path(__file__).resolve().parents[2] / "priors" / "epoch-2030.toml"
    batch_only = h100_wall_distribution(
        load_priors(path), n=3000, seed=0, vary=("scaling.batch_tokens_2024",)
    )["latency"]
    widest_allowed_dex = np.log10(1e32 * 3) - np.log10(3e30 / 3)
    lo, hi = np.quantile(batch_only, [0.1, 0.9])
    assert hi - lo > widest_allowed_dex
    full_lo, full_hi = np.quantile(epoch_2030_latency, [0.1, 0.9])
    assert full_hi - full_lo >= hi - lo - 0.05


@pytest.mark.xfail(
    strict=True,
    reason="[R]'s 80% interval is 1.5 dex wide, but its own 2024-batch range (16-360M tokens) "
    "alone spreads the wall over 2.8 dex (test above; docs/validation.md 7.1)",
)
def test_epoch_2030_latency_wall_interval_matches_report(epoch_2030_latency):
    lo, hi = 10 ** np.quantile(epoch_2030_latency, [0.1, 0.9])
    assert 1e30 <= lo <= 9e30 and 3.3e31 <= hi <= 3e32
