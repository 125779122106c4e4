"""Every shipped prior file runs end to end through `wallcast run` (issue 10).

`priors/baseline.toml` with every overlay of `priors/scenarios/` in one run, and
`priors/epoch-2030.toml` (which fixes the frontier growth at 4x/yr) as `--priors`. Each file runs
at its documented setting, the default 4 chains x 1,000 draws (tests/support/fit_settings.py), where the
convergence gate passes on every CPU measured, after running the chains twice as long where it
refused narrowly (no seed is chosen to pass it); the output years
are 2024, 2031, 2038 and 2045 (`--year-step 7`). Uses the session's Prefect test harness.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from support.fit_settings import GATED_CHAINS, GATED_DRAWS, GATED_SEED
from typer.testing import CliRunner

from forecast.config.settings import DEFAULT_PROPAGATE_DRAWS
from forecast.priors import load_overlay
from forecast.store.reader import latest_forecast_path

pytestmark = [
    pytest.mark.slow,
    pytest.mark.machine_sensitive,
    pytest.mark.usefixtures("prefect_harness"),
]

REPO = Path(__file__).resolve().parents[2]
PRIORS = REPO / "priors"
SMALL = ["--draws", str(GATED_DRAWS), "--chains", str(GATED_CHAINS), "--seed", str(GATED_SEED)]
SMALL += ["--year-step", "7", "--no-report"]
#: Propagated draws per scenario: these tests check that each file fits and runs through every
#: stage, not the walls' Monte Carlo precision (issue 23: at the default 400 the eight realistic
#: propagations took ~60 s of the baseline test, in the test suite and again in its AVX2 pass).
PROPAGATE_DRAWS = 40
SMALL += ["--propagate-draws", str(PROPAGATE_DRAWS)]


def _run(outputs: Path, *args: str) -> xr.DataTree:
    from forecast.cli import app

    res = CliRunner().invoke(app, ["run", *SMALL, "--outputs-dir", str(outputs), *args])
    assert res.exit_code == 0, res.output
    assert "published " in res.output and "error:" not in res.output
    return xr.open_datatree(latest_forecast_path(outputs), engine="h5netcdf")


def _check_forecast(fc: xr.Dataset, scenarios: list[str]) -> None:
    assert list(fc["scenario"].values) == scenarios
    assert list(fc["year"].values) == [2024, 2031, 2038, 2045]
    # the propagation thins the 4 x 1,000 posterior evenly to 40 draws: every 100th of a chain
    # (the default, 400, every 10th: tests/flows/test_flows.py runs it)
    assert DEFAULT_PROPAGATE_DRAWS == 400
    assert fc.sizes["chain"] == GATED_CHAINS
    assert fc.sizes["draw"] == PROPAGATE_DRAWS // GATED_CHAINS
    frontier = fc["frontier_flop"].values
    assert np.all(np.isfinite(frontier) & (frontier > 0))
    # +inf: the wall lies beyond the model's search grid (1e40 FLOP); 0: below it (1e20: no
    # launchable plan at all, as in the tail of draws whose fitted context length reaches
    # millions of tokens by 2045, docs/validation.md section 15), rare
    walls = fc["wall_flop"].values
    assert not np.isnan(walls).any() and np.all(walls >= 0) and np.mean(walls == 0) < 0.01
    assert np.isfinite(walls).mean() > 0.99
    hit_year = fc["hit_year"].values
    assert not np.isnan(hit_year).any()  # not reached is +inf, never NaN
    finite = hit_year[np.isfinite(hit_year)]
    assert finite.size and np.all((finite >= 2024) & (finite <= 2045))


def test_baseline_with_every_scenario_overlay_runs(tmp_path: Path) -> None:
    overlays = sorted((PRIORS / "scenarios").glob("*.toml"))
    names = [load_overlay(p).name for p in overlays]
    assert len(names) == 7
    with _run(tmp_path / "outputs") as dt:
        fc = dt["forecast"].to_dataset()
        _check_forecast(fc, ["baseline", *names])
        # an overlay changes only its keys: the six-month scenario runs 180 days, the others 90
        inputs = dt["forecast_inputs"].to_dataset()["training__duration_days"]
        assert float(inputs.sel(scenario="six-month-runs").min()) == 180.0
        assert float(inputs.sel(scenario="baseline").max()) == 90.0


def test_epoch_2030_with_a_fixed_frontier_growth_runs(tmp_path: Path) -> None:
    """epoch-2030.toml fixes frontier growth at 4x/yr: a point mass in the NumPyro fit, so the
    frontier run grows exactly 4^7 between output years in every draw."""
    path = PRIORS / "epoch-2030.toml"
    args = ["--priors", str(path), "--scenario", "epoch-2030"]
    with _run(tmp_path / "outputs", *args) as dt:
        fc = dt["forecast"].to_dataset()
        _check_forecast(fc, ["epoch-2030"])
        slope = dt["posterior"]["frontier_slope"].values
        np.testing.assert_array_equal(slope, math.log10(4.0))
        ratio = fc["frontier_flop"].isel(year=slice(1, None)).values / (
            fc["frontier_flop"].isel(year=slice(None, -1)).values
        )
        np.testing.assert_allclose(ratio, 4.0**7, rtol=1e-9)
        assert dt.attrs["priors_name"] == "epoch-2030"
