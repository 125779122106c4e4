"""Numbers for docs/validation.md section 11: each published run's own plan, evaluated.

Reads data/training_runs.csv, evaluates every dense row's published layout with the plan model
(forecast.model.evaluate.evaluate_plan, the model's default Assumptions, no fitted efficiency) and
prints a markdown table: observed MFU, predicted MFU, their ratio, what binds a layer, and the
memory the model finds per accelerator.  Rows the evaluator cannot take yet are listed with why.

Run: .venv/bin/python scripts/real_runs.py
"""

from __future__ import annotations

import pandas as pd

from forecast.config.runtime import init_jax
from forecast.data.evidence import load_training_runs
from forecast.data.hardware import get_accelerator, load_hardware
from forecast.model.accelerators import hardware_from_accelerator
from forecast.model.evaluate import ParallelPlan, RunModel, evaluate_plan
from forecast.model.params import assumptions_with

init_jax()
runs = load_training_runs()  # validated: one clear error naming file, row and field
table = load_hardware()
print(
    "| run | accelerator | layout (tp x pp x dp x cp, v) | observed | predicted | ratio | binds "
    "| memory / usable (GB) |"
)
print("|---|---|---|---|---|---|---|---|")
skipped = []
for _, r in runs.iterrows():
    if r["architecture"] != "dense":
        skipped.append(
            f"{r['run']}: mixture of experts (the evaluator's MoE has one expert per rank)"
        )
        continue
    if pd.isna(r["sequence_length"]) or pd.isna(r["global_batch_sequences"]):
        skipped.append(f"{r['run']}: sequence length or batch not published")
        continue
    precision = r["precision"] or "bf16"
    hw, _ = hardware_from_accelerator(get_accelerator(table, r["accelerator"]), precision)
    # the deadline never binds here: the question is the utilization of the published plan
    a = assumptions_with(duration_days=1e6, bytes_per_number=1.0 if precision == "fp8" else 2.0)
    heads = int(r["attention_heads"])
    kv = 8 if r["run"].startswith("Llama") else heads  # Llama 3: 8 K/V heads (its Table 3)
    seq = int(r["sequence_length"])
    k = 1 if pd.isna(r["microbatch_sequences"]) else int(r["microbatch_sequences"])
    v = 1 if pd.isna(r["virtual_stages"]) else int(r["virtual_stages"])
    tp, pp, dp, cp = (
        int(r[c])
        for c in ("tensor_parallel", "pipeline_parallel", "data_parallel", "context_parallel")
    )
    batch_seqs = int(r["global_batch_sequences"])
    m = max(1, batch_seqs // (dp * k))
    tokens = float(r["training_tokens"]) if not pd.isna(r["training_tokens"]) else 1e12
    model = RunModel(
        params=float(r["active_params"]),
        layers=int(r["layers"]),
        d_model=float(r["d_model"]),
        heads=heads,
        kv_heads=kv,
        tokens=tokens,
        global_batch_tokens=float(batch_seqs * seq),
    )
    plan = ParallelPlan(
        tp=tp, pp=pp, dp=dp, sequence_length=seq, microbatch_sequences=k, cp=cp,
        recompute=r["recompute"] == "full", virtual_stages=v, microbatches=m,
    )  # fmt: skip
    ev = evaluate_plan(hw, a, model, plan)
    mem = ev.memory_bytes
    observed = float(r["observed_mfu"])
    print(
        f"| {r['run']} | {r['accelerator']} | {tp} x {pp} x {dp} x {cp}, v {v} | {observed:.3f} "
        f"| {ev.utilization:.3f} | {ev.utilization / observed:.2f} | {ev.bound_by} "
        f"| {mem['total'] / 1e9:.0f} / {mem['usable'] / 1e9:.0f} |"
    )
print()
for line in skipped:
    print("skipped:", line)
print("note: ratios are predicted / observed; the model's max_utilization is", a.max_utilization)
