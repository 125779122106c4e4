"""Tests of the command-line interface (forecast.cli)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forecast.cli import app

runner = CliRunner()

H100 = "NVIDIA H100 SXM5"
A100_80 = "NVIDIA A100 SXM4 80GB"


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_latency_wall_reproduces_sevilla_2024():
    # Sevilla et al. 2024, "Can AI scaling continue through 2030?": intranode latencies only,
    # t_L = 120 us/layer, B = 60M tokens, 9 months -> ~700T parameters (6.7e14), ~5.4e31 FLOP.
    res = invoke(
        "latency-wall", "--t-layer-us", "120", "--batch-tokens", "60e6",
        "--duration-days", "274", "--batch-exponent", "0", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["params"] == pytest.approx(6.7e14, rel=0.02)
    assert out["flop"] == pytest.approx(5.4e31, rel=0.02)


def test_latency_wall_table_output():
    res = invoke(
        "latency-wall", "--t-layer-us", "120", "--batch-tokens", "6e7", "--duration-days", "274",
        "--batch-exponent", "0",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "6.68e14 parameters" in res.stdout
    assert "5.36e31 FLOP" in res.stdout


def test_latency_wall_grows_the_batch_by_default():
    """Issue 22 fix (d): the batch grows as 60M (N / 5.6e11)^0.36 unless --batch-exponent says
    otherwise.  546 us per layer is the H100 plan's time per layer at its latency wall (4.5e31,
    tests/model/test_model_physics.py); the closed form gives it back, the batch then 7.5e8
    tokens.  A batch growing faster than the serial work (exponent >= 1.27) has no wall."""
    res = invoke(
        "latency-wall", "--t-layer-us", "546", "--batch-tokens", "60e6", "--duration-days", "90",
        "--json",
    )  # fmt: skip
    out = json.loads(res.stdout)
    assert out["flop"] == pytest.approx(4.52e31, rel=0.01)
    assert out["batch_tokens_at_wall"] == pytest.approx(7.45e8, rel=0.01)
    assert out["inputs"]["batch_exponent"] == 0.36
    res = invoke(
        "latency-wall", "--t-layer-us", "546", "--batch-tokens", "60e6", "--duration-days", "90",
        "--batch-exponent", "1.5",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "no latency wall" in res.stdout


@pytest.fixture(scope="module")
def walls_json() -> dict[str, dict]:
    res = invoke(
        "walls", "--accelerator", "H100", "--accelerator", "A100 SXM4 80GB", "--json",
        "--assumptions", "paper",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    return {r["accelerator"]: r for r in rows}


def test_walls_h100_matches_erdil_schneider_joseph_anchors(walls_json):
    # Erdil & Schneider-Joseph 2024: utilization starts to fall near 1e28 (2e28 in the blog) and
    # training becomes infeasible near 1e31 (2e31) FLOP for a 3-month run.
    h = walls_json[H100]
    assert 3e27 < h["data_movement_wall_flop"] < 6e28
    assert 3e30 < h["latency_wall_flop"] < 6e31
    assert 0 < h["max_utilization"] <= 1
    assert h["assumptions"] == []
    assert h["note"] is None
    plan = h["plan_at_wall"]
    for key in ("tensor_parallel", "tensor_parallel_layout", "pipeline_parallel", "microbatches",
                "data_parallel", "accelerators"):  # fmt: skip
        assert key in plan
    assert plan["tensor_parallel_layout"] in ("1D", "2D")


def test_walls_a100_efficient_scale_above_h100(walls_json):
    # [P] blog: H100's efficient scale is lower than A100's (FLOP/s outgrew memory and network).
    assert (
        walls_json[A100_80]["data_movement_wall_flop"] > walls_json[H100]["data_movement_wall_flop"]
    )


def test_walls_table_fills_gaps_with_footnote():
    res = invoke("walls", "--accelerator", "MI455X", "--assumptions", "paper")
    assert res.exit_code == 0, res.output
    assert "AMD Instinct MI455X [1]" in res.stdout
    assert (
        "[1] AMD Instinct MI455X: scale-out bandwidth not in the table: assumed 5.0e10"
        in res.stdout
    )
    assert "domain size not in the table: assumed 8" in res.stdout


def test_unknown_accelerator_exits_2_with_closest_names():
    res = runner.invoke(app, ["walls", "--accelerator", "H300"])
    assert res.exit_code == 2
    assert res.stderr.startswith("error: unknown accelerator 'H300'")
    assert "NVIDIA H100 SXM5" in res.stderr
    assert "NVIDIA H200 SXM" in res.stderr
    assert "Traceback" not in res.output
    assert res.stdout == ""


def test_fp8_without_fp8_figure_exits_2():
    res = runner.invoke(
        app,
        [
            "walls",
            "--accelerator",
            "A100 SXM4 80GB",
            "--precision",
            "fp8",
            "--assumptions",
            "paper",
        ],
    )
    assert res.exit_code == 2
    assert res.stderr.strip() == (
        "error: NVIDIA A100 SXM4 80GB has no FP8 figure in the hardware table; use --precision bf16"
    )


def test_curve_writes_png(tmp_path: Path):
    out = tmp_path / "sub" / "curve.png"
    res = invoke("curve", "--accelerator", "H100", "--out", str(out), "--assumptions", "paper")
    assert res.exit_code == 0, res.output
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000


def test_importing_cli_does_not_import_jax():
    code = (
        "import sys, forecast.cli; "
        "assert 'jax' not in sys.modules, 'jax imported'; "
        "assert 'forecast.model' not in sys.modules, 'forecast.model imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_walls_moe_options(walls_json):
    res = invoke(
        "walls", "-a", "H100", "--moe-experts", "64", "--moe-active", "2", "--json",
        "--assumptions", "paper",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    moe = json.loads(res.output)[0]
    dense = walls_json["NVIDIA H100 SXM5"]
    assert moe["moe_experts"] == 64 and moe["moe_active_experts"] == 2
    # fewer weight bytes per FLOP push the data-movement wall out; all-to-alls pull latency in
    assert moe["data_movement_wall_flop"] > 2 * dense["data_movement_wall_flop"]
    assert moe["latency_wall_flop"] < dense["latency_wall_flop"]
    bad = runner.invoke(app, ["walls", "-a", "H100", "--moe-experts", "2", "--moe-active", "4"])
    assert bad.exit_code == 2


def test_jax_compilation_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    """``WALLCAST_JAX_CACHE_DIR`` (empty / off: none) else XDG; an explicit
    ``JAX_COMPILATION_CACHE_DIR`` wins; configuring sets only environment variables."""
    from forecast.config import paths

    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.setenv("WALLCAST_JAX_CACHE_DIR", "off")
    assert paths.jax_cache_dir() is None and paths.configure_jax_cache() is None
    monkeypatch.delenv("WALLCAST_JAX_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.jax_cache_dir() == tmp_path / "xdg" / "wallcast" / "jax"
    monkeypatch.setenv("WALLCAST_JAX_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", raising=False)
    assert paths.configure_jax_cache() == tmp_path / "c" and (tmp_path / "c").is_dir()
    import os

    assert os.environ["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "c")
    # every program is kept (a warm refit ~1.8x faster than keeping those of 0.5 s and more)
    assert float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]) == 0.0
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")  # a user's own wins
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR")
    assert paths.configure_jax_cache() == tmp_path / "c"
    assert os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0.5"
    monkeypatch.setenv("WALLCAST_JAX_CACHE_DIR", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR")
    assert paths.configure_jax_cache() is None  # cannot be created: no cache, no error


def test_plan_forms_refuse_half_given_inputs():
    """``wallcast plan``: --tp, --pp and --dp together evaluate a plan; none of them searches;
    anything between is one error line, exit 2. The search form needs a budget (or a year) and
    an accelerator (or a year)."""
    res = runner.invoke(app, ["plan", "-a", "H100", "--flop", "1e25", "--tp", "8"])
    assert res.exit_code == 2 and "missing --dp, --pp" in res.output
    res = runner.invoke(app, ["plan", "--flop", "1e28"])
    assert res.exit_code == 2
    assert res.stderr.strip() == "error: give --accelerator, or --year for the frontier accelerator"
    res = runner.invoke(app, ["plan", "-a", "H100"])
    assert res.exit_code == 2
    assert res.stderr.strip() == "error: give --flop, or --year for the frontier run of that year"
    assert "Traceback" not in res.output
    res = runner.invoke(app, ["plan", "-a", "H100", "--flop", "1e28", "--cp", "2"])
    assert res.exit_code == 2 and "--cp: options of a given plan" in res.output
    res = runner.invoke(
        app, ["plan", "-a", "H100", "--flop", "1e25", "--tp", "8", "--pp", "4", "--dp", "8",
              "--year", "2030"],
    )  # fmt: skip
    assert res.exit_code == 2 and "--year: options of the search form" in res.output


def test_walls_without_a_published_forecast_say_both_ways_on(tmp_path, monkeypatch):
    """Walls over the forecast need one: without it, one error line naming the folder, the run
    that makes one and the paper's assumptions that need none."""
    monkeypatch.setenv("WALLCAST_OUTPUTS_DIR", str(tmp_path))
    res = runner.invoke(app, ["walls", "-a", "H100"])
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert line.startswith(f"error: {tmp_path}") and "wallcast run" in line
    assert "--assumptions paper" in line and "\n" not in line
