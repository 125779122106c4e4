"""Benchmark: the realistic regime's fast path against its full search, on conditions it never saw.

    .venv/bin/python benchmarks/realistic_fast.py [--conditions 30] [--frontier 0] [--seed 7]
        [--draws 256]

Conditions: an accelerator of data/hardware.csv drawn at random, its FLOP/s scaled by
10^U(0, 1.5), its HBM and network bandwidths by 10^U(0, 1), HBM capacity by 10^U(0, 0.8), its
scale-up domain one of 8, 72, 144, 576 (future chips); assumptions drawn over their priors'
ranges (duration 60-180 days, u_max 0.5-0.8, BF16 or FP8, layer exponent 0.21-0.33, batch
exponent 0.2-0.5, batch at the reference size 16-360M tokens, sequence 4k-32k, latencies x0.5-2,
scale-out multiplier 0.5-2).  With ``--frontier N`` also N frontier accelerators and assumptions
of random (draw, year) pairs of the published forecast (the propagation's own conditions).  The
shortlist (scripts/realistic_shortlist.py) saw none of them: it drew its own with other seeds.

(a) The full search (``find_walls(regime="realistic")``, 61,880 shapes, 513 budgets) per
    condition, timed; (b) the fast path on the same conditions in one call; the share of walls
    within 0.01 and 0.05 dex and the largest gaps; (c) the fast path's rate on ``--draws``
    conditions (repeats of the first ones) after compilation.

Last line: ``speedup=<x> draws_per_s=<y> dm_within_0.01=<p> lat_within_0.01=<q>``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np

from forecast.config.runtime import init_jax  # isort: skip

init_jax()

from forecast.data.hardware import get_accelerator, load_hardware  # noqa: E402
from forecast.model.accelerators import hardware_from_accelerator  # noqa: E402
from forecast.model.params import SECONDS_PER_DAY, Assumptions, Hardware  # noqa: E402
from forecast.model.realistic_fast import fast_realistic_walls, shortlist_grid  # noqa: E402
from forecast.model.search import find_walls  # noqa: E402


def conditions(n: int, seed: int) -> list[tuple[str, Hardware, Assumptions]]:
    rng = np.random.default_rng(seed)
    df = load_hardware()
    names = list(df["name"])
    out = []
    for _ in range(n):
        name = names[int(rng.integers(len(names)))]
        hw, _ = hardware_from_accelerator(get_accelerator(df, name))
        bw = 10 ** rng.uniform(0, 1)
        fp8 = bool(rng.integers(2))
        hw = Hardware(
            flops=hw.flops * 10 ** rng.uniform(0, 1.5) * (2.0 if fp8 else 1.0),
            hbm_bandwidth=hw.hbm_bandwidth * bw,
            hbm_capacity=hw.hbm_capacity * 10 ** rng.uniform(0, 0.8),
            scaleup_bandwidth=hw.scaleup_bandwidth * bw * 10 ** rng.uniform(-0.3, 0.3),
            scaleup_domain_size=float(rng.choice([8.0, 72.0, 144.0, 576.0])),
            scaleout_bandwidth=hw.scaleout_bandwidth * bw * 10 ** rng.uniform(-0.3, 0.3),
        )
        lat = 10 ** rng.uniform(np.log10(0.5), np.log10(2.0))
        a = Assumptions(
            duration_s=rng.uniform(60, 180) * SECONDS_PER_DAY,
            max_utilization=rng.uniform(0.5, 0.8),
            bytes_per_number=1.0 if fp8 else 2.0,
            layer_exponent=rng.uniform(0.21, 0.33),
            batch_exponent=rng.uniform(0.2, 0.5),
            batch_tokens_ref=10 ** rng.uniform(np.log10(16e6), np.log10(360e6)),
            sequence_length=float(rng.choice([4096.0, 8192.0, 16384.0, 32768.0])),
            kernel_latency_s=4.5e-6 * lat,
            allreduce_base_latency_s=6.8e-6 * lat,
            intra_domain_hop_s=0.6e-6 * lat,
            inter_domain_hop_s=5.0e-6 * lat,
            scaleout_multiplier=10 ** rng.uniform(np.log10(0.5), np.log10(2.0)),
        )
        out.append((name, hw, a))
    return out


def frontier_conditions(n: int, seed: int) -> list[tuple[str, Hardware, Assumptions]]:
    """Frontier accelerators and assumptions of ``n`` random (draw, year) pairs of the published
    forecast's first scenario (none when no forecast is published)."""
    from forecast.inference.propagate import assumptions_from_inputs
    from forecast.store.reader import load_forecast

    try:
        tree = load_forecast()
    except Exception as exc:  # noqa: BLE001 - any reason: go on without frontier conditions
        print(f"no published forecast ({exc}); accelerators only", file=sys.stderr)
        return []
    fc = tree["forecast"].to_dataset().isel(scenario=0).stack(sample=("chain", "draw"))
    ins = tree["forecast_inputs"].to_dataset().isel(scenario=0).stack(sample=("chain", "draw"))
    rng = np.random.default_rng(seed)
    years = fc["year"].values
    out = []
    for _ in range(n):
        s = int(rng.integers(fc.sizes["sample"]))
        y = float(years[int(rng.integers(years.size))])
        hw = Hardware(
            *(float(fc[f"hardware_{f}"].isel(sample=s).sel(year=y)) for f in Hardware._fields)
        )
        inputs = {
            k.replace("__", "."): np.array([float(ins[k].isel(sample=s))]) for k in ins.data_vars
        }
        a = Assumptions(
            *(np.asarray(v).reshape(-1)[0] for v in assumptions_from_inputs(inputs, [y]))
        )
        out.append((f"frontier {y:.0f} draw {s}", hw, a))
    return out


