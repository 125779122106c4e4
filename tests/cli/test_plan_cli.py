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
