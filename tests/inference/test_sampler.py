"""RaveledNUTS (forecast.inference.sampler): NumPyro's NUTS on the model's sites raveled into one
vector is the same sampler (the same draws until rounding drifts apart) with the same posterior,
and the stored draws carry the model's own sites."""

from __future__ import annotations

import pickle

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC, NUTS

from forecast.config.runtime import init_jax
from forecast.inference.fit import _run_nuts
from forecast.inference.sampler import (
    RAVELED_SITE,
    UNBATCHED,
    RaveledNUTS,
    SamplerStartError,
    mcmc_chain_method,
)

init_jax()

GROUP = np.repeat(np.arange(3), 5)
Y = np.random.default_rng(0).normal(np.array([1.0, -2.0, 3.0])[GROUP], 1.0)


def conjugate_model(y, group):
    """Sites of three shapes and a constrained one: a vector with data, a positive scalar and a
    2 x 2 block without."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0).expand([3]))
    numpyro.sample("tau", dist.LogNormal(0.0, 0.5))
    numpyro.sample("a", dist.Normal(0.0, 1.0).expand([2, 2]))
    numpyro.sample("y", dist.Normal(mu[group], 1.0), obs=y)


def _run(kernel_class, iterations, method, chains=2, seed=1):
    kernel = kernel_class(conjugate_model)
    mcmc = MCMC(
        kernel,
        num_warmup=iterations,
        num_samples=iterations,
        num_chains=chains,
        chain_method=method,
        progress_bar=False,
    )
    mcmc.run(jax.random.PRNGKey(seed), Y, GROUP, extra_fields=("num_steps",))
    return kernel, mcmc


def test_the_raveled_sampler_takes_numpyros_steps():
    """The same momentum draws, adaptation and tree building on the same vector: the same draws
    and tree sizes, to the rounding that XLA's other fusion of the raveled arithmetic leaves
    (over thousands of iterations NUTS amplifies it into other trajectories, as another CPU's
    rounding does; the posterior is the same: the test below)."""
    raveled, fast = _run(RaveledNUTS, 25, "vectorized")  # chains as the fits run them
    _, stock = _run(NUTS, 25, "vectorized")
    assert raveled.raveled
    for site, draws in stock.get_samples().items():
        np.testing.assert_allclose(fast.get_samples()[site], draws, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(
        fast.get_extra_fields()["num_steps"], stock.get_extra_fields()["num_steps"]
    )


@pytest.mark.parametrize("method", ["sequential", UNBATCHED])
def test_the_raveled_sampler_draws_the_exact_posterior(method):
    """Conjugate normal means (prior N(0, 10^2), five observations of unit noise each), and the
    prior where no data reach (tau log-normal, a standard normal): 4 x 2,000 draws within four
    Monte Carlo standard errors of the exact moments; the draws carry the model's sites only.
    Chains one after the other: one key each, the other initialisation path of the raveling
    (``"sequential"`` initialises the chains together, the fits' ``"unbatched"`` each chain
    inside its own compiled run)."""
    kernel, mcmc = _run(RaveledNUTS, 2000, mcmc_chain_method(method), chains=4, seed=7)
    assert kernel.raveled
    draws = mcmc.get_samples()
    assert set(draws) == {"mu", "tau", "a"} and RAVELED_SITE not in draws
    assert draws["mu"].shape == (8000, 3) and draws["a"].shape == (8000, 2, 2)
    precision = 1 / 10.0**2 + 5
    exact_mean = np.bincount(GROUP, Y) / precision
    exact_sd = precision**-0.5
    se = exact_sd / np.sqrt(2000)  # ESS of these near-independent draws >= 2,000 of 8,000
    np.testing.assert_allclose(draws["mu"].mean(0), exact_mean, atol=4 * se)
    np.testing.assert_allclose(draws["mu"].std(0), exact_sd, rtol=0.05)
    log_tau = np.log(np.asarray(draws["tau"]))
    assert abs(log_tau.mean()) < 4 * 0.5 / np.sqrt(2000)
    assert log_tau.std() == pytest.approx(0.5, rel=0.05)
    np.testing.assert_allclose(np.asarray(draws["a"]).std(0), 1.0, rtol=0.05)
    assert float(jnp.all(jnp.isfinite(mcmc.get_extra_fields()["num_steps"])))


def test_a_potential_function_runs_numpyros_nuts_unchanged():
    """Without a model there are no sites to ravel: NUTS on the given potential, as NumPyro's."""

    def potential(z):
        return 0.5 * jnp.sum(z**2)

    kernel = RaveledNUTS(potential_fn=potential)
    mcmc = MCMC(kernel, num_warmup=200, num_samples=200, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), init_params=jnp.zeros(3))
    assert not kernel.raveled and mcmc.get_samples().shape == (200, 3)


def test_the_raveled_kernel_keeps_numpyros_interface():
    """The constrain function takes the raveled position and gives the model's sites (as the
    stored draws); a kernel pickles as NumPyro's; a composite kernel is refused by name; a mass
    matrix structured by site names runs per site."""
    kernel, mcmc = _run(RaveledNUTS, 5, "sequential", chains=1)
    constrained = kernel.get_constrain_fn((Y, GROUP), {})(mcmc.last_state.z)
    assert set(constrained) == {"mu", "tau", "a"}
    for site, draws in mcmc.get_samples().items():
        np.testing.assert_allclose(constrained[site], draws[-1], rtol=1e-12)
    assert pickle.loads(pickle.dumps(kernel)).raveled
    with pytest.raises(NotImplementedError, match="composite kernel"):
        kernel.wrap_model(lambda model: model)
    structured = RaveledNUTS(conjugate_model, dense_mass=[("mu",)])
    MCMC(structured, num_warmup=5, num_samples=5, progress_bar=False).run(
        jax.random.PRNGKey(0), Y, GROUP
    )
    assert not structured.raveled


def nowhere_model():
    """A log density that is -inf wherever NUTS may start (x within +-2 on the unconstrained
    scale): no valid initial point exists."""
    x = numpyro.sample("x", dist.Normal(0.0, 1.0))
    numpyro.factor("nowhere", jnp.where(x > 100.0, 0.0, -jnp.inf))


@pytest.mark.parametrize("method", ["vectorized", UNBATCHED])
def test_a_model_that_cannot_start_is_refused_by_name(method):
    """NumPyro refuses a start with no valid point only where it starts outside a compiled
    program ("vectorized"); unbatched chains start inside one, so the fits check the chains'
    last potential energy instead (a chain that never started never moved)."""
    settings = dict(num_warmup=5, num_samples=5, num_chains=2, progress_bar=False)
    with pytest.raises(RuntimeError) as caught:  # SamplerStartError is one
        _run_nuts(
            RaveledNUTS(nowhere_model), jax.random.PRNGKey(0), chain_method=method, **settings
        )
    if method == UNBATCHED:
        assert isinstance(caught.value, SamplerStartError)
        assert str(caught.value).startswith(
            "NUTS could not start: the model's log density is not finite where chain(s) 0, 1 of 2"
        )
    else:
        assert "Cannot find valid initial parameters" in str(caught.value)
