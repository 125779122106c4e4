"""Benchmark: where a cold joint fit's time goes, compiling included, phase by phase.

    .venv/bin/python benchmarks/fit_compile_profile.py [--seed 3]

One ``forecast_job.fit`` of the shipped data and priors at the default 4 chains x 1,000 draws with
the convergence gate, in a fresh process without a persistent compilation cache (the script turns
none on; leave ``JAX_COMPILATION_CACHE_DIR`` unset), so every program compiles, as on a first run
on a machine. JAX's monitoring events (``jax.monitoring``) are added up per phase of
``forecast.inference.fit.fit_joint``: NUTS (``_run_nuts``), the conversions to ArviZ
(``az.from_numpyro``: the gate's and the final one, which traces the model once and computes the
log-likelihood), the posterior predictive and the prior draws (NumPyro's ``Predictive``, run op by
op: every primitive of every shape is a program of its own), the PSIS-LOO checks, and the rest. A
program is charged to the first phase that compiles it (later phases reuse it), so the later
phases' figures are floors. Prints per phase the seconds spent compiling and how many programs,
and the functions that cost most; last line ``fit_seconds=<a> compile_seconds=<b>
nuts_compile_seconds=<c> predictive_compile_seconds=<d>`` (BENCHMARKS.md section 7).
"""

from __future__ import annotations

import argparse
import collections
import time
from contextlib import contextmanager

from forecast.config.runtime import init_jax

_phase = ["other"]
_by: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)


def _listener(event: str, duration: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        entry = _by[(_phase[0], kwargs.get("fun_name", "?"))]
        entry["seconds"] += duration
        entry["programs"] += 1


@contextmanager
def _in_phase(name: str):
    before, _phase[0] = _phase[0], name
    try:
        yield
    finally:
        _phase[0] = before


def _wrap(fn, name: str):
    def wrapped(*args, **kwargs):
        with _in_phase(name):
            return fn(*args, **kwargs)

    return wrapped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    init_jax()
    import jax.monitoring

    import forecast.inference.fit as fit_module
    from forecast.jobs import forecast_job

    jax.monitoring.register_event_duration_secs_listener(_listener)
    base = fit_module.Predictive

    class PhasedPredictive(base):
        def __call__(self, *a, **k):
            name = "posterior predictive" if self.posterior_samples else "prior draws"
            with _in_phase(name):
                return super().__call__(*a, **k)

    fit_module.Predictive = PhasedPredictive
    fit_module._run_nuts = _wrap(fit_module._run_nuts, "NUTS")
    fit_module.loo_checks = _wrap(fit_module.loo_checks, "PSIS-LOO checks")
    fit_module.az.from_numpyro = _wrap(fit_module.az.from_numpyro, "ArviZ conversions")

    inputs = forecast_job.load_inputs(scenarios=[])
    start = time.perf_counter()
    forecast_job.fit(inputs, inputs.priors, chains=4, draws=1000, seed=args.seed, gate=True)
    seconds = time.perf_counter() - start

    phases: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for (phase, _), v in _by.items():
        phases[phase].update(v)
    total = sum(phases.values(), collections.Counter())
    print(
        f"fit {seconds:.1f} s, of it compiling {total['seconds']:.1f} s ({total['programs']} programs)"
    )
    for phase, v in sorted(phases.items(), key=lambda kv: -kv[1]["seconds"]):
        print(f"  {phase:22s} compiling {v['seconds']:5.1f} s in {v['programs']:4d} programs")
    print("functions:")
    for (phase, fun), v in sorted(_by.items(), key=lambda kv: -kv[1]["seconds"])[: args.top]:
        print(f"  {v['seconds']:5.2f} s in {v['programs']:3d}  {fun[:40]:40s} ({phase})")
    print(
        f"fit_seconds={seconds:.1f} compile_seconds={total['seconds']:.1f} "
        f"nuts_compile_seconds={phases['NUTS']['seconds']:.1f} "
        f"predictive_compile_seconds={phases['posterior predictive']['seconds']:.1f}"
    )


if __name__ == "__main__":
    main()
