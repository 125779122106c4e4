"""The step-time model's prediction for each published run, on the run's own plan.

Every row of ``data/training_runs.csv`` (:func:`forecast.data.training_runs.load_training_runs`)
is a run with its model, accelerator, parallel layout and achieved model FLOP utilization.  Its
plan, as published, goes through the evaluator of ``wallcast plan``
(:func:`forecast.model.evaluate.evaluate_plan`) with the model's default assumptions
(:func:`forecast.model.params.assumptions_with`: u_max 0.7, BF16 unless the row says FP8).
:func:`run_record` says what the model predicts beside what the run achieved;
:func:`predicted_runs` is the table the joint model's run-efficiency likelihood is fitted to
(:mod:`forecast.stats.run_efficiency`).

Conventions where a row leaves a value out (each record's ``assumed`` says which applied): one
sequence per microbatch, no interleaving, no full recomputation, BF16; as many microbatches as the
batch gives each replica.  Llama 3 uses 8 K/V heads (its Table 3); other rows are counted with
one K/V head per query head (they split no sequence over ranks, where it matters).  The deadline
is lifted (the question is the plan's utilization, not whether it finishes in 90 days).

Not evaluated (``skipped`` says why): mixture-of-experts runs (the plan model's experts are the
dense MLP's size, spread over an expert-parallel degree; fine-grained experts, shared experts and
latent attention are not modelled) and rows without a sequence length or batch.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from forecast.config.runtime import init_jax
from forecast.data.hardware import get_accelerator
from forecast.model import accelerators, evaluate, params

LLAMA3_KV_HEADS = 8  # The Llama 3 Herd of Models, Table 3 (grouped-query attention)
NO_DEADLINE_DAYS = 1e6


def _skip_reason(row: Any) -> str | None:
    if row["architecture"] != "dense":
        return "mixture of experts: the plan model's experts are dense-MLP-sized, not fine-grained"
    if row["sequence_length"] != row["sequence_length"] or (
        row["global_batch_sequences"] != row["global_batch_sequences"]
    ):
        return "sequence length or batch not published"
    return None


def run_record(row: Any, table: Any) -> dict[str, Any]:
    """One run (a row of :func:`load_training_runs`) evaluated on its own plan: a JSON-ready dict
    with ``run``, ``accelerator``, ``observed_mfu``, ``predicted_mfu``, ``ratio`` (predicted /
    observed), ``bound_by``, ``memory_bytes``, ``fits_in_memory``, ``plan``, ``assumed`` and
    ``skipped`` (``None`` when evaluated)."""
    base = {
        "run": row["run"],
        "accelerator": row["accelerator"],
        "run_kind": row["run_kind"],
        "observed_mfu": float(row["observed_mfu"]),
        "utilization_basis": row["utilization_basis"],
    }
    reason = _skip_reason(row)
    if reason:
        return {**base, "skipped": reason}
    init_jax()
    assumed = []
    precision = row["precision"] or "bf16"
    if not row["precision"]:
        assumed.append("BF16")
    hw, _ = accelerators.hardware_from_accelerator(
        get_accelerator(table, row["accelerator"]), precision
    )
    a = params.assumptions_with(
        duration_days=NO_DEADLINE_DAYS, bytes_per_number=1.0 if precision == "fp8" else 2.0
    )
    heads = int(row["attention_heads"])
    kv = LLAMA3_KV_HEADS if str(row["run"]).startswith("Llama 3") else heads

    def given(name: str, default: int, words: str) -> int:
        value = row[name]
        if value != value:  # NaN: not published
            assumed.append(words)
            return default
        return int(value)

    k = given("microbatch_sequences", 1, "one sequence per microbatch")
    v = given("virtual_stages", 1, "no interleaving")
    if not row["recompute"]:
        assumed.append("no full recomputation")
    dp = int(row["data_parallel"])
    batch_sequences = int(row["global_batch_sequences"])
    seq = int(row["sequence_length"])
    tokens = row["training_tokens"]
    model = evaluate.RunModel(
        params=float(row["active_params"]),
        layers=int(row["layers"]),
        d_model=float(row["d_model"]),
        heads=heads,
        kv_heads=kv,
        tokens=float(tokens) if tokens == tokens else 20.0 * float(row["active_params"]),
        global_batch_tokens=float(batch_sequences * seq),
    )
    plan = evaluate.ParallelPlan(
        tp=int(row["tensor_parallel"]),
        pp=int(row["pipeline_parallel"]),
        dp=dp,
        sequence_length=seq,
        microbatch_sequences=k,
        cp=int(row["context_parallel"]),
        recompute=row["recompute"] == "full",
        virtual_stages=v,
        microbatches=max(1, batch_sequences // (dp * k)),
    )
    ev = evaluate.evaluate_plan(hw, a, model, plan)
    observed = base["observed_mfu"]
    return {
        **base,
        "predicted_mfu": ev.utilization,
        "ratio": ev.utilization / observed,
        "bound_by": ev.bound_by,
        "memory_bytes": dict(ev.memory_bytes),
        "fits_in_memory": ev.memory_bytes["total"] <= ev.memory_bytes["usable"],
        "plan": {**plan._asdict(), "microbatches": ev.microbatches},
        "assumed": assumed,
        "skipped": None,
    }


def predicted_runs(runs: pd.DataFrame, hardware: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (validated ``training_runs.csv``) with the model's prediction on each run's plan:
    columns ``run``, ``architecture``, ``accelerator``, ``year``, ``observed_mfu``,
    ``predicted_mfu`` (NaN where not evaluated), ``skipped`` ('' where evaluated) and
    ``source_url``; ``hardware`` is the validated accelerator table the specs come from."""
    rows = []
    for _, row in runs.iterrows():
        record = run_record(row, hardware)
        rows.append(
            {
                "run": str(row["run"]),
                "architecture": str(row["architecture"]),
                "accelerator": str(row["accelerator"]),
                "year": float(row["year"]),
                "observed_mfu": float(row["observed_mfu"]),
                "predicted_mfu": record.get("predicted_mfu", math.nan),
                "skipped": record["skipped"] or "",
                "source_url": str(row["source_url"]),
            }
        )
    return pd.DataFrame(rows)
