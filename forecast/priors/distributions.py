"""Distribution maths of the priors: domains and their transforms, the fitted forms, sampling.

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

A fixed value is the ``point`` distribution (a point mass). The checks here raise
:class:`InvalidPrior` with the reason only; :mod:`forecast.priors.parsing` adds file, key and line.
No jax/numpyro import happens at module level; :meth:`Prior.to_numpyro` imports numpyro lazily.

One concept: the prior distribution - its parameters, quantiles, sampling and exact NumPyro form.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats

from forecast.priors.registry import (
    MAX_COMPOUNDING_YEARS,
    PLAUSIBLE_TAIL,
    Domain,
    ParameterSpec,
)

__all__ = [
    "DISTRIBUTIONS",
    "FORMS",
    "InvalidPrior",
    "Prior",
    "check_usable",
    "fit_interval90",
    "fit_quantiles",
    "fixed_value",
    "log10_normal",
    "named_distribution",
]

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

#: The ways a prior file gives a distribution (exactly one per parameter table).
FORMS = ("value", "quantiles", "interval90", "dist")

_Z90 = float(special.ndtri(0.9))
_QKEY = re.compile(r"^p(\d\d)$")
_FLOAT_MAX_LOG10 = math.log10(np.finfo(float).max)  # 308.25
_FLOAT_TINY_LOG10 = math.log10(np.finfo(float).tiny)  # -307.65
_TAIL = 0.001  # the tails checked for usability: 0.1% and 99.9%


class InvalidPrior(ValueError):
    """One problem with one parameter's distribution (the message is the reason)."""


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

    def logpdf(self, x: Any) -> np.ndarray:
        """Log density at ``x`` (vectorized; -inf outside the support).  A point mass has no
        density: 0 at its value, -inf elsewhere (a what-if reweighting treats it as such)."""
        x = np.asarray(x, dtype=float)
        d, p = self.dist, self.params
        with np.errstate(divide="ignore", invalid="ignore"):
            if d == "point":
                return np.where(x == p["value"], 0.0, -np.inf)
            if d == "uniform":
                inside = (x >= p["low"]) & (x <= p["high"])
                return np.where(inside, -math.log(p["high"] - p["low"]), -np.inf)
            if d == "loguniform":
                inside = (x >= p["low"]) & (x <= p["high"])
                width = math.log(p["high"] / p["low"])
                return np.where(inside, -np.log(x) - math.log(width), -np.inf)
            if d == "triangular":
                lo, mode, hi = p["low"], p["mode"], p["high"]
                return stats.triang.logpdf(x, (mode - lo) / (hi - lo), loc=lo, scale=hi - lo)
            if d == "beta":
                return stats.beta.logpdf(x, p["a"], p["b"])
            if d == "student_t":
                return stats.t.logpdf(x, p["df"], loc=p["loc"], scale=p["scale"])
            if d == "normal":
                return stats.norm.logpdf(x, p["mean"], p["sd"])
            dom = _family_domain(d)
            y = np.asarray(_fwd(dom, x), dtype=float)
            # log |dy/dx| of the domain's transform: log for positive, logit for (0, 1)
            if dom == "positive":
                log_jac = -np.log(x)
            elif dom == "unit_interval":
                log_jac = -np.log(x) - np.log1p(-x)
            else:
                log_jac = np.zeros_like(x)
            if d in ("lognormal", "logitnormal"):
                m = _fwd(dom, p["median"])
                out = stats.norm.logpdf(y, m, p["sigma"])
            elif d.startswith("split_"):
                m = _fwd(dom, p["median"])
                s = np.where(y < m, p["sigma_lo"], p["sigma_hi"])
                out = stats.norm.logpdf((y - m) / s) - np.log(s)
            else:  # quantile_*: y(z) piecewise linear through the knots, end segments extended
                zk, yk = _knots(dom, p)
                slopes = np.diff(yk) / np.diff(zk)
                i = np.clip(np.searchsorted(yk, y, side="right") - 1, 0, len(yk) - 2)
                z = zk[i] + (y - yk[i]) / slopes[i]
                out = stats.norm.logpdf(z) - np.log(slopes[i])
            return np.where(np.isfinite(y), out + log_jac, -np.inf)

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
        _, nd, _ = _numpyro()

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

    def to_numpyro_exact(self) -> Any:
        """The ``numpyro.distributions`` object with exactly this distribution, every family.

        As :meth:`to_numpyro` where that is exact; split and piecewise (``quantile_*``) fits are
        a standard Normal pushed through the fit's piecewise-linear map in the normal score
        (:func:`_numpyro_piecewise`), then the domain's inverse transform (exp, sigmoid), which
        is how :meth:`ppf` defines them: samples have the same distribution as :meth:`sample`
        and ``log_prob`` is the exact density.
        """
        d, p = self.dist, self.params
        if d.startswith("split_"):
            m = float(_fwd(_family_domain(d), p["median"]))
            zk = np.array([-1.0, 0.0, 1.0])
            yk = np.array([m - p["sigma_lo"], m, m + p["sigma_hi"]])
            return _numpyro_piecewise(_family_domain(d), zk, yk)
        if d.startswith("quantile_"):
            dom = _family_domain(d)
            return _numpyro_piecewise(dom, *_knots(dom, p))
        return self.to_numpyro()


