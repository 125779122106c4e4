"""``wallcast plan``, ``wallcast requirements`` and ``wallcast runs``: plan runs as they launch.

Given an accelerator, a compute budget, a run length and the integer degrees of a plan, prints
its model FLOP utilization, step time with its parts, memory per accelerator, the accelerators it
takes and whether it finishes in time (:func:`forecast.analyses.accelerator_walls.plan_record`,
:mod:`forecast.model.evaluate`); without the degrees it searches the best plan per posterior
draw (:func:`forecast.analyses.planner.plan_answer`).  ``requirements`` asks the inverse: what
the frontier accelerator of a year would need for that year's frontier run to stay inside both
walls (:func:`forecast.analyses.planner.requirements_answer`).  ``runs`` evaluates each published run of
``data/training_runs.csv`` on its own plan beside its observed utilization
(:mod:`forecast.analyses.published_runs`).  JAX is imported inside the commands.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from forecast.cli.app import app, check_positive, json_clean, reports_errors
from forecast.cli.options import (
    ForecastOpt,
    HardwareOpt,
    JsonOpt,
    MoeActiveOpt,
    MoeExpertsOpt,
    Precision,
    PrecisionOpt,
    Regime,
)
from forecast.cli.tables import loo_table, plan_text, runs_table
from forecast.queries.formatting import fmt_pct, sci


@app.command()
@reports_errors
def plan(
    accelerator: Annotated[
        list[str] | None,
        typer.Option(
            "--accelerator",
            "-a",
            help="Accelerator name, exact or a unique part of it (e.g. H100). Repeatable in the "
            "search form (side by side); omitted with --year: the frontier accelerator of that "
            "year.",
        ),
    ] = None,
    flop: Annotated[
        float | None,
        typer.Option(
            "--flop",
            help="Training compute, FLOP; the model is its compute-optimal one. Omitted with "
            "--year: the frontier run of that year (per draw).",
        ),
    ] = None,
    tp: Annotated[
        int | None, typer.Option("--tp", min=1, help="Tensor-parallel degree (evaluate form).")
    ] = None,
    pp: Annotated[
        int | None, typer.Option("--pp", min=1, help="Pipeline-parallel stages (evaluate form).")
    ] = None,
    dp: Annotated[
        int | None, typer.Option("--dp", min=1, help="Data-parallel replicas (evaluate form).")
    ] = None,
    sequence_length: Annotated[
        int, typer.Option("--sequence-length", min=1, help="Tokens per sequence.")
    ] = 8192,
    microbatch_sequences: Annotated[
        int,
        typer.Option("--microbatch-sequences", min=1, help="Whole sequences per microbatch."),
    ] = 1,
    cp: Annotated[
        int,
        typer.Option(
            "--cp", min=1, help="Context-parallel ranks each microbatch's sequences are split over."
        ),
    ] = 1,
    two_d: Annotated[
        bool, typer.Option("--2d", help="2D tensor parallelism on a sqrt(tp) x sqrt(tp) mesh.")
    ] = False,
    recompute: Annotated[
        bool, typer.Option("--recompute", help="Full activation recomputation.")
    ] = False,
    interleave: Annotated[
        int,
        typer.Option("--interleave", min=1, help="Virtual stages per pipeline rank (1F1B)."),
    ] = 1,
    microbatches: Annotated[
        int | None,
        typer.Option(
            "--microbatches",
            min=1,
            help="Microbatches per replica and step. Default: as many as the critical batch allows.",
        ),
    ] = None,
    days: Annotated[
        float,
        typer.Option("--days", "--duration-days", help="Wall-clock length of the run, days."),
    ] = 90.0,
    precision: PrecisionOpt = Precision.bf16,
    moe_experts: MoeExpertsOpt = 1,
    moe_active: MoeActiveOpt = 1,
    ep: Annotated[
        int | None,
        typer.Option(
            "--ep",
            min=1,
            help="Expert-parallel ranks each layer's experts are spread over, inside dp x cp "
            "(--moe-experts / ep experts per rank). Default: --moe-experts, one expert per rank.",
        ),
    ] = None,
    regime: Annotated[
        Regime,
        typer.Option(
            "--regime",
            case_sensitive=False,
            help="realistic: plans a run can launch (whole degrees and layers per stage, whole "
            "sequences or context parallelism). paper: Erdil & Schneider-Joseph (2024)'s "
            "relaxed step model (L / pp layers per stage; the search: continuous microbatches "
            "and degrees), labelled as such.",
        ),
    ] = Regime.realistic,
    hardware: HardwareOpt = None,
    year: Annotated[
        int | None,
        typer.Option(
            "--year",
            help="Search form: the year of the frontier accelerator and run (from the forecast's "
            "fitted trends), of the latencies and of the sequence length.",
        ),
    ] = None,
    draws: Annotated[
        int,
        typer.Option("--draws", min=1, max=4000, help="Search form: posterior draws (thinned)."),
    ] = 500,
    forecast: ForecastOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Plan a run: the best launchable plan per posterior draw (search form), or evaluate a
    given plan (evaluate form: --tp, --pp and --dp).

    Search form: for each accelerator (or the frontier accelerator of --year), the distribution
    over the forecast's posterior draws of the best launchable plan's utilization, P(feasible),
    accelerators, accelerator-hours, step time and cost multiplier, with the plan of the median
    draw in whole numbers. Evaluate form: utilization (MFU), step time and its parts, memory and
    feasibility of one given plan.
    """
    check_positive(days, "--days")
    if flop is not None:
        check_positive(flop, "--flop")
    given = [n for n, v in (("--tp", tp), ("--pp", pp), ("--dp", dp)) if v is not None]
    plan_only = {
        "--sequence-length": sequence_length != 8192,
        "--microbatch-sequences": microbatch_sequences != 1,
        "--cp": cp != 1,
        "--2d": two_d,
        "--recompute": recompute,
        "--interleave": interleave != 1,
        "--microbatches": microbatches is not None,
        "--moe-experts": moe_experts != 1,
        "--moe-active": moe_active != 1,
        "--ep": ep is not None,
    }
    search_only = {"--year": year is not None, "--draws": draws != 500, "--forecast": forecast}
    if not given:
        wrong = [k for k, v in plan_only.items() if v]
        if wrong:  # the search chooses these per draw (dense models: the forecast's scenario)
            raise typer.BadParameter(
                f"{', '.join(wrong)}: options of a given plan; add --tp, --pp and --dp to "
                "evaluate one, or leave them out to search",
                param_hint=wrong[0],
            )
        _search(
            accelerator, flop, year, days, precision, draws, hardware, forecast, regime, json_output
        )
        return
    wrong = [k for k, v in search_only.items() if v]
    if wrong:
        raise typer.BadParameter(
            f"{', '.join(wrong)}: options of the search form (without --tp, --pp and --dp)",
            param_hint=wrong[0],
        )
    if len(given) < 3:
        missing = sorted({"--tp", "--pp", "--dp"} - set(given))
        raise typer.BadParameter(
            f"the evaluate form needs --tp, --pp and --dp; missing {', '.join(missing)}",
            param_hint="--tp/--pp/--dp",
        )
    if not accelerator or len(accelerator) != 1:
        got = f"; got {', '.join(accelerator)}" if accelerator else ""
        raise typer.BadParameter(
            f"the evaluate form takes one --accelerator{got}", param_hint="--accelerator"
        )
    if flop is None:
        raise typer.BadParameter("the evaluate form needs --flop", param_hint="--flop")
    if ep is not None and moe_experts == 1 and ep > 1:
        raise typer.BadParameter(
            f"--ep {ep}: a dense model has no experts to spread; add --moe-experts",
            param_hint="--ep",
        )
    if ep is not None and moe_experts % ep:
        raise typer.BadParameter(
            f"--ep {ep} does not divide --moe-experts {moe_experts} (whole experts per rank)",
            param_hint="--ep",
        )
    paper_excluded = [k for k in ("--cp", "--recompute", "--interleave") if plan_only[k]]
    if regime is Regime.paper and paper_excluded:
        raise typer.BadParameter(
            f"{', '.join(paper_excluded)}: the paper regime's step model has no context "
            "parallelism, recomputation or interleaving; use --regime realistic",
            param_hint="--regime",
        )
    # why here: the plan evaluation imports JAX and the data tables
    from forecast.analyses.accelerator_walls import plan_record

    record = plan_record(
        accelerator[0],
        training_flop=flop,
        tp=tp,
        pp=pp,
        dp=dp,
        sequence_length=sequence_length,
        microbatch_sequences=microbatch_sequences,
        cp=cp,
        two_d=two_d,
        recompute=recompute,
        virtual_stages=interleave,
        microbatches=microbatches,
        duration_days=days,
        precision=precision.value,
        moe_experts=moe_experts,
        moe_active_experts=moe_active,
        ep=ep,
        hardware=hardware,
        regime=regime.value,
    )
    if json_output:
        typer.echo(json.dumps(json_clean(record), indent=2, allow_nan=False))
        return
    typer.echo(plan_text(record))


