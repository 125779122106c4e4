"""Prior densities (Prior.logpdf), which the what-if reweighting divides: each family's density
is the derivative of its CDF, i.e. density(ppf(u)) x d ppf / du = 1, and integrates to 1."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from forecast.priors.distributions import Prior

FAMILIES = [
    Prior("k", "normal", {"mean": 0.36, "sd": 0.04}, source="x"),
    Prior("k", "lognormal", {"median": 1.45, "sigma": 0.1}, source="x"),
    Prior("k", "logitnormal", {"median": 0.6, "sigma": 0.4}, source="x"),
    Prior("k", "split_lognormal", {"median": 6e7, "sigma_lo": 1.03, "sigma_hi": 1.4}, source="x"),
    Prior("k", "split_logitnormal", {"median": 0.7, "sigma_lo": 0.5, "sigma_hi": 0.42}, source="x"),
    Prior("k", "split_normal", {"median": 1.0, "sigma_lo": 0.1, "sigma_hi": 0.3}, source="x"),
    Prior(
        "k", "quantile_lognormal", {"p10": 1.3, "p50": 1.45, "p90": 1.65, "p99": 2.2}, source="x"
    ),
    Prior("k", "quantile_normal", {"p05": -1.0, "p50": 0.2, "p95": 0.5}, source="x"),
    Prior("k", "uniform", {"low": 0.5, "high": 2.0}, source="x"),
    Prior("k", "loguniform", {"low": 1.0, "high": 1.8}, source="x"),
    Prior("k", "triangular", {"low": 0.0, "mode": 0.3, "high": 1.0}, source="x"),
    Prior("k", "beta", {"a": 2.0, "b": 5.0}, source="x"),
    Prior("k", "student_t", {"df": 4.0, "loc": 1.0, "scale": 0.2}, source="x"),
]


@pytest.mark.parametrize("prior", FAMILIES, ids=[p.dist for p in FAMILIES])
@settings(max_examples=60, deadline=None)
@given(u=st.floats(0.002, 0.998))
def test_density_is_the_derivative_of_the_cdf(prior, u):
    h = 1e-6
    # the density of a split or quantile form jumps at its median or knots: not differentiable
    kinks = [0.5] if prior.dist.startswith("split_") else []
    if prior.dist.startswith("quantile_"):
        kinks = [int(name[1:]) / 100 for name in prior.params]
    assume(all(abs(u - k) > 1e-4 for k in kinks))
    x0, x, x1 = prior.ppf(np.array([u - h, u, u + h]))
    dxdu = (x1 - x0) / (2 * h)
    assert math.exp(float(prior.logpdf(x))) * dxdu == pytest.approx(1.0, rel=2e-3)


@pytest.mark.parametrize("prior", FAMILIES, ids=[p.dist for p in FAMILIES])
def test_density_integrates_to_one(prior):
    x = prior.ppf(np.linspace(1e-7, 1 - 1e-7, 400_001))
    dens = np.exp(prior.logpdf(x))
    assert np.trapezoid(dens, x) == pytest.approx(1.0, abs=2e-3)


def test_outside_the_support_is_minus_infinity():
    assert FAMILIES[1].logpdf(-1.0) == -np.inf  # lognormal
    assert FAMILIES[2].logpdf(1.5) == -np.inf  # logitnormal
    assert FAMILIES[8].logpdf(2.5) == -np.inf  # uniform
    point = Prior("k", "point", {"value": 90.0}, source="x")
    assert point.logpdf(90.0) == 0.0 and point.logpdf(180.0) == -np.inf
