"""Benchmark (a lever measured and not kept): walls on a coarser grid of years except where a hit
year needs them, simulated on a published forecast's own walls (issue 23).

    .venv/bin/python benchmarks/coarse_years.py [--factor 2] [--margin-dex 0.5] [--forecast PATH]

The propagation computed both walls every 2nd year and interpolated between (until 2026-12-05;
it now searches every year: ``benchmarks/year_step.py``).  The variant
computes them every ``factor``-th of those years and, per draw, the skipped ones only inside an
interval where the frontier comes within ``margin-dex`` of a wall (either regime's, either wall)
at one of its ends.  No wall is searched here: the published forecast's walls at the computed
years stand for what the search would return, so the hit years and walls the variant would
publish follow from interpolation alone.  Printed per scenario: wall-years computed per draw,
hit years that change, and the largest change of a 10th, 50th or 90th percentile of the walls
at any year (the fan chart's numbers).  Reads the dataset and searches no wall.

Last line: ``computed_per_draw=<k> of=<n> hits_changed=<c> max_quantile_shift_dex=<d>``.
"""

from __future__ import annotations

import argparse

import numpy as np

from forecast.inference.crossing import first_crossing
from forecast.inference.propagate import interpolate_years
from forecast.store.reader import load_forecast


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--factor", type=int, default=2, help="coarse grid: every k-th computed year")
    p.add_argument("--margin-dex", type=float, default=0.5)
    p.add_argument("--forecast", default=None, help="a forecast.nc (default: the latest)")
    args = p.parse_args(argv)
    tree = load_forecast(args.forecast) if args.forecast else load_forecast()
    fc = tree["forecast"].to_dataset()
    years = fc["year"].values.astype(float)
    # the years the forecast searched (its wall_year_step; absent: 2, before 2026-12-05)
    step = int(fc.attrs.get("wall_year_step", tree.attrs.get("wall_year_step", 2)))
    fine = np.unique(np.r_[np.arange(0, years.size, step), years.size - 1])
    coarse = np.unique(np.r_[fine[:: args.factor], fine[-1]])
    is_coarse = np.isin(fine, coarse)
    variables = [v for v in ("wall_flop", "paper_wall_flop") if v in fc]
    computed, draws, changed, shift = 0.0, 0, 0, 0.0
    for sc in fc["scenario"].values:
        f = fc.sel(scenario=sc).stack(sample=("chain", "draw"))
        front = np.log10(f["frontier_flop"].transpose("sample", "year").values)
        series = {
            (v, w): np.log10(f[v].sel(wall=w).transpose("sample", "year").values)
            for v in variables
            for w in f["wall"].values
        }
        need = np.zeros((front.shape[0], fine.size), dtype=bool)
        for s in series.values():
            for j in range(coarse.size - 1):
                lo, hi = coarse[j], coarse[j + 1]
                g_lo, g_hi = front[:, lo] - s[:, lo], front[:, hi] - s[:, hi]
                near = (np.minimum(g_lo, g_hi) <= args.margin_dex) & (
                    np.maximum(g_lo, g_hi) >= -args.margin_dex
                )
                need[:, (fine > lo) & (fine < hi)] |= near[:, None]
        rows = []
        for (v, w), s in series.items():
            estimate = interpolate_years(years[fine], years[coarse], s[:, coarse])
            kept = np.where(need | is_coarse, s[:, fine], estimate)
            new = interpolate_years(years, years[fine], kept)
            old = interpolate_years(years, years[fine], s[:, fine])
            h_old = first_crossing(years, front, old)[0]
            h_new = first_crossing(years, front, new)[0]
            same = np.isclose(h_old, h_new, rtol=0, atol=1e-9) | (np.isinf(h_old) & np.isinf(h_new))
            q_new = np.nanquantile(np.where(np.isfinite(new), new, np.nan), [0.1, 0.5, 0.9], 0)
            q_old = np.nanquantile(np.where(np.isfinite(old), old, np.nan), [0.1, 0.5, 0.9], 0)
            d = float(np.nanmax(np.abs(q_new - q_old)))
            changed += int((~same).sum())
            shift = max(shift, d)
            rows.append(f"{v}/{w}: {int((~same).sum())} hits changed, quantiles {d:.2f} dex")
        per_draw = coarse.size + need[:, ~is_coarse].sum(axis=1).mean()
        computed += per_draw * front.shape[0]
        draws += front.shape[0]
        print(f"{sc}: {per_draw:.2f} of {fine.size} wall-years a draw; " + "; ".join(rows))
    print(
        f"computed_per_draw={computed / draws:.2f} of={fine.size} hits_changed={changed} "
        f"max_quantile_shift_dex={shift:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
