"""Benchmark: what a cold process spends compiling the wall searches, one program per shape or not.

    .venv/bin/python benchmarks/compile_shapes.py [--repeats 1]

Issue 23 item 3 ("measure first": a cold process spent 7-9 s compiling each wall search, and
callers come in many sizes). Each variant runs in a fresh process with JAX's persistent cache off,
so every program compiles, and makes the calls a forecast, a report and the tests make: the paper
fast path at 3, 6, 11, 192 and 256 draws, the paper full search's curves of 513, 61, 51 and 1
budgets (what ``find_walls`` asks for), the realistic fast path on 16 draws.

* ``old``: the behaviour before issue 23's compile work, restored by patching: a call of n draws
  compiled at n (``padded_size`` returns n), a curve compiled per length (one chunk of its own
  length), the realistic plan model's nine microbatch candidates as nine inlined evaluations;
* ``new``: today's code (16/64/256 draw buckets, 64-budget chunks, one vectorized evaluation).

Prints CPU seconds and the number of compiled shapes of each program per variant; the last line
``old_s=<a> new_s=<b> ratio=<a/b>`` (process CPU of the calls, best of ``--repeats``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, sys, time
import os
os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
from forecast.config.runtime import init_jax
init_jax()
import jax.numpy as jnp
import numpy as np
sys.path.insert(0, "tests")
from support.validation import COMPARISON_PARTS, comparison_draws

import forecast.model.fast as fast
import forecast.model.realistic as realistic
import forecast.model.search as search
from forecast.model.params import Assumptions, Hardware
from forecast.model.realistic_fast import fast_realistic_walls

if sys.argv[1] == "old":
    fast.padded_size = lambda n, chunk: min(n, chunk)

    def best_of_nine(at_microbatches, candidates):
        best = at_microbatches(candidates[0])
        for m in candidates[1:]:
            c = at_microbatches(m)
            better = c[0] > best[0]
            best = tuple(jnp.where(better, new, old) for new, old in zip(c, best, strict=True))
        return best

    realistic._best_of = best_of_nine
    search.CURVE_CHUNK = None  # below: one chunk of the curve's own length

    _chunks = realistic.in_budget_chunks

    def one_chunk(evaluate, log10_flop, chunk=realistic.BUDGET_CHUNK):
        x = np.atleast_1d(np.asarray(log10_flop, dtype=np.float64))
        return _chunks(evaluate, x, x.size if chunk is None else chunk)

    search.in_budget_chunks = one_chunk

hw, a = comparison_draws(256, seed=5)
h100 = Hardware(*COMPARISON_PARTS[0])
start = time.process_time()
for n in (3, 6, 11, 192, 256):
    fast.fast_walls(Hardware(*(v[:n] for v in hw)), Assumptions(*(v[:n] for v in a)))
for n in (513, 61, 51, 1):
    search.utilization_curve(h100, Assumptions(), np.linspace(20.0, 45.6, n))
fast_realistic_walls(Hardware(*(v[:16] for v in hw)), Assumptions(*(v[:16] for v in a)))
cpu = time.process_time() - start
from forecast.model.realistic_fast import _walls_chunk
print(json.dumps({
    "cpu_s": cpu,
    "paper_walls_shapes": fast._walls._cache_size(),
    "curve_shapes": search._curve._cache_size(),
    "realistic_walls_shapes": _walls_chunk._cache_size(),
}))
"""


def run(variant: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, variant], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args(argv)
    best = {}
    for _ in range(args.repeats):
        for variant in ("old", "new"):  # alternately, so both see the same machine
            res = run(variant)
            print(variant, res, flush=True)
            if variant not in best or res["cpu_s"] < best[variant]["cpu_s"]:
                best[variant] = res
    old, new = best["old"]["cpu_s"], best["new"]["cpu_s"]
    print(f"old_s={old:.1f} new_s={new:.1f} ratio={old / new:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
