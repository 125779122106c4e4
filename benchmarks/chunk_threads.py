"""Benchmark: a single search with its chunks on borrowed helper threads against one thread.

    .venv/bin/python benchmarks/chunk_threads.py [--draws 1024] [--realistic-draws 128]
        [--forecast outputs] [--rounds 2]

``forecast.model.fast.in_draw_chunks`` runs a search's compiled chunks on the helper threads it
can borrow (``forecast.config.runtime.chunk_helpers``: ``WALLCAST_CHUNK_THREADS`` - 1 for the
process, default the usable CPUs, at most 4). Each setting below is timed with
``WALLCAST_CHUNK_THREADS=1`` (one thread, as shipped before 2026-12-07) and unset (the default),
alternately, ``--rounds`` times, after one untimed run of each (compiling); the fastest of each:

(a) in this process: ``fast_walls`` (the paper regime) on ``--draws`` random draws and
    ``fast_realistic_walls`` on ``--realistic-draws``; the walls must be identical;
(b) with ``--forecast`` (a published forecast file or folder): the commands that run one search
    each, in fresh processes sharing one JAX cache folder: ``wallcast sensitivity`` (the Sobol
    run of ``wallcast analyse``), ``wallcast plan --year 2030`` (the best launchable plan per
    posterior draw) and ``wallcast requirements --year 2030`` (one property at a time, each a
    search over the draws); their JSON output must be identical; and ``wallcast analyse
    --no-report`` (the Sobol run beside the two backtests' refits, as ``make run`` runs it) on a
    copy of the forecast file per run, timed only.

Prints wall-clock and CPU seconds of each; last line ``<name>_speedup=<one thread / default> ...
identical=<bool>``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SETTINGS = {"one thread": "1", "default": None}


def _set(threads: str | None) -> None:
    if threads is None:
        os.environ.pop("WALLCAST_CHUNK_THREADS", None)
    else:
        os.environ["WALLCAST_CHUNK_THREADS"] = threads


def in_process(name: str, search, rounds: int) -> tuple[dict[str, float], bool]:
    """Fastest wall clock of ``search()`` per setting, and whether the results are identical."""
    results, best = {}, {}
    for threads in SETTINGS.values():  # compile, untimed
        _set(threads)
        search()
    for _ in range(rounds):
        for label, threads in SETTINGS.items():
            _set(threads)
            t0, c0 = time.perf_counter(), time.process_time()
            results[label] = search()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            best[label] = min(best.get(label, np.inf), wall)
            print(f"{name}, {label}: {wall:6.2f} s wall, {cpu:6.2f} s CPU", flush=True)
    _set(None)
    one, default = results.values()
    identical = all(np.array_equal(x, y, equal_nan=True) for x, y in zip(one, default, strict=True))
    return best, identical


def command(
    name: str, args: list[str], rounds: int, cache: Path, fresh_copy=None
) -> tuple[dict[str, float], bool]:
    """Fastest wall clock of ``wallcast ARGS`` per setting (fresh processes), and whether the
    JSON outputs are identical (``fresh_copy``: a function returning the arguments to run, called
    before every run; the outputs are not compared)."""
    outputs, best = {}, {}

    def once(label: str, threads: str | None) -> tuple[float, float, str]:
        cmd = args if fresh_copy is None else fresh_copy()
        env = {k: v for k, v in os.environ.items() if k != "WALLCAST_CHUNK_THREADS"}
        env.update(WALLCAST_JAX_CACHE_DIR=str(cache))
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        if threads is not None:
            env["WALLCAST_CHUNK_THREADS"] = threads
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "forecast", *cmd], env=env, capture_output=True, text=True
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if out.returncode:
            sys.exit(f"error: wallcast {' '.join(cmd)} failed ({label}):\n{out.stderr[-3000:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu, out.stdout

    for label, threads in SETTINGS.items():  # fill the cache, untimed
        once(label, threads)
    for _ in range(rounds):
        for label, threads in SETTINGS.items():
            wall, cpu, outputs[label] = once(label, threads)
            best[label] = min(best.get(label, np.inf), wall)
            print(f"{name}, {label}: {wall:6.2f} s wall, {cpu:6.2f} s CPU", flush=True)
    if fresh_copy is not None:
        return best, True
    one, default = (json.loads(o) for o in outputs.values())
    return best, one == default


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=1024)
    ap.add_argument("--realistic-draws", type=int, default=128)
    ap.add_argument("--forecast", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")

    sys.path.insert(0, str(REPO / "tests"))
    from forecast.config.runtime import chunk_threads, init_jax, usable_cpus

    init_jax()
    from support.validation import comparison_draws

    from forecast.model.fast import fast_walls
    from forecast.model.realistic_fast import fast_realistic_walls

    _set(None)
    print(f"usable CPUs {usable_cpus()}, default chunk threads {chunk_threads()}")
    hw, a = comparison_draws(args.draws, 2030)
    rhw, ra = comparison_draws(args.realistic_draws, 2031)
    speedups, identical = {}, True
    searches = {
        "paper_walls": lambda: fast_walls(hw, a, small_scale=True),
        "realistic_walls": lambda: fast_realistic_walls(rhw, ra),
    }
    for name, search in searches.items():
        best, same = in_process(name, search, args.rounds)
        speedups[name] = best["one thread"] / best["default"]
        identical &= same
    if args.forecast is not None:
        from forecast.store.reader import latest_forecast_path

        path = args.forecast.resolve()
        forecast = str(latest_forecast_path(path) if path.is_dir() else path)
        commands = {
            "sensitivity": ["sensitivity", "--forecast", forecast, "--json"],
            "plan": ["plan", "--year", "2030", "--forecast", forecast, "--json"],
            "requirements": ["requirements", "--year", "2030", "--forecast", forecast, "--json"],
        }
        with tempfile.TemporaryDirectory(prefix="wallcast-chunk-threads-") as folder:
            for name, cmd in commands.items():
                best, same = command(name, cmd, args.rounds, Path(folder) / "jax")
                speedups[name] = best["one thread"] / best["default"]
                identical &= same
            copies = iter(range(1_000))

            def analyse_copy() -> list[str]:  # analyse writes its groups into the file
                target = Path(folder) / f"copy-{next(copies)}" / "forecast.nc"
                target.parent.mkdir()
                shutil.copy(forecast, target)
                return ["analyse", "--forecast", str(target), "--no-report"]

            best, _ = command("analyse", [], args.rounds, Path(folder) / "jax", analyse_copy)
            speedups["analyse"] = best["one thread"] / best["default"]
    print(" ".join(f"{k}_speedup={v:.2f}" for k, v in speedups.items()), f"identical={identical}")


if __name__ == "__main__":
    main()
