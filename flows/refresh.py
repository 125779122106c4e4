"""The ``refresh-forecast`` Prefect flow: load -> fit -> propagate each scenario -> publish -> artifacts.

Tasks and their cache keys (Prefect cache policies, records and pickled results under
``$PREFECT_HOME/storage``):

* ``load-inputs`` - reads and validates data and priors; never cached (it is what detects change),
  retried on I/O errors (never on a WallcastError: :func:`retry_unless_user_error`);
* ``fit-joint`` - NUTS fit of the joint model (trends and scaling laws); one per distinct set of
  fit priors (scenarios that only change propagation inputs, or replace a fitted input with a
  what-if, share a fit).  Key: ``TASK_SOURCE`` + the inputs ``data_hash`` (SHA-256 of
  hardware.csv, frontier_runs.csv, model_shapes.csv and scaleup_domains.csv), ``fit_priors``
  (canonical JSON of the trend priors and the base file's priors of the fitted law parameters,
  :func:`forecast.inference.fit.fit_key`), ``chains``, ``draws``, ``warmup``, ``seed`` and
  ``code`` (SHA-256 of the forecast package's model code, see
  :func:`forecast.store.identity.code_hash`).  The
  DataFrames and PriorSet are passed too but excluded from the key;
* ``propagate-<scenario>`` - one task per scenario, submitted concurrently.  Key: ``TASK_SOURCE`` +
  ``fit_key`` (digest of everything the fit depends on), ``scenario``, ``scenario_text`` (the
  scenario's full prior text), ``seed``, ``years``, ``propagate_draws``, ``regime`` and ``code``;
* ``accelerator-walls`` - the walls of today's accelerators over the first scenario's draws.
  Key: ``TASK_SOURCE`` + ``code`` and the digest of what they are computed from (every kept
  draw's assumptions, the accelerators' hardware, the curves asked for:
  :func:`forecast.jobs.forecast_job.accelerator_walls_key`), so a forecast that changes none of
  those (a what-if of the run's length) reuses them;
* ``publish`` - never cached, retried.  Assembles the DataTree and publishes it atomically unless
  the forecast ``latest`` points to was made from the same inputs (same
  :func:`forecast.store.identity.fingerprint`): then it publishes nothing and reports
  "unchanged, latest kept" (``republish=True`` forces a new one).  Applies retention (keep the
  newest ``keep``, never the one ``latest`` names);
* ``artifacts`` - markdown summary (key ``wallcast-summary``), table of credible intervals
  (``wallcast-intervals``), link to the report (``wallcast-report``).

Storage (publishing, retention, reading) is :mod:`forecast.store` and the lock
:mod:`forecast.config.filelock`; this module only orchestrates.  The flow holds
``<outputs>/.lock`` (``fcntl.flock``) from start to end: a second refresh on the same outputs
folder fails at once with "another refresh is running (pid N)" (or waits ``lock_wait`` seconds
first).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Literal

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import INPUTS, NO_CACHE, TASK_SOURCE, CacheKeyFnPolicy
from prefect.context import FlowRunContext
from prefect.futures import as_completed, wait

from forecast import store
from forecast.config import paths
from forecast.config.errors import WallcastError
from forecast.config.runtime import CHUNK_THREADS_ENV
from forecast.config.settings import (
    DEFAULT_CHAINS,
    DEFAULT_DRAWS,
    DEFAULT_KEEP,
    DEFAULT_PROPAGATE_DRAWS,
    DEFAULT_SEED,
    default_warmup,
)
from forecast.jobs import forecast_job
from forecast.queries.answers import summary_table
from forecast.queries.formatting import fmt_flop, fmt_pct, fmt_year
from forecast.report import generate_reports
from forecast.store.attrs import draws_description, gate_extension

__all__ = ["flow_with_task_runner", "refresh_forecast"]


def _fit_priors_key(prior_set: Any) -> str:
    """The priors the joint fit of ``prior_set`` depends on (:func:`forecast.inference.fit.fit_key`)."""
    return forecast_job.fit_key(prior_set)


# ----------------------------------------------------------------------------- tasks


def retry_unless_user_error(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn``: retry I/O hiccups, never a WallcastError (bad data or
    priors, a full disk, the convergence gate), which fails the same way on every try."""
    return not isinstance(getattr(state, "data", None), WallcastError)


