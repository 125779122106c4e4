"""Benchmark: what interpolating the walls between every 2nd year costs in accuracy (issue 23).

    .venv/bin/python benchmarks/year_step.py [--draws 200] [--scenario baseline]

``wallcast run`` computed both walls every 2nd year and the last until 2026-12-05 and interpolated
them in log10 FLOP in between; it now searches every year (``DEFAULT_WALL_YEAR_STEP = 1``) on the
evidence of this script. It propagates the latest published forecast's posterior, thinned to
about ``--draws`` draws, with the scenario's inputs, computing the walls at every year
(``wall_year_step=1``, realistic regime, the paper's beside), then rebuilds what step 2 would
publish from the even years alone, and compares at the odd years: the largest change of a 10th,
50th or 90th percentile of each wall over the draws, with its bootstrap standard error (the Monte
Carlo error of that percentile at this many draws), and the hit years. It also counts the odd
draw-years an adaptive grid would have to search (those whose neighbours' walls, any of the four,
differ by more than 0.1 or 0.3 dex).

Last line: ``max_percentile_shift_dex=<d> at_year=<y> bootstrap_se_dex=<s>
hit_year_percentile_shift=<h> adaptive_share_0.1=<a> adaptive_share_0.3=<b>``.
"""

from __future__ import annotations

import argparse

import numpy as np

from forecast.config.runtime import init_jax


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--scenario", default="baseline")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    init_jax()
    from published_draws import published_trends

    from forecast.inference import propagate as prop
    from forecast.inference.crossing import first_crossing

    trends, inputs, years, n = published_trends(args.draws, args.scenario, args.seed)
    every = prop.propagate(trends, inputs, years, 1, cost=False, regime="realistic")
    even = np.unique(np.r_[np.arange(0, years.size, 2), years.size - 1])
    odd = np.setdiff1d(np.arange(years.size), even)
    frontier = every["frontier_log10_flop"]
    rng = np.random.default_rng(1)
    worst, worst_hit = (0.0, 0.0, 0.0), 0.0
    for key, regime in (("wall_log10_flop", "realistic"), ("paper_wall_log10_flop", "paper")):
        for w, wall in enumerate(("data-movement", "latency")):
            computed = every[key][..., w]
            interpolated = prop.interpolate_years(years, years[even], computed[:, even])
            finite = np.where(np.isfinite(computed), computed, np.nan)
            q_true = np.nanquantile(finite[:, odd], [0.1, 0.5, 0.9], axis=0)
            q_step2 = np.nanquantile(
                np.where(np.isfinite(interpolated), interpolated, np.nan)[:, odd],
                [0.1, 0.5, 0.9],
                axis=0,
            )
            shift = np.abs(q_step2 - q_true)
            i, j = np.unravel_index(np.nanargmax(shift), shift.shape)
            boot = [
                np.nanquantile(finite[rng.integers(0, n, n), odd[j]], [0.1, 0.5, 0.9][i])
                for _ in range(200)
            ]
            se = float(np.std(boot))
            h_every = first_crossing(years, frontier, computed)[0]
            h_step2 = first_crossing(years, frontier, interpolated)[0]
            both = np.isfinite(h_every) & np.isfinite(h_step2)
            dh = np.abs(h_step2 - h_every)[both]
            hit_shift = np.abs(
                np.quantile(h_step2[both], [0.1, 0.5, 0.9])
                - np.quantile(h_every[both], [0.1, 0.5, 0.9])
            )
            worst_hit = max(worst_hit, float(hit_shift.max()))
            print(
                f"{regime} {wall}: largest percentile shift {shift[i, j]:.3f} dex "
                f"({['10th', '50th', '90th'][i]} percentile, {years[odd[j]]:.0f}; bootstrap SE "
                f"{se:.3f}); median shift over odd years {np.nanmedian(shift):.3f} dex; hit year "
                f"|step 2 - step 1| per draw median {np.median(dh):.3f}, 95th pct "
                f"{np.quantile(dh, 0.95):.3f}; its 10/50/90th percentiles move "
                f"{np.round(hit_shift, 3).tolist()} years"
            )
            if shift[i, j] > worst[0]:
                worst = (float(shift[i, j]), float(years[odd[j]]), se)
    # an adaptive grid: an odd year searched only where its neighbours' walls differ by > t dex
    walls = np.concatenate([every["wall_log10_flop"], every["paper_wall_log10_flop"]], axis=-1)
    with np.errstate(invalid="ignore"):
        step = np.abs(walls[:, odd + 1] - walls[:, odd - 1])
    share = {
        t: float(np.mean(np.any(~np.isfinite(step) | (step > t), axis=-1))) for t in (0.1, 0.3)
    }
    print(
        f"odd draw-years whose neighbours' walls differ by > 0.1 dex: {share[0.1]:.1%}, "
        f"> 0.3 dex: {share[0.3]:.1%} (what an adaptive grid would search of them)"
    )
    print(
        f"max_percentile_shift_dex={worst[0]:.3f} at_year={worst[1]:.0f} "
        f"bootstrap_se_dex={worst[2]:.3f} hit_year_percentile_shift={worst_hit:.3f} "
        f"adaptive_share_0.1={share[0.1]:.3f} adaptive_share_0.3={share[0.3]:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
