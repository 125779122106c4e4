"""The registry of prior keys: every parameter a prior file may give, with its unit, domain and role.

Every list of keys in the project derives from :data:`PARAMETERS` through the key's **role**, so a
new key is added here once:

==================  ==================================================================  ==========
role                meaning                                                             used by
==================  ==================================================================  ==========
``trend_growth``    growth (x/yr) whose log10 is the prior of a trend slope             NumPyro fit
``trend_level``     today's level whose log10 is the prior of a trend intercept        NumPyro fit
``trend_noise``     residual scale of a trend (its median sets the noise prior)         NumPyro fit
``propagated``      drawn per posterior draw and fed to the walls model                 propagation
==================  ==================================================================  ==========

A ``trend_growth`` / ``trend_level`` key names the fitted series it belongs to (``series``): a
hardware metric of :data:`forecast.stats.trends.METRICS` or ``"frontier_compute"``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "FITTED_INPUTS",
    "FITTED_KEYS",
    "FRONTIER_SERIES",
    "FittedInput",
    "MAX_COMPOUNDING_YEARS",
    "PLAUSIBLE_TAIL",
    "PARAMETERS",
    "PROPAGATED_KEYS",
    "RETIRED_KEYS",
    "ROLES",
    "TREND_KEYS",
    "TREND_SAMPLED_KEYS",
    "Domain",
    "ParameterSpec",
    "Role",
    "growth_key",
    "input_label",
    "input_unit",
    "keys_with_role",
    "level_key",
    "suggest_key",
]

Domain = Literal["positive", "unit_interval", "real"]
Role = Literal["trend_growth", "trend_level", "trend_noise", "propagated"]
ROLES: tuple[Role, ...] = ("trend_growth", "trend_level", "trend_noise", "propagated")

FRONTIER_SERIES = "frontier_compute"
"""Series name of the frontier training-compute trend (the hardware series are its metrics)."""

MAX_COMPOUNDING_YEARS = 100
"""Growth rates (x/yr) are compounded over at most this many years (the forecast spans 2024-2045);
a rate whose 0.1% or 99.9% quantile over- or underflows float64 over that span is refused at load."""

PLAUSIBLE_TAIL = 0.01
"""A prior's 1% and 99% quantiles (a fixed value: the value; a bounded distribution: its support
clipped to those quantiles) must lie inside its key's ``plausible`` range, which bounds what a
forecast of frontier training can mean (e.g. a run of 1 to 3650 days, growth of 0.5 to 10 x/yr
per hardware spec): a prior outside it is a typo or a unit mistake and is refused at load with
file, key and line.  The ranges are deliberately wide; they are listed in docs/reliability.md."""


@dataclass(frozen=True)
class ParameterSpec:
    """A known model parameter: its unit, domain, role and meaning."""

    key: str
    unit: str
    domain: Domain
    role: Role
    description: str
    series: str | None = None  # the fitted series of a trend_growth / trend_level key
    plausible: tuple[float, float] | None = None  # (low, high) in ``unit``; see PLAUSIBLE_TAIL
    label: str = ""  # a short plain name for readers (slides, tables, sentences); no symbols

    def __post_init__(self) -> None:
        if self.plausible is not None and not self.plausible[0] < self.plausible[1]:
            raise ValueError(f"{self.key}: plausible range {self.plausible} is empty")
        if not self.label or "_" in self.label:
            raise ValueError(f"{self.key}: a plain label (no underscores) is required")
        if self.role not in ROLES:
            raise ValueError(f"{self.key}: unknown role {self.role!r}")
        if (self.series is not None) != (self.role in ("trend_growth", "trend_level")):
            raise ValueError(f"{self.key}: a series is given exactly for trend_growth/level keys")


_GROWTH = "x/yr"

_SPECS: tuple[ParameterSpec, ...] = (
    # hardware trends (multiplicative growth per year of the frontier accelerator's spec)
    ParameterSpec(
        "hardware.flops_growth_per_year",
        _GROWTH,
        "positive",
        "trend_growth",
        "growth of dense 16-bit peak FLOP/s per accelerator",
        "flops",
        label="Chip FLOP/s growth",
        plausible=(0.5, 10),
    ),
    ParameterSpec(
        "hardware.hbm_bandwidth_growth_per_year",
        _GROWTH,
        "positive",
        "trend_growth",
        "growth of HBM bandwidth per accelerator",
        "hbm_bandwidth",
        label="Memory (HBM) bandwidth growth",
        plausible=(0.5, 10),
    ),
    ParameterSpec(
        "hardware.hbm_capacity_growth_per_year",
        _GROWTH,
        "positive",
        "trend_growth",
        "growth of HBM capacity per accelerator",
        "hbm_capacity",
        label="Memory (HBM) capacity growth",
        plausible=(0.5, 10),
    ),
    ParameterSpec(
        "hardware.scaleup_bandwidth_growth_per_year",
        _GROWTH,
        "positive",
        "trend_growth",
        "growth of scale-up (NVLink/ICI) bandwidth per accelerator, per direction",
        "scaleup_bandwidth",
        label="Scale-up (NVLink-class) bandwidth growth",
        plausible=(0.5, 10),
    ),
    ParameterSpec(
        "hardware.scaleout_bandwidth_growth_per_year",
        _GROWTH,
        "positive",
        "trend_growth",
        "growth of scale-out (NIC) bandwidth per accelerator, per direction",
        "scaleout_bandwidth",
        label="Scale-out (network card) bandwidth growth",
        plausible=(0.5, 10),
    ),
    ParameterSpec(
        "hardware.scaleup_domain_size_growth_per_year",
        _GROWTH,
        "positive",
        "propagated",
        "growth of the frontier scale-up domain size from 72 accelerators in 2025",
        label="Scale-up domain size growth",
        plausible=(0.5, 10),
    ),
    ParameterSpec(
        "hardware.trend_noise_dex",
        "dex",
        "positive",
        "trend_noise",
        "residual scale of log10 hardware specs around their trend",
        label="Scatter of chips around the hardware trends",
        plausible=(0.001, 2),
    ),
    # latency
    ParameterSpec(
        "latency.kernel_us",
        "us",
        "positive",
        "propagated",
        "latency per matmul kernel (launch plus tail)",
        label="Latency per matrix-multiply kernel",
        plausible=(0.01, 10000.0),
    ),
    ParameterSpec(
        "latency.allreduce_base_us",
        "us",
        "positive",
        "propagated",
        "base latency of an all-reduce (NCCL tree model)",
        label="All-reduce base latency",
        plausible=(0.01, 100000.0),
    ),
    ParameterSpec(
        "latency.intra_domain_hop_us",
        "us",
        "positive",
        "propagated",
        "per-hop latency inside a scale-up domain (NCCL tree model)",
        label="Latency per hop inside a scale-up domain",
        plausible=(0.001, 10000.0),
    ),
    ParameterSpec(
        "latency.inter_domain_hop_us",
        "us",
        "positive",
        "propagated",
        "per-hop latency between scale-up domains (NCCL tree model)",
        label="Latency per hop across scale-up domains",
        plausible=(0.001, 10000.0),
    ),
    ParameterSpec(
        "latency.change_per_year",
        _GROWTH,
        "positive",
        "propagated",
        "multiplicative change per year of all latencies (<1 means improving)",
        label="Change of all latencies per year",
        plausible=(0.2, 5),
    ),
    # network
    ParameterSpec(
        "network.collective_efficiency",
        "fraction",
        "unit_interval",
        "propagated",
        "achieved fraction of peak link bandwidth in collectives",
        label="Achieved share of link bandwidth in collectives",
        plausible=(0.001, 1),
    ),
    ParameterSpec(
        "network.scaleout_multiplier",
        "x",
        "positive",
        "propagated",
        "scale-out bandwidth relative to one NIC share per GPU (topology/rail assumption)",
        label="Scale-out bandwidth per chip, in network-card shares",
        plausible=(0.01, 100),
    ),
    # training
    ParameterSpec(
        "training.max_utilization",
        "fraction",
        "unit_interval",
        "propagated",
        "maximum sustained utilization of peak FLOP/s at small scale",
        label="Maximum utilization at small scale",
        plausible=(0.001, 1),
    ),
    ParameterSpec(
        "training.duration_days",
        "days",
        "positive",
        "propagated",
        "wall-clock duration of the training run",
        label="Training run length",
        plausible=(1, 3650),
    ),
    ParameterSpec(
        "training.bytes_per_number",
        "bytes",
        "positive",
        "propagated",
        "bytes per number moved (2 = BF16, 1 = FP8)",
        label="Bytes per number (2 = BF16, 1 = FP8)",
        plausible=(0.125, 8),
    ),
    # scaling relations
    ParameterSpec(
        "scaling.batch_tokens_2024",
        "tokens",
        "positive",
        "propagated",
        "critical batch size of a 2024 frontier model",
        label="Critical batch of a 2024 frontier model",
        plausible=(1000.0, 100000000000.0),
    ),
    ParameterSpec(
        "scaling.batch_exponent",
        "1",
        "real",
        "propagated",
        "exponent of the critical batch size on parameter count N",
        label="Batch exponent on model size",
        plausible=(-1, 2),
    ),
    ParameterSpec(
        "scaling.batch_reference_params",
        "params",
        "positive",
        "propagated",
        "parameter count N0 at which the critical batch equals the 2024 critical batch",
        label="Model size of the 2024 critical batch",
        plausible=(1000000.0, 1e16),
    ),
    ParameterSpec(
        "scaling.layers_at_reference",
        "layers",
        "positive",
        "propagated",
        "layer count L_ref of a model of the reference size for depth",
        label="Depth at the reference model size",
        plausible=(1, 100000.0),
    ),
    ParameterSpec(
        "scaling.layer_reference_params",
        "params",
        "positive",
        "propagated",
        "parameter count N_ref around which the layer exponent pivots: L = L_ref (N / N_ref)^exponent",
        label="Reference model size for depth",
        plausible=(1000000.0, 1e16),
    ),
    ParameterSpec(
        "scaling.layer_exponent",
        "1",
        "real",
        "propagated",
        "exponent of the layer count on parameter count N",
        label="Depth exponent on model size",
        plausible=(-1, 2),
    ),
    ParameterSpec(
        "scaling.tokens_per_param",
        "tokens/param",
        "positive",
        "propagated",
        "training tokens per parameter (D = k * N)",
        label="Training tokens per parameter",
        plausible=(0.1, 100000.0),
    ),
    ParameterSpec(
        "scaling.moe_experts",
        "experts",
        "positive",
        "propagated",
        "experts per mixture-of-experts layer (1 = dense model)",
        label="Experts per mixture-of-experts layer",
        plausible=(1, 100000.0),
    ),
    ParameterSpec(
        "scaling.moe_active_experts",
        "experts",
        "positive",
        "propagated",
        "experts active per token (top-k routing; 1 for a dense model)",
        label="Experts active per token",
        plausible=(1, 10000.0),
    ),
    # frontier compute
    ParameterSpec(
        "frontier.compute_growth_per_year",
        _GROWTH,
        "positive",
        "trend_growth",
        "growth of the largest training run's compute",
        FRONTIER_SERIES,
        label="Frontier compute growth",
        plausible=(0.5, 100),
    ),
    ParameterSpec(
        "frontier.compute_2024_flop",
        "FLOP",
        "positive",
        "trend_level",
        "training compute of the largest run of 2024",
        FRONTIER_SERIES,
        label="Frontier compute in 2024",
        plausible=(1e20, 1e30),
    ),
)

PARAMETERS: dict[str, ParameterSpec] = {s.key: s for s in _SPECS}
"""Registry of every parameter a prior file may (overlay) or must (full file) give."""


def keys_with_role(*roles: Role) -> tuple[str, ...]:
    """Keys whose role is one of ``roles``, in registry order."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown role(s) {sorted(unknown)}; known: {', '.join(ROLES)}")
    return tuple(s.key for s in _SPECS if s.role in roles)


