"""Benchmark: the trend fit's predictive draws vectorized (``parallel=True``) or one sample at a time.

    .venv/bin/python benchmarks/predictive_parallel.py [--rounds 2]

NumPyro's ``Predictive`` without ``parallel`` maps the model over the samples one at a time
(``lax.map``, a scan of batch 1), a program of its own to compile and thousands of sequential
steps to run; with ``parallel=True`` it is one ``vmap``. The joint fit has used ``parallel=True``
since issue 12 (BENCHMARKS.md section 2); the trend fit (:func:`forecast.inference.fit.fit_observations`),
its posterior-predictive and prior-predictive draws (:mod:`forecast.inference.draws`) and the
scaling laws' held-out draws (:func:`forecast.analyses.law_holdout.predictive_draws`) use it since
2026-12-07. This times two jobs on them, in fresh processes without a persistent compilation
cache (a first run: what CI and a new machine pay), the two variants taking turns and swapping
order every round (``before``: ``parallel=False`` forced on every ``Predictive`` of those three
modules, the joint fit's two included, which it does not run; ``after``: as shipped):

* ``backtest``: what ``wallcast analyse`` runs, the hardware backtest
  (:func:`forecast.analyses.backtest.run_backtest` at its defaults: three origins, two distinct
  training sets, 2 chains x 500 draws after 500 warm-up each; the trend fit's and the
  posterior-predictive calls), on the shipped data and baseline priors;
* ``holdout``: the scaling laws' leave-one-source-out check
  (:func:`forecast.analyses.law_holdout.holdout_coverage`, depth and batch laws, 2 chains x 300
  draws, as ``scripts/law_holdout.py`` runs it; the law hold-outs' calls).

(``prior_predictive`` is not timed: only tests call it.) Prints each run's wall clock, CPU and JAX
backend-compile seconds, and per job how many of the compared values (the backtest's median,
interval ends, PIT per held-out observation; the hold-outs' interval ends per row) differ and by
at most how much; last line per job ``<job>: speedup=<before/after, fastest each>
before_s=<a> after_s=<b> compile_before_s=<c> compile_after_s=<d> differing=<k>/<n>
max_abs_diff=<x>``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ONE_RUN = """
import sys, time
from forecast.config.runtime import init_jax
init_jax()
import jax.monitoring
import numpy as np
from numpyro.infer import Predictive
import forecast.analyses.law_holdout as law_holdout
import forecast.inference.draws as draws
import forecast.inference.fit as fit
if sys.argv[1] == "before":
    class OneAtATime(Predictive):
        def __init__(self, *args, **kwargs):
            kwargs["parallel"] = False
            super().__init__(*args, **kwargs)
    fit.Predictive = draws.Predictive = law_holdout.Predictive = OneAtATime
compiling = [0.0]
def listen(event, seconds, **kwargs):
    if event.endswith("backend_compile_duration"):
        compiling[0] += seconds
jax.monitoring.register_event_duration_secs_listener(listen)
from forecast.config import paths
from forecast.priors import load_priors
prior_set = load_priors(paths.default_priors_path())
if sys.argv[3] == "backtest":
    from forecast.analyses import backtest
    from forecast.data.hardware import load_frontier_runs, load_hardware
    from forecast.stats.trends import trend_priors_from_prior_set
    data = paths.data_dir()
    priors = trend_priors_from_prior_set(prior_set)
    hardware = load_hardware(paths.hardware_path(data))
    frontier = load_frontier_runs(paths.frontier_runs_path(data))
    t, c = time.perf_counter(), time.process_time()
    results = backtest.run_backtest(hardware, frontier, priors)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    fields = ("median", "lower", "upper", "pit")  # the ones the predictive draws give
    out = {f"{r.origin}-{k}": getattr(r, k) for r in results for k in fields}
else:
    from forecast.data.evidence import load_model_shapes
    from forecast.stats.joint import law_priors_from_prior_set
    from forecast.stats.scaling_laws import batch_law_model, batch_table, depth_law_model, depth_table
    shapes = load_model_shapes()
    law_priors = law_priors_from_prior_set(prior_set)
    laws = {
        "depth": (depth_law_model, depth_table(shapes), law_priors.depth),
        "batch": (batch_law_model, batch_table(shapes), law_priors.batch),
    }
    t, c = time.perf_counter(), time.process_time()
    out = {}
    for name, (model, table, priors) in laws.items():
        res = law_holdout.holdout_coverage(
            model, table, jax.random.PRNGKey(2), priors=priors, by="group",
            num_chains=2, num_warmup=300, num_samples=300,
        )
        out[f"{name}-lower"], out[f"{name}-upper"] = res.lower, res.upper
    wall, cpu = time.perf_counter() - t, time.process_time() - c
np.savez(sys.argv[2], **out)
print(f"{wall:.2f} {cpu:.2f} {compiling[0]:.2f}")
"""


def one_run(variant: str, job: str, out: Path) -> tuple[float, float, float]:
    """``job`` in a fresh process without a persistent cache: (wall, CPU, compile) s."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env.update(WALLCAST_JAX_CACHE_DIR="off", JAX_ENABLE_COMPILATION_CACHE="false")
    cmd = [sys.executable, "-c", ONE_RUN, variant, str(out), job]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"error: the {variant} {job} run failed:\n{done.stderr[-3000:]}")
    wall, cpu, compiling = (float(v) for v in done.stdout.split()[-3:])
    return wall, cpu, compiling


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--jobs", default="backtest,holdout", help="comma-separated: backtest, holdout")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    jobs = [j for j in args.jobs.split(",") if j]
    if not jobs or set(jobs) - {"backtest", "holdout"}:
        p.error("--jobs: backtest and/or holdout")
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for job in jobs:
            runs: dict[str, list[tuple[float, float, float]]] = {"before": [], "after": []}
            files = {v: Path(tmp) / f"{job}-{v}.npz" for v in runs}
            for r in range(args.rounds):
                for variant in ("before", "after") if r % 2 == 0 else ("after", "before"):
                    wall, cpu, compiling = one_run(variant, job, files[variant])
                    runs[variant].append((wall, cpu, compiling))
                    print(
                        f"{job} round {r + 1} {variant:6s}: {wall:6.1f} s wall, {cpu:6.1f} s CPU,"
                        f" compiling {compiling:5.1f} s",
                        flush=True,
                    )
            before, after = np.load(files["before"]), np.load(files["after"])
            differing = sum(int(np.sum(before[k] != after[k])) for k in before.files)
            values = sum(before[k].size for k in before.files)
            diff = max(
                (
                    float(np.max(np.abs(before[k] - after[k])))
                    for k in before.files
                    if before[k].size
                ),
                default=0.0,
            )
            best = {v: min(runs[v]) for v in runs}
            lines.append(
                f"{job}: speedup={best['before'][0] / best['after'][0]:.2f} "
                f"before_s={best['before'][0]:.1f} after_s={best['after'][0]:.1f} "
                f"compile_before_s={best['before'][2]:.1f} compile_after_s={best['after'][2]:.1f} "
                f"differing={differing}/{values} max_abs_diff={diff:.2g}"
            )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
