"""Benchmark: repeated NUTS refits compiled once, against a program (or a loop) compiled per refit.

    .venv/bin/python benchmarks/law_refits.py [--rounds 2] [--jobs holdout,runs,frontier]

The scaling laws' hold-out checks and ``wallcast runs --loo`` refit one small law many times with
other rows masked out (:func:`forecast.analyses.law_holdout.run_masked_fit`). Until 2026-12-07
they reused one :class:`numpyro.infer.MCMC` with ``jit_model_args=True``, meant to compile once;
but NumPyro 0.22 wraps its sampling loop's body in a new ``jax.jit`` object on every ``run``, a
new static argument of the loop's program, so every refit traced and compiled the loop again.
Since then the whole NUTS run is one cached ``jax.jit`` program of (key, data, priors, mask)
(``law_holdout._compiled_fit``). This times both, in fresh processes without a persistent
compilation cache (a first run: what CI and a new machine pay), taking turns and swapping order
every round (``before``: a frozen copy of the reused-``MCMC`` code below; ``after``: as shipped):

* ``holdout``: the depth and batch laws' leave-one-source-out check (``holdout_coverage``,
  2 chains x 300 draws after 300 warm-up, as ``scripts/law_holdout.py`` runs it);
* ``runs``: ``wallcast runs --loo``, the run-efficiency law refitted without each published run
  (:func:`forecast.analyses.published_runs.leave_one_run_out`, its defaults: 2 chains x 1,000).
* ``frontier``: the frontier-compute backtest of ``wallcast analyse``
  (:func:`forecast.analyses.frontier_backtest.run_frontier_backtest`, its defaults: four origins,
  2 chains x 500). Its fits had the records as constants of the program (a program per origin);
  since 2026-12-07 they are arguments, padded to 16 rows and centred, so the four origins run one
  program (``frontier_backtest._compiled_frontier_fit``; ``before``: a frozen copy of the old
  ``fit_frontier``). Reports each origin's fitted growth and the pooled coverage and log score.

The two variants run the same sampler on the same keys, but compiled as other programs XLA fuses
and rounds differently (and, for ``frontier``, from other starting points: the centred records put
NUTS's random start near the data's level), and NUTS turns a last-bit difference into another
trajectory (README, "Reproducibility"): the draws differ as another seed's would. So it compares
what the checks report: each law's coverage and mean 80 % interval width (``holdout``), the runs'
coverage and median held-out ratio (``runs``), each origin's growth and the pooled coverage and
log score (``frontier``). Last line per job ``<job>: speedup=<before/after, fastest
each> before_s=<a> after_s=<b> compile_before_s=<c> compile_after_s=<d>``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

ONE_RUN = """
import json, sys, time
from forecast.config.runtime import exclusive, init_jax
init_jax()
import jax, jax.numpy as jnp, jax.monitoring
import numpy as np
from numpyro.infer import MCMC
import forecast.analyses.law_holdout as law_holdout
import forecast.analyses.published_runs as published_runs
from forecast.inference.sampler import RaveledNUTS
if sys.argv[1] == "before":  # the code of a255435: one MCMC reused, jit_model_args=True
    def law_mcmc(model, *, num_chains, num_warmup, num_samples, target_accept_prob):
        return MCMC(
            RaveledNUTS(model, target_accept_prob=target_accept_prob),
            num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
            chain_method="vectorized", progress_bar=False, jit_model_args=True,
        )
    @exclusive
    def run_masked_fit(mcmc, rng_key, data, priors, mask):
        data = law_holdout.LawData(*(jnp.asarray(a) for a in data))
        if mask is None:
            mask = jnp.ones(jnp.shape(data.y), dtype=bool)
        mcmc.run(rng_key, data, priors, jnp.asarray(mask), extra_fields=("diverging",))
        samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
        divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
        return law_holdout.LawFit(samples=samples, divergences=divergences)
    for module in (law_holdout, published_runs):
        module.law_sampler, module.run_masked_fit = law_mcmc, run_masked_fit
    import forecast.analyses.frontier_backtest as fb
    from functools import partial
    from numpyro.diagnostics import split_gelman_rubin
    from forecast.stats.trends import frontier_compute_model
    @exclusive
    def fit_frontier(train, priors, *, chains, warmup, draws, seed):  # the code of c0ebc29
        model = partial(
            frontier_compute_model, train.years, train.log10_flop, train.is_speculative, priors
        )
        mcmc = MCMC(
            RaveledNUTS(model, target_accept_prob=0.9), num_warmup=warmup, num_samples=draws,
            num_chains=chains, chain_method="vectorized", progress_bar=False,
        )
        mcmc.run(jax.random.PRNGKey(seed), extra_fields=("diverging",))
        by_chain = mcmc.get_samples(group_by_chain=True)
        rhat = 1.0
        if chains > 1:
            for name in fb.FRONTIER_SITES:
                if name in by_chain and float(np.ptp(np.asarray(by_chain[name]))) > 0:
                    rhat = max(rhat, float(split_gelman_rubin(np.asarray(by_chain[name]))))
        divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
        return {k: np.asarray(v) for k, v in mcmc.get_samples().items()}, rhat, divergences
    fb.fit_frontier = fit_frontier
