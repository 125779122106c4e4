"""Per-law NumPyro likelihoods (forecast.stats.scaling_laws): the shortfall distribution, each law
fitted alone on the shipped evidence tables (2 chains x 300 draws, forecast.analyses.law_holdout),
literature checks, held-out coverage."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from support.compiles import compiled_programs

from forecast.analyses.law_holdout import fit_law, holdout_coverage, law_sampler, run_masked_fit
from forecast.data.evidence import load_model_shapes, load_scaleup_domains
from forecast.inference.sampler import SamplerStartError
from forecast.stats.scaling_laws import (
    BATCH_REFERENCE_FLOP,
    DEPTH_PRIORS,
    LawData,
    NormalBelowCeiling,
    batch_law_model,
    batch_table,
    depth_law_model,
    depth_table,
    domain_growth_model,
    domain_table,
    utilization_law_model,
    utilization_table,
)

pytestmark = pytest.mark.slow

RHAT_MAX = 1.05  # 2 chains x 300 draws; the joint model's gate (1.01 at 4 x 1000) is stricter


@pytest.fixture(scope="module")
def shapes():
    return load_model_shapes()


# ----------------------------------------------------------------------------- the distribution


def test_normal_below_ceiling_matches_scipy_skewnorm() -> None:
    """Normal noise minus a half-normal shortfall is skew-normal with shape -tau/sigma."""
    ceiling, sigma, tau = 1.5, 0.1, 0.4
    x = jnp.linspace(-1.0, 2.2, 17)
    ours = NormalBelowCeiling(ceiling, sigma, tau).log_prob(x)
    omega = math.hypot(sigma, tau)
    ref = stats.skewnorm.logpdf(np.asarray(x), -tau / sigma, loc=ceiling, scale=omega)
    np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-5, atol=1e-5)


def test_normal_below_ceiling_samples_and_moments() -> None:
    d = NormalBelowCeiling(0.0, 0.05, 0.5)
    draws = np.asarray(d.sample(jax.random.PRNGKey(0), (200_000,)))
    assert draws.mean() == pytest.approx(float(d.mean), abs=3e-3)
    assert draws.var() == pytest.approx(float(d.variance), rel=0.02)
    # with a small noise almost nothing lies above the ceiling: P(x > 0) = 0.5 - atan(10)/pi
    assert (draws > 0).mean() == pytest.approx(0.5 - math.atan(0.5 / 0.05) / math.pi, abs=3e-3)


def test_reference_compute_is_chinchilla_optimal_for_the_batch_pivot() -> None:
    # C_ref = 120 N_ref^2 with N_ref = scaling.batch_reference_params = 5.6e11
    assert pytest.approx(3.7632e25) == BATCH_REFERENCE_FLOP


# ----------------------------------------------------------------------------- each law alone


def test_depth_law_fit_matches_sevilla(shapes) -> None:
    """Sevilla et al. (2024) fit L = 0.088 N^0.27 (80 % range of the exponent 0.21-0.33)."""
    table = depth_table(shapes)
    assert len(table) >= 60
    fit = fit_law(depth_law_model, table, jax.random.PRNGKey(0))
    assert fit.divergences == 0 and fit.rhat_max() < RHAT_MAX and fit.ess_bulk_min() > 100
    lo, mid, hi = fit.quantiles("layer_exponent")
    assert 0.21 < mid < 0.33
    assert hi - lo < 0.1  # the data pin it down far beyond the prior's 0.15 sd
    # Sevilla's fit gives 119.8 layers at 4.05e11; Llama 3.1 405B has 126
    assert 0.8 * 119.8 < fit.quantiles("layers_at_reference")[1] < 1.2 * 119.8


def test_batch_law_fit_against_literature(shapes) -> None:
    table = batch_table(shapes)
    assert len(table) >= 40 and table.data.moe.sum() >= 3
    fit = fit_law(batch_law_model, table, jax.random.PRNGKey(0))
    assert fit.divergences <= 3 and fit.rhat_max() < RHAT_MAX
    level = fit.quantiles("batch_tokens_2024")
    # inside Sevilla et al. (2024)'s 80 % range 16M-360M, and not below half of the 16M tokens
    # Llama 3.1 405B used at about C_ref (the lab's batch is at or below the critical one)
    assert 16e6 < level[1] < 360e6
    assert level[0] > 8e6
    # exponent on compute between Sevilla's 0.36 / 2 = 0.18 and DeepSeek LLM's 0.327
    # (Bi et al. 2024, B_opt = 0.292 C^0.3271), with some slack on both sides
    assert 0.12 < fit.quantiles("batch_compute_exponent")[1] < 0.38
    # a shortfall is needed: labs sit below the ceiling by a fair fraction of a decade
    assert fit.quantiles("batch_shortfall_dex")[1] > 0.1


def test_utilization_law_ceiling_is_above_published_mfu(shapes) -> None:
    table = utilization_table(shapes)
    fit = fit_law(utilization_law_model, table, jax.random.PRNGKey(0))
    assert fit.divergences <= 3 and fit.rhat_max() < RHAT_MAX
    u = fit.quantiles("max_utilization")
    best_mfu = 10 ** float(np.max(table.data.y))
    assert u[0] > 0.9 * best_mfu  # the ceiling sits at or above the best published MFU
    assert u[2] < 0.85  # and below the best BF16 matmul (~80 % of peak)


def test_domain_growth_fit(shapes) -> None:
    table = domain_table(load_scaleup_domains())
    assert {8.0, 72.0, 144.0} <= set(np.round(10**table.data.y).tolist())
    fit = fit_law(domain_growth_model, table, jax.random.PRNGKey(0))
    assert fit.divergences <= 3 and fit.rhat_max() < RHAT_MAX
    growth = fit.quantiles("domain_growth_per_year")
    # 8 GPUs in 2020 to 144 packages in 2027: log-linear growth between 1.2x and 2x a year
    assert 1.2 < growth[1] < 2.0
    assert 8 < fit.quantiles("domain_size_2024")[1] < 72


def test_mask_drops_rows() -> None:
    """A masked row does not inform the fit: an absurd masked observation leaves it unchanged."""
    x = jnp.linspace(-3, 0, 12)
    y = 2.0 + 0.3 * x
    kw = {"num_warmup": 150, "num_samples": 150}
    clean = fit_law(depth_law_model, LawData(x, y, jnp.zeros(12)), jax.random.PRNGKey(1), **kw)
    y_bad = y.at[0].set(9.0)
    mask = jnp.arange(12) != 0
    masked = fit_law(
        depth_law_model, LawData(x, y_bad, jnp.zeros(12)), jax.random.PRNGKey(1), mask=mask, **kw
    )
    assert masked.quantiles("layer_exponent")[1] == pytest.approx(
        clean.quantiles("layer_exponent")[1], abs=0.02
    )


def test_refits_of_one_sampler_compile_once_and_each_mask_counts() -> None:
    """The hold-out checks refit a law once per held-out unit: the second refit (other rows
    masked, other key, other priors) compiles nothing, yet fits its own rows."""
    x = jnp.linspace(-3, 0, 12)
    data = LawData(x, 2.0 + 0.3 * x, jnp.zeros(12))
    sampler = law_sampler(
        depth_law_model, num_chains=2, num_warmup=150, num_samples=150, target_accept_prob=0.9
    )  # test_mask_drops_rows's settings: the same program
    first = run_masked_fit(sampler, jax.random.PRNGKey(0), data, DEPTH_PRIORS, None)
    steep = LawData(x, data.y.at[6:].set(2.0 + 0.6 * x[6:]), data.moe)  # rows 6-11: slope 0.6
    only_steep = jnp.asarray(np.arange(12) >= 6)
    with compiled_programs() as compiled:
        second = run_masked_fit(
            sampler,
            jax.random.PRNGKey(1),
            steep,
            DEPTH_PRIORS._replace(exponent_loc=0.5),
            only_steep,
        )
    assert compiled == []
    assert first.quantiles("layer_exponent")[1] == pytest.approx(0.3, abs=0.03)
    assert second.quantiles("layer_exponent")[1] == pytest.approx(0.6, abs=0.06)
    assert second.samples["layer_exponent"].shape == (2, 150)


def test_a_law_fit_that_cannot_start_is_refused_by_name() -> None:
    """A negative scatter scale: the log density is NaN everywhere, no chain can start; inside the
    compiled fit NumPyro cannot refuse it, so the chains' last potential energy does."""
    x = jnp.linspace(-3, 0, 12)
    with pytest.raises(SamplerStartError, match="chain\\(s\\) 0, 1 of 2 began"):
        fit_law(
            depth_law_model,
            LawData(x, 2.0 + 0.3 * x, jnp.zeros(12)),
            jax.random.PRNGKey(0),
            priors=DEPTH_PRIORS._replace(noise_scale=-1.0),
            num_warmup=150,  # as above: no new program to compile
            num_samples=150,
        )


# ----------------------------------------------------------------------------- held-out checks


@pytest.mark.parametrize("law", ["depth", "batch"])
def test_held_out_sources_fall_in_their_80_percent_interval(shapes, law: str) -> None:
    """Sources (papers) held out in 5 folds: 60-95 % of their models inside the 80 % interval."""
    model, table = {
        "depth": (depth_law_model, depth_table(shapes)),
        "batch": (batch_law_model, batch_table(shapes)),
    }[law]
    result = holdout_coverage(
        model, table, jax.random.PRNGKey(2), folds=5, num_warmup=150, num_samples=150
    )
    assert np.isfinite(result.lower).all() and (result.lower < result.upper).all()
    assert 0.6 <= result.coverage <= 0.95, result.frame().loc[~result.inside]
