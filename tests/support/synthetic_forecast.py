"""A synthetic forecast with the published layout (no fit): the report, deck and analyses tests'
cheap stand-in for a real forecast."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from forecast.inference.crossing import first_crossing

REPO = Path(__file__).resolve().parents[2]
YEARS = np.arange(2024, 2046)
METRICS = ["flops", "hbm_bandwidth", "hbm_capacity", "scaleup_bandwidth", "scaleout_bandwidth"]
FIRST_ID = "20260101T000000Z-aaaaaaaa"
SECOND_ID = "20260201T000000Z-bbbbbbbb"


def synthetic_tree(
    fid: str, *, growth: float = 0.65, seed: int = 0, extra_point: bool = False, cost: bool = True
) -> xr.DataTree:
    """A forecast with the published layout; the latency wall of 'late-walls' is often not hit.

    With ``cost``, the cost variables too: the multiplier grows as (frontier / data-movement
    wall)^0.3 past the wall and is +inf past the latency wall; the shortest run is 90 days at
    the latency wall, scaling as the square root of compute."""
    rng = np.random.default_rng(seed)
    chains, draws = 2, 150
    n = chains * draws
    t = YEARS - 2024.0
    batch = rng.lognormal(np.log(6e7), 0.8, n)  # drives the data-movement wall
    slope = rng.normal(growth, 0.04, n)
    frontier = 25.7 + slope[:, None] * t[None, :]
    scenarios = {"baseline": 0.0, "late-walls": 2.5}
    fc, inputs = [], []
    for shift in scenarios.values():
        dm = 29.0 + 0.9 * np.log10(batch / 6e7) + rng.normal(0, 0.2, n) + shift
        dm = dm[:, None] + 0.05 * t[None, :]
        lat = dm + 1.5 + 4.8 * (shift > 0)
        walls = np.stack([dm, lat], axis=-1)  # (sample, year, wall)
        hit_year, hit_log, hit = first_crossing(
            YEARS.astype(float), frontier[:, None, :], np.moveaxis(walls, -1, -2)
        )

        def cd(x):
            return np.asarray(x).reshape(chains, draws, *np.shape(x)[1:])

        fc.append(
            xr.Dataset(
                {
                    "wall_flop": (("chain", "draw", "year", "wall"), 10.0 ** cd(walls)),
                    "frontier_flop": (("chain", "draw", "year"), 10.0 ** cd(frontier)),
                    "hit_year": (("chain", "draw", "wall"), cd(hit_year), {"units": "year"}),
                    "hit_flop": (
                        ("chain", "draw", "wall"),
                        np.where(np.isfinite(cd(hit_log)), 10.0 ** cd(hit_log), np.inf),
                        {"units": "FLOP"},
                    ),
                    "hit": (("chain", "draw", "wall"), cd(hit).astype(bool)),
                },
                coords={"year": YEARS, "wall": ["data_movement", "latency"]},
            )
        )
        if cost:
            past_lat = frontier > lat
            mult = np.where(past_lat, np.inf, np.maximum(1.0, 10 ** (0.3 * (frontier - dm))))
            util = np.where(past_lat, 0.0, 0.6 / np.where(past_lat, 1.0, mult))
            fc[-1]["cost_multiplier"] = (("chain", "draw", "year"), cd(mult), {"units": "1"})
            fc[-1]["frontier_utilization"] = (("chain", "draw", "year"), cd(util), {"units": "1"})
            days = 90.0 * 10 ** ((frontier - lat) / 2)
            fc[-1]["min_run_days"] = (("chain", "draw", "year"), cd(days), {"units": "days"})
        inputs.append(
            xr.Dataset(
                {
                    "scaling__batch_tokens_2024": (("chain", "draw"), cd(batch)),
                    "latency__kernel_us": (("chain", "draw"), cd(rng.lognormal(1.5, 0.3, n))),
                    "training__duration_days": (("chain", "draw"), np.full((chains, draws), 90.0)),
                }
            )
        )
    names = list(scenarios)
    forecast = xr.concat(fc, dim=xr.DataArray(names, dims="scenario", name="scenario"))
    forecast_inputs = xr.concat(inputs, dim=xr.DataArray(names, dims="scenario", name="scenario"))

    hw_names, hw_years, hw_index, hw_values = [], [], [], []
    for m, metric in enumerate(METRICS):
        for k, year in enumerate(np.arange(2016.0, 2026.0, 2.0)):
            hw_names.append(f"acc{k}|{metric}")
            hw_years.append(year)
            hw_index.append(m)
            hw_values.append(12.0 + m + 0.12 * (year - 2024) + rng.normal(0, 0.05))
    if extra_point:
        hw_names.append("new-acc|flops")
        hw_years.append(2025.5)
        hw_index.append(0)
        hw_values.append(15.5)
    runs = [f"run{i}" for i in range(8)]
    run_years = np.linspace(2018, 2025, 8)
    post = xr.Dataset(
        {
            "slope": (("chain", "draw", "metric"), rng.normal(0.12, 0.01, (chains, draws, 5))),
            "intercept": (
                ("chain", "draw", "metric"),
                12.0 + np.arange(5) + rng.normal(0, 0.02, (chains, draws, 5)),
            ),
            "frontier_slope": (("chain", "draw"), slope.reshape(chains, draws)),
            "frontier_intercept": (("chain", "draw"), np.full((chains, draws), 25.7)),
        },
        coords={"metric": METRICS},
    )
    tree = xr.DataTree.from_dict(
        {
            "/posterior": post,
            "/observed_data": xr.Dataset(
                {
                    "log10_value": ("obs", np.array(hw_values)),
                    "log10_compute": ("run", 25.7 + growth * (run_years - 2024)),
                },
                coords={"obs": hw_names, "run": runs},
            ),
            "/constant_data": xr.Dataset(
                {
                    "hardware_year": ("obs", np.array(hw_years)),
                    "hardware_metric_index": ("obs", np.array(hw_index)),
                    "frontier_year": ("run", run_years),
                    "frontier_is_speculative": ("run", np.arange(8) == 7),
                },
                coords={"obs": hw_names, "run": runs},
            ),
            "/forecast": forecast,
            "/forecast_inputs": forecast_inputs,
        }
    )
    tree.attrs.update(
        id=fid,
        created=f"{fid[:4]}-{fid[4:6]}-{fid[6:8]}T00:00:00+00:00",
        code_version="0.1.0",
        seed=seed,
        chains=chains,
        draws=draws,
        data_hash=f"hash-{len(hw_names)}",
        priors_name="baseline",
        priors_path="/srv/wallcast/priors/baseline.toml",  # where the run read it
        priors_text=(REPO / "priors" / "baseline.toml").read_text(),
        scenarios=",".join(names),
        hardware_rows=24 + extra_point,
        frontier_rows=139,
    )
    # each scenario's file as the run recorded it (the glossary reads its description)
    tree.attrs["scenario_text_baseline"] = (REPO / "priors" / "baseline.toml").read_text()
    tree.attrs["scenario_text_late-walls"] = (
        '[meta]\nname = "late-walls"\ndescription = "Synthetic: both walls 2.5 years later."\n'
    )
    return tree