PROPAGATED_KEYS: tuple[str, ...] = keys_with_role("propagated")
"""Keys drawn per posterior draw by the propagation (``forecast.inference.propagate``)."""

TREND_KEYS: tuple[str, ...] = keys_with_role("trend_growth", "trend_level", "trend_noise")
"""Keys that set the priors of the NumPyro trend fit (``forecast.stats.trends``)."""

TREND_SAMPLED_KEYS: tuple[str, ...] = keys_with_role("trend_growth", "trend_level")
"""Trend keys that are inputs of the sensitivity analysis (growth rates, the 2024 frontier level)."""


@dataclass(frozen=True)
class FittedInput:
    """A propagated input that the joint model fits to data.

    ``law`` names the likelihood (``depth``, ``batch``, ``utilization``, ``domain``; see
    :mod:`forecast.stats.scaling_laws`), ``variable`` the posterior variable that holds it in the
    model's units (the prior key's unit), ``table`` the data table under ``data/`` it is fitted to.
    The key's entry in the base prior file is the prior of that parameter; a scenario overlay
    that sets the key replaces the fitted posterior with its own distribution (a what-if).
    """

    key: str
    law: str
    variable: str
    table: str


FITTED_INPUTS: dict[str, FittedInput] = {
    f.key: f
    for f in (
        FittedInput("scaling.layer_exponent", "depth", "layer_exponent", "model_shapes.csv"),
        FittedInput(
            "scaling.layers_at_reference", "depth", "layers_at_reference", "model_shapes.csv"
        ),
        FittedInput("scaling.batch_tokens_2024", "batch", "batch_tokens_2024", "model_shapes.csv"),
        FittedInput("scaling.batch_exponent", "batch", "batch_exponent", "model_shapes.csv"),
        FittedInput(
            "training.max_utilization", "utilization", "max_utilization", "model_shapes.csv"
        ),
        FittedInput(
            "hardware.scaleup_domain_size_growth_per_year",
            "domain",
            "domain_growth_per_year",
            "scaleup_domains.csv",
        ),
    )
}
"""Prior keys fitted by the joint model's scaling and system laws, by key."""

