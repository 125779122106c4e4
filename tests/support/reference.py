"""The stored references of the forecast job, in two parts that hold on every machine.

**Deterministic part** (``tests/reference/small_fit.nc`` -> ``tests/reference/small_forecast.nc``).
A small joint fit is stored as it came out of NUTS (the whole ArviZ DataTree); the forecast job's
deterministic steps (free-block draws, trend projection, wall search on the plan model, crossing,
assembly) run from that stored posterior and must reproduce the stored forecast at rtol 1e-7 on
any CPU: these steps involve no chaotic dynamics, so another instruction set moves them only in
the last bits.

**Stochastic part** (``tests/reference/posterior_quantiles.nc``). NUTS trajectories are chaotic:
XLA's CPU code differs between processors (vector width, fused multiply-add), so the same seed
gives other draws on another CPU. What holds everywhere is the posterior itself: the 5 %, 50 %
and 95 % quantiles of every fitted parameter from a long reference run (4 x 2,500 draws) with the
Monte Carlo standard error of each (ArviZ's quantile MCSE, from the effective sample size). A fit
on any machine must agree with them within :data:`MCSE_TOLERANCE` combined standard errors
(:func:`quantile_mismatches`).

Refactoring leaves both unchanged; a change meant to move numbers (a physics fix, a new prior)
regenerates them in the same commit and says why:

    .venv/bin/python tests/support/reference.py            # fit + forecast (seconds)
    .venv/bin/python tests/support/reference.py --forecast-only  # physics change: forecast only
    .venv/bin/python tests/support/reference.py --quantiles  # the long run too (minutes)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import xarray as xr

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference"
FIT_PATH = REFERENCE_DIR / "small_fit.nc"
REFERENCE_PATH = REFERENCE_DIR / "small_forecast.nc"
QUANTILES_PATH = REFERENCE_DIR / "posterior_quantiles.nc"
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

QUANTILE_PROBS = (0.05, 0.5, 0.95)
QUANTILE_RUN = {"chains": 4, "draws": 2500, "seed": 0}
MCSE_TOLERANCE = 5.0
"""Combined Monte Carlo standard errors allowed between a fit's quantile and the reference's.
About 40 parameters x 3 quantiles are compared; with normal errors the largest |z| of a correct
sampler would rarely pass 4 (P ~ 1e-3 at 4.5). Measured over 20 default fits (10 seeds x 2
instruction sets, BENCHMARKS.md section 5) it reached 4.34: the ESS-based standard error of a tail
quantile is optimistic when a chain visits a tail (here the batch law's) only a few times, so
5 leaves margin. A posterior shifted by a fifth of its standard deviation still fails (tested)."""


def small_fit() -> xr.DataTree:
    """The joint NUTS fit of the deterministic reference (no convergence gate: deliberately
    small; only its draws matter, as the input of the deterministic steps)."""
    from forecast.jobs import forecast_job

    inputs = forecast_job.load_inputs(scenarios=SCENARIOS)
    return forecast_job.fit(
        inputs, inputs.priors, chains=CHAINS, draws=DRAWS, warmup=DRAWS, seed=SEED, gate=False
    )


def load_fit() -> xr.DataTree:
    """The stored fit (every group, attrs included), loaded into memory."""
    with xr.open_datatree(FIT_PATH, engine="h5netcdf") as dt:
        return dt.load()


def forecast_from_fit(fit_tree: xr.DataTree) -> xr.Dataset:
    """Propagate every draw of ``fit_tree`` through each scenario and assemble, the way
    ``wallcast run`` does after its fit; the forecast variables and the posterior."""
    from forecast.jobs import forecast_job

    inputs = forecast_job.load_inputs(scenarios=SCENARIOS)
    results = {
        name: forecast_job.propagate_scenario(fit_tree, prior_set, seed=SEED, years=YEARS)
        for name, prior_set in inputs.scenarios.items()
    }
    tree, _ = forecast_job.assemble(
        inputs, fit_tree, results, seed=SEED, chains=CHAINS, draws=DRAWS
    )
    forecast = tree["forecast"].to_dataset()
    posterior = tree["posterior"].to_dataset()
    out = forecast[list(FORECAST_VARIABLES)]
    for name, da in posterior.data_vars.items():
        out[f"posterior_{name}"] = da.rename({d: f"posterior_{d}" for d in da.dims})
    out.attrs = {"seed": SEED, "chains": CHAINS, "draws": DRAWS}
    return out.load()


def posterior_quantiles(posterior: xr.Dataset) -> xr.Dataset:
    """Quantiles :data:`QUANTILE_PROBS` of every posterior variable (dim ``quantile``) and their
    Monte Carlo standard errors (``<name>__mcse``, ArviZ's quantile MCSE from the ESS)."""
    import arviz as az

    dt = xr.DataTree.from_dict({"/posterior": posterior})
    quantiles = posterior.quantile(list(QUANTILE_PROBS), dim=("chain", "draw"))
    mcse = []
    with np.errstate(divide="ignore", invalid="ignore"):  # fixed parameters: 0/0
        for prob in QUANTILE_PROBS:
            m = az.mcse(dt, method="quantile", prob=prob)
            mcse.append(m.to_dataset() if isinstance(m, xr.DataTree) else m)
    mcse_ds = xr.concat(mcse, dim=xr.DataArray(list(QUANTILE_PROBS), dims="quantile"))
    out = quantiles.copy()
    for name in posterior.data_vars:
        out[f"{name}__mcse"] = mcse_ds[name].assign_coords(quantile=quantiles["quantile"])
    return out


def quantile_z(fit: xr.Dataset, reference: xr.Dataset) -> dict[str, xr.DataArray]:
    """|fit - reference| / combined standard error of every quantile (0 where both are exact: a
    parameter fixed by its prior), per variable."""
    out = {}
    for name in reference.data_vars:
        if str(name).endswith("__mcse"):
            continue
        se = np.sqrt(fit[f"{name}__mcse"] ** 2 + reference[f"{name}__mcse"] ** 2)
        diff = np.abs(fit[name] - reference[name])
        with np.errstate(divide="ignore", invalid="ignore"):
            out[str(name)] = xr.where((diff == 0) & (se == 0), 0.0, diff / se)
    return out


def quantile_mismatches(
    fit: xr.Dataset, reference: xr.Dataset, tolerance: float = MCSE_TOLERANCE
) -> list[str]:
    """Quantiles of ``fit`` (from :func:`posterior_quantiles`) farther than ``tolerance`` combined
    standard errors from ``reference``'s: one line per mismatch (empty: the posteriors agree)."""
    out = []
    for name, z in quantile_z(fit, reference).items():
        got, want = fit[name], reference[name]
        bad = ~(z <= tolerance)  # NaN (an error of 0 with a difference) fails
        for idx in zip(*np.nonzero(np.atleast_1d(bad.values)), strict=False):
            where = {d: got[d].values[i] for d, i in zip(got.dims, idx, strict=False)}
            flat = tuple(idx) if got.ndim else ()
            out.append(
                f"{name}{where}: {float(got.values[flat]):.6g} vs reference "
                f"{float(want.values[flat]):.6g} ({float(z.values[flat]):.1f} standard errors)"
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description="Regenerate the stored references.")
    ap.add_argument("--quantiles", action="store_true", help="also the long reference run")
    ap.add_argument(
        "--forecast-only",
        action="store_true",
        help="keep the stored fit, regenerate the forecast from it (a physics change: the fit "
        "does not use the plan model, and a refit on another CPU would move every draw)",
    )
    args = ap.parse_args()
    from forecast.store.schema import write_tree

    REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
    if not args.forecast_only:
        write_tree(small_fit(), FIT_PATH)
        print(f"wrote {FIT_PATH} ({FIT_PATH.stat().st_size / 1e3:.0f} kB)")
    ds = forecast_from_fit(load_fit())  # from the stored file, as the test reads it
    encoding = {v: {"zlib": True, "complevel": 6} for v in ds.data_vars}
    ds.to_netcdf(REFERENCE_PATH, engine="h5netcdf", encoding=encoding)
    print(f"wrote {REFERENCE_PATH} ({REFERENCE_PATH.stat().st_size / 1e3:.0f} kB)")
    if args.quantiles:
        from forecast.jobs import forecast_job

        inputs = forecast_job.load_inputs(scenarios=[])
        fit = forecast_job.fit(inputs, inputs.priors, **QUANTILE_RUN)  # gated
        q = posterior_quantiles(fit["posterior"].to_dataset())
        q.attrs = {**QUANTILE_RUN, "probs": list(QUANTILE_PROBS)}
        q.to_netcdf(QUANTILES_PATH, engine="h5netcdf")
        print(f"wrote {QUANTILES_PATH} ({QUANTILES_PATH.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