@task(
    name="load-inputs",
    cache_policy=NO_CACHE,
    retries=2,
    retry_delay_seconds=2,
    retry_condition_fn=retry_unless_user_error,
)
def load_inputs_task(
    priors: str | None,
    data_dir: str | None,
    scenarios: list[str] | None,
    scenario_dir: str | None,
) -> forecast_job.Inputs:
    """Read and validate the data tables and priors (cheap; decides what is stale)."""
    inputs = forecast_job.load_inputs(priors, data_dir, scenarios, scenario_dir)
    get_run_logger().info(
        f"loaded {len(inputs.hardware)} accelerators and {len(inputs.frontier_runs)} frontier "
        f"runs from {inputs.data_dir}; priors {inputs.priors.name}; "
        f"scenarios {', '.join(inputs.scenarios)}"
    )
    return inputs


@task(
    name="fit-joint",
    cache_policy=TASK_SOURCE + (INPUTS - "inputs" - "prior_set"),
    persist_result=True,
)
def fit_task(
    inputs: forecast_job.Inputs,
    prior_set: Any,
    *,
    data_hash: str,
    fit_priors: str,
    chains: int,
    draws: int,
    warmup: int,
    seed: int,
    code: str,
) -> Any:
    """NUTS fit of the joint model (the expensive step), gated on convergence."""
    logger = get_run_logger()
    logger.info(
        f"fitting the joint model (trends and scaling laws): {chains} chains x {draws} draws "
        f"after {warmup} warm-up iterations"
    )
    start = time.perf_counter()
    fit_tree = forecast_job.fit(
        inputs, prior_set, chains=chains, draws=draws, warmup=warmup, seed=seed
    )
    seconds = time.perf_counter() - start
    extended = gate_extension(dict(fit_tree.attrs))
    if extended is None:
        logger.info(f"fit passed the convergence gate in {seconds:.0f} s")
    else:
        logger.warning(
            f"fit passed the convergence gate in {seconds:.0f} s, at {extended['samples']} "
            f"draws per chain: {extended['requested_samples']} were refused narrowly "
            f"({extended['refusal']}), so the same chains ran twice as long"
        )
    return fit_tree


@task(
    name="propagate",
    cache_policy=TASK_SOURCE + (INPUTS - "fit_tree" - "prior_set"),
    persist_result=True,
)
def propagate_task(
    fit_tree: Any,
    prior_set: Any,
    *,
    fit_key: str,
    scenario: str,
    scenario_text: str,
    seed: int,
    years: list[float] | None,
    code: str,
    propagate_draws: int | None = None,
    regime: str = "paper",
) -> tuple[Any, Any]:
    """Forecast of one scenario: joint posterior draws (and free prior draws) -> walls per year."""
    logger = get_run_logger()
    logger.info(f"propagating scenario {scenario}: walls per draw and year, {regime} plans")
    start = time.perf_counter()
    result = forecast_job.propagate_scenario(
        fit_tree,
        prior_set,
        seed=seed,
        years=years,
        propagate_draws=propagate_draws,
        regime=regime,
    )
    logger.info(f"scenario {scenario} propagated in {time.perf_counter() - start:.0f} s")
    return result


def _accelerator_walls_cache_key(context: Any, parameters: dict[str, Any]) -> str:
    """The code and the digest of what the walls are computed from
    (:func:`forecast.jobs.forecast_job.accelerator_walls_key`): not the scenario's text, so a
    forecast whose inputs of these draws did not change (a what-if of the run's length, which
    these walls fix at 90 days) reuses the walls of the forecast before it."""
    key = forecast_job.accelerator_walls_key(
        parameters["inputs"],
        parameters["fit_tree"],
        parameters["scenario_result"],
        chains=parameters["chains"],
        draws=parameters["draws"],
        propagate_draws=parameters.get("propagate_draws"),
        regime=parameters.get("regime", "paper"),
    )
    return store.digest([parameters["code"], key])


