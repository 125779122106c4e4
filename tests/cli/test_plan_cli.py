"""``wallcast plan``: a given plan evaluated from the command line (forecast.cli.plan)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from forecast.cli import app

runner = CliRunner()

LLAMA_LIKE = [
    "plan", "-a", "H100", "--flop", "3.8e25", "--days", "90", "--tp", "8", "--pp", "16",
    "--dp", "128", "--sequence-length", "8192", "--microbatch-sequences", "1",
]  # fmt: skip


def test_plan_json_has_integer_degrees_and_whole_sequences():
    res = runner.invoke(app, [*LLAMA_LIKE, "--recompute", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    p = out["plan"]
    for key in ("tp", "pp", "dp", "cp", "microbatches", "accelerators", "virtual_stages"):
        assert isinstance(p[key], int), key
    assert p["accelerators"] == 8 * 16 * 128
    assert p["microbatch_tokens"] == 8192.0
    assert isinstance(out["model"]["layers"], int) and isinstance(out["model"]["heads"], int)
    assert out["plan"]["tp"] <= out["model"]["heads"]
    assert out["global_batch_tokens"] == p["dp"] * p["microbatches"] * 8192
    assert out["global_batch_tokens"] <= out["model"]["global_batch_tokens"]
    parts = out["step_breakdown_s"]
    for key in ("compute", "hbm", "tensor", "context", "pipeline", "latency", "bubble"):
        assert parts[key] >= 0.0
    assert 0.0 < out["utilization"] < 0.7
    assert out["feasible"] == (not out["reasons"])
    assert out["bound_by"] in ("compute", "hbm", "tensor", "context", "pipeline", "latency")


def test_plan_table_says_why_a_plan_fails():
    # 4 sequences per microbatch and no pipeline: the whole model's weights on each tp group
    res = runner.invoke(app, [*LLAMA_LIKE, "--microbatch-sequences", "4", "--pp", "1"])
    assert res.exit_code == 0, res.output
    assert "feasible: no" in res.stdout
    assert "GB per accelerator" in res.stdout
    assert "utilization (MFU)" in res.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tp", "0"], "--tp"),
        (["-a", "H300"], "H300"),
        (["--flop", "-1"], "--flop"),
        (["--days", "0"], "--days"),
    ],
)
def test_bad_plan_arguments_exit_2_without_traceback(args, message):
    res = runner.invoke(app, [*LLAMA_LIKE, *args])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output
    assert res.stdout == "" or "Usage" in res.output


MOE_PLAN = [
    "plan", "-a", "H100", "--flop", "1e26", "--tp", "8", "--pp", "8", "--dp", "256",
    "--moe-experts", "64", "--moe-active", "2",
]  # fmt: skip


def test_expert_parallel_degree_spreads_the_experts():
    """--ep 32 of 64 experts: two experts per rank, more weights per rank than one each."""
    res = runner.invoke(app, [*MOE_PLAN, "--ep", "32"])
    assert res.exit_code == 0, res.output
    assert "ep 32 (2 experts per rank)" in res.stdout
    spread = json.loads(runner.invoke(app, [*MOE_PLAN, "--ep", "32", "--json"]).stdout)
    one_each = json.loads(runner.invoke(app, [*MOE_PLAN, "--json"]).stdout)
    assert spread["plan"]["ep"] == 32 and one_each["plan"]["ep"] == 64
    mem = "weights_and_gradients"
    assert spread["memory_bytes"][mem] > one_each["memory_bytes"][mem]


def test_the_paper_regime_evaluates_the_relaxed_step_model():
    res = runner.invoke(app, [*LLAMA_LIKE, "--pp", "12", "--regime", "paper", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["regime"] == "paper"
    assert out["layers_per_stage"] == pytest.approx(out["model"]["layers"] / 12)
    realistic = json.loads(runner.invoke(app, [*LLAMA_LIKE, "--pp", "12", "--json"]).stdout)
    assert realistic["regime"] == "realistic"
    assert realistic["layers_per_stage"] == -(-realistic["model"]["layers"] // 12)
    text = runner.invoke(app, [*LLAMA_LIKE, "--pp", "12", "--regime", "paper"]).stdout
    assert "the paper's step model (L / pp layers per stage)" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*MOE_PLAN, "--ep", "3"], "does not divide --moe-experts 64"),
        ([*LLAMA_LIKE, "--ep", "4"], "a dense model has no experts"),
        ([*LLAMA_LIKE, "--regime", "paper", "--cp", "2"], "--cp: the paper regime"),
        ([*LLAMA_LIKE, "--regime", "paper", "--recompute"], "--recompute: the paper regime"),
        (["plan", "-a", "H100", "--flop", "1e26", "--ep", "8"], "--ep"),
        ([*LLAMA_LIKE, "--regime", "idealized"], "--regime"),
    ],
)
def test_bad_expert_or_regime_arguments_exit_2(args, message):
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output