FITTED_KEYS: tuple[str, ...] = tuple(FITTED_INPUTS)
"""The keys of :data:`FITTED_INPUTS`, in order."""


def _series_key(role: Role, series: str) -> str:
    for s in _SPECS:
        if s.role == role and s.series == series:
            return s.key
    known = sorted({s.series for s in _SPECS if s.role == role and s.series})
    raise KeyError(f"no {role} key for series {series!r}; known: {', '.join(known)}")


def input_label(key: str) -> str:
    """The plain name readers see for a registry key ('Chip FLOP/s growth'); an unknown key as
    its last component with spaces, never the dotted key itself."""
    spec = PARAMETERS.get(key)
    if spec is not None:
        return spec.label
    tail = key.rsplit(".", 1)[-1].replace("_", " ")
    return tail[:1].upper() + tail[1:]


def input_unit(key: str) -> str:
    """The registry unit of ``key`` ('' for an unknown key)."""
    spec = PARAMETERS.get(key)
    return spec.unit if spec is not None else ""


def growth_key(series: str) -> str:
    """The ``trend_growth`` key of a fitted series (a hardware metric or ``frontier_compute``)."""
    return _series_key("trend_growth", series)


def level_key(series: str) -> str:
    """The ``trend_level`` key of a fitted series (only ``frontier_compute`` has one)."""
    return _series_key("trend_level", series)


# Keys that earlier versions of the format accepted, with what replaces them.
RETIRED_KEYS = {
    "scaling.layer_coef": (
        "retired on 2026-11-29: depth is L = L_ref (N / N_ref)^exponent, given by "
        "'scaling.layers_at_reference' and 'scaling.layer_reference_params' "
        "(0.088 N^0.27 is L_ref = 119.8 at N_ref = 4.05e11)"
    ),
}


def suggest_key(key: str) -> str:
    """``"; did you mean 'x'?"`` for a close registry key, the replacement of a retired key, or ''."""
    if key in RETIRED_KEYS:
        return f"; {RETIRED_KEYS[key]}"
    close = difflib.get_close_matches(key, PARAMETERS, n=1, cutoff=0.5)
    if not close:  # try on the last component, which carries the meaning
        tail = key.rsplit(".", 1)[-1]
        tails = {k.rsplit(".", 1)[-1]: k for k in PARAMETERS}
        hit = difflib.get_close_matches(tail, tails, n=1, cutoff=0.6)
        close = [tails[hit[0]]] if hit else []
    return f"; did you mean {close[0]!r}?" if close else ""