@task(
    name="accelerator-walls",
    cache_policy=TASK_SOURCE + CacheKeyFnPolicy(cache_key_fn=_accelerator_walls_cache_key),
    persist_result=True,
)
def accelerator_walls_task(
    inputs: forecast_job.Inputs,
    fit_tree: Any,
    scenario_result: tuple[Any, Any],
    *,
    code: str,
    chains: int,
    draws: int,
    propagate_draws: int | None = None,
    regime: str = "paper",
) -> Any:
    """Both walls of every accelerator of the table over the first scenario's posterior inputs
    (the forecast's group ``accelerator_walls``): what every surface shows for today's chips.
    Cached on what they are computed from (:func:`_accelerator_walls_cache_key`) and the code."""
    logger = get_run_logger()
    start = time.perf_counter()
    ds = forecast_job.accelerator_walls(
        inputs,
        fit_tree,
        scenario_result,
        chains=chains,
        draws=draws,
        propagate_draws=propagate_draws,
        regime=regime,
    )
    logger.info(
        f"walls of {ds.sizes['accelerator']} accelerators over {ds.sizes['sample']} posterior "
        f"draws in {time.perf_counter() - start:.0f} s"
    )
    return ds


def _latest_fingerprint(outputs_dir: Path) -> tuple[str | None, Path | None]:
    """Run fingerprint and file of the forecast ``latest`` points to (None when unreadable)."""
    try:
        path = store.latest_forecast_path(outputs_dir)
        return store.read_attrs(path).get("run_fingerprint"), path
    except Exception:  # no latest yet, or unreadable: publish a fresh one
        return None, None


@task(
    name="publish",
    cache_policy=NO_CACHE,
    retries=2,
    retry_delay_seconds=2,
    retry_condition_fn=retry_unless_user_error,
)
def publish_task(
    inputs: forecast_job.Inputs,
    fit_tree: Any,
    results: dict[str, tuple[Any, Any]],
    *,
    outputs_dir: str,
    seed: int,
    chains: int,
    draws: int,
    years: list[float] | None,
    fingerprint: str,
    code: str,
    keep: int = DEFAULT_KEEP,
    republish: bool = False,
    propagate_draws: int | None = None,
    regime: str = "paper",
    accelerator_walls: Any = None,
) -> dict[str, Any]:
    """Publish a new forecast, or keep ``latest`` when it already is this forecast."""
    out = Path(outputs_dir)
    latest_fp, latest_path = _latest_fingerprint(out)
    if latest_fp == fingerprint and latest_path is not None and not republish:
        return {
            "status": "unchanged",
            "path": str(latest_path),
            "forecast_id": latest_path.parent.name,
            "removed": store.apply_retention(out, keep),
        }
    tree, fid = forecast_job.assemble(
        inputs,
        fit_tree,
        results,
        seed=seed,
        chains=chains,
        draws=draws,
        years=years,
        code=code,
        propagate_draws=propagate_draws,
        run_fingerprint=fingerprint,
        regime=regime,
        accelerator_walls=accelerator_walls,
    )
    get_run_logger().info(f"publishing forecast {fid} to {out}")
    published, removed = store.publish_forecast(tree, out, fid, keep=keep)
    return {
        "status": "published",
        "path": str(published / store.FORECAST_FILE),
        "forecast_id": fid,
        "removed": removed,
    }


# ----------------------------------------------------------------------------- artifacts


def intervals_table(rows: list[dict]) -> list[dict[str, Any]]:
    """Rows of :func:`forecast.queries.answers.summary_table` as a flat table (strings and floats)."""
    out = []
    for r in rows:
        y, f = r["year"], r["flop"]
        out.append(
            {
                "scenario": r["scenario"],
                "wall": r["wall"],
                "interval": fmt_pct(y["prob"]),
                "hit_year_median": fmt_year(y["median"]),
                "hit_year_lower": fmt_year(y["lower"]),
                "hit_year_upper": fmt_year(y["upper"]),
                "hit_flop_median": fmt_flop(f["median"]),
                "hit_flop_lower": fmt_flop(f["lower"]),
                "hit_flop_upper": fmt_flop(f["upper"]),
                "not_hit_by_last_year": fmt_pct(y["not_hit_fraction"]),
            }
        )
    return out


