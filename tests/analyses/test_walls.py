"""The walls service (forecast.analyses.accelerator_walls): the records of ``wallcast walls --json`` and ``curve``."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forecast.analyses.accelerator_walls import (
    PAPER_ASSUMPTIONS_NOTE,
    SEARCH_LOG10_FLOP_RANGE,
    WallsInputError,
    curve_record,
    hardware_table_hash,
    hardware_table_path,
    walls_record,
    walls_records,
)
from forecast.cli import app
from forecast.queries.formatting import fmt_log10_flop
from forecast.queries.posterior_walls import wall_log10_flop

REPO = Path(__file__).resolve().parents[2]

# Reference records: the output of
#   wallcast walls -a H100 -a "A100 SXM4 80GB" --json
# at commit 79e61aa (before the walls service existed; the command ran its own loop over
# forecast.model.search.find_walls), data/hardware.csv of that commit, on x86-64 CPU with JAX in
# float64; regenerated the same way after the step-time physics of issue 11 (docs/validation.md
# section 8), after the four fixes of issue 22 (section 9, with the records' regime keys) and
# after the 2D axes were oriented (review finding 2, section 9).  They pin the service to the command's numbers; a deliberate change of the model
# (forecast/model/) moves them, and then they are regenerated the same way.
# The two keys that say where the inputs come from were added when the forecast's draws became
# the default source (issue 24); every number above is unchanged.
REFERENCE_RECORDS = [
    {
        "accelerator": "NVIDIA H100 SXM5",
        "precision": "bf16",
        "duration_days": 90.0,
        "moe_experts": 1,
        "moe_active_experts": 1,
        "utilization_threshold": 0.8,
        "max_utilization": 0.6999277152165637,
        "data_movement_wall_flop": 5.099539971155519e28,
        "data_movement_wall_log10_flop": 28.707531000215617,
        "latency_wall_flop": 4.549880601500462e31,
        "latency_wall_log10_flop": 31.657999999999998,
        "plan_at_wall": {
            "tensor_parallel": 128,
            "tensor_parallel_layout": "2D",
            "pipeline_parallel": 256,
            "microbatches": 1224.4517772061438,
            "data_parallel": 361.4748927528153,
            "microbatch_tokens": 496.46277786514554,
            "accelerators": 11844809.285724252,
            "utilization": 0.5598225449255387,
        },
        "hardware": {
            "flops": 989000000000000.0,
            "hbm_bandwidth": 3350000000000.0,
            "hbm_capacity": 80000000000.0,
            "scaleup_bandwidth": 450000000000.0,
            "scaleup_domain_size": 8.0,
            "scaleout_bandwidth": 50000000000.0,
        },
        "assumptions": [],
        "note": None,
        "regime": "paper",
        "regime_note": "paper: plans relaxed to continuous quantities (microbatches of any number of "
        "tokens, fractional degrees and layers per stage), as Erdil & Schneider-Joseph "
        "(2024)",
        "assumptions_source": "paper",
        "assumptions_note": PAPER_ASSUMPTIONS_NOTE,
    },
    {
        "accelerator": "NVIDIA A100 SXM4 80GB",
        "precision": "bf16",
        "duration_days": 90.0,
        "moe_experts": 1,
        "moe_active_experts": 1,
        "utilization_threshold": 0.8,
        "max_utilization": 0.6999598944785108,
        "data_movement_wall_flop": 1.4428255565634796e29,
        "data_movement_wall_log10_flop": 29.159213826310726,
        "latency_wall_flop": 3.908408957924041e31,
        "latency_wall_log10_flop": 31.592000000000002,
        "plan_at_wall": {
            "tensor_parallel": 512,
            "tensor_parallel_layout": "2D",
            "pipeline_parallel": 256,
            "microbatches": 1278.3194047033862,
            "data_parallel": 810.2679889548981,
            "microbatch_tokens": 255.824045210729,
            "accelerators": 106203445.8482964,
            "utilization": 0.5599694994524693,
        },
        "hardware": {
            "flops": 312000000000000.0,
            "hbm_bandwidth": 2039000000000.0,
            "hbm_capacity": 80000000000.0,
            "scaleup_bandwidth": 300000000000.0,
            "scaleup_domain_size": 8.0,
            "scaleout_bandwidth": 25000000000.0,
        },
        "assumptions": [],
        "note": None,
        "regime": "paper",
        "regime_note": "paper: plans relaxed to continuous quantities (microbatches of any number of "
        "tokens, fractional degrees and layers per stage), as Erdil & Schneider-Joseph "
        "(2024)",
        "assumptions_source": "paper",
        "assumptions_note": PAPER_ASSUMPTIONS_NOTE,
    },
]


def assert_same_record(got: dict, want: dict, rel: float = 1e-9) -> None:
    """Same keys, same strings and integers, floats within ``rel`` (the search is
    deterministic; the tolerance only absorbs a different float summation order)."""
    assert list(got) == list(want)
    for key, value in want.items():
        if isinstance(value, dict):
            assert_same_record(got[key], value, rel)
        elif isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=rel), key
        else:
            assert got[key] == value, key
            assert type(got[key]) is type(value), key


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return walls_records(["H100", "A100 SXM4 80GB"])


def test_service_reproduces_the_walls_command_of_before(records):
    assert len(records) == 2
    for got, want in zip(records, REFERENCE_RECORDS, strict=True):
        assert_same_record(got, want)


def test_walls_command_prints_the_service_records(records):
    res = CliRunner().invoke(
        app,
        ["walls", "-a", "H100", "-a", "A100 SXM4 80GB", "--json", "--assumptions", "paper"],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == records  # JSON round-trip: plain floats, ints, None


def test_record_is_json_ready_and_callers_cannot_corrupt_the_cache():
    h100 = walls_record("H100")
    assert json.loads(json.dumps(h100, allow_nan=False)) == h100
    h100["plan_at_wall"]["tensor_parallel"] = -1
    h100["assumptions"].append("changed by a caller")
    again = walls_record("NVIDIA H100 SXM5")
    assert_same_record(again, REFERENCE_RECORDS[0])


def test_record_by_row_equals_record_by_name(records):
    from forecast.data.hardware import get_accelerator, load_hardware

    row = get_accelerator(load_hardware(), "A100 SXM4 80GB")
    assert walls_record(row) == records[1]


def test_hardware_table_hash_is_the_sha256_of_the_table(tmp_path):
    shipped = REPO / "data" / "hardware.csv"
    assert hardware_table_path() == shipped
    assert hardware_table_hash() == hashlib.sha256(shipped.read_bytes()).hexdigest()
    copy = tmp_path / "hardware.csv"
    copy.write_bytes(shipped.read_bytes())
    assert hardware_table_hash(copy) == hardware_table_hash()
    copy.write_text(shipped.read_text().replace("3.35e12", "3.9e12", 1))
    assert hardware_table_hash(copy) != hardware_table_hash()


def test_another_table_gives_another_record(tmp_path, records):
    # H100 with 3.9e12 B/s of HBM (an H100 NVL-like part): more bandwidth moves the
    # data-movement wall out, the hardware block reports the table's figure.
    shipped = (REPO / "data" / "hardware.csv").read_text()
    assert "NVIDIA H100 SXM5,NVIDIA,2022-09,shipped,true,9.89e14,1.979e15,3.35e12," in shipped
    table = tmp_path / "hardware.csv"
    table.write_text(shipped.replace("3.35e12", "3.9e12"))
    faster = walls_record("H100", hardware=table)
    assert faster["hardware"]["hbm_bandwidth"] == 3.9e12
    assert faster["data_movement_wall_flop"] > records[0]["data_movement_wall_flop"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"duration_days": 0.0}, "duration_days must be a positive number"),
        ({"duration_days": math.inf}, "duration_days must be a positive number"),
        ({"moe_experts": 2, "moe_active_experts": 4}, "cannot exceed moe_experts"),
        ({"moe_experts": 0}, "must be at least 1"),
    ],
)
def test_bad_arguments_raise_one_clear_error(kwargs, message):
    with pytest.raises(WallsInputError, match=message):
        walls_record("H100", **kwargs)


def test_wall_beyond_the_grid_reads_back_as_infinity():
    lo, hi = SEARCH_LOG10_FLOP_RANGE
    record = {
        "data_movement_wall_log10_flop": None,
        "latency_wall_log10_flop": None,
        "note": f"data-movement wall below the search grid (under 1e{lo:.0f} FLOP); "
        f"latency wall beyond the search grid (above 1e{hi:.0f} FLOP)",
    }
    assert wall_log10_flop(record, "data_movement") == -math.inf
    assert wall_log10_flop(record, "latency") == math.inf
    assert wall_log10_flop({"latency_wall_log10_flop": 31.2}, "latency") == 31.2
    # as the walls table and the report write them
    assert fmt_log10_flop(wall_log10_flop(record, "latency"), SEARCH_LOG10_FLOP_RANGE) == ">1e40"
    assert fmt_log10_flop(wall_log10_flop(record, "data_movement"), SEARCH_LOG10_FLOP_RANGE) == (
        "<1e20"
    )
    assert fmt_log10_flop(28.716091767256867, SEARCH_LOG10_FLOP_RANGE) == "5.2e28"


def test_search_range_matches_the_plan_search_grid():
    from forecast.model.search import DEFAULT_LOG10_FLOP_GRID

    assert (DEFAULT_LOG10_FLOP_GRID[0], DEFAULT_LOG10_FLOP_GRID[-1]) == SEARCH_LOG10_FLOP_RANGE


def test_curve_carries_the_walls_and_stops_at_the_latency_wall(records):
    c = curve_record("H100", log10_flop_range=(22.0, 33.0), step_log10=0.1)
    assert c["log10_flop"][0] == 22.0 and c["log10_flop"][-1] == 33.0
    assert len(c["log10_flop"]) == len(c["utilization"]) == 111
    h100 = records[0]
    lat = h100["latency_wall_log10_flop"]
    assert c["latency_wall_log10_flop"] == lat
    assert c["data_movement_wall_log10_flop"] == h100["data_movement_wall_log10_flop"]
    for x, u in zip(c["log10_flop"], c["utilization"], strict=True):
        assert (u is None) == (x > lat), x  # no plan finishes past the latency wall
    feasible = [u for u in c["utilization"] if u is not None]
    # (the curve's own 0.1-dex grid: since issue 11 the small-scale plateau rises slowly towards
    # u_max as gradient accumulation amortizes the gradient all-reduce, so grids differ by ~2e-6)
    assert max(feasible) == pytest.approx(h100["max_utilization"], rel=1e-4)
    assert json.loads(json.dumps(c, allow_nan=False)) == c


def test_importing_the_service_does_not_import_jax():
    code = "import sys, forecast.analyses.accelerator_walls; assert 'jax' not in sys.modules, 'jax imported'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