def _knots(domain: Domain, params: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
    names = sorted(params, key=_qprob)
    zk = special.ndtri(np.array([_qprob(n) for n in names]))
    yk = np.asarray(_fwd(domain, np.array([params[n] for n in names], dtype=float)))
    return zk, yk


def _numpyro() -> tuple[Any, Any, Any]:
    """``jax.numpy``, ``numpyro.distributions`` and its ``constraints``, imported on first use."""
    # why here: reading and parsing priors (every command does) must not import JAX
    import jax.numpy as jnp
    import numpyro.distributions as nd
    from numpyro.distributions import constraints

    return jnp, nd, constraints


def _interp_extrap(z: np.ndarray, zk: np.ndarray, yk: np.ndarray) -> np.ndarray:
    """Piecewise-linear interpolation through (zk, yk), extrapolated along the end segments."""
    slopes = np.diff(yk) / np.diff(zk)
    i = np.clip(np.searchsorted(zk, z, side="right") - 1, 0, len(zk) - 2)
    with np.errstate(invalid="ignore"):
        return yk[i] + slopes[i] * (z - zk[i])


def _numpyro_piecewise(domain: Domain, zk: np.ndarray, yk: np.ndarray) -> Any:
    """Standard Normal z -> piecewise-linear y(z) through the knots (end segments extended, as
    :func:`_interp_extrap`) -> the domain's inverse transform (exp, sigmoid or identity)."""
    jnp, nd, constraints = _numpyro()

    zk = np.asarray(zk, dtype=float)
    yk = np.asarray(yk, dtype=float)
    slopes = np.diff(yk) / np.diff(zk)
    if np.any(slopes <= 0):
        raise ValueError("piecewise prior: quantiles must increase")
    zk_j, yk_j, slopes_j = jnp.asarray(zk), jnp.asarray(yk), jnp.asarray(slopes)
    last = len(zk) - 2

    class _PiecewiseLinear(nd.transforms.Transform):
        domain = constraints.real
        codomain = constraints.real
        sign = 1

        def __call__(self, z: Any) -> Any:
            i = jnp.clip(jnp.searchsorted(zk_j, z, side="right") - 1, 0, last)
            return yk_j[i] + slopes_j[i] * (z - zk_j[i])

        def _inverse(self, y: Any) -> Any:
            i = jnp.clip(jnp.searchsorted(yk_j, y, side="right") - 1, 0, last)
            return zk_j[i] + (y - yk_j[i]) / slopes_j[i]

        def log_abs_det_jacobian(self, z: Any, y: Any, intermediates: Any = None) -> Any:
            i = jnp.clip(jnp.searchsorted(zk_j, z, side="right") - 1, 0, last)
            return jnp.log(slopes_j[i])

    transforms: list[Any] = [_PiecewiseLinear()]
    if domain == "positive":
        transforms.append(nd.transforms.ExpTransform())
    elif domain == "unit_interval":
        transforms.append(nd.transforms.SigmoidTransform())
    return nd.TransformedDistribution(nd.Normal(0.0, 1.0), transforms)


def _numpyro_triangular(low: float, mode: float, high: float) -> Any:
    jnp, nd, constraints = _numpyro()

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
# The four forms: checked and fitted
# --------------------------------------------------------------------------------------------------


def number(x: Any, what: str) -> float:
    """``x`` as a finite float, or :class:`InvalidPrior` naming ``what``."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise InvalidPrior(f"{what} must be a number, got {x!r}")
    v = float(x)
    if not math.isfinite(v):
        raise InvalidPrior(f"{what} must be finite, got {x!r}")
    return v


def _check_closed(spec: ParameterSpec, v: float, what: str) -> None:
    """Closed-domain check for fixed values and distribution bounds."""
    if spec.domain == "positive" and not v > 0:
        raise InvalidPrior(f"{what} = {v:g} is outside the domain of {spec.key} (must be > 0)")
    if spec.domain == "unit_interval" and not 0 <= v <= 1:
        raise InvalidPrior(
            f"{what} = {v:g} is outside the domain of {spec.key} (must be in [0, 1])"
        )


def _check_open(spec: ParameterSpec, v: float, what: str) -> None:
    """Open-domain check for quantiles (they go through log / logit)."""
    if spec.domain == "positive" and not v > 0:
        raise InvalidPrior(f"{what} = {v:g} is outside the domain of {spec.key} (must be > 0)")
    if spec.domain == "unit_interval" and not 0 < v < 1:
        raise InvalidPrior(
            f"{what} = {v:g} is outside the domain of {spec.key} (must be in (0, 1))"
        )


def fixed_value(spec: ParameterSpec, raw: Any) -> tuple[str, dict[str, float]]:
    """The ``value = x`` form: a point mass (``dist = "point"``) on the closed domain."""
    v = number(raw, "value")
    _check_closed(spec, v, "value")
    return "point", {"value": v}


def fit_quantiles(spec: ParameterSpec, qs: list[tuple[str, float]]) -> tuple[str, dict[str, float]]:
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


def parse_quantiles(spec: ParameterSpec, raw: Any) -> list[tuple[str, float]]:
    """Check a ``quantiles = { pNN = x, ... }`` table: names, order, values inside the domain."""
    if not isinstance(raw, Mapping):
        raise InvalidPrior("quantiles must be a table like { p10 = ..., p50 = ..., p90 = ... }")
    qs: list[tuple[str, float]] = []
    for name, val in raw.items():
        m = _QKEY.match(name)
        if not m or not 1 <= int(m.group(1)) <= 99:
            raise InvalidPrior(
                f"quantile key {name!r} is not like pNN (two digits, p01..p99, e.g. p05, p50, p95)"
            )
        qs.append((name, number(val, f"quantile {name}")))
    if len(qs) < 2:
        raise InvalidPrior(f"quantiles needs at least 2 entries, got {len(qs)}")
    for (n0, v0), (n1, v1) in zip(qs, qs[1:], strict=False):
        if not _qprob(n1) > _qprob(n0):
            raise InvalidPrior(
                f"quantiles out of order: {n1} comes after {n0} (probabilities must increase)"
            )
        if not v1 > v0:
            raise InvalidPrior(
                f"quantile values out of order: {n0} = {v0:g} but {n1} = {v1:g} "
                "(values must increase; for a fixed value write value = ...)"
            )
    for n, v in qs:
        _check_open(spec, v, f"quantile {n}")
    return qs


def fit_interval90(spec: ParameterSpec, raw: Any) -> tuple[str, dict[str, float]]:
    """The ``interval90 = [low, high]`` form: the 5% and 95% quantiles."""
    if not isinstance(raw, list) or len(raw) != 2:
        raise InvalidPrior(f"interval90 must be [low, high], got {raw!r}")
    lo, hi = number(raw[0], "interval90 low"), number(raw[1], "interval90 high")
    if not lo < hi:
        raise InvalidPrior(
            f"interval90 low = {lo:g} >= high = {hi:g} "
            "(must be low < high; for a fixed value write value = ...)"
        )
    _check_open(spec, lo, "interval90 low")
    _check_open(spec, hi, "interval90 high")
    return fit_quantiles(spec, [("p05", lo), ("p95", hi)])


def named_distribution(spec: ParameterSpec, tbl: Mapping[str, Any]) -> tuple[str, dict[str, float]]:
    """The ``dist = "<name>"`` form with its parameters as sibling fields of ``tbl``."""
    name = tbl["dist"]
    if not isinstance(name, str) or name not in DISTRIBUTIONS:
        close = difflib.get_close_matches(str(name), DISTRIBUTIONS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidPrior(
            f"unknown distribution {name!r}{hint}; known: {', '.join(DISTRIBUTIONS)}"
        )
    needed = DISTRIBUTIONS[name]
    missing = [n for n in needed if n not in tbl]
    if missing:
        raise InvalidPrior(
            f"dist = {name!r} needs {', '.join(needed)}; missing {', '.join(missing)}"
        )
    p = {n: number(tbl[n], n) for n in needed}
    for s in ("sd", "sigma", "scale", "a", "b", "df"):
        if s in p and not p[s] > 0:
            raise InvalidPrior(f"non-positive {s} = {p[s]:g} for dist = {name!r} (must be > 0)")
    if "low" in p and not p["low"] < p["high"]:
        raise InvalidPrior(f"low = {p['low']:g} >= high = {p['high']:g} (must be low < high)")
    if name == "triangular" and not p["low"] <= p["mode"] <= p["high"]:
        raise InvalidPrior(f"triangular mode = {p['mode']:g} outside [low, high]")
    if name == "loguniform" and not p["low"] > 0:
        raise InvalidPrior(f"loguniform low = {p['low']:g} must be > 0")
    if name == "lognormal" and not p["median"] > 0:
        raise InvalidPrior(f"lognormal median = {p['median']:g} must be > 0")
    # the distribution's support must lie inside the parameter's domain
    dom = spec.domain
    if dom != "real":
        unbounded = {"normal", "student_t"} | ({"lognormal"} if dom == "unit_interval" else set())
        if name in unbounded:
            alt = "lognormal" if dom == "positive" else "beta"
            raise InvalidPrior(
                f"dist = {name!r} has support outside the domain of {spec.key} ({dom}); "
                f"use {alt}, or quantiles / interval90 (fitted inside the domain)"
            )
        if "low" in p:
            if dom == "positive" and not p["low"] > 0:
                raise InvalidPrior(
                    f"low = {p['low']:g} is outside the domain of {spec.key} (must be > 0)"
                )
            if dom == "unit_interval" and not (p["low"] >= 0 and p["high"] <= 1):
                raise InvalidPrior(
                    f"[{p['low']:g}, {p['high']:g}] is outside the domain of {spec.key} ([0, 1])"
                )
    return name, p


# --------------------------------------------------------------------------------------------------
# What the fit and the propagation can use
# --------------------------------------------------------------------------------------------------


def log10_normal(p10: float, p50: float, p90: float) -> tuple[float, float]:
    """Normal (loc, scale) in log10 space with median ``p50`` and 10-90% width of [p10, p90].

    ``loc = log10(p50)``, ``scale = (log10 p90 - log10 p10) / (2 * 1.2816)``: the log-normal that
    matches the median and the 80% interval. A point mass (p10 = p50 = p90) gives scale 0.
    Raises ValueError unless 0 < p10 <= p50 <= p90 < inf.
    """
    for q in (p10, p50, p90):
        if not (q > 0 and math.isfinite(q)):
            raise ValueError(f"quantiles must be finite and > 0, got {(p10, p50, p90)}")
    if not p10 <= p50 <= p90:
        raise ValueError(f"quantiles must not decrease, got {(p10, p50, p90)}")
    loc = math.log10(p50)
    scale = (math.log10(p90) - math.log10(p10)) / (2.0 * _Z90)
    if not (math.isfinite(loc) and math.isfinite(scale)):  # pragma: no cover (guarded above)
        raise ValueError(f"log10 of {(p10, p50, p90)} is not finite")
    return loc, scale


def check_usable(spec: ParameterSpec, prior: Prior) -> None:
    """Refuse a prior the fit or the propagation cannot use (:class:`InvalidPrior`).

    Every prior: its 0.1%, 50% and 99.9% quantiles are finite and inside the closed domain (a fit
    whose tails overflow to inf or underflow to 0 would make NaN walls). Growth rates (x/yr): those
    quantiles compounded over :data:`MAX_COMPOUNDING_YEARS` stay inside float64. Trend keys: the
    10/50/90% quantiles give a finite log10 normal (:func:`log10_normal`).
    """
    with np.errstate(over="ignore", under="ignore"):  # overflow to inf is what is checked
        qs = {q: prior.quantile(q) for q in (_TAIL, 0.5, 1 - _TAIL)}
    for q, v in qs.items():
        what = f"the {q:.1%} quantile" if not prior.is_point else "value"
        if not math.isfinite(v):
            raise InvalidPrior(f"{what} is {v:g}: the distribution overflows; narrow it")
        if spec.domain == "positive" and not v > 0:
            raise InvalidPrior(f"{what} is {v:g}: the distribution underflows to 0; narrow it")
        if spec.domain == "unit_interval" and not 0 <= v <= 1:  # pragma: no cover (logit fits)
            raise InvalidPrior(f"{what} is {v:g}, outside [0, 1]")
    check_plausible(spec, prior)
    if spec.unit == "x/yr":
        years = MAX_COMPOUNDING_YEARS
        for q, v in qs.items():
            compounded = years * math.log10(v)
            if not _FLOAT_TINY_LOG10 < compounded < _FLOAT_MAX_LOG10:
                what = f"the {q:.1%} quantile" if not prior.is_point else "value"
                raise InvalidPrior(
                    f"{what} {v:g} x/yr compounds to 1e{compounded:.0f} over {years} years, "
                    "outside float64: not a growth rate the forecast can use"
                )
    if spec.role in ("trend_growth", "trend_level", "trend_noise"):
        try:
            log10_normal(*(prior.quantile(q) for q in (0.1, 0.5, 0.9)))
        except ValueError as e:
            raise InvalidPrior(f"not usable as a trend prior: {e}") from None


def check_plausible(spec: ParameterSpec, prior: Prior) -> None:
    """Refuse a prior whose 1% or 99% quantile (or value) is outside ``spec.plausible``."""
    if spec.plausible is None:
        return
    low, high = spec.plausible
    with np.errstate(over="ignore", under="ignore"):
        checked = (
            {"value": prior.quantile(0.5)}
            if prior.is_point
            else {
                f"the {q:.0%} quantile": prior.quantile(q)
                for q in (PLAUSIBLE_TAIL, 1 - PLAUSIBLE_TAIL)
            }
        )
    for what, v in checked.items():
        if not low <= v <= high:
            raise InvalidPrior(
                f"{what} {v:g} {spec.unit} is outside the plausible range "
                f"[{low:g}, {high:g}] {spec.unit} of {spec.key} (docs/reliability.md)"
            )
