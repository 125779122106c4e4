"""Tests of the evidence tables and their validating loaders (forecast.data.evidence)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from forecast.config.errors import DataValidationError
from forecast.data.evidence import (
    DEFAULT_LATENCY_MEASUREMENTS_PATH,
    DEFAULT_MODEL_SHAPES_PATH,
    DEFAULT_SCALEUP_DOMAINS_PATH,
    MODEL_SHAPES_COLUMNS,
    load_latency_measurements,
    load_model_shapes,
    load_scaleup_domains,
    validate_model_shapes,
)
from forecast.data.hardware import load_frontier_runs, load_hardware


def _raw(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _write(tmp_path: Path, df: pd.DataFrame, name: str) -> Path:
    p = tmp_path / name
    df.to_csv(p, index=False)
    return p


def _row(raw: pd.DataFrame, column: str, value: str) -> int:
    return int(np.flatnonzero(raw[column].to_numpy() == value)[0])


def _error(
    tmp_path: Path, raw: pd.DataFrame, name: str, loader, i: int, field: str, value: str
) -> DataValidationError:
    bad = raw.copy()
    bad.loc[i, field] = value
    with pytest.raises(DataValidationError) as ei:
        loader(_write(tmp_path, bad, name))
    return ei.value


# ----------------------------------------------------------------------------- shipped tables


def test_model_shapes_shipped() -> None:
    s = load_model_shapes()
    assert tuple(s.columns[: len(MODEL_SHAPES_COLUMNS)]) == MODEL_SHAPES_COLUMNS
    assert len(s) >= 40
    assert set(s["architecture"]) == {"dense", "moe"}
    assert s["year"].min() >= 2018 and s["year"].max() < 2027
    assert s["source_url"].str.len().gt(10).all()
    # the laws have data: dense depths, batches with compute, published MFU
    dense = s["architecture"] == "dense"
    assert s.loc[dense, "layers"].notna().sum() >= 60
    assert (s["batch_size_tokens"].notna() & s["training_compute_flop"].notna()).sum() >= 40
    assert s["utilization_mfu"].notna().sum() >= 8
    # published figures (Dubey et al. 2024, Table 3; Brown et al. 2020, Table 2.1)
    llama = s.loc[s["model"] == "Llama 3.1 405B"].iloc[0]
    assert (llama["layers"], llama["d_model"]) == (126, 16384)
    # Table 4 of arXiv:2407.21783: 2,048 sequences x 8,192 tokens; 3.8e25 FLOP
    assert llama["batch_size_tokens"] == 2048 * 8192 and llama["training_compute_flop"] == 3.8e25
    gpt3 = s.loc[s["model"] == "GPT-3 175B (davinci)"].iloc[0]
    assert (gpt3["layers"], gpt3["d_model"], gpt3["batch_size_tokens"]) == (96, 12288, 3.2e6)
    # 6ND rows are 6 x active x tokens
    six = s["compute_method"] == "6ND"
    ratio = s.loc[six, "training_compute_flop"] / (
        6 * s.loc[six, "active_params"] * s.loc[six, "training_tokens"]
    )
    assert np.allclose(ratio, 1.0, atol=0.01)
    moe = s.loc[~dense]
    assert (moe["active_params"] < moe["total_params"]).all()


def test_model_shapes_agree_with_frontier_runs() -> None:
    """Batches agree with data/frontier_runs.csv (Epoch) to 5 % (Epoch writes PaLM's 2^22 tokens
    as 4M), compute to 15 % (6ND vs Epoch
    estimates: GLM-130B differs by 14 %, BLOOM by 6 %, see data/README.md)."""
    s = load_model_shapes().set_index("model")
    runs = load_frontier_runs().set_index("model")
    same = {
        "GPT-3 175B (davinci)": "GPT-3 175B (davinci)",
        "Llama 3.1 405B": "Llama 3.1-405B",
        "DeepSeek-V3": "DeepSeek-V3",
        "Nemotron-4 340B": "Nemotron-4 340B",
        "GLM-130B": "GLM-130B",
        "BLOOM-176B": "BLOOM-176B",
        "PaLM 540B": "PaLM (540B)",
        "Megatron-Turing NLG 530B": "Megatron-Turing NLG 530B",
        "Falcon-180B": "Falcon-180B",
    }
    for ours, theirs in same.items():
        assert s.loc[ours, "batch_size_tokens"] == pytest.approx(
            runs.loc[theirs, "batch_size_tokens"], rel=0.05
        ), ours
        assert s.loc[ours, "training_compute_flop"] == pytest.approx(
            runs.loc[theirs, "training_compute_flop"], rel=0.15
        ), ours


def test_scaleup_domains_shipped() -> None:
    d = load_scaleup_domains()
    assert len(d) >= 25
    assert set(d["topology"]) == {"switched", "torus", "mesh"}
    assert d.loc[d["topology"] != "switched", "in_network_reduction"].eq(False).all()
    by = d.set_index("system")
    assert by.loc["NVIDIA GB200 NVL72", "domain_size"] == 72
    assert by.loc["NVIDIA HGX H100 8-GPU", "domain_size"] == 8
    assert by.loc["Google TPU v5p pod", "domain_size"] == 8960
    # NVL576 counts dies: 144 Rubin Ultra packages, in the unit of data/hardware.csv
    assert by.loc["NVIDIA Rubin Ultra NVL576", "domain_size"] == 144
    shipped = d["status"] == "shipped"
    assert d.loc[shipped, "available_year"].notna().all()
    assert (
        d["available_year"].dropna() >= d.loc[d["available_year"].notna(), "announced_year"]
    ).all()
    # domains of accelerators that data/hardware.csv also lists agree with it
    hw = load_hardware().set_index("name")
    for system, acc in [
        ("NVIDIA GB200 NVL72", "NVIDIA GB200 NVL72 (per GPU)"),
        ("Google TPU7x (Ironwood) pod", "Google TPU7x (v7 Ironwood)"),
        ("AWS Trn2 UltraServer", "AWS Trainium2"),
        ("AMD Instinct MI355X platform", "AMD Instinct MI355X"),
    ]:
        assert by.loc[system, "domain_size"] == hw.loc[acc, "scaleup_domain_size"], system
        assert by.loc[system, "topology"] == hw.loc[acc, "scaleup_topology"], system


def test_latency_measurements_shipped() -> None:
    lat = load_latency_measurements()
    assert set(lat["kind"]) == {"measurement", "tuning_constant"}
    # NCCL tuning.cc, tree LL: base 6.8 us, NVLink hop 0.6 us, network hop 5.0 us since 2.21.5
    consts = lat.loc[
        (lat["kind"] == "tuning_constant")
        & (lat["software"] == "NCCL 2.21.5")
        & (lat["protocol"] == "LL")
        & (lat["algorithm"] == "tree")
    ].set_index("quantity")["value_s"]
    assert consts["allreduce_base_latency"] == pytest.approx(6.8e-6)
    assert consts["intra_domain_hop_latency"] == pytest.approx(0.6e-6)
    assert consts["inter_domain_hop_latency"] == pytest.approx(5.0e-6)
    assert lat["value_s"].between(1e-7, 1e-3).all()


def test_default_paths_are_in_data() -> None:
    for p in (
        DEFAULT_MODEL_SHAPES_PATH,
        DEFAULT_SCALEUP_DOMAINS_PATH,
        DEFAULT_LATENCY_MEASUREMENTS_PATH,
    ):
        assert p.parent.name == "data" and p.is_file()


# ----------------------------------------------------------------------------- adversarial rows

SHAPES = "shapes.csv"


@pytest.fixture(scope="module")
def raw_shapes() -> pd.DataFrame:
    return _raw(DEFAULT_MODEL_SHAPES_PATH)


@pytest.mark.parametrize(
    ("model", "field", "value", "needle"),
    [
        ("Chinchilla", "layers", "eighty", "'eighty' is not a number"),
        ("Chinchilla", "layers", "-80", "must be positive"),
        ("Chinchilla", "layers", "80.5", "whole number"),
        ("Chinchilla", "total_params", "-7e10", "must be positive"),
        ("Chinchilla", "utilization_mfu", "46", "46 looks like %"),
        ("DeepSeek-V3", "active_params", "7e11", "exceed the 6.71e11 total"),
        ("Chinchilla", "active_params", "3.5e10", "dense model has active = total"),
        ("DeepSeek-V3", "active_params", "6.71e11", "fewer active than total"),
        ("Chinchilla", "date", "2017-12", "bad date '2017-12'"),
        ("Chinchilla", "date", "2022-13", "bad date"),
        ("Chinchilla", "date", "2031-01", "year 2018..2030"),
        ("Chinchilla", "source_url", "", "required value is empty"),
        ("Chinchilla", "architecture", "sparse", "'sparse' is not one of dense, moe"),
        ("Chinchilla", "compute_method", "", "required when training_compute_flop"),
        ("Chinchilla", "compute_method", "guess", "'guess' is not one of"),
        ("PaLM 540B", "training_compute_flop", "3e24", "is not 6 x active_params"),
        ("Chinchilla", "model", "gopher (280b)", "duplicate model 'gopher (280b)'"),
    ],
)
def test_model_shapes_rejects_bad_cells(
    tmp_path: Path, raw_shapes: pd.DataFrame, model: str, field: str, value: str, needle: str
) -> None:
    i = _row(raw_shapes, "model", model)
    err = _error(tmp_path, raw_shapes, SHAPES, load_model_shapes, i, field, value)
    assert err.file == SHAPES
    assert err.row == i + 1
    assert err.field == field
    assert needle in str(err)
    assert f"(line {i + 2})" in str(err)


def test_model_shapes_rejects_batch_above_tokens(tmp_path: Path, raw_shapes: pd.DataFrame) -> None:
    bad = raw_shapes.copy()
    i = _row(bad, "model", "Chinchilla")
    bad.loc[i, ["batch_size_tokens", "training_tokens"]] = ["5e9", "1e9"]
    with pytest.raises(DataValidationError) as ei:
        load_model_shapes(_write(tmp_path, bad, SHAPES))
    assert (ei.value.row, ei.value.field) == (i + 1, "batch_size_tokens")
    assert "batch 5e9 exceeds the 1e9 training tokens" in str(ei.value)


def test_model_shapes_header_problems(tmp_path: Path, raw_shapes: pd.DataFrame) -> None:
    with pytest.raises(DataValidationError) as ei:
        load_model_shapes(_write(tmp_path, raw_shapes.drop(columns=["layers"]), SHAPES))
    assert ei.value.row is None and ei.value.field == "layers"
    assert "missing column 'layers' (line 1)" in str(ei.value)


def test_model_shapes_validate_returns_every_problem(raw_shapes: pd.DataFrame) -> None:
    bad = raw_shapes.copy()
    bad.loc[0, "layers"] = "x"
    bad.loc[3, "date"] = "2016-01"
    bad.loc[5, "source_url"] = ""
    errors = validate_model_shapes(bad, SHAPES)
    assert [(e.row, e.field) for e in errors] == [
        (1, "layers"),
        (4, "date"),
        (6, "source_url"),
    ]


DOMAINS = "domains.csv"


@pytest.mark.parametrize(
    ("system", "field", "value", "needle"),
    [
        ("NVIDIA GB200 NVL72", "domain_size", "72.5", "whole number"),
        ("NVIDIA GB200 NVL72", "domain_size", "-72", "must be positive"),
        ("NVIDIA GB200 NVL72", "domain_size", "seventy-two", "is not a number"),
        ("NVIDIA GB200 NVL72", "scaleup_bandwidth_bytes_per_s", "900", "900 looks like GB/s"),
        ("NVIDIA GB200 NVL72", "available", "", "shipped system needs its availability"),
        ("NVIDIA GB200 NVL72", "available", "2023-01", "is before announced 2024-03"),
        ("NVIDIA GB200 NVL72", "announced", "2009-12", "bad date"),
        ("NVIDIA GB200 NVL72", "topology", "fat-tree", "is not one of switched, torus, mesh"),
        ("Google TPU v5p pod", "in_network_reduction", "true", "torus has no switch"),
        ("NVIDIA GB200 NVL72", "role", "headline", "is not one of flagship"),
        ("NVIDIA GB200 NVL72", "source_url", "", "required value is empty"),
        ("Google TPU v5p pod", "system", "nvidia gb200 nvl72", "duplicate system"),
    ],
)
def test_scaleup_domains_rejects_bad_cells(
    tmp_path: Path, system: str, field: str, value: str, needle: str
) -> None:
    raw = _raw(DEFAULT_SCALEUP_DOMAINS_PATH)
    i = _row(raw, "system", system)
    err = _error(tmp_path, raw, DOMAINS, load_scaleup_domains, i, field, value)
    assert (err.file, err.row, err.field) == (DOMAINS, i + 1, field)
    assert needle in str(err)


LATENCY = "latency.csv"


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("value_s", "6", "6 looks like us"),
        ("value_s", "-6e-6", "must be positive"),
        ("value_s", "fast", "is not a number"),
        ("ranks", "", "required for a measurement"),
        ("nodes", "4", "4 nodes exceed the 2 ranks"),
        ("date", "2024-00", "bad date"),
        ("source_url", "", "required value is empty"),
        ("kind", "estimate", "is not one of measurement, tuning_constant"),
        ("quantity", "latency", "is not one of allreduce_time"),
    ],
)
def test_latency_rejects_bad_cells(tmp_path: Path, field: str, value: str, needle: str) -> None:
    raw = _raw(DEFAULT_LATENCY_MEASUREMENTS_PATH)
    i = _row(raw, "source_url", "https://github.com/NVIDIA/nccl/issues/1259")
    err = _error(tmp_path, raw, LATENCY, load_latency_measurements, i, field, value)
    assert (err.file, err.row, err.field) == (LATENCY, i + 1, field)
    assert needle in str(err)


def test_latency_rejects_duplicate_and_constant_without_protocol(tmp_path: Path) -> None:
    raw = _raw(DEFAULT_LATENCY_MEASUREMENTS_PATH)
    dup = pd.concat([raw, raw.iloc[[0]]], ignore_index=True)
    with pytest.raises(DataValidationError) as ei:
        load_latency_measurements(_write(tmp_path, dup, LATENCY))
    assert ei.value.row == len(dup) and "duplicate of row 1" in str(ei.value)
    i = _row(raw, "kind", "tuning_constant")
    err = _error(tmp_path, raw, LATENCY, load_latency_measurements, i, "protocol", "")
    assert err.field == "protocol" and "required for a tuning constant" in str(err)


# ----------------------------------------------------------------------------- training runs

RUNS = "training_runs.csv"


def test_training_runs_shipped() -> None:
    """14 published runs: dense and MoE on A100, H100, H800 and TPU v4, every accelerator a row
    of hardware.csv, every layout multiplying out to the accelerator count."""
    from forecast.data.training_runs import load_training_runs

    runs = load_training_runs()
    assert len(runs) >= 12
    assert set(runs["architecture"]) == {"dense", "moe"}
    names = set(load_hardware()["name"])
    assert set(runs["accelerator"]) <= names
    assert {
        "NVIDIA A100 SXM4 80GB",
        "NVIDIA H100 SXM5",
        "NVIDIA H800 SXM5",
        "Google TPU v4",
    } <= set(runs["accelerator"])
    product = (
        runs["tensor_parallel"]
        * runs["pipeline_parallel"]
        * runs["data_parallel"]
        * runs["context_parallel"]
    )
    assert (product == runs["accelerators"]).all()
    assert runs["observed_mfu"].between(0.1, 0.7).all()
    assert runs["source_url"].str.startswith("https://").all()


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("accelerators", "8193", "is not tensor x pipeline x data x context parallel"),
        ("tensor_parallel", "8.5", "whole"),
        ("observed_mfu", "43", "43"),
        ("date", "2024-02-30", "bad date"),
        ("recompute", "sometimes", "is not one of none, selective, full"),
        ("run_kind", "guess", "is not one of production, benchmark"),
        ("global_batch_sequences", "10", "cannot feed 64 data-parallel replicas"),
        ("experts", "8", "a dense model has 1 expert"),
        ("source_url", "", "required value is empty"),
    ],
)
def test_training_runs_reject_bad_cells(
    tmp_path: Path, field: str, value: str, needle: str
) -> None:
    from forecast.data.training_runs import DEFAULT_TRAINING_RUNS_PATH, load_training_runs

    raw = _raw(DEFAULT_TRAINING_RUNS_PATH)
    i = _row(raw, "run", "Llama 3.1 405B (8,192 GPUs, 8k)")
    err = _error(tmp_path, raw, RUNS, load_training_runs, i, field, value)
    assert (err.file, err.row, err.field) == (RUNS, i + 1, field)
    assert needle in str(err)
