"""Write the realistic fast path's shortlist of shapes (forecast/model/realistic_shortlist.py).

For a spread of conditions (every accelerator of data/hardware.csv at the default assumptions, two
of them at each one-at-a-time change of an uncertain assumption, frontier accelerators of random
draws and years of the published forecast, and random accelerators and assumptions), the full
realistic grid (61,880 shapes) is ranked at budgets 10^20 to 10^40 FLOP every 0.1 dex and every
0.005 dex in the last 0.1 dex before the latency wall; the shortlist is the fewest shapes (greedy
set cover) that reach ``1 - tolerance`` of the best plan's utilization at every feasible budget of
every condition.  The best plan over a shortlist is a plan of the full grid, so a shortlist can
only lower a utilization (bring a wall earlier); ``benchmarks/realistic_fast.py`` measures the
agreement with the full search on conditions the shortlist never saw.

    python scripts/realistic_shortlist.py --raw named.npz        # 77 named conditions, ~9 min
    python scripts/realistic_shortlist.py --random 150 --seed 101 --raw random.npz   # ~17 min
    python scripts/realistic_shortlist.py --from-raw named.npz random.npz   # writes the module

Ranking takes ~7 s per condition on 2 cores; the selection from the rankings, seconds.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from forecast.config.runtime import init_jax
from forecast.data.hardware import get_accelerator, load_hardware
from forecast.model.accelerators import hardware_from_accelerator
from forecast.model.params import Assumptions, Hardware, assumptions_with
from forecast.model.realistic import LaunchGrid, _constants, _plans_at, launch_grid

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from realistic_fast import conditions as random_conditions  # noqa: E402
from realistic_fast import frontier_conditions  # noqa: E402

SHORTLIST_PATH = Path(__file__).resolve().parents[1] / "forecast/model/realistic_shortlist.py"

BUDGETS = np.round(np.arange(20.0, 40.0001, 0.1), 4)
EDGE_STEPS = np.arange(0.005, 0.1, 0.005)

# one-at-a-time changes of the uncertain assumptions (their priors' 10th-90th percentile range
# or wider; priors/baseline.toml)
VARIANTS: dict[str, dict] = {
    "default": {},
    "fp8": {"bytes_per_number": 1.0},
    "layer_exponent 0.21": {"layer_exponent": 0.21},
    "layer_exponent 0.33": {"layer_exponent": 0.33},
    "batch_exponent 0.2": {"batch_exponent": 0.2},
    "batch_exponent 0.5": {"batch_exponent": 0.5},
    "batch 20M tokens": {"batch_tokens_ref": 2e7},
    "sequence 4096": {"sequence_length": 4096.0},
    "sequence 32768": {"sequence_length": 32768.0},
    "180 days": {"duration_days": 180.0},
    "30 days": {"duration_days": 30.0},
    "latency x2": {
        "kernel_latency_s": 9e-6,
        "allreduce_base_latency_s": 13.6e-6,
        "intra_domain_hop_s": 1.2e-6,
        "inter_domain_hop_s": 10e-6,
    },
    "scale-out x0.5": {"scaleout_multiplier": 0.5},
    "scale-out x2": {"scaleout_multiplier": 2.0},
    "u_max 0.5": {"max_utilization": 0.5},
}
VARIANT_ACCELERATORS = ("NVIDIA H100 SXM5", "NVIDIA GB200 NVL72 (per GPU)")


def accelerator_conditions() -> list[tuple[str, Hardware, Assumptions]]:
    df = load_hardware()
    out = []
    for name in df["name"]:
        hw, _ = hardware_from_accelerator(get_accelerator(df, name))
        out.append((f"{name} | default", hw, Assumptions()))
    for name in VARIANT_ACCELERATORS:
        hw, _ = hardware_from_accelerator(get_accelerator(df, name))
        for label, change in VARIANTS.items():
            if label != "default":
                # FP8 doubles the dense FLOP/s (data/hardware.csv: FP8 = 2 x BF16 on these)
                changed = hw._replace(flops=2.0 * hw.flops) if label == "fp8" else hw
                out.append((f"{name} | {label}", changed, assumptions_with(**change)))
    return out


@jax.jit
def _ranked(hw: Hardware, a: Assumptions, xs, g: LaunchGrid):
    constants = _constants(hw, a, g)

    def one(x):
        util, *_ = _plans_at(hw, a, x, g, constants)
        return jax.lax.top_k(util, 16)

    return jax.lax.map(one, xs)


def _rank(hw: Hardware, a: Assumptions, g: LaunchGrid):
    """(utilization, shape index) of the 16 best shapes per budget of :data:`BUDGETS`, then of
    the budgets every 0.005 dex above the last feasible one (the latency wall's edge)."""
    hwj = Hardware(*(jnp.float64(x) for x in hw))
    aj = Assumptions(*(jnp.float64(x) for x in a))
    vals, idx = (np.asarray(v) for v in _ranked(hwj, aj, jnp.asarray(BUDGETS), g))
    feasible = np.flatnonzero(vals[:, 0] > 0.0)
    if feasible.size and feasible[-1] + 1 < BUDGETS.size:
        x = BUDGETS[feasible[-1]] + EDGE_STEPS
        ev, ei = (np.asarray(v) for v in _ranked(hwj, aj, jnp.asarray(x), g))
        vals, idx = np.concatenate([vals, ev]), np.concatenate([idx, ei])
    return vals, idx


def cover(rankings: list[tuple[np.ndarray, np.ndarray]], tolerance: float) -> list[int]:
    """The fewest shapes (greedy set cover) such that at every budget of every condition where
    some plan is feasible, a shortlisted shape reaches ``1 - tolerance`` of the best plan's
    utilization.  Returns sorted grid indices."""
    covers: dict[int, set] = {}
    for c, (vals, idx) in enumerate(rankings):
        for r in np.flatnonzero(vals[:, 0] > 0.0):
            good = vals[r] >= (1.0 - tolerance) * vals[r, 0]
            for j in idx[r][good]:
                covers.setdefault(int(j), set()).add((c, int(r)))
    needed = set().union(*covers.values()) if covers else set()
    chosen: list[int] = []
    while needed:
        best = max(covers, key=lambda j: (len(covers[j] & needed), -j))
        chosen.append(best)
        needed -= covers.pop(best)
    print(f"{len(chosen)} shapes cover every budget within {tolerance:.2%}", file=sys.stderr)
    return sorted(chosen)


def write_module(grid: LaunchGrid, order: list[int], labels: list[str], args) -> None:
    """The shortlist as a Python module: one tuple per shape, how it was chosen in its
    docstring."""
    named = [x for x in labels if " | " in x]
    changes = sorted({x.split(" | ")[1] for x in named} - {"default"})
    counts = {
        "accelerators": sum(x.endswith(" | default") for x in named),
        "changes": len(named) - sum(x.endswith(" | default") for x in named),
        "frontier": sum(x.startswith("frontier ") for x in labels),
        "random": sum(x.startswith("random ") for x in labels),
    }
    text = (
        f"Shortlist of the realistic fast path (:mod:`forecast.model.realistic_fast`): {len(order)}"
        f" of the {np.size(grid.tp):,} launchable shapes of"
        " :func:`forecast.model.realistic.launch_grid`."
    )
    how = (
        "Generated by scripts/realistic_shortlist.py (its docstring says how); do not edit.  The"
        f" fewest shapes that reach {1 - args.tolerance:.1%} of the full grid's best plan at every"
        " feasible budget (10^20-10^40 FLOP every 0.1 dex, and every 0.005 dex before the latency"
        f" wall) of {len(labels)} conditions: the {counts['accelerators']} accelerators of"
        f" data/hardware.csv at the default assumptions; {counts['changes']} one-at-a-time"
        f" changes of the assumptions on the H100 and GB200 NVL72 ({', '.join(changes)});"
        f" {counts['frontier']} frontier accelerators of random draws and years of a published"
        f" forecast; {counts['random']} random accelerators and assumptions (the distribution of"
        " benchmarks/realistic_fast.py, another seed than its own)."
    )
    lines = [
        '"""' + textwrap.fill(text, 96, subsequent_indent=""),
        "",
        textwrap.fill(how, 99),
        "",
        "Row: (tp, pp, chunk_layers, two_d, cp, sequences, virtual_stages, recompute).",
        "",
        "One concept: the shortlist, data only (one row per shape).",
        '"""',
        "",
        "SHAPES: tuple[tuple[float, ...], ...] = (",
    ]
    for j in order:
        row = ", ".join(f"{float(np.asarray(x)[j]):g}" for x in grid)
        lines.append(f"    ({row}),")
    lines.append(")")
    (args.out or SHORTLIST_PATH).write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frontier-draws", type=int, default=24)
    p.add_argument("--seed", type=int, default=2031)
    p.add_argument(
        "--tolerance", type=float, default=0.002, help="a budget is covered within this share"
    )
    p.add_argument("--out", type=Path, default=None, help=f"default {SHORTLIST_PATH.name}")
    p.add_argument("--limit", type=int, default=None, help="only the first N conditions")
    p.add_argument("--raw", type=Path, default=None, help="also keep every ranking here (.npz)")
    p.add_argument(
        "--from-raw",
        type=Path,
        nargs="+",
        default=None,
        help="select from --raw files (their conditions together), rank nothing",
    )
    p.add_argument(
        "--random",
        type=int,
        default=0,
        help="rank these random conditions only (benchmarks/realistic_fast.py's distribution)",
    )
    args = p.parse_args(argv)
    init_jax()
    grid = launch_grid()
    g = LaunchGrid(*(jnp.asarray(x) for x in grid))
    if args.from_raw:
        labels, rankings = [], []
        for path in args.from_raw:
            raw = np.load(path, allow_pickle=False)
            n = len(raw["labels"])
            labels += [str(x) for x in raw["labels"]]
            rankings += [(raw[f"vals{i}"], raw[f"idx{i}"]) for i in range(n)]
    else:
        if args.random:
            conditions = [
                (f"random {i} ({name})", hw, a)
                for i, (name, hw, a) in enumerate(random_conditions(args.random, args.seed))
            ]
        else:
            conditions = accelerator_conditions()
            conditions += frontier_conditions(args.frontier_draws, args.seed)
        conditions = conditions[: args.limit]
        labels, rankings = [c[0] for c in conditions], []
        t0 = time.time()
        for i, (label, hw, a) in enumerate(conditions):
            rankings.append(_rank(hw, a, g))
            print(
                f"[{i + 1}/{len(conditions)}] {label} ({time.time() - t0:.0f} s)", file=sys.stderr
            )
        if args.raw:
            arrays = {"labels": np.array(labels)}
            for i, (v, j) in enumerate(rankings):
                arrays |= {f"vals{i}": v, f"idx{i}": j}
            np.savez_compressed(args.raw, **arrays)
    order = cover(rankings, args.tolerance)
    write_module(grid, order, labels, args)
    print(
        f"wrote {len(order)} of {np.size(grid.tp)} shapes to {args.out or SHORTLIST_PATH}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
