"""Priors over the model's parameters, read from TOML files and validated.

A prior file has one TOML table per parameter; the table name is the parameter key (see
``priors/README.md`` for the format). Every key must be in :data:`PARAMETERS`, the registry of known
parameters with their unit and domain. :func:`load_priors` reads a *full* file (every registry key
present); :func:`load_overlay` reads a *scenario* that gives only some keys and is laid on top of a full
set with :meth:`PriorSet.overlay`.

Every problem is reported as a :class:`PriorError` that names the file, the parameter key and the line of
the parameter's table header.

Distributions are represented by their inverse CDF (:meth:`Prior.ppf`), so sampling, quasi-Monte-Carlo
(Sobol) designs and sensitivity analyses all go through one vectorized function. Quantile-specified priors
are fitted in a transformed space chosen by the parameter's domain: natural log for positive parameters,
logit for unit-interval parameters, identity for real ones. In that space the quantile function is linear
in the standard-normal score z = Φ⁻¹(p) between the given quantiles (and beyond them, along the outermost
segment), so every given quantile is reproduced exactly:

* 2 quantiles, or quantiles that lie on one line in (z, transformed value): a normal / log-normal /
  logit-normal through them;
* 3 quantiles with the middle one at p50 and different slopes below and above it: a *split* (two-piece)
  normal in the transformed space whose median is the p50 and whose lower and upper scales honour the
  lower and upper quantiles. This is the median-anchored two-piece normal (probability 1/2 on each side of
  the median, density discontinuous there), not the density-continuous variant whose centre is the mode;
* anything else (more knots, or 3 without p50): the same piecewise-linear-in-z construction through all
  given quantiles (``quantile_*`` distributions).

No jax/numpyro import happens at module level; :meth:`Prior.to_numpyro` imports numpyro lazily.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from scipy import special, stats

from forecast.errors import WallcastError

__all__ = [
    "PARAMETERS",
    "DISTRIBUTIONS",
    "ParameterSpec",
    "Prior",
    "PriorError",
    "PriorSet",
    "default_priors_path",
    "load_overlay",
    "load_priors",
    "parse_prior",
]

Domain = Literal["positive", "unit_interval", "real"]


# --------------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParameterSpec:
    """A known model parameter: its unit, its domain and what it means."""

    key: str
    unit: str
    domain: Domain
    description: str


_GROWTH = "x/yr"

_SPECS: tuple[ParameterSpec, ...] = (
    # hardware trends (multiplicative growth per year of the frontier accelerator's spec)
    ParameterSpec(
        "hardware.flops_growth_per_year",
        _GROWTH,
        "positive",
        "growth of dense 16-bit peak FLOP/s per accelerator",
    ),
    ParameterSpec(
        "hardware.hbm_bandwidth_growth_per_year",
        _GROWTH,
        "positive",
        "growth of HBM bandwidth per accelerator",
    ),
    ParameterSpec(
        "hardware.hbm_capacity_growth_per_year",
        _GROWTH,
        "positive",
        "growth of HBM capacity per accelerator",
    ),
    ParameterSpec(
        "hardware.scaleup_bandwidth_growth_per_year",
        _GROWTH,
        "positive",
        "growth of scale-up (NVLink/ICI) bandwidth per accelerator, per direction",
    ),
    ParameterSpec(
        "hardware.scaleout_bandwidth_growth_per_year",
        _GROWTH,
        "positive",
        "growth of scale-out (NIC) bandwidth per accelerator, per direction",
    ),
    ParameterSpec(
        "hardware.scaleup_domain_size_growth_per_year",
        _GROWTH,
        "positive",
        "growth of the frontier scale-up domain size from 72 accelerators in 2025",
    ),
    ParameterSpec(
        "hardware.trend_noise_dex",
        "dex",
        "positive",
        "residual scale of log10 hardware specs around their trend",
    ),
    # latency
    ParameterSpec(
        "latency.kernel_us",
        "us",
        "positive",
        "latency per matmul kernel (launch plus tail)",
    ),
    ParameterSpec(
        "latency.allreduce_base_us",
        "us",
        "positive",
        "base latency of an all-reduce (NCCL tree model)",
    ),
    ParameterSpec(
        "latency.intra_domain_hop_us",
        "us",
        "positive",
        "per-hop latency inside a scale-up domain (NCCL tree model)",
    ),
    ParameterSpec(
        "latency.inter_domain_hop_us",
        "us",
        "positive",
        "per-hop latency between scale-up domains (NCCL tree model)",
    ),
    ParameterSpec(
        "latency.change_per_year",
        _GROWTH,
        "positive",
        "multiplicative change per year of all latencies (<1 means improving)",
    ),
    # network
    ParameterSpec(
        "network.collective_efficiency",
        "fraction",
        "unit_interval",
        "achieved fraction of peak link bandwidth in collectives",
    ),
    ParameterSpec(
        "network.scaleout_multiplier",
        "x",
        "positive",
        "scale-out bandwidth relative to one NIC share per GPU (topology/rail assumption)",
    ),
    # training
    ParameterSpec(
        "training.max_utilization",
        "fraction",
        "unit_interval",
        "maximum sustained utilization of peak FLOP/s at small scale",
    ),
    ParameterSpec(
        "training.duration_days",
        "days",
        "positive",
        "wall-clock duration of the training run",
    ),
    ParameterSpec(
        "training.bytes_per_number",
        "bytes",
        "positive",
        "bytes per number moved (2 = BF16, 1 = FP8)",
    ),
    # scaling relations
    ParameterSpec(
        "scaling.batch_tokens_2024",
        "tokens",
        "positive",
        "critical batch size of a 2024 frontier model",
    ),
    ParameterSpec(
        "scaling.batch_exponent",
        "1",
        "real",
        "exponent of the critical batch size on parameter count N",
    ),
    ParameterSpec(
        "scaling.batch_reference_params",
        "params",
        "positive",
        "parameter count N0 at which the critical batch equals batch_tokens_2024",
    ),
    ParameterSpec(
        "scaling.layers_at_reference",
        "layers",
        "positive",
        "layer count L_ref of a model with layer_reference_params parameters",
    ),
    ParameterSpec(
        "scaling.layer_reference_params",
        "params",
        "positive",
        "parameter count N_ref around which the layer exponent pivots: L = L_ref (N / N_ref)^exponent",
    ),
    ParameterSpec(
        "scaling.layer_exponent",
        "1",
        "real",
        "exponent of the layer count on parameter count N",
    ),
    ParameterSpec(
        "scaling.tokens_per_param",
        "tokens/param",
        "positive",
        "training tokens per parameter (D = k * N)",
    ),
    ParameterSpec(
        "scaling.moe_experts",
        "experts",
        "positive",
        "experts per mixture-of-experts layer (1 = dense model)",
    ),
    ParameterSpec(
        "scaling.moe_active_experts",
        "experts",
        "positive",
        "experts active per token (top-k routing; 1 for a dense model)",
    ),
    # frontier compute
    ParameterSpec(
        "frontier.compute_growth_per_year",
        _GROWTH,
        "positive",
        "growth of the largest training run's compute",
    ),
    ParameterSpec(
        "frontier.compute_2024_flop",
        "FLOP",
        "positive",
        "training compute of the largest run of 2024",
    ),
)

PARAMETERS: dict[str, ParameterSpec] = {s.key: s for s in _SPECS}
"""Registry of every parameter a prior file may (overlay) or must (full file) give."""

#: Named distributions of the ``dist = "<name>"`` form and their parameters, in order.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "normal": ("mean", "sd"),
    "lognormal": ("median", "sigma"),
    "uniform": ("low", "high"),
    "loguniform": ("low", "high"),
    "triangular": ("low", "mode", "high"),
    "beta": ("a", "b"),
    "student_t": ("df", "loc", "scale"),
}

_FORMS = ("value", "quantiles", "interval90", "dist")
_META_FIELDS = ("source", "note", "unit")
_Z90 = float(special.ndtri(0.9))
_QKEY = re.compile(r"^p(\d\d)$")


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


class Problem(NamedTuple):
    """One validation problem: the parameter key (if any), the line (if known) and why."""

    key: str | None
    line: int | None
    reason: str


def _format_problem(file: str, p: Problem) -> str:
    where = file
    if p.line is not None:
        where += f", line {p.line}"
    if p.key is not None:
        where += f", '{p.key}'"
    return f"{where}: {p.reason}"


class PriorError(WallcastError, ValueError):
    """A bad prior file. Names the file, the parameter key and the line of its table header.

    ``file``, ``key``, ``line`` and ``reason`` describe the first problem; ``problems`` holds them all
    (the message has one line per problem).
    """

    def __init__(self, file: str | Path, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("PriorError needs at least one problem")
        self.file = str(file)
        self.problems = list(problems)
        first = self.problems[0]
        self.key = first.key
        self.line = first.line
        self.reason = first.reason
        super().__init__("\n".join(_format_problem(self.file, p) for p in self.problems))


class _Invalid(Exception):
    """Internal: one problem with a parameter table (carries the reason)."""


# --------------------------------------------------------------------------------------------------
# Transforms by domain
# --------------------------------------------------------------------------------------------------


def _fwd(domain: Domain, x: Any) -> Any:
    if domain == "positive":
        return np.log(x)
    if domain == "unit_interval":
        return special.logit(x)
    return np.asarray(x, dtype=float) if not np.isscalar(x) else float(x)


def _inv(domain: Domain, y: Any) -> Any:
    if domain == "positive":
        return np.exp(y)
    if domain == "unit_interval":
        return special.expit(y)
    return y


_FAMILY = {"positive": "lognormal", "unit_interval": "logitnormal", "real": "normal"}
_DOMAIN_OF_FAMILY = {v: k for k, v in _FAMILY.items()}


def _family_domain(dist: str) -> Domain:
    """Domain of the transform used by a fitted family name such as 'split_lognormal'."""
    base = dist.split("_", 1)[1] if dist.startswith(("split_", "quantile_")) else dist
    return _DOMAIN_OF_FAMILY[base]  # type: ignore[return-value]


def _qprob(name: str) -> float:
    return int(name[1:]) / 100.0


# --------------------------------------------------------------------------------------------------
# Prior
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prior:
    """A validated prior over one parameter.

    ``dist`` is one of: ``point`` (value); ``normal`` (mean, sd); ``lognormal`` (median, sigma);
    ``logitnormal`` (median, sigma of the logit); ``split_normal`` / ``split_lognormal`` /
    ``split_logitnormal`` (median, sigma_lo, sigma_hi in the transformed space); ``quantile_normal`` /
    ``quantile_lognormal`` / ``quantile_logitnormal`` (the given quantiles as ``pNN`` entries,
    interpolated linearly in z); ``uniform``, ``loguniform`` (low, high); ``triangular``
    (low, mode, high); ``beta`` (a, b); ``student_t`` (df, loc, scale).
    """

    key: str
    dist: str
    params: dict[str, float]
    source: str
    note: str = ""
    file: str = "<memory>"
    line: int | None = None
    unit: str = ""
    form: str = "dist"  # how the file gave it: value | quantiles | interval90 | dist

    # ---- evaluation -------------------------------------------------------------------------

    def ppf(self, u: np.ndarray) -> np.ndarray:
        """Inverse CDF at probabilities ``u`` (vectorized). A point mass returns its value."""
        u = np.asarray(u, dtype=float)
        d, p = self.dist, self.params
        if d == "point":
            return np.full(u.shape, p["value"])
        if d == "uniform":
            return p["low"] + (p["high"] - p["low"]) * u
        if d == "loguniform":
            lo, hi = math.log(p["low"]), math.log(p["high"])
            return np.exp(lo + (hi - lo) * u)
        if d == "triangular":
            lo, mode, hi = p["low"], p["mode"], p["high"]
            return stats.triang.ppf(u, (mode - lo) / (hi - lo), loc=lo, scale=hi - lo)
        if d == "beta":
            return stats.beta.ppf(u, p["a"], p["b"])
        if d == "student_t":
            return stats.t.ppf(u, p["df"], loc=p["loc"], scale=p["scale"])
        z = special.ndtri(u)
        if d == "normal":
            return p["mean"] + p["sd"] * z
        if d in ("lognormal", "logitnormal"):
            dom = _family_domain(d)
            return _inv(dom, _fwd(dom, p["median"]) + p["sigma"] * z)
        if d.startswith("split_"):
            dom = _family_domain(d)
            with np.errstate(invalid="ignore"):
                y = _fwd(dom, p["median"]) + np.where(z < 0, p["sigma_lo"], p["sigma_hi"]) * z
            return _inv(dom, y)
        if d.startswith("quantile_"):
            dom = _family_domain(d)
            zk, yk = _knots(dom, p)
            return _inv(dom, _interp_extrap(z, zk, yk))
        raise ValueError(f"{self.key}: unknown distribution {d!r}")  # pragma: no cover

    def quantile(self, q: float) -> float:
        """The ``q`` quantile (0 < q < 1)."""
        return float(self.ppf(np.asarray(q, dtype=float)))

    def median(self) -> float:
        return self.quantile(0.5)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` independent draws, by inverse transform: ``ppf(rng.random(size))``."""
        return self.ppf(rng.random(size))

    @property
    def is_point(self) -> bool:
        return self.dist == "point"

    # ---- reporting ----------------------------------------------------------------------------

    def describe(self) -> str:
        """One-line summary for reports, e.g. ``lognormal median 1.45, 80% 1.30–1.62``."""
        unit = f" {self.unit}" if self.unit and self.unit not in ("1",) else ""
        if self.is_point:
            return f"fixed {_fmt_exact(self.params['value'])}{unit}"
        lo, med, hi = (self.quantile(q) for q in (0.1, 0.5, 0.9))
        return f"{self.dist} median {_fmt(med)}, 80% {_fmt(lo)}–{_fmt(hi)}{unit}"

    # ---- numpyro ------------------------------------------------------------------------------

    def to_numpyro(self) -> Any:
        """The equivalent ``numpyro.distributions`` object.

        Exact for point (Delta), normal, lognormal, logit-normal (a sigmoid-transformed Normal),
        uniform, loguniform, triangular (a transformed Uniform), beta and student_t. Split and
        piecewise (``quantile_*``) fits have no numpyro counterpart; they map to the *nearest* member of
        their family: a normal in the transformed space (log / logit / identity) with the same median and
        the same 10%–90% width, sigma = (g(q90) − g(q10)) / (2·Φ⁻¹(0.9)).
        """
        import numpyro.distributions as nd  # lazy: keeps jax out of module import

        d, p = self.dist, self.params
        if d == "point":
            return nd.Delta(p["value"])
        if d == "normal":
            return nd.Normal(p["mean"], p["sd"])
        if d == "uniform":
            return nd.Uniform(p["low"], p["high"])
        if d == "loguniform":
            return nd.LogUniform(p["low"], p["high"])
        if d == "beta":
            return nd.Beta(p["a"], p["b"])
        if d == "student_t":
            return nd.StudentT(p["df"], p["loc"], p["scale"])
        if d == "triangular":
            return _numpyro_triangular(p["low"], p["mode"], p["high"])
        if d in ("lognormal", "logitnormal"):
            dom = _family_domain(d)
            mu, sigma = float(_fwd(dom, p["median"])), p["sigma"]
        else:  # split_* and quantile_*: nearest normal in the transformed space
            dom = _family_domain(d)
            mu = float(_fwd(dom, self.median()))
            sigma = float(_fwd(dom, self.quantile(0.9)) - _fwd(dom, self.quantile(0.1))) / (
                2 * _Z90
            )
        if dom == "positive":
            return nd.LogNormal(mu, sigma)
        if dom == "unit_interval":
            return nd.TransformedDistribution(
                nd.Normal(mu, sigma), nd.transforms.SigmoidTransform()
            )
        return nd.Normal(mu, sigma)