def _search(
    accelerator, flop, year, days, precision, draws, hardware, forecast, regime, json_output
):
    """The search form of ``wallcast plan`` (:func:`forecast.analyses.planner.plan_answer`)."""
    answer = _planner().plan_answer(
        forecast,
        accelerators=accelerator,
        year=year,
        training_flop=flop,
        duration_days=days,
        precision=precision.value,
        draws=draws,
        hardware=hardware,
        regime=regime.value,
    )
    if json_output:
        typer.echo(json.dumps(json_clean(answer), indent=2, allow_nan=False))
        return
    typer.echo(planner_text(answer))


def _planner() -> Any:
    """:mod:`forecast.analyses.planner`, imported when a command needs it."""
    # why here: the planner imports JAX
    from forecast.analyses import planner

    return planner


@app.command()
@reports_errors
def requirements(
    year: Annotated[
        int,
        typer.Option(
            "--year",
            help="The year: its frontier run on its frontier accelerator (per posterior draw).",
        ),
    ],
    days: Annotated[float, typer.Option("--days", help="Run length, days.")] = 90.0,
    precision: PrecisionOpt = Precision.bf16,
    draws: Annotated[
        int,
        typer.Option(
            "--draws", min=1, help="Posterior draws, evenly thinned (each costs 12 plan searches)."
        ),
    ] = 200,
    forecast: ForecastOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """What the frontier accelerator of a year would need, one property at a time (scale-up
    domain, scale-up and scale-out bandwidth, latency per hop, HBM bandwidth), for the year's
    frontier run to stay inside both walls; with P(already on the trend)."""
    check_positive(days, "--days")
    answer = _planner().requirements_answer(
        forecast, year=year, duration_days=days, precision=precision.value, draws=draws
    )
    if json_output:
        typer.echo(json.dumps(json_clean(answer), indent=2, allow_nan=False))
        return
    typer.echo(requirements_text(answer))


_LEVER_FORMATS = {
    "scaleup_domain_size": lambda v: f"{v:,.0f}",
    "scaleup_bandwidth": lambda v: f"{v / 1e9:,.0f} GB/s",
    "scaleout_bandwidth": lambda v: f"{v / 1e9:,.0f} GB/s",
    "latency_per_hop": lambda v: f"{v * 1e6:.2g} us",
    "hbm_bandwidth": lambda v: f"{v / 1e12:,.1f} TB/s",
}


def requirements_text(answer: dict[str, Any]) -> str:
    """``wallcast requirements``: one line per lever, median (80 % interval)."""

    def iv(d: dict, fmt, above: str, below: str = "") -> str:
        def one(v, censored: str) -> str:
            return censored if v is None else fmt(v)

        return f"{one(d['median'], above)} ({one(d['lower'], below or above)} – {one(d['upper'], above)})"

    flop = answer["training_flop"]
    year = answer["year"]
    lines = [
        f"What the frontier accelerator of {year} would need for the frontier run of {year} "
        f"({sci(flop['median'])} FLOP, 80%: {sci(flop['lower'])} – {sci(flop['upper'])}) to stay "
        f"inside both walls in {answer['duration_days']:g} days at {answer['precision']} "
        f"({answer['draws']} draws of forecast {answer['forecast_id']}, {answer['scenario']})",
        f"On the trend: inside the data-movement wall "
        f"{fmt_pct(answer['inside_data_movement_wall_probability'])}, inside the latency wall "
        f"{fmt_pct(answer['inside_latency_wall_probability'])}, both "
        f"{fmt_pct(answer['on_trend_probability'])}.",
        "",
        f"{'each lever alone':<20} {'trend':<38} {'required':<40} {'factor':<24} on trend  alone",
    ]
    for lv in answer["levers"]:
        fmt = _LEVER_FORMATS.get(lv["lever"], sci)
        beyond = "out of reach" if lv["direction"] == "lower is better" else "beyond 1000x"
        factor = lv["improvement_factor"]
        # the bisection's floor (1/100 of the trend is enough) is censored at every end
        floored = {
            end: factor[end] is not None and factor[end] <= 0.01 * (1 + 1e-9)
            for end in ("median", "lower", "upper")
        }
        less = lv["direction"] == "lower is better"
        # a smaller factor is a lower required value, except for latency (a higher one)
        req_end = {"median": "median", "lower": "upper" if less else "lower",
                   "upper": "lower" if less else "upper"}  # fmt: skip
        floor_text = ">=100x trend" if less else "<=1/100 of trend"

        def shown(d: dict, value_fmt, none_text: str, censored: dict) -> str:
            def one(which: str) -> str:
                if censored.get(which):
                    return censored[which]
                return none_text if d[which] is None else value_fmt(d[which])

            return f"{one('median')} ({one('lower')} – {one('upper')})"

        factor_text = shown(
            factor, lambda v: f"{v:.2g}x", ">1000x",
            {e: "<=0.01x" for e, f in floored.items() if f},
        )  # fmt: skip
        required_text = shown(
            lv["required"], fmt, beyond,
            {req_end[e]: floor_text for e, f in floored.items() if f},
        )  # fmt: skip
        lines.append(
            f"{lv['lever']:<20} {iv(lv['trend'], fmt, '-'):<38} "
            f"{required_text:<40} "
            f"{factor_text:<24} "
            f"{fmt_pct(lv['on_trend_probability']):>8}  "
            f"{fmt_pct(lv['reachable_alone_probability']):>5}"
        )
    lines += [
        "",
        "median (80% interval) over the draws; factor: improvement over the trend's value "
        "(latency: times faster); on trend: P(factor <= 1); alone: P(this lever alone reaches it "
        "within 1000x). " + answer["note"] + ".",
    ]
    return "\n".join(lines)


@app.command()
@reports_errors
def runs(
    run: Annotated[
        list[str] | None,
        typer.Option("--run", help="Part of a run's name in data/training_runs.csv. Repeatable."),
    ] = None,
    loo: Annotated[
        bool,
        typer.Option(
            "--loo",
            help="Leave one run out: refit the software efficiency without each run (NUTS, "
            "about 10 seconds) and show its held-out 80 % interval.",
        ),
    ] = False,
    json_output: JsonOpt = False,
) -> None:
    """Published runs, each evaluated on its own plan: observed against predicted MFU."""
    # why here: the evaluation imports JAX and the data tables
    from forecast.analyses.published_runs import (
        leave_one_run_out,
        loo_summary,
        ratio_summary,
        run_records,
    )

    if loo:
        frame = leave_one_run_out()
        if run:
            keep = frame["run"].str.lower().map(lambda s: any(n.lower() in s for n in run))
            frame = frame.loc[keep]
        rows = frame.to_dict(orient="records")
        summary = loo_summary(frame) if rows else {"runs": 0}
        if json_output:
            typer.echo(
                json.dumps(
                    json_clean({"runs": rows, "summary": summary}), indent=2, allow_nan=False
                )
            )
            return
        if not rows:
            typer.echo("no evaluated run matches --run")
            return
        typer.echo(loo_table(rows, summary))
        return
    records = run_records(run)
    if json_output:
        out = {"runs": records, "summary": ratio_summary(records)}
        typer.echo(json.dumps(json_clean(out), indent=2, allow_nan=False))
        return
    typer.echo(runs_table(records, ratio_summary(records)))


def _days(days: float) -> str:
    # the bisection's floor, 0.1 day, is an upper bound: some plan finishes in that or less
    return "<=0.1 days" if days <= 0.1 * (1 + 1e-9) else f"{days:.3g} days"


def _megawatts(mw: float) -> str:
    return f"{mw / 1e3:.3g} GW" if mw >= 1e3 else f"{mw:.3g} MW"


def _dollars(usd: float) -> str:
    for scale, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if usd >= scale:
            return f"{usd / scale:.3g} {word} USD"
    return f"{usd:,.0f} USD"


def planner_text(answer: dict[str, Any]) -> str:
    """``wallcast plan`` (search form): one block per accelerator, median (80 % interval)."""

    def iv(d: dict, fmt) -> str:
        if d["median"] is None:
            return "-"
        lo = "?" if d["lower"] is None else fmt(d["lower"])
        hi = "inf" if d["upper"] is None else fmt(d["upper"])
        return f"{fmt(d['median'])} ({lo} – {hi})"

    flop = answer["training_flop"]
    budget = (
        sci(flop["median"])
        if answer["budget"] == "given"
        else f"the {answer['budget']}, {iv(flop, sci)}"
    )
    paper = answer.get("regime") == "paper"
    lead = (
        "The paper regime's best plan per posterior draw (relaxed: not a launchable plan)"
        if paper
        else "Best launchable plan per posterior draw"
    )
    lines = [
        f"{lead}: {budget} FLOP in {answer['duration_days']:g} "
        f"days at {answer['precision']} ({answer['draws']} draws of forecast "
        f"{answer['forecast_id']}, {answer['scenario']} scenario, {answer['year']:g}); "
        "median (80% interval)",
    ]
    for r in answer["accelerators"]:
        lines += [
            "",
            r["accelerator"],
            f"  P(feasible)         {fmt_pct(r['feasible_probability'])}",
            f"  utilization (MFU)   {iv(r['utilization'], lambda v: f'{v:.1%}')}",
            f"  cost multiplier     {iv(r['cost_multiplier'], lambda v: f'{v:.2f}x')}",
            f"  accelerators        {iv(r['accelerators'], sci)}",
            f"  accelerator-hours   {iv(r['accelerator_hours'], sci)}",
            f"  run length          {iv(r['run_days'], lambda v: f'{v:.0f} days')}",
            f"  step time           {iv(r['step_time_s'], lambda v: f'{v:.2f} s')}",
            f"  shortest run        {iv(r['shortest_run_days'], _days)}",
            f"  energy              {iv(r['energy_mwh'], lambda v: f'{sci(v)} MWh')}",
            f"  facility power      {iv(r['facility_power_mw'], _megawatts)}",
            f"  rental cost         {iv(r['money_usd'], _dollars)}",
        ]
        p = r["plan_median_draw"]
        if p and p.get("regime") == "paper":
            lines.append(
                f"  plan (median draw)  tp {p['tensor_parallel']} ({p['tensor_parallel_layout']}), "
                f"pp {p['pipeline_parallel']} ({p['layers_per_stage']:.3g} layers per stage), "
                f"dp {p['data_parallel']:.4g}, {p['microbatches']:.4g} microbatches of "
                f"{p['microbatch_tokens']:.4g} tokens, {p['accelerators']:.3g} accelerators "
                "(the paper's relaxation: continuous quantities)"
            )
        elif p:
            micro = (
                f"1 sequence of {p['sequence_length']:,} tokens over {p['context_parallel']} "
                "context-parallel ranks"
                if p["context_parallel"] > 1
                else f"{p['microbatch_sequences']} x {p['sequence_length']:,}-token sequences"
            )
            lines += [
                f"  plan (median draw)  tp {p['tensor_parallel']} ({p['tensor_parallel_layout']}), "
                f"pp {p['pipeline_parallel']} (x{p['virtual_stages']} interleaved), "
                f"dp {p['data_parallel']:,}, {p['microbatches']:,} microbatches of {micro}, "
                f"recompute {'on' if p['recompute'] else 'off'}, {p['layers']} layers, "
                f"{p['accelerators']:,} accelerators",
                "  per step (median draw, each resource's time; they overlap)  "
                + ", ".join(
                    f"{part} {secs:.3g} s"
                    for part, secs in p["step_breakdown_s"].items()
                    if secs > 0 and part != "layer_time"  # a per-layer time, not per step
                )
                + f"; bound by {p['bound_by']}",
            ]
        lines += [f"  * {g}" for g in r["assumptions"]]
        lines += [f"  * {what}: {why}" for what, why in r["cost_sources"].items()]
    lines += ["", answer["note"] + "."]
    return "\n".join(lines)
