"""``wallcast plan`` and ``wallcast runs``: evaluate parallel plans as runs launch them.

Given an accelerator, a compute budget, a run length and the integer degrees of a plan, prints
its model FLOP utilization, step time with its parts, memory per accelerator, the accelerators it
takes and whether it finishes in time (:func:`forecast.analyses.accelerator_walls.plan_record`,
:mod:`forecast.model.evaluate`).  ``runs`` evaluates each published run of
``data/training_runs.csv`` on its own plan beside its observed utilization
(:mod:`forecast.analyses.published_runs`).  JAX is imported inside the commands.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from forecast.cli.app import app, check_positive, json_clean, reports_errors
from forecast.cli.options import (
    HardwareOpt,
    JsonOpt,
    MoeActiveOpt,
    MoeExpertsOpt,
    Precision,
    PrecisionOpt,
)
from forecast.cli.tables import loo_table, plan_text, runs_table


@app.command()
@reports_errors
def plan(
    accelerator: Annotated[
        str,
        typer.Option(
            "--accelerator",
            "-a",
            help="Accelerator name, exact or a unique part of it (e.g. H100).",
        ),
    ],
    flop: Annotated[
        float,
        typer.Option(
            "--flop", help="Training compute, FLOP; the model is its compute-optimal one."
        ),
    ],
    tp: Annotated[int, typer.Option("--tp", min=1, help="Tensor-parallel degree.")],
    pp: Annotated[int, typer.Option("--pp", min=1, help="Pipeline-parallel stages.")],
    dp: Annotated[int, typer.Option("--dp", min=1, help="Data-parallel replicas.")],
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
    hardware: HardwareOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Evaluate a given plan: utilization (MFU), step time and its parts, memory, feasibility."""
    check_positive(flop, "--flop")
    check_positive(days, "--days")
    # why here: the plan evaluation imports JAX and the data tables
    from forecast.analyses.accelerator_walls import plan_record

    record = plan_record(
        accelerator,
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
        hardware=hardware,
    )
    if json_output:
        typer.echo(json.dumps(json_clean(record), indent=2, allow_nan=False))
        return
    typer.echo(plan_text(record))


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
            "about a minute) and show its held-out 80 % interval.",
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