def _knots(domain: Domain, params: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
    names = sorted(params, key=_qprob)
    zk = special.ndtri(np.array([_qprob(n) for n in names]))
    yk = np.asarray(_fwd(domain, np.array([params[n] for n in names], dtype=float)))
    return zk, yk


def _interp_extrap(z: np.ndarray, zk: np.ndarray, yk: np.ndarray) -> np.ndarray:
    """Piecewise-linear interpolation through (zk, yk), extrapolated along the end segments."""
    slopes = np.diff(yk) / np.diff(zk)
    i = np.clip(np.searchsorted(zk, z, side="right") - 1, 0, len(zk) - 2)
    with np.errstate(invalid="ignore"):
        return yk[i] + slopes[i] * (z - zk[i])


def _numpyro_triangular(low: float, mode: float, high: float) -> Any:
    import jax.numpy as jnp
    import numpyro.distributions as nd
    from numpyro.distributions import constraints

    span = high - low
    fl = max(mode - low, 0.0) * span
    fh = max(high - mode, 0.0) * span
    c = (mode - low) / span

    class _TriangularPPF(nd.transforms.Transform):
        domain = constraints.unit_interval
        codomain = constraints.interval(low, high)

        def __call__(self, u: Any) -> Any:
            return jnp.where(
                u < c, low + jnp.sqrt(u * fl), high - jnp.sqrt(jnp.clip(1 - u, 0) * fh)
            )

        def _inverse(self, x: Any) -> Any:
            return jnp.where(
                x < mode,
                (x - low) ** 2 / jnp.where(fl > 0, fl, 1.0),
                1 - (high - x) ** 2 / jnp.where(fh > 0, fh, 1.0),
            )

        def log_abs_det_jacobian(self, u: Any, x: Any, intermediates: Any = None) -> Any:
            pdf = jnp.where(
                x < mode,
                2 * (x - low) / jnp.where(fl > 0, fl, 1.0),
                2 * (high - x) / jnp.where(fh > 0, fh, 1.0),
            )
            return -jnp.log(pdf)

    return nd.TransformedDistribution(nd.Uniform(0.0, 1.0), _TriangularPPF())


def _fmt(x: float) -> str:
    """Three significant digits, trailing zeros kept (1.30, 60.0, 6.00e7)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    e = math.floor(math.log10(abs(x)))
    if -3 <= e < 4:
        return f"{x:.{max(0, 2 - e)}f}"
    m = x / 10**e
    if round(abs(m), 2) >= 10:
        m, e = m / 10, e + 1
    return f"{m:.2f}e{e}"


def _fmt_exact(x: float) -> str:
    s = f"{x:g}"
    return s.replace("e+", "e").replace("e0", "e").replace("e-0", "e-")


# --------------------------------------------------------------------------------------------------
# Fitting and validation of one parameter table
# --------------------------------------------------------------------------------------------------


def _number(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise _Invalid(f"{what} must be a number, got {x!r}")
    v = float(x)
    if not math.isfinite(v):
        raise _Invalid(f"{what} must be finite, got {x!r}")
    return v


def _check_point(spec: ParameterSpec, v: float, what: str) -> None:
    """Closed-domain check for fixed values and distribution bounds."""
    if spec.domain == "positive" and not v > 0:
        raise _Invalid(f"{what} = {v:g} is outside the domain of {spec.key} (must be > 0)")
    if spec.domain == "unit_interval" and not 0 <= v <= 1:
        raise _Invalid(f"{what} = {v:g} is outside the domain of {spec.key} (must be in [0, 1])")


def _check_open(spec: ParameterSpec, v: float, what: str) -> None:
    """Open-domain check for quantiles (they go through log / logit)."""
    if spec.domain == "positive" and not v > 0:
        raise _Invalid(f"{what} = {v:g} is outside the domain of {spec.key} (must be > 0)")
    if spec.domain == "unit_interval" and not 0 < v < 1:
        raise _Invalid(f"{what} = {v:g} is outside the domain of {spec.key} (must be in (0, 1))")


def _fit_quantiles(
    spec: ParameterSpec, qs: list[tuple[str, float]]
) -> tuple[str, dict[str, float]]:
    """Fit a (split / piecewise) normal in the domain's transformed space through the quantiles."""
    dom = spec.domain
    z = special.ndtri(np.array([_qprob(n) for n, _ in qs]))
    y = np.asarray(_fwd(dom, np.array([v for _, v in qs], dtype=float)))
    slopes = np.diff(y) / np.diff(z)
    keep = [0]
    for i in range(1, len(qs) - 1):
        if not math.isclose(slopes[i - 1], slopes[i], rel_tol=1e-9):
            keep.append(i)
    keep.append(len(qs) - 1)
    family = _FAMILY[dom]
    if len(keep) == 2:
        sigma = float((y[keep[1]] - y[keep[0]]) / (z[keep[1]] - z[keep[0]]))
        mu = float(y[keep[0]] - sigma * z[keep[0]])
        if dom == "real":
            return "normal", {"mean": mu, "sd": sigma}
        # a given p50 is the median exactly; otherwise back-transform the line's centre
        median = dict(qs).get("p50", float(_inv(dom, mu)))
        return family, {"median": median, "sigma": sigma}
    if len(keep) == 3 and qs[keep[1]][0] == "p50":
        i0, i1, i2 = keep
        return f"split_{family}", {
            "median": qs[i1][1],
            "sigma_lo": float((y[i1] - y[i0]) / (z[i1] - z[i0])),
            "sigma_hi": float((y[i2] - y[i1]) / (z[i2] - z[i1])),
        }
    return f"quantile_{family}", dict(qs)


def _parse_quantiles(spec: ParameterSpec, raw: Any) -> list[tuple[str, float]]:
    if not isinstance(raw, Mapping):
        raise _Invalid("quantiles must be a table like { p10 = ..., p50 = ..., p90 = ... }")
    qs: list[tuple[str, float]] = []
    for name, val in raw.items():
        m = _QKEY.match(name)
        if not m or not 1 <= int(m.group(1)) <= 99:
            raise _Invalid(
                f"quantile key {name!r} is not like pNN (two digits, p01..p99, e.g. p05, p50, p95)"
            )
        qs.append((name, _number(val, f"quantile {name}")))
    if len(qs) < 2:
        raise _Invalid(f"quantiles needs at least 2 entries, got {len(qs)}")
    for (n0, v0), (n1, v1) in zip(qs, qs[1:], strict=False):
        if not _qprob(n1) > _qprob(n0):
            raise _Invalid(
                f"quantiles out of order: {n1} comes after {n0} (probabilities must increase)"
            )
        if not v1 > v0:
            raise _Invalid(
                f"quantile values out of order: {n0} = {v0:g} but {n1} = {v1:g} (values must increase)"
            )
    for n, v in qs:
        _check_open(spec, v, f"quantile {n}")
    return qs


def _parse_dist(spec: ParameterSpec, tbl: Mapping[str, Any]) -> tuple[str, dict[str, float]]:
    name = tbl["dist"]
    if not isinstance(name, str) or name not in DISTRIBUTIONS:
        close = difflib.get_close_matches(str(name), DISTRIBUTIONS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise _Invalid(f"unknown distribution {name!r}{hint}; known: {', '.join(DISTRIBUTIONS)}")
    needed = DISTRIBUTIONS[name]
    missing = [n for n in needed if n not in tbl]
    if missing:
        raise _Invalid(f"dist = {name!r} needs {', '.join(needed)}; missing {', '.join(missing)}")
    p = {n: _number(tbl[n], n) for n in needed}
    for s in ("sd", "sigma", "scale", "a", "b", "df"):
        if s in p and not p[s] > 0:
            raise _Invalid(f"non-positive {s} = {p[s]:g} for dist = {name!r} (must be > 0)")
    if "low" in p and not p["low"] < p["high"]:
        raise _Invalid(f"low = {p['low']:g} >= high = {p['high']:g} (must be low < high)")
    if name == "triangular" and not p["low"] <= p["mode"] <= p["high"]:
        raise _Invalid(f"triangular mode = {p['mode']:g} outside [low, high]")
    if name == "loguniform" and not p["low"] > 0:
        raise _Invalid(f"loguniform low = {p['low']:g} must be > 0")
    if name == "lognormal" and not p["median"] > 0:
        raise _Invalid(f"lognormal median = {p['median']:g} must be > 0")
    # the distribution's support must lie inside the parameter's domain
    dom = spec.domain
    if dom != "real":
        unbounded = {"normal", "student_t"} | ({"lognormal"} if dom == "unit_interval" else set())
        if name in unbounded:
            alt = "lognormal" if dom == "positive" else "beta"
            raise _Invalid(
                f"dist = {name!r} has support outside the domain of {spec.key} ({dom}); "
                f"use {alt}, or quantiles / interval90 (fitted inside the domain)"
            )
        if "low" in p:
            if dom == "positive" and not p["low"] > 0:
                raise _Invalid(
                    f"low = {p['low']:g} is outside the domain of {spec.key} (must be > 0)"
                )
            if dom == "unit_interval" and not (p["low"] >= 0 and p["high"] <= 1):
                raise _Invalid(
                    f"[{p['low']:g}, {p['high']:g}] is outside the domain of {spec.key} ([0, 1])"
                )
    return name, p


def _norm_unit(u: str) -> str:
    u = u.strip().lower().replace("×", "x").replace("µ", "u").replace("μ", "u").replace(" ", "")
    return {"x/year": "x/yr", "day": "days", "byte": "bytes", "": "1", "dimensionless": "1"}.get(
        u, u
    )


# Keys that earlier versions of the format accepted, with what replaces them.
RETIRED_KEYS = {
    "scaling.layer_coef": (
        "retired on 2026-11-29: depth is L = L_ref (N / N_ref)^exponent, given by "
        "'scaling.layers_at_reference' and 'scaling.layer_reference_params' "
        "(0.088 N^0.27 is L_ref = 119.8 at N_ref = 4.05e11)"
    ),
}


def _suggest(key: str) -> str:
    if key in RETIRED_KEYS:
        return f"; {RETIRED_KEYS[key]}"
    close = difflib.get_close_matches(key, PARAMETERS, n=1, cutoff=0.5)
    if not close:  # try on the last component, which carries the meaning
        tail = key.rsplit(".", 1)[-1]
        tails = {k.rsplit(".", 1)[-1]: k for k in PARAMETERS}
        hit = difflib.get_close_matches(tail, tails, n=1, cutoff=0.6)
        close = [tails[hit[0]]] if hit else []
    return f"; did you mean {close[0]!r}?" if close else ""


def parse_prior(
    key: str,
    table: Mapping[str, Any],
    *,
    file: str | Path = "<memory>",
    line: int | None = None,
) -> Prior:
    """Validate one parameter table (as tomllib returns it) and build its :class:`Prior`.

    Raises :class:`PriorError` naming ``file``, ``key`` and ``line``.
    """
    result = _validate_table(key, table, line)
    if isinstance(result, Prior):
        return replace(result, file=str(file))
    raise PriorError(file, result)


def _validate_table(key: str, table: Any, line: int | None) -> Prior | list[Problem]:
    spec = PARAMETERS.get(key)
    if spec is None:
        return [Problem(key, line, f"unknown parameter key{_suggest(key)}")]
    if not isinstance(table, Mapping):
        return [Problem(key, line, f"must be a table [{key}], got {table!r}")]
    problems: list[Problem] = []

    def bad(reason: str) -> None:
        problems.append(Problem(key, line, reason))

    source = table.get("source")
    if not isinstance(source, str) or not source.strip():
        bad("missing source (a non-empty string saying where the numbers come from)")
    note = table.get("note", "")
    if not isinstance(note, str):
        bad("note must be a string")
    unit = table.get("unit")
    if unit is not None and (
        not isinstance(unit, str) or _norm_unit(unit) != _norm_unit(spec.unit)
    ):
        bad(f"unit {unit!r} does not match the registry unit {spec.unit!r}")

    forms = [f for f in _FORMS if f in table]
    allowed = set(_META_FIELDS) | set(_FORMS)
    if "dist" in forms and isinstance(table.get("dist"), str):
        allowed |= set(DISTRIBUTIONS.get(table["dist"], ()))
    extra = [f for f in table if f not in allowed]
    if extra:
        bad(
            f"unknown field(s) {', '.join(map(repr, extra))}; allowed: "
            f"source, note, unit and one of value / quantiles / interval90 / dist (+ its parameters)"
        )
    if not forms:
        bad("no distribution given: use exactly one of value, quantiles, interval90, dist")
    elif len(forms) > 1:
        bad(f"two distributions given ({' and '.join(forms)}): use exactly one")
    if problems:
        return problems

    form = forms[0]
    try:
        if form == "value":
            v = _number(table["value"], "value")
            _check_point(spec, v, "value")
            dist, params = "point", {"value": v}
        elif form == "quantiles":
            dist, params = _fit_quantiles(spec, _parse_quantiles(spec, table["quantiles"]))
        elif form == "interval90":
            raw = table["interval90"]
            if not isinstance(raw, list) or len(raw) != 2:
                raise _Invalid(f"interval90 must be [low, high], got {raw!r}")
            lo, hi = _number(raw[0], "interval90 low"), _number(raw[1], "interval90 high")
            if not lo < hi:
                raise _Invalid(f"interval90 low = {lo:g} >= high = {hi:g} (must be low < high)")
            _check_open(spec, lo, "interval90 low")
            _check_open(spec, hi, "interval90 high")
            dist, params = _fit_quantiles(spec, [("p05", lo), ("p95", hi)])
        else:
            dist, params = _parse_dist(spec, table)
    except _Invalid as e:
        return [Problem(key, line, str(e))]
    return Prior(
        key=key,
        dist=dist,
        params=params,
        source=str(source).strip(),
        note=str(note).strip(),
        line=line,
        unit=spec.unit,
        form=form,
    )


# --------------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------------


def _find_line(lines: Sequence[str], key: str) -> int | None:
    """1-based line of the table header ``[group.name]`` of ``key`` (tomllib gives no positions)."""
    parts = key.split(".")
    q = [rf"""["']?{re.escape(p)}["']?""" for p in parts]
    dotted = r"\s*\.\s*".join(q)
    patterns = [
        rf"^\s*\[\s*{dotted}\s*\]",
        rf"^\s*{dotted}\s*=",
        rf"^\s*\[\s*{dotted}\s*\.",  # a deeper table under an (unknown) key
    ]
    if len(parts) > 1:
        patterns.append(rf"^\s*{q[-1]}\s*=")  # `name = {...}` inside a [group] table
        patterns.append(rf"^\s*\[\s*{q[0]}\s*\]")
    for pat in patterns:
        rx = re.compile(pat)
        for i, text in enumerate(lines, start=1):
            if rx.match(text):
                return i
    return None


def _toml_error_line(e: tomllib.TOMLDecodeError, text: str) -> int:
    m = re.search(r"line (\d+)", str(e))
    if m:
        return int(m.group(1))
    return max(1, text.count("\n") + (0 if text.endswith("\n") else 1))


def _load(path: str | Path, *, full: bool) -> PriorSet:
    path = Path(path)
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PriorError(file, [Problem(None, None, f"cannot read prior file: {e}")]) from e
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line = _toml_error_line(e, text)
        raise PriorError(file, [Problem(None, line, f"invalid TOML: {e}")]) from e
    lines = text.splitlines()
    problems: list[Problem] = []

    meta = doc.pop("meta", {})
    if not isinstance(meta, dict):
        problems.append(Problem("meta", _find_line(lines, "meta"), "[meta] must be a table"))
        meta = {}
    name = meta.get("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        problems.append(Problem("meta", _find_line(lines, "meta"), "meta.name must be a string"))
        name = path.stem

    found: dict[str, Prior] = {}
    groups = {k.split(".")[0] for k in PARAMETERS}
    for group, sub in doc.items():
        if not isinstance(sub, dict):
            reason = (
                "must be a table of parameters"
                if group in groups
                else f"unknown parameter key{_suggest(group)}"
            )
            problems.append(Problem(group, _find_line(lines, group), reason))
            continue
        for pname, tbl in sub.items():
            key = f"{group}.{pname}"
            line = _find_line(lines, key)
            result = _validate_table(key, tbl, line)
            if isinstance(result, Prior):
                found[key] = replace(result, file=file)
            else:
                problems.extend(result)

    if full and not problems:
        for key in PARAMETERS:
            if key not in found:
                problems.append(
                    Problem(
                        key, None, "missing required parameter (a full prior file gives every key)"
                    )
                )
    if problems:
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise PriorError(file, problems)

    ordered = {k: found[k] for k in PARAMETERS if k in found}
    return PriorSet(name=name.strip(), path=path, text=text, meta=dict(meta), priors=ordered)


def load_priors(path: str | Path) -> PriorSet:
    """Read a full prior file: every key of :data:`PARAMETERS` is required."""
    return _load(path, full=True)


def load_overlay(path: str | Path) -> PriorSet:
    """Read an overlay (scenario) file: any subset of the registry keys."""
    return _load(path, full=False)


def default_priors_path() -> Path:
    """The repository's ``priors/baseline.toml``."""
    return Path(__file__).resolve().parents[1] / "priors" / "baseline.toml"


# --------------------------------------------------------------------------------------------------
# PriorSet
# --------------------------------------------------------------------------------------------------


def _key_seed(seed: int, key: str) -> np.random.SeedSequence:
    """A per-key stream: independent across keys, unchanged when other keys are added or replaced."""
    return np.random.SeedSequence(seed, spawn_key=(zlib.crc32(key.encode("utf-8")),))


@dataclass(frozen=True)
class PriorSet:
    """The priors of one file (or of a base with an overlay on top), in registry order."""

    name: str
    path: Path
    text: str
    meta: dict[str, Any]
    priors: dict[str, Prior]
    base: PriorSet | None = field(default=None, repr=False)

    def __getitem__(self, key: str) -> Prior:
        try:
            return self.priors[key]
        except KeyError:
            raise KeyError(f"no prior for {key!r} in {self.name!r}{_suggest(key)}") from None

    def __contains__(self, key: object) -> bool:
        return key in self.priors

    def __iter__(self) -> Iterator[str]:
        return iter(self.priors)

    def __len__(self) -> int:
        return len(self.priors)

    def keys(self) -> list[str]:
        return list(self.priors)

    def overlay(self, other: PriorSet) -> PriorSet:
        """``other`` (a scenario) laid on top of this set: its keys replace ours, the rest stay.

        The result takes ``other``'s name, path and text, merges ``meta`` (other wins) and keeps
        this set as ``base``.
        """
        merged = dict(self.priors)
        merged.update(other.priors)
        ordered = {k: merged[k] for k in PARAMETERS if k in merged}
        ordered.update({k: v for k, v in merged.items() if k not in ordered})
        return PriorSet(
            name=other.name,
            path=other.path,
            text=other.text,
            meta={**self.meta, **other.meta},
            priors=ordered,
            base=self,
        )

    def uncertain_keys(self) -> list[str]:
        """Keys whose prior is not a point mass."""
        return [k for k, p in self.priors.items() if not p.is_point]

    def medians(self) -> dict[str, float]:
        return {k: p.median() for k, p in self.priors.items()}

    def sample(self, n: int, seed: int) -> dict[str, np.ndarray]:
        """``n`` independent draws of every parameter, reproducible from ``seed``.

        Each key has its own random stream derived from (seed, key), so a key's draws do not change
        when an overlay replaces other keys.
        """
        return {
            k: p.sample(np.random.default_rng(_key_seed(seed, k)), n)
            for k, p in self.priors.items()
        }

    def sample_from_uniforms(
        self,
        u: np.ndarray,
        keys: Sequence[str],
        *,
        fill: Literal["median"] | None = "median",
    ) -> dict[str, np.ndarray]:
        """Map a design of uniforms ``u`` (shape ``(n, len(keys))``) through the keys' inverse CDFs.

        For Sobol / quasi-Monte-Carlo designs and sensitivity analyses. With ``fill="median"`` (default)
        every other key of the set is included too, held at its median (a point mass at its value);
        with ``fill=None`` only ``keys`` are returned.
        """
        u = np.asarray(u, dtype=float)
        keys = list(keys)
        if u.ndim != 2 or u.shape[1] != len(keys):
            raise ValueError(f"u must have shape (n, {len(keys)}), got {u.shape}")
        if len(set(keys)) != len(keys):
            raise ValueError("keys must be distinct")
        if np.any((u < 0) | (u > 1)):
            raise ValueError("u must lie in [0, 1]")
        out: dict[str, np.ndarray] = {}
        for j, k in enumerate(keys):
            out[k] = self[k].ppf(u[:, j])
        if fill == "median":
            n = u.shape[0]
            for k, p in self.priors.items():
                if k not in out:
                    out[k] = np.full(n, p.median())
        return out

    def describe(self) -> str:
        """One line per parameter: key, summary and source."""
        width = max((len(k) for k in self.priors), default=0)
        return "\n".join(f"{k:<{width}}  {p.describe()}" for k, p in self.priors.items())
