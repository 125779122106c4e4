"""The platform a forecast was computed on: CPU, instruction set, XLA flags, library versions.

NUTS trajectories are chaotic and XLA compiles other CPU code for other processors (vector width,
fused multiply-add), so the same seed, data and priors give bitwise-identical draws only on the
same kind of CPU with the same JAX build; elsewhere they agree statistically (README,
"Reproducibility"). A published forecast therefore records where its fit ran (``fit_platform``)
and where it was assembled (``platform``), as JSON strings built here.

No JAX import: the backend is read only when the calling process has already imported JAX.
"""

from __future__ import annotations

import json
import os
import platform as _platform
import re
import sys
from functools import lru_cache
from importlib import metadata
from typing import Any

PACKAGES = ("jax", "jaxlib", "numpyro", "arviz", "numpy", "xarray")


# the instruction-set levels XLA's --xla_cpu_max_isa knows, highest first, with the CPU flag
# (Linux /proc/cpuinfo) that each needs
_ISA_LEVELS: tuple[tuple[str, str], ...] = (
    ("AVX512", "avx512f"),
    ("AVX2", "avx2"),
    ("AVX", "avx"),
    ("SSE4_2", "sse4_2"),
)


@lru_cache(maxsize=1)
def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            return fh.read(200_000)
    except OSError:
        return ""


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    match = re.search(r"^model name\s*:\s*(.+)$", _cpuinfo(), flags=re.MULTILINE)
    if match:
        return match.group(1).strip()
    return _platform.processor() or _platform.machine() or "unknown"


def _cpu_flags() -> set[str]:
    match = re.search(r"^flags\s*:\s*(.+)$", _cpuinfo(), flags=re.MULTILINE)
    return set(match.group(1).split()) if match else set()


def _max_isa_flag(xla_flags: str) -> str | None:
    """The last ``--xla_cpu_max_isa`` of ``xla_flags`` (XLA, like most flag parsers, keeps the
    last value of a repeated flag)."""
    matches = re.findall(r"--xla_cpu_max_isa=(\w+)", xla_flags)
    return matches[-1].upper() if matches else None


def cpu_isa(xla_flags: str | None = None) -> str:
    """The x86 instruction-set level XLA compiles for: the CPU's highest (AVX512, AVX2, AVX,
    SSE4_2), capped by ``--xla_cpu_max_isa`` in ``XLA_FLAGS``; the machine name elsewhere."""
    xla_flags = os.environ.get("XLA_FLAGS", "") if xla_flags is None else xla_flags
    flags = _cpu_flags()
    if not flags:
        return _platform.machine() or "unknown"
    names = [name for name, _ in _ISA_LEVELS]
    level = next((name for name, flag in _ISA_LEVELS if flag in flags), "baseline")
    cap = _max_isa_flag(xla_flags)
    if cap in names and level in names and names.index(cap) > names.index(level):
        level = cap
    return level


def other_isa() -> str:
    """The instruction-set level just below this CPU's (AVX512 -> AVX2 -> AVX -> SSE4_2), for
    ``XLA_FLAGS=--xla_cpu_max_isa=...``: XLA then compiles the code another, older CPU would run
    (other vector width, no FMA below AVX2), which emulates that CPU's NUTS trajectories here.
    Empty where there is none to emulate (not x86: XLA would silently ignore the flag)."""
    names = [name for name, _ in _ISA_LEVELS]
    level = cpu_isa(xla_flags="")
    if level not in names:  # not x86 (XLA ignores an ISA it does not know), or below SSE4.2
        return ""
    return names[min(names.index(level) + 1, len(names) - 1)]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def platform_info() -> dict[str, Any]:
    """Where this process computes: CPU model and instruction set, ``XLA_FLAGS``, OS, Python and
    the versions of :data:`PACKAGES`; the JAX backend and device when JAX is already imported."""
    info: dict[str, Any] = {
        "cpu": cpu_model(),
        "isa": cpu_isa(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "machine": _platform.machine(),
        "system": f"{_platform.system()} {_platform.release()}",
        "python": _platform.python_version(),
        **{package: _version(package) for package in PACKAGES},
    }
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            info["jax_backend"] = str(jax.default_backend())
            info["jax_device"] = str(jax.devices()[0].device_kind)
            info["jax_x64"] = bool(jax.config.jax_enable_x64)
        except Exception:  # noqa: BLE001 - a missing backend must not fail a fit
            info["jax_backend"] = "unavailable"
    return info


def platform_json() -> str:
    """:func:`platform_info` as canonical JSON (an attribute value)."""
    return json.dumps(platform_info(), sort_keys=True)
