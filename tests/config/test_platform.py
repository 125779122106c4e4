"""forecast.config.platform: what a forecast records of the machine it was made on."""

from __future__ import annotations

import json

import pytest

from forecast.config import platform

AVX512_CPU = (
    "processor\t: 0\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu sse4_2 avx fma avx2 avx512f\n"
)
AVX2_CPU = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse4_2 avx fma avx2\n"


@pytest.fixture
def cpuinfo(monkeypatch):
    def use(text: str) -> None:
        monkeypatch.setattr(platform, "_cpuinfo", lambda: text)

    return use


@pytest.mark.parametrize(
    ("text", "xla_flags", "isa", "other"),
    [
        (AVX512_CPU, "", "AVX512", "AVX2"),
        (AVX512_CPU, "--xla_cpu_max_isa=AVX2", "AVX2", "AVX2"),
        (
            AVX512_CPU,
            "--xla_force_host_platform_device_count=2 --xla_cpu_max_isa=avx",
            "AVX",
            "AVX2",
        ),
        (AVX512_CPU, "--xla_cpu_max_isa=AVX --xla_cpu_max_isa=AVX2", "AVX2", "AVX2"),  # last
        (AVX2_CPU, "", "AVX2", "AVX"),
        (
            AVX2_CPU,
            "--xla_cpu_max_isa=AVX512",
            "AVX2",
            "AVX",
        ),  # a cap above the CPU changes nothing
    ],
)
def test_isa_is_the_cpus_capped_by_xla_flags(cpuinfo, monkeypatch, text, xla_flags, isa, other):
    cpuinfo(text)
    monkeypatch.setenv("XLA_FLAGS", xla_flags)
    assert platform.cpu_isa() == isa
    assert platform.other_isa() == other  # from the CPU alone, whatever XLA_FLAGS says


def test_platform_json_names_cpu_isa_flags_and_versions(cpuinfo, monkeypatch):
    cpuinfo(AVX2_CPU)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_max_isa=AVX")
    info = json.loads(platform.platform_json())
    assert info["cpu"] == "AMD EPYC 7B13"
    assert info["isa"] == "AVX"
    assert info["xla_flags"] == "--xla_cpu_max_isa=AVX"
    for package in ("jax", "jaxlib", "numpyro", "arviz"):
        assert info[package][0].isdigit(), package


def test_platform_without_cpuinfo_falls_back_to_the_machine(cpuinfo):
    cpuinfo("")
    assert platform.cpu_isa() == platform._platform.machine()
    assert platform.cpu_model()
    assert platform.other_isa() == ""  # nothing to emulate: make test-other-isa skips


def test_a_cap_never_raises_the_level_of_an_old_cpu(cpuinfo, monkeypatch):
    cpuinfo("model name\t: old\nflags\t\t: fpu sse sse2\n")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_max_isa=AVX2")
    assert platform.cpu_isa() == "baseline" and platform.other_isa() == ""