def summary_markdown(
    rows: list[dict], attrs: dict, publish_info: dict, task_states: dict[str, str]
) -> str:
    """Markdown of one refresh: what was published, from what, what was cached, intervals."""
    table = intervals_table(rows)
    status = publish_info["status"]
    head = (
        "new forecast published"
        if status == "published"
        else "inputs unchanged: no new forecast, `latest` kept"
    )
    lines = [
        f"# wallcast forecast `{publish_info['forecast_id']}`",
        "",
        f"**{head}** - `{publish_info['path']}`",
        "",
        f"- created: {attrs.get('created', '?')}; data hash `{str(attrs.get('data_hash', ''))[:12]}`; "
        f"priors `{attrs.get('priors_name', '?')}`; scenarios {attrs.get('scenarios', '?')}",
        f"- MCMC: {draws_description(attrs, attrs.get('chains', '?'), attrs.get('draws', '?'))}, "
        f"seed {attrs.get('seed', '?')}",
        "- tasks: " + ", ".join(f"{name} ({state})" for name, state in sorted(task_states.items())),
        "",
        "| scenario | wall | hit year, median (interval) | hit FLOP, median (interval) | not hit |",
        "|---|---|---|---|---|",
    ]
    for t in table:
        lines.append(
            f"| {t['scenario']} | {t['wall']} | {t['hit_year_median']} "
            f"({t['hit_year_lower']} - {t['hit_year_upper']}) | {t['hit_flop_median']} "
            f"({t['hit_flop_lower']} - {t['hit_flop_upper']}) | {t['not_hit_by_last_year']} |"
        )
    if table:
        lines += ["", f"Intervals are equal-tailed {table[0]['interval']} credible intervals."]
    return "\n".join(lines) + "\n"


def _generate_reports(
    forecast_path: Path, logger: logging.Logger | Any, tree: Any = None
) -> dict[str, Path]:
    logger.info("writing report.html, report.md and deck.pptx")
    try:
        return {k: Path(v) for k, v in generate_reports(forecast_path, tree=tree).items()}
    except Exception as exc:  # a report failure must not fail the refresh
        logger.warning(f"report generation failed: {type(exc).__name__}: {exc}")
        return {}


def _runs_in_this_process() -> bool:
    """Whether the flow's tasks share its process (the thread task runner), so a cache filled
    by one task is seen by another."""
    ctx = FlowRunContext.get()
    return ctx is not None and type(ctx.task_runner).__name__ == "ThreadPoolTaskRunner"


@task(
    name="artifacts",
    cache_policy=NO_CACHE,
    retries=1,
    retry_delay_seconds=2,
    retry_condition_fn=retry_unless_user_error,
)
def artifacts_task(
    publish_info: dict[str, Any], task_states: dict[str, str], reports: bool = True
) -> dict[str, Any]:
    """Prefect artifacts (summary, intervals, report link) and the published path in the log."""
    logger = get_run_logger()
    path = Path(publish_info["path"])
    write_reports = reports and publish_info["status"] == "published"
    if write_reports:  # one read: the summary and both documents come from the same tree
        tree = store.load_forecast(path)
        ds, attrs = tree["forecast"].to_dataset()[["hit_year", "hit_flop"]], dict(tree.attrs)
    else:  # the two variables the summary needs (h5py)
        tree = None
        ds, attrs = store.load_forecast_group(path, ["hit_year", "hit_flop"])
    rows = summary_table(ds)
    create_markdown_artifact(
        summary_markdown(rows, attrs, publish_info, task_states),
        key="wallcast-summary",
        description=f"wallcast forecast {publish_info['forecast_id']}",
    )
    create_table_artifact(
        intervals_table(rows),
        key="wallcast-intervals",
        description="Median and 80% credible interval of the hit year and hit FLOP per wall",
    )
    made = _generate_reports(path, logger, tree) if write_reports else {}
    for name, report in made.items():
        if report.suffix in (".html", ".md", ".pdf"):
            create_link_artifact(
                report.resolve().as_uri(),
                link_text=f"wallcast report ({name})",
                key="wallcast-report",
                description=f"report of forecast {publish_info['forecast_id']}",
            )
            break
    logger.info(f"forecast {publish_info['status']}: {path}")
    return {"reports": {k: str(v) for k, v in made.items()}, "summary": rows}