def time_variants(conds, variants: dict, repeats: int, **fixed):
    """``fast_realistic_walls`` on ``conds`` for each variant (name -> keyword arguments), each
    compiled first and then timed alternately ``repeats`` times in this process: (outputs of
    the last round, best seconds per variant)."""
    from forecast.model.realistic_fast import fast_realistic_walls

    hw, a = stack(conds)
    first = stack(conds[:16])
    for kw in variants.values():
        fast_realistic_walls(*first, **kw, **fixed)  # compile
    times: dict[str, list[float]] = {k: [] for k in variants}
    out: dict[str, tuple] = {}
    for _ in range(repeats):
        for name, kw in variants.items():
            t = time.perf_counter()
            out[name] = fast_realistic_walls(hw, a, **kw, **fixed)
            times[name].append(time.perf_counter() - t)
    return out, {k: min(v) for k, v in times.items()}


def compare_two_variants(args, old: tuple[str, dict], new: tuple[str, dict]) -> int:
    """Time two variants of ``fast_realistic_walls`` side by side (:func:`time_variants`) on
    ``args.conditions`` random and ``args.frontier`` frontier conditions of ``args.seed``, best
    of ``args.repeats``, and print their times, the conditions whose walls or small-scale maximum
    differ, and the last line ``speedup=<x> identical=<k>/<n> new_ms=<a> old_ms=<b>``."""
    print(f"# {platform.processor() or platform.machine()}")
    conds = conditions(args.conditions, args.seed) + frontier_conditions(args.frontier, args.seed)
    n = len(conds)
    raw, best = time_variants(conds, dict([old, new]), args.repeats)
    before, after = (np.stack(raw[name]) for name, _ in (old, new))
    differs = (before != after) & ~(np.isnan(before) & np.isnan(after))
    t_old, t_new = (best[name] / n * 1e3 for name, _ in (old, new))
    print(f"conditions: {args.conditions} random + {n - args.conditions} frontier")
    print(f"{old[0]}: {t_old:.2f} ms a condition (best of {args.repeats})")
    print(f"{new[0]}: {t_new:.2f} ms a condition")
    for i, what in enumerate(("data-movement wall", "latency wall", "small-scale maximum")):
        where = np.flatnonzero(differs[i])
        print(f"{what}: {where.size} of {n} differ " + str([conds[j][0] for j in where[:3]]))
    print(
        f"speedup={t_old / t_new:.2f} identical={int((~differs.any(axis=0)).sum())}/{n} "
        f"new_ms={t_new:.2f} old_ms={t_old:.2f}"
    )
    return 0


def stack(items):
    hw = Hardware(*(np.array([h[i] for _, h, _ in items]) for i in range(6)))
    a = Assumptions(*(np.array([x[i] for _, _, x in items]) for i in range(len(Assumptions()))))
    return hw, a


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conditions", type=int, default=30)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--draws", type=int, default=256)
    p.add_argument(
        "--frontier",
        type=int,
        default=0,
        help="also this many frontier (draw, year) conditions of the published forecast",
    )
    args = p.parse_args(argv)
    print(f"# {platform.processor() or platform.machine()}, shortlist {shortlist_grid().tp.size}")
    conds = conditions(args.conditions, args.seed)
    conds += frontier_conditions(args.frontier, args.seed)
    hw, a = stack(conds)
    fast_realistic_walls(hw, a)  # compile
    t = time.perf_counter()
    dm, lat, umax = fast_realistic_walls(hw, a)
    t_fast_cond = (time.perf_counter() - t) / len(conds)
    full, t_full = [], 0.0
    find_walls(conds[0][1], conds[0][2], regime="realistic")  # compile
    for label, h, x in conds:
        t = time.perf_counter()
        w = find_walls(h, x, regime="realistic")
        t_full += time.perf_counter() - t
        full.append((w.data_movement_wall_log10_flop, w.latency_wall_log10_flop, w.max_utilization))
        i = len(full) - 1
        print(
            f"{i:3d} {label[:30]:30s} dm full {full[-1][0]:7.3f} fast {dm[i]:7.3f} | "
            f"lat full {full[-1][1]:7.3f} fast {lat[i]:7.3f} | umax {full[-1][2]:.4f} {umax[i]:.4f}",
            flush=True,
        )
    f = np.array(full)

    def gap(x, y):
        both_inf = (~np.isfinite(x)) & (~np.isfinite(y)) & (np.sign(x) == np.sign(y))
        return np.where(both_inf, 0.0, np.abs(np.where(both_inf, 0, x) - np.where(both_inf, 0, y)))

    g_dm, g_lat = gap(f[:, 0], dm), gap(f[:, 1], lat)
    for name, g in (("data-movement", g_dm), ("latency", g_lat)):
        print(
            f"{name} wall: within 0.01 dex {np.mean(g <= 0.01):.1%}, within 0.05 dex "
            f"{np.mean(g <= 0.05):.1%}, largest gap {np.max(g):.3f} dex"
        )
    reps = stack([conds[i % len(conds)] for i in range(args.draws)])
    fast_realistic_walls(*reps)
    t = time.perf_counter()
    fast_realistic_walls(*reps)
    rate = args.draws / (time.perf_counter() - t)
    speedup = (t_full / len(conds)) * rate
    print(f"full search {t_full / len(conds):.1f} s a condition; fast path {1 / rate * 1e3:.1f} ms")
    print(f"(first call on the {len(conds)} conditions: {t_fast_cond * 1e3:.1f} ms a condition)")
    print(
        f"speedup={speedup:.0f} draws_per_s={rate:.1f} dm_within_0.01={np.mean(g_dm <= 0.01):.3f} "
        f"lat_within_0.01={np.mean(g_lat <= 0.01):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
