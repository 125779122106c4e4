"""Benchmark: a refit on a warm machine, by which programs the persistent compilation cache keeps.

    .venv/bin/python benchmarks/warm_refit.py [--thresholds 0,0.1,0.5] [--warm-runs 2]

For each threshold (``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``: a program is kept only if it
took at least that long to compile), a new empty cache folder, filled by one fresh process that
fits the joint model to the shipped data (``forecast_job.fit``, 4 x 1,000 draws, seed 3, the gate);
then ``--warm-runs`` rounds of refits in fresh processes that read those caches, the thresholds
taking turns in each round (A, B, A, B: a change of the machine's load hits all of them). The
children get no other JAX cache or XLA setting from the caller's environment. Prints each run's
wall-clock and CPU seconds and the cache's files and summed size; last line ``warm_s_<t>=<s> ...``
(the fastest warm run per threshold) and ``ratio=<slowest/fastest>``.
``forecast.config.paths.JAX_CACHE_MIN_COMPILE_SECONDS`` is the threshold the ``wallcast``
commands use (BENCHMARKS.md section 7). The threshold is wall-clock compile time, so which
programs pass 0.1 or 0.5 s depends on the machine's load; at 0 every program is kept.
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
    """One fit in a fresh process on ``cache`` at ``threshold``: (wall, CPU) seconds."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE")) or k == "XLA_FLAGS")
        and k not in ("JAX_ENABLE_COMPILATION_CACHE", "WALLCAST_JAX_CACHE_DIR")
    }
    env.update(
        JAX_COMPILATION_CACHE_DIR=str(cache), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=threshold
    )
    out = subprocess.run([sys.executable, "-c", ONE_FIT], env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"error: the fit failed (threshold {threshold} s):\n{out.stderr[-3000:]}")
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu)


def report(cache: Path, threshold: str, label: str, wall: float, cpu: float) -> None:
    files = [p for p in cache.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files) / 1e6
    print(
        f"threshold {threshold:>4} s, {label}: {wall:5.1f} s wall, {cpu:5.1f} s CPU; "
        f"cache {len(files)} files, {size:.1f} MB",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--thresholds", default="0,0.1,0.5")
    ap.add_argument("--warm-runs", type=int, default=2)
    args = ap.parse_args()
    if args.warm_runs < 1:
        ap.error("--warm-runs must be at least 1")
    thresholds = args.thresholds.split(",")
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="wallcast-warm-refit-") as folder:
        caches = {t: Path(folder) / f"cache-{i}" for i, t in enumerate(thresholds)}
        for t, cache in caches.items():
            cache.mkdir()
            report(cache, t, "fit filling the cache", *one_fit(cache, t))
        for round_ in range(1, args.warm_runs + 1):
            for t, cache in caches.items():
                wall, cpu = one_fit(cache, t)
                report(cache, t, f"refit {round_} reading it", wall, cpu)
                best[t] = min(best.get(t, float("inf")), wall)
    ratio = max(best.values()) / min(best.values())
    print(" ".join(f"warm_s_{t}={s:.1f}" for t, s in best.items()) + f" ratio={ratio:.2f}")


if __name__ == "__main__":
    main()
