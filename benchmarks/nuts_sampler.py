"""Two ways of running NUTS on the joint model, side by side in one process.

    .venv/bin/python benchmarks/nuts_sampler.py [--compare samplers|chains] [--chains 4]
        [--draws 1000] [--warmup 2000] [--repeats 2] [--seed 3] [--host-devices N]

The joint model of ``forecast.inference.fit.fit_joint`` on the shipped data and priors (the fit
``wallcast run`` makes). ``--compare samplers``: ``numpyro.infer.NUTS`` against
``forecast.inference.sampler.RaveledNUTS``, chains vectorized. ``--compare chains``:
``RaveledNUTS`` with the chains vectorized (in lock step) against unbatched
(``forecast.inference.sampler.unbatched_chains``, the fits' default), and NumPyro's
``"parallel"`` (a chain per host device) when ``--host-devices`` gives at least one device per
chain. Variants run alternately, ``--repeats`` times each on one ``MCMC`` object per variant: the
first run of each includes its compilation (the JAX persistent cache off), the later ones reuse
the compiled program (the sampling alone, same key, same draws), except the unbatched
chains, which compile again in every run (a new one-chain function each time, as every fit
makes: JAX's persistent cache, off here, is what serves a later fit). Prints, per run, wall and CPU
seconds, mean leapfrog steps per draw and ms per leapfrog step (all chains together); then the
10/50/90 % of a few fitted parameters from the first two variants' last runs (the same
posterior, other trajectories); the last line ``speedup=<warm ratio> cold_speedup=<first-run
ratio>`` of the first variant's time over the second's.
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--compare", choices=("samplers", "chains"), default="samplers")
    parser.add_argument("--host-devices", type=int, default=0)
    args = parser.parse_args()
    if args.host_devices:  # before JAX initialises its backend
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "")
            + f" --xla_force_host_platform_device_count={args.host_devices}"
        )

    import jax
    import numpy as np
    from numpyro.infer import MCMC, NUTS

    from forecast.config.runtime import init_jax
    from forecast.inference.fit import (
        TARGET_ACCEPT_PROB,
        joint_data,
        joint_model,
        law_priors_from_prior_set,
        resolve_intercepts,
        trend_priors_from_prior_set,
    )
    from forecast.inference.run_predictions import predicted_runs
    from forecast.inference.sampler import UNBATCHED, RaveledNUTS, mcmc_chain_method
    from forecast.jobs import forecast_job

    init_jax()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    inputs = forecast_job.load_inputs(scenarios=[])
    predicted = predicted_runs(inputs.training_runs, inputs.hardware)
    data, _ = joint_data(
        inputs.hardware,
        inputs.frontier_runs,
        inputs.model_shapes,
        inputs.scaleup_domains,
        predicted,
    )
    trend_priors = resolve_intercepts(
        trend_priors_from_prior_set(inputs.priors),
        data.hardware.log10_values,
        data.hardware.metric_index,
    )
    model = partial(joint_model, data, trend_priors, law_priors_from_prior_set(inputs.priors))
    if args.compare == "samplers":
        variants = {"NUTS": (NUTS, "vectorized"), "RaveledNUTS": (RaveledNUTS, "vectorized")}
    else:
        variants = {"vectorized": (RaveledNUTS, "vectorized"), UNBATCHED: (RaveledNUTS, UNBATCHED)}
        if jax.device_count() >= args.chains:
            variants["parallel"] = (RaveledNUTS, "parallel")
    print(f"devices: {jax.device_count()}; variants: {', '.join(variants)}")
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    last = {}
    samplers = {
        name: MCMC(
            kernel_class(model, target_accept_prob=TARGET_ACCEPT_PROB),
            num_warmup=args.warmup,
            num_samples=args.draws,
            num_chains=args.chains,
            chain_method=mcmc_chain_method(method),
            progress_bar=False,
        )
        for name, (kernel_class, method) in variants.items()
    }
    for repeat in range(args.repeats):
        for name, mcmc in samplers.items():
            wall, cpu = time.perf_counter(), time.process_time()
            mcmc.run(jax.random.PRNGKey(args.seed), extra_fields=("num_steps",))
            samples = jax.block_until_ready(mcmc.get_samples())
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            steps = np.asarray(mcmc.get_extra_fields()["num_steps"], dtype=float)
            per_step = wall / ((args.warmup + args.draws) * steps.mean()) * 1e3
            seconds[name].append(wall)
            last[name] = samples
            print(
                f"run {repeat + 1} {name:12s} wall {wall:6.1f} s  cpu {cpu:6.1f} s  "
                f"steps/draw {steps.mean():5.1f}  {per_step:.3f} ms a leapfrog step"
                + ("  (compilation included)" if repeat == 0 else "")
            )
    first, second = list(variants)[:2]
    for site in ("frontier_slope", "batch_shortfall_dex", "layer_exponent"):
        if site not in last[first]:
            continue
        q = {n: np.quantile(np.asarray(s[site]).ravel(), [0.1, 0.5, 0.9]) for n, s in last.items()}
        print(f"{site}: " + ", ".join(f"{n} {' / '.join(f'{v:.4g}' for v in q[n])}" for n in q))
    warm = min(seconds[first][1:] or seconds[first]) / min(seconds[second][1:] or seconds[second])
    cold = seconds[first][0] / seconds[second][0]
    print(f"speedup={warm:.2f} cold_speedup={cold:.2f}")


if __name__ == "__main__":
    main()
