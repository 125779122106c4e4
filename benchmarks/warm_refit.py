"""Benchmark: a refit on a warm machine, by which programs the persistent compilation cache keeps.

    .venv/bin/python benchmarks/warm_refit.py [--thresholds 0,0.1,0.5] [--warm-runs 1]

For each threshold (``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``: a program is kept only if it
took at least that long to compile), a new empty cache folder, then fresh processes that each fit
the joint model to the shipped data (``forecast_job.fit``, 4 x 1,000 draws, seed 3, the gate), as
a weekly ``wallcast run`` does: the first fills the cache, the next ``--warm-runs`` read it. The
thresholds run one after another, so compare them within one run of this script. Prints each
run's wall-clock and CPU seconds and the cache's entries and size; last line
``warm_s_<t>=<s> ...`` (the fastest warm run per threshold) and ``ratio=<slowest/fastest>``.
``forecast.config.paths.JAX_CACHE_MIN_COMPILE_SECONDS`` is the threshold the ``wallcast``
commands use (BENCHMARKS.md section 7).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ONE_FIT = """
import time
from forecast.config.runtime import init_jax
init_jax()
from forecast.jobs import forecast_job
inputs = forecast_job.load_inputs(scenarios=[])
t, c = time.perf_counter(), time.process_time()
forecast_job.fit(inputs, inputs.priors, chains=4, draws=1000, seed=3, gate=True)
print(f"{time.perf_counter() - t:.2f} {time.process_time() - c:.2f}")
"""


def one_fit(cache: Path, threshold: str) -> tuple[float, float]:
    env = dict(os.environ)
    env.update(
        JAX_COMPILATION_CACHE_DIR=str(cache), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=threshold
    )
    out = subprocess.run(
        [sys.executable, "-c", ONE_FIT], env=env, capture_output=True, text=True, check=True
    )
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--thresholds", default="0,0.1,0.5")
    ap.add_argument("--warm-runs", type=int, default=1)
    args = ap.parse_args()
    best: dict[str, float] = {}
    for threshold in args.thresholds.split(","):
        with tempfile.TemporaryDirectory(prefix="wallcast-warm-refit-") as folder:
            cache = Path(folder)
            for i in range(1 + args.warm_runs):
                wall, cpu = one_fit(cache, threshold)
                files = [p for p in cache.rglob("*") if p.is_file()]
                size = sum(p.stat().st_size for p in files) / 1e6
                kind = "fills the cache" if i == 0 else "reads it"
                print(
                    f"threshold {threshold:>4} s, fit {i + 1} ({kind}): {wall:5.1f} s wall, "
                    f"{cpu:5.1f} s CPU; cache {len(files)} files, {size:.1f} MB",
                    flush=True,
                )
                if i > 0:
                    best[threshold] = min(best.get(threshold, float("inf")), wall)
    ratio = max(best.values()) / min(best.values())
    print(" ".join(f"warm_s_{t}={s:.1f}" for t, s in best.items()) + f" ratio={ratio:.2f}")


if __name__ == "__main__":
    main()
