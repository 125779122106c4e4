"""NUTS runs of the joint model and of the trend model, each converted to an ArviZ DataTree.

* :func:`fit_observations`: NUTS on :func:`forecast.stats.trends.trend_model` alone, for
  prepared hardware and frontier observations, with posterior predictive draws.
* :func:`fit_joint`: NUTS on :func:`forecast.stats.joint.joint_model` (trends, frontier compute
  and the scaling laws in one program), with prior draws, posterior predictive draws and the
  PSIS-LOO checks of every likelihood; no convergence gate.
* :func:`fit`: the joint model's fit for an :class:`~forecast.data.inputs.Inputs` and a
  :class:`~forecast.priors.PriorSet`, gated on convergence
  (:func:`forecast.inference.gate.check_convergence`); :func:`fit_key` says which prior sets share
  one fit.

The models themselves are pure and live in :mod:`forecast.stats`. Everything here takes an
explicit ``jax.random.PRNGKey`` (or a seed); the same key gives bit-identical posterior arrays,
and each DataTree's ``attrs`` record the priors, the model configuration, a data hash, the key and
the code version.

JAX runs in float64, set by :func:`forecast.config.runtime.init_jax` (every fit calls it first),
so that log10 values around 25 and the summed log density do not carry float32's ~7-digit
rounding. Chains run ``"unbatched"`` by default (:func:`forecast.inference.sampler.unbatched_chains`:
each chain a run of its own, one after another, no chain waiting in lock step for the others'
trees; the joint fit's time is measured in BENCHMARKS.md, section 2). NumPyro's
``"vectorized"``, ``"sequential"`` and ``"parallel"`` are still accepted (``"vectorized"`` is
the one to pass on a GPU, where four chains in lock step cost little more than one, and where
a progress bar is wanted: NumPyro shows none for a chain method of its own); ``init_jax`` can set
``numpyro.set_host_device_count`` for ``"parallel"``, which only works before JAX first
initialises its backend. A chain that cannot start raises
:class:`~forecast.inference.sampler.SamplerStartError`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import arviz as az
import jax
import numpy as np
import xarray as xr
from numpyro.infer import MCMC, Predictive

from forecast import __version__
from forecast.config.platform import platform_json
from forecast.config.runtime import exclusive, init_jax
from forecast.config.settings import DEFAULT_DRAWS, default_warmup
from forecast.data.evidence import load_model_shapes, load_scaleup_domains
from forecast.data.inputs import Inputs
from forecast.data.training_runs import load_training_runs
from forecast.inference.draws import _FIXED_SLOPE_DIMS, PREDICTIVE_SITES
from forecast.inference.gate import (
    ConvergenceError,
    check_convergence,
    convergence_report,
    near_miss,
)
from forecast.inference.loo import loo_checks
from forecast.inference.run_predictions import predicted_runs
from forecast.inference.sampler import (
    UNBATCHED,
    RaveledNUTS,
    mcmc_chain_method,
    require_finite_start,
)
from forecast.priors import PriorSet
from forecast.priors.registry import FITTED_INPUTS
from forecast.stats.joint import (
    LAW_OBSERVED_SITES,
    LAWS,
    JointData,
    LawPriors,
    joint_data,
    joint_model,
    law_prior_record,
    law_priors_from_prior_set,
)
from forecast.stats.scaling_laws import (
    LawTable,
)
from forecast.stats.trends import (
    METRICS,
    FrontierObservations,
    HardwareObservations,
    TrendPriors,
    resolve_intercepts,
    trend_model,
    trend_priors_from_prior_set,
)

TARGET_ACCEPT_PROB = 0.95
"""NUTS's target acceptance in warm-up: smaller steps than NumPyro's default 0.8. The batch law's
posterior has a tail (small shortfall scale, larger noise, lower ceiling) that a chain at 0.9
entered and left slowly about once in twenty default runs, enough for the convergence gate to
refuse the fit (R-hat 1.016, bulk ESS 298 of ``batch_shortfall_dex``); at 0.95 the same seed gives
R-hat 1.004 and ESS 1,388 (BENCHMARKS.md, "Convergence gate margin")."""


def _law_constant_data(tables: Mapping[str, LawTable]) -> xr.Dataset:
    out = {}
    coords = {}
    for law, table in tables.items():
        dim = f"{LAW_OBSERVED_SITES[law]}_row"
        coords[dim] = list(table.names)
        out[f"{law}_x"] = (dim, np.asarray(table.data.x, dtype=float))
        out[f"{law}_moe"] = (dim, np.asarray(table.data.moe, dtype=float))
        out[f"{law}_source"] = (dim, np.asarray(table.groups, dtype=str))
    return xr.Dataset(out, coords=coords)


def _prior_group(
    draws: Mapping[str, np.ndarray], posterior: xr.Dataset, chains: int, n_draws: int
) -> xr.Dataset:
    """Prior draws shaped like the posterior: same variables, dims and coords."""
    out = {}
    for name, var in posterior.data_vars.items():
        if name not in draws:
            continue
        values = np.asarray(draws[name], dtype=float)
        values = np.broadcast_to(values, (chains * n_draws, *var.shape[2:]))
        out[name] = (var.dims, values.reshape(chains, n_draws, *var.shape[2:]))
    coords = {d: posterior[d].values for d in posterior.dims}
    return xr.Dataset(out, coords=coords)


def _run_nuts(kernel: RaveledNUTS, rng_key: jax.Array, **settings: Any) -> MCMC:
    """One NUTS run of ``kernel`` (``settings``: :class:`numpyro.infer.MCMC`'s keywords; the
    chain method by its name, :func:`forecast.inference.sampler.mcmc_chain_method`)."""
    settings["chain_method"] = mcmc_chain_method(settings["chain_method"])
    mcmc = MCMC(kernel, **settings)
    mcmc.run(rng_key)
    require_finite_start(mcmc)  # unbatched chains start inside a compiled program: NumPyro can't
    return mcmc


@exclusive
def fit_joint(
    data: JointData,
    tables: Mapping[str, LawTable],
    trend_priors: TrendPriors,
    law_priors: LawPriors,
    *,
    rng_key: jax.Array,
    num_chains: int = 4,
    num_warmup: int = DEFAULT_DRAWS,
    num_samples: int = DEFAULT_DRAWS,
    chain_method: str = UNBATCHED,
    target_accept_prob: float = TARGET_ACCEPT_PROB,
    progress_bar: bool = False,
    law_prior_source: Mapping[str, Any] | None = None,
    gate: Callable[[xr.DataTree], None] | None = None,
    extend: bool = True,
) -> xr.DataTree:
    """NUTS on :func:`joint_model`; one DataTree. ``gate`` (e.g.
    :func:`~forecast.inference.gate.check_convergence`) is called on the posterior and sample
    statistics as soon as NUTS is done, before the predictive and prior draws and the PSIS-LOO
    checks, so a refused fit fails without paying for them (None: no gate; the caller may apply
    one to the returned tree). ``extend``: a narrow refusal (:func:`~forecast.inference.gate.near_miss`:
    no divergence, R-hat <= 1.02, bulk ESS >= half its minimum) runs the same chains twice as
    long once and gates that run (recorded in the attribute ``gate_extension``); a wide one, or a
    second refusal, raises.

    Groups: ``posterior`` (trend and law parameters), ``sample_stats``, ``log_likelihood``,
    ``posterior_predictive`` and ``observed_data`` (hardware, frontier and the four laws'
    sites), ``constant_data``, ``prior`` (the posterior's variables drawn from the joint
    priors, NumPyro ``Predictive`` without data, shaped (chain, draw) like the posterior) and
    ``predictive_checks`` (PSIS-LOO coverage of every likelihood, :func:`forecast.inference.loo.loo_checks`).
    ``attrs``: as :func:`forecast.inference.fit.fit_observations` (``priors`` holds the trend priors,
    so :func:`forecast.inference.draws.posterior_predictive` works), plus ``law_rows`` (JSON: rows per
    law), ``law_tables`` (table and selection per law), ``law_priors``, ``fit_seconds`` and
    ``platform`` (:func:`forecast.config.platform.platform_json`: where NUTS ran).
    """
    init_jax()
    trend_priors = resolve_intercepts(
        trend_priors, data.hardware.log10_values, data.hardware.metric_index
    )
    mcmc_key, ppc_key, prior_key = jax.random.split(rng_key, 3)
    model = partial(joint_model, data, trend_priors, law_priors)
    start = time.perf_counter()
    nuts_seconds = 0.0

    def nuts(samples: int) -> MCMC:
        nonlocal nuts_seconds
        t0 = time.perf_counter()
        # a kernel of its own per run: NumPyro's per-site kernel is not re-initialisable
        mcmc = _run_nuts(
            RaveledNUTS(model, target_accept_prob=target_accept_prob),
            mcmc_key,
            num_warmup=num_warmup,
            num_samples=samples,
            num_chains=num_chains,
            chain_method=chain_method,
            progress_bar=progress_bar,
        )
        nuts_seconds += time.perf_counter() - t0
        return mcmc

    requested_samples = num_samples
    mcmc = nuts(num_samples)
    coords = {"metric": list(METRICS), "obs": data.hardware.names, "run": data.frontier.names}
    coords.update({f"{LAW_OBSERVED_SITES[law]}_row": list(t.names) for law, t in tables.items()})
    # explicit dims for every plated site (given dims, ArviZ infers none from the plates)
    dims = {
        "slope": ["metric"],
        "slope_sampled": ["metric"],
        "intercept": ["metric"],
        "sigma": ["metric"],
        "log10_value": ["obs"],
        "log10_compute": ["run"],
    }
    dims.update({site: [f"{site}_row"] for site in LAW_OBSERVED_SITES.values()})
    extension: dict[str, Any] = {}
    if gate is not None:
        try:
            gate(az.from_numpyro(mcmc, log_likelihood=False, coords=coords, dims=dims))
        except ConvergenceError as refusal:
            if not (extend and near_miss(refusal)):
                raise
            # The same key, warm-up and chains, twice the draws: the first half of each chain
            # is the refused run's (NUTS's steps do not depend on the run's length), so this is
            # the refused run continued. A second refusal is final.
            first_seconds = nuts_seconds
            num_samples = 2 * num_samples
            mcmc = nuts(num_samples)
            tree = az.from_numpyro(mcmc, log_likelihood=False, coords=coords, dims=dims)
            try:
                gate(tree)
            except ConvergenceError as second:
                raise ConvergenceError(  # one message, one hint (not the second's own)
                    second.failures,
                    chains=second.chains or num_chains,
                    draws=second.draws or num_samples,
                    extended_from=requested_samples,
                    first_refusal=refusal.summary,
                ) from None
            report = convergence_report(tree)
            extension = {
                "requested_samples": requested_samples,
                "refusal": refusal.summary,
                "samples": num_samples,
                "r_hat": list(report["r_hat"]),
                "ess_bulk": list(report["ess_bulk"]),
                "nuts_seconds": [first_seconds, nuts_seconds - first_seconds],
            }
    unobserved = partial(joint_model, data, trend_priors, law_priors, observed=False)
    predictive_sites = (*PREDICTIVE_SITES, *LAW_OBSERVED_SITES.values())
    predictive = Predictive(unobserved, posterior_samples=mcmc.get_samples(), parallel=True)(
        ppc_key
    )
    predictive = {k: np.asarray(v) for k, v in predictive.items() if k in predictive_sites}
    dt = az.from_numpyro(
        mcmc,
        posterior_predictive=predictive,
        log_likelihood=True,
        coords=coords,
        dims=dims,
    )
    prior_draws = Predictive(unobserved, num_samples=num_chains * num_samples, parallel=True)(
        prior_key
    )
    posterior = dt["posterior"].to_dataset()
    dt["prior"] = _prior_group(
        {k: np.asarray(v) for k, v in prior_draws.items()}, posterior, num_chains, num_samples
    )
    dt["constant_data"] = xr.merge(
        [_constant_data(data.hardware, data.frontier), _law_constant_data(tables)]
    )

    dt["predictive_checks"] = loo_checks(dt)
    elapsed = time.perf_counter() - start

    dt.attrs.update(
        {
            "model": "forecast.stats.joint.joint_model",
            "priors": json.dumps(trend_priors.to_dict()),
            "law_priors": json.dumps(law_prior_source or {}),
            "law_rows": json.dumps({law: len(t) for law, t in tables.items()}),
            "law_tables": json.dumps(
                {law: {"table": t.table, "selection": t.selection} for law, t in tables.items()}
            ),
            "model_config": json.dumps(
                {
                    "num_chains": num_chains,
                    "num_warmup": num_warmup,
                    "num_samples": num_samples,
                    "chain_method": chain_method,
                    "target_accept_prob": target_accept_prob,
                    "sampler": _sampler_name(mcmc.sampler),
                }
            ),
            "data_hash": _data_hash(data.hardware, data.frontier),
            "law_data_hash": _law_hash(tables),
            "rng_key": json.dumps(np.asarray(jax.random.key_data(rng_key)).tolist()),
            "code_version": __version__,
            # a run the gate refused narrowly and that passed twice as long: the refusal, the
            # passing run's worst R-hat and bulk ESS, the two runs' NUTS seconds (empty: none)
            "gate_extension": json.dumps(extension),
            "nuts_seconds": float(nuts_seconds),
            "fit_seconds": float(elapsed),
            # the CPU and builds NUTS ran on: its draws are bitwise reproducible only there
            "platform": platform_json(),
        }
    )
    return dt


def _law_hash(tables: Mapping[str, LawTable]) -> str:

    digest = hashlib.sha256()
    for law in LAWS:
        for array in tables[law].data:
            digest.update(np.ascontiguousarray(np.asarray(array, dtype=float)).tobytes())
    return digest.hexdigest()


def _data_hash(hardware: HardwareObservations, frontier: FrontierObservations) -> str:
    digest = hashlib.sha256()
    for array in (*hardware, *frontier):
        arr = np.asarray(array)
        if arr.dtype.kind in "OUS":
            digest.update("\x1f".join(map(str, arr.tolist())).encode())
        else:
            digest.update(np.ascontiguousarray(arr, dtype=float).tobytes())
    return digest.hexdigest()


def _constant_data(hardware: HardwareObservations, frontier: FrontierObservations) -> xr.Dataset:
    return xr.Dataset(
        {
            "hardware_year": ("obs", np.asarray(hardware.years, dtype=float)),
            "hardware_metric_index": ("obs", np.asarray(hardware.metric_index, dtype=np.int64)),
            "frontier_year": ("run", np.asarray(frontier.years, dtype=float)),
            "frontier_is_speculative": ("run", np.asarray(frontier.is_speculative, dtype=bool)),
        },
        coords={"obs": np.asarray(hardware.names), "run": np.asarray(frontier.names)},
    )


@exclusive
def fit_observations(
    hardware: HardwareObservations,
    frontier: FrontierObservations,
    priors: TrendPriors,
    *,
    rng_key: jax.Array,
    num_chains: int = 4,
    num_warmup: int = DEFAULT_DRAWS,
    num_samples: int = DEFAULT_DRAWS,
    chain_method: str = UNBATCHED,
    target_accept_prob: float = 0.9,
    progress_bar: bool = False,
) -> xr.DataTree:
    """Fit :func:`forecast.stats.trends.trend_model` to prepared observations.

    Returns
    -------
    xarray.DataTree
        Groups ``posterior``, ``sample_stats``, ``log_likelihood``, ``posterior_predictive``,
        ``observed_data`` and ``constant_data``; dims ``metric`` (named by
        :data:`forecast.stats.trends.METRICS`), ``obs`` ("accelerator|metric") and ``run`` (model name).
        ``attrs`` hold the data-resolved priors, model config, data hash, PRNG key, code version
        and the wall time of sampling plus conversion (``fit_seconds``).
    """
    init_jax()
    if len(hardware.years) == 0 or len(frontier.years) == 0:
        raise ValueError(
            f"nothing to fit: {len(hardware.years)} hardware observations, "
            f"{len(frontier.years)} frontier runs"
        )
    priors = resolve_intercepts(priors, hardware.log10_values, hardware.metric_index)
    mcmc_key, ppc_key = jax.random.split(rng_key)

    start = time.perf_counter()
    kernel = RaveledNUTS(
        partial(trend_model, hardware, frontier, priors), target_accept_prob=target_accept_prob
    )
    mcmc = _run_nuts(
        kernel,
        mcmc_key,
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        chain_method=chain_method,
        progress_bar=progress_bar,
    )
    samples = mcmc.get_samples()
    predictive = Predictive(
        partial(trend_model, hardware, frontier, priors, observed=False),
        posterior_samples=samples,
        parallel=True,
    )(ppc_key)
    predictive = {k: np.asarray(v) for k, v in predictive.items() if k in PREDICTIVE_SITES}
    dt = az.from_numpyro(
        mcmc,
        posterior_predictive=predictive,
        log_likelihood=True,
        coords={"metric": list(METRICS), "obs": hardware.names, "run": frontier.names},
        dims=_FIXED_SLOPE_DIMS if any(priors.fixed_slopes) else None,
    )
    elapsed = time.perf_counter() - start

    dt["constant_data"] = _constant_data(hardware, frontier)

    dt.attrs.update(
        {
            "model": "forecast.stats.trends.trend_model",
            "priors": json.dumps(priors.to_dict()),
            "model_config": json.dumps(
                {
                    "num_chains": num_chains,
                    "num_warmup": num_warmup,
                    "num_samples": num_samples,
                    "chain_method": chain_method,
                    "target_accept_prob": target_accept_prob,
                    "sampler": _sampler_name(kernel),
                }
            ),
            "data_hash": _data_hash(hardware, frontier),
            "rng_key": json.dumps(np.asarray(jax.random.key_data(rng_key)).tolist()),
            "code_version": __version__,
            "fit_seconds": float(elapsed),
        }
    )
    return dt


def _sampler_name(kernel: RaveledNUTS) -> str:
    """What ran: NUTS on the raveled sites or, where NumPyro lacked what that needs, per site."""
    return "NUTS, sites raveled" if kernel.raveled else "NUTS, per site"


def fit_key(prior_set: PriorSet) -> str:
    """Canonical JSON of every prior the fit of ``prior_set`` depends on: the trend priors (a
    scenario may change them) and the base file's priors of the fitted law parameters (a scenario
    that sets a fitted key changes the propagation, not the fit). Scenarios with equal keys share
    one fit."""
    base = prior_set.base or prior_set
    laws = {k: {"dist": base[k].dist, "params": dict(base[k].params)} for k in FITTED_INPUTS}
    return json.dumps(
        {"trends": trend_priors_from_prior_set(prior_set).to_dict(), "laws": laws},
        sort_keys=True,
    )


def fit(
    inputs: Inputs,
    prior_set: PriorSet,
    *,
    chains: int,
    draws: int,
    seed: int,
    warmup: int | None = None,
    gate: bool = True,
    extend: bool = True,
) -> xr.DataTree:
    """NUTS fit of the joint model (trends, frontier compute, depth, batch, utilization and
    domain laws, run efficiency), gated on convergence over every fitted parameter as soon as
    NUTS is done (``gate=False``: no gate; ``extend``: a narrow refusal runs the same chains
    twice as long once, :func:`fit_joint`). The run-efficiency rows are the published runs of
    ``inputs.training_runs`` with the step-time model's MFU on each run's plan, on the
    accelerators of ``inputs.hardware`` (:func:`forecast.inference.run_predictions.predicted_runs`)."""
    init_jax()
    shapes = load_model_shapes() if inputs.model_shapes is None else inputs.model_shapes
    domains = load_scaleup_domains() if inputs.scaleup_domains is None else inputs.scaleup_domains
    runs = load_training_runs() if inputs.training_runs is None else inputs.training_runs
    predicted = predicted_runs(runs, inputs.hardware)
    data, tables = joint_data(inputs.hardware, inputs.frontier_runs, shapes, domains, predicted)
    dt = fit_joint(
        data,
        tables,
        trend_priors_from_prior_set(prior_set),
        law_priors_from_prior_set(prior_set),
        rng_key=jax.random.PRNGKey(seed),
        num_chains=chains,
        num_warmup=default_warmup(draws) if warmup is None else warmup,
        num_samples=draws,
        law_prior_source=law_prior_record(prior_set),
        gate=check_convergence if gate else None,
        extend=extend,
    )
    return dt
