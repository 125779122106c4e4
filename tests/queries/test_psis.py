"""forecast.stats.psis against ArviZ's psislw (the reference implementation), and its invariants."""

from __future__ import annotations

import numpy as np
import pytest
from arviz_stats.base import array_stats

from forecast.queries.psis import K_THRESHOLD, psis_log_weights


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", [0.1, 0.6, 1.5])
def test_same_weights_and_k_as_arviz(seed, scale):
    rng = np.random.default_rng(seed)
    log_ratios = scale * rng.standard_normal(1000) + 0.3 * rng.standard_t(3, 1000)
    ours, k = psis_log_weights(log_ratios)
    # ArviZ's psislw takes log-likelihoods: its weights are proportional to exp(-input)
    ref, k_ref = array_stats.psislw(-log_ratios)
    assert k == pytest.approx(float(k_ref), abs=1e-9)
    np.testing.assert_allclose(ours, np.asarray(ref), rtol=1e-9, atol=1e-9)


def test_mild_changes_are_reliable_and_heavy_ones_are_not():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4000)
    # reweighting N(0,1) draws to N(0.2, 1): a mild shift, k well below 0.7
    _, k_mild = psis_log_weights(0.2 * x - 0.02)
    # to N(3, 0.3): far in the tail, k above 0.7
    lr = -0.5 * ((x - 3) / 0.3) ** 2 - np.log(0.3) + 0.5 * x**2
    _, k_far = psis_log_weights(lr)
    assert k_mild < 0.5 < K_THRESHOLD < k_far


def test_weights_are_normalized_and_excluded_draws_get_none():
    lr = np.array([0.0, 0.1, -np.inf, 0.2, 0.05] * 100)
    w, k = psis_log_weights(lr)
    assert np.exp(w).sum() == pytest.approx(1.0)
    assert np.all(np.isneginf(w[2::5]))
    assert np.isfinite(k)
    _, k_none = psis_log_weights(np.full(100, -np.inf))
    assert k_none == np.inf


def test_too_few_draws_get_equal_weights_and_an_infinite_k():
    """Under 25 finite ratios there is no tail to fit (review finding: all -inf weights, then
    NaN probabilities and a 500): equal weights on the finite draws, k = inf."""
    lr = np.r_[np.linspace(-1, 1, 20), -np.inf]
    w, k = psis_log_weights(lr)
    assert k == np.inf
    assert np.exp(w[:20]) == pytest.approx(np.full(20, 1 / 20)) and w[20] == -np.inf
