"""A small forecast, computed the way ``wallcast run`` computes one, and its stored reference.

The reference (``tests/reference/small_forecast.nc``) pins every number the forecast job
computes: the joint posterior (trends and scaling laws), the walls per year, the frontier run, hit
years and hit FLOP, for the baseline and one scenario overlay.  Refactoring must leave it unchanged; a change that is meant
to move numbers (a physics fix, a new prior) regenerates it in the same commit and says why:

    .venv/bin/python tests/reference_forecast.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

REFERENCE_PATH = Path(__file__).resolve().parent / "reference" / "small_forecast.nc"
SEED = 11
CHAINS, DRAWS = 2, 150
SCENARIOS = ["six-month-runs"]
YEARS = [2024.0, 2027.0, 2030.0, 2033.0, 2036.0, 2040.0, 2045.0]
FORECAST_VARIABLES = (
    "wall_flop",
    "frontier_flop",
    "hit_year",
    "hit_flop",
    "frontier_utilization",
    "cost_multiplier",
    "min_run_days",
)


def small_forecast() -> xr.Dataset:
    """Fit the joint model (no convergence gate: the run is deliberately small), propagate
    every draw, assemble."""
    from forecast import pipeline

    inputs = pipeline.load_inputs(scenarios=SCENARIOS)
    fit_tree = pipeline.fit(
        inputs, inputs.priors, chains=CHAINS, draws=DRAWS, seed=SEED, gate=False
    )
    results = {
        name: pipeline.propagate_scenario(fit_tree, prior_set, seed=SEED, years=YEARS)
        for name, prior_set in inputs.scenarios.items()
    }
    tree, _ = pipeline.assemble(inputs, fit_tree, results, seed=SEED, chains=CHAINS, draws=DRAWS)
    forecast = tree["forecast"].to_dataset()
    posterior = tree["posterior"].to_dataset()
    out = forecast[list(FORECAST_VARIABLES)]
    for name, da in posterior.data_vars.items():
        out[f"posterior_{name}"] = da.rename({d: f"posterior_{d}" for d in da.dims})
    out.attrs = {"seed": SEED, "chains": CHAINS, "draws": DRAWS}
    return out.load()


def main() -> None:
    ds = small_forecast()
    REFERENCE_PATH.parent.mkdir(parents=True, exist_ok=True)
    encoding = {v: {"zlib": True, "complevel": 6} for v in ds.data_vars}
    ds.to_netcdf(REFERENCE_PATH, engine="h5netcdf", encoding=encoding)
    print(f"wrote {REFERENCE_PATH} ({REFERENCE_PATH.stat().st_size / 1e3:.0f} kB)")
    print({k: float(np.nanmedian(np.where(np.isinf(v), np.nan, v))) for k, v in ds.items()})


if __name__ == "__main__":
    main()