compiling = [0.0]
def listen(event, seconds, **kwargs):
    if event.endswith("backend_compile_duration"):
        compiling[0] += seconds
jax.monitoring.register_event_duration_secs_listener(listen)
out = {}
if sys.argv[2] == "holdout":
    from forecast.config import paths
    from forecast.data.evidence import load_model_shapes
    from forecast.priors import load_priors
    from forecast.stats.joint import law_priors_from_prior_set
    from forecast.stats.scaling_laws import batch_law_model, batch_table, depth_law_model, depth_table
    shapes = load_model_shapes()
    law_priors = law_priors_from_prior_set(load_priors(paths.default_priors_path()))
    laws = {
        "depth": (depth_law_model, depth_table(shapes), law_priors.depth),
        "batch": (batch_law_model, batch_table(shapes), law_priors.batch),
    }
    t, c = time.perf_counter(), time.process_time()
    for name, (model, table, priors) in laws.items():
        res = law_holdout.holdout_coverage(
            model, table, jax.random.PRNGKey(2), priors=priors, by="group",
            num_chains=2, num_warmup=300, num_samples=300,
        )
        out[f"{name} coverage"] = res.coverage
        out[f"{name} width_dex"] = float(np.mean(res.upper - res.lower))
        out[f"{name} refits"] = len(set(res.groups))
    wall, cpu = time.perf_counter() - t, time.process_time() - c
elif sys.argv[2] == "frontier":
    from forecast.analyses.frontier_backtest import frontier_backtest_dataset, run_frontier_backtest
    from forecast.config import paths
    from forecast.data.hardware import load_frontier_runs
    from forecast.priors import load_priors
    from forecast.stats.trends import trend_priors_from_prior_set
    priors = trend_priors_from_prior_set(load_priors(paths.default_priors_path()))
    frontier = load_frontier_runs(paths.frontier_runs_path(paths.data_dir()))
    t, c = time.perf_counter(), time.process_time()
    results = run_frontier_backtest(frontier, priors)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    pooled = frontier_backtest_dataset(results).sel(row="pooled")
    out = {f"growth {r.origin}": r.growth_median for r in results}
    out.update({k: float(pooled[k]) for k in ("coverage_50", "coverage_80", "log_score")})
else:
    t, c = time.perf_counter(), time.process_time()
    loo = published_runs.leave_one_run_out()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    summary = published_runs.loo_summary(loo)
    out = {"runs refitted": summary["runs"], "coverage_80": summary["coverage_80"],
           "median_loo_ratio": summary["median_loo_ratio"]}
print(json.dumps({"wall": wall, "cpu": cpu, "compile": compiling[0], "out": out}))
"""


def one_run(variant: str, job: str) -> dict:
    """``job`` in a fresh process without a persistent cache: wall, CPU, compile s and results."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env.update(WALLCAST_JAX_CACHE_DIR="off", JAX_ENABLE_COMPILATION_CACHE="false")
    done = subprocess.run(
        [sys.executable, "-c", ONE_RUN, variant, job], env=env, capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(f"error: the {variant} {job} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument(
        "--jobs", default="holdout,runs,frontier", help="comma-separated: holdout, runs, frontier"
    )
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    jobs = [j for j in args.jobs.split(",") if j]
    if not jobs or set(jobs) - {"holdout", "runs", "frontier"}:
        p.error("--jobs: holdout, runs and/or frontier")
    lines = []
    for job in jobs:
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for r in range(args.rounds):
            for variant in ("before", "after") if r % 2 == 0 else ("after", "before"):
                run = one_run(variant, job)
                runs[variant].append(run)
                results = ", ".join(
                    f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in run["out"].items()
                )
                print(
                    f"{job} round {r + 1} {variant:6s}: {run['wall']:6.1f} s wall,"
                    f" {run['cpu']:6.1f} s CPU, compiling {run['compile']:5.1f} s; {results}",
                    flush=True,
                )
        fastest = {v: min(runs[v], key=lambda run: run["wall"]) for v in runs}
        before, after = fastest["before"], fastest["after"]
        lines.append(
            f"{job}: speedup={before['wall'] / after['wall']:.2f} before_s={before['wall']:.1f}"
            f" after_s={after['wall']:.1f} compile_before_s={before['compile']:.1f}"
            f" compile_after_s={after['compile']:.1f}"
        )
        cpu = {v: np.min([run["cpu"] for run in runs[v]]) for v in runs}
        print(f"{job}: CPU before {cpu['before']:.1f} s, after {cpu['after']:.1f} s", flush=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