# ----------------------------------------------------------------------------- flow


@flow(name="refresh-forecast", validate_parameters=True)
def refresh_forecast(
    priors: str | None = None,
    data_dir: str | None = None,
    outputs_dir: str | None = None,
    scenarios: list[str] | None = None,
    scenario_dir: str | None = None,
    chains: int = DEFAULT_CHAINS,
    draws: int = DEFAULT_DRAWS,
    warmup: int | None = None,
    seed: int = DEFAULT_SEED,
    years: list[float] | None = None,
    keep: int = DEFAULT_KEEP,
    republish: bool = False,
    lock_wait: float = 0.0,
    reports: bool = True,
    propagate_draws: int | None = DEFAULT_PROPAGATE_DRAWS,
    regime: Literal["paper", "realistic"] = "realistic",
) -> dict[str, Any]:
    """Refit what changed, propagate every scenario, publish atomically, create artifacts.

    ``warmup``: NUTS warm-up iterations per chain (None: ``draws``, at least
    :data:`~forecast.config.settings.MIN_WARMUP`).  ``propagate_draws``: posterior draws
    propagated per scenario, evenly thinned from
    ``chains`` x ``draws`` (None or 0: all of them).  ``regime``: the plans searched for the
    walls, ``"paper"`` (Erdil & Schneider-Joseph's idealized plans) or ``"realistic"`` (plans a
    run can launch: ~15x the propagation time, :mod:`forecast.model.realistic_fast`).

    Returns ``status`` ("published" / "unchanged"), ``forecast_id``, ``path``, ``task_states``
    (task run name -> final state name, e.g. "Cached"), ``cached`` and ``removed``.
    """
    logger = get_run_logger()
    start = time.perf_counter()
    outputs = paths.outputs_dir(outputs_dir)
    with store.exclusive_lock(outputs / store.LOCK_FILE, "refresh", wait=lock_wait):
        states: dict[str, str] = {}
        code = store.code_hash()
        load_state = load_inputs_task(priors, data_dir, scenarios, scenario_dir, return_state=True)
        states["load-inputs"] = load_state.name
        inputs: forecast_job.Inputs = load_state.result()
        yrs = None if years is None else [float(y) for y in years]
        warmup_iterations = default_warmup(draws) if warmup is None else int(warmup)

        fits: dict[str, Any] = {}
        fit_keys: dict[str, str] = {}
        fit_names: dict[str, str] = {}
        props: dict[str, Any] = {}
        for name, prior_set in inputs.scenarios.items():
            tk = _fit_priors_key(prior_set)
            if tk not in fits:
                fit_names[tk] = f"fit-joint-{name}"
                fit_keys[tk] = store.digest(
                    [inputs.data_hash, tk, chains, draws, warmup_iterations, seed, code]
                )
                fits[tk] = fit_task.with_options(task_run_name=fit_names[tk]).submit(
                    inputs,
                    prior_set,
                    data_hash=inputs.data_hash,
                    fit_priors=tk,
                    chains=chains,
                    draws=draws,
                    warmup=warmup_iterations,
                    seed=seed,
                    code=code,
                )
            props[name] = propagate_task.with_options(task_run_name=f"propagate-{name}").submit(
                fits[tk],
                prior_set,
                fit_key=fit_keys[tk],
                scenario=name,
                scenario_text=prior_set.text,
                seed=seed,
                years=yrs,
                code=code,
                propagate_draws=propagate_draws,
                regime=regime,
            )
        first = next(iter(props))
        first_tk = _fit_priors_key(inputs.scenarios[first])
        walls_fut = accelerator_walls_task.submit(
            inputs,
            fits[first_tk],
            props[first],
            code=code,
            chains=chains,
            draws=draws,
            propagate_draws=propagate_draws,
            regime=regime,
        )
        scenario_of = {id(fut): name for name, fut in props.items()}
        logger.info(
            f"submitted {len(fits)} fit(s) and {len(props)} scenario propagation(s); "
            "a propagation starts when its fit is done"
        )
        done = 0
        for fut in as_completed([*fits.values(), *props.values()]):
            if id(fut) in scenario_of:
                done += 1
                logger.info(f"scenario {done}/{len(props)} finished: {scenario_of[id(fut)]}")
        wait(
            [*fits.values(), *props.values(), walls_fut]
        )  # final states (as_completed does not fetch them)
        for tk, fut in fits.items():
            states[fit_names[tk]] = fut.state.name
        for name, fut in props.items():
            states[f"propagate-{name}"] = fut.state.name
        # Fits first: a fit refused by the convergence gate raises its ConvergenceError here
        # (naming the parameter and diagnostic), before its propagations report "not ready".
        fitted = {tk: fut.result() for tk, fut in fits.items()}
        results = {name: fut.result() for name, fut in props.items()}
        states["accelerator-walls"] = walls_fut.state.name
        walls_group = walls_fut.result()
        base_fit = next(iter(fitted.values()))
        logger.info("tasks: " + ", ".join(f"{k}={v}" for k, v in states.items()))

        fingerprint = store.inputs_fingerprint(
            inputs,
            list(inputs.scenarios),
            seed=seed,
            chains=chains,
            draws=draws,
            warmup=warmup_iterations,
            years=yrs,
            code=code,
            propagate_draws=propagate_draws,
            regime=regime,
        )
        pub_state = publish_task(
            inputs,
            base_fit,
            results,
            outputs_dir=str(outputs),
            seed=seed,
            chains=chains,
            draws=draws,
            years=yrs,
            fingerprint=fingerprint,
            code=code,
            keep=keep,
            republish=republish,
            propagate_draws=propagate_draws,
            regime=regime,
            accelerator_walls=walls_group,
            return_state=True,
        )
        states["publish"] = pub_state.name
        info: dict[str, Any] = pub_state.result()
        if info["status"] == "unchanged":
            logger.info(f"inputs unchanged: latest kept ({info['path']})")
        else:
            logger.info(f"published {info['path']}")
        art = artifacts_task(info, dict(states), reports=reports)
    cached = [k for k, v in states.items() if v == "Cached"]
    return {
        **info,
        "task_states": states,
        "cached": cached,
        "reports": art["reports"],
        "summary": art["summary"],
        "seconds": round(time.perf_counter() - start, 1),
    }


def flow_with_task_runner(
    kind: str = "thread",
    address: str | None = None,
    cluster_kwargs: dict[str, Any] | None = None,
) -> Any:
    """``refresh_forecast`` with the chosen task runner.

    ``"thread"``: Prefect's default ``ThreadPoolTaskRunner`` (JAX releases the GIL).
    ``"dask"``: ``prefect_dask.DaskTaskRunner`` - on the Dask scheduler at ``address`` (e.g.
    ``tcp://scheduler:8786``) or, without one, on a temporary ``distributed.LocalCluster`` built
    with ``cluster_kwargs`` (default: 2 worker processes, 1 thread each, no dashboard), whose
    worker processes' searches keep to their threads (``WALLCAST_CHUNK_THREADS`` =
    ``threads_per_worker`` in their environment unless ``cluster_kwargs`` gives an ``env``: the
    helper threads of :func:`forecast.config.runtime.chunk_helpers` are counted within one
    process, not across processes; set it on a remote cluster's workers the same way).
    """
    if kind == "thread":
        return refresh_forecast
    if kind != "dask":
        raise ValueError(f"unknown task runner {kind!r}; use 'thread' or 'dask'")
    from prefect_dask import DaskTaskRunner

    if address:
        runner = DaskTaskRunner(address=address)
    else:
        kwargs = {"n_workers": 2, "threads_per_worker": 1, "dashboard_address": None}
        kwargs |= cluster_kwargs or {}
        if kwargs.get("processes", True):  # threads of this process share its allowance
            kwargs.setdefault("env", {CHUNK_THREADS_ENV: str(kwargs["threads_per_worker"])})
        runner = DaskTaskRunner(cluster_kwargs=kwargs)
    return refresh_forecast.with_options(task_runner=runner)
