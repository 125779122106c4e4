"""NUTS on a model's unconstrained sites raveled into one vector (:class:`RaveledNUTS`).

NumPyro's NUTS keeps the position, momentum and gradient as a dict of the model's sites and
applies every step of its tree building (leapfrog, U-turn checks, the proposal's choice) to each
site's array separately. The joint model has 28 sites of 1 to 6 numbers: its gradient costs
~0.02 ms a leapfrog step for four vectorized chains, NumPyro's per-site bookkeeping ~0.25 ms.
:class:`RaveledNUTS` hands NUTS one array instead: the sites raveled in the order NumPyro itself
ravels them for the mass matrix and the momentum (``jax.flatten_util.ravel_pytree``: sorted site
names), unraveled inside the potential and before the transform to constrained values. The
sampler is the same algorithm on the same vector (the same momentum draws, step-size and
diagonal mass-matrix adaptation, U-turn rule); what differs is the rounding of XLA's fused
operations, and NUTS amplifies a last-bit difference over thousands of iterations into other
trajectories, as another CPU does (README, "Reproducibility"). The posterior is the same
distribution: tests/inference/test_sampler.py checks it against the exact posterior of a
conjugate model, and the reference forecast's Monte Carlo-error tests hold. BENCHMARKS.md
section 7 has the speed (the joint fit's NUTS ~1.9x).

It relies on four attributes of NumPyro's ``HMC`` that are not public API (``_init_fn``,
``_sample_fn``, ``_potential_fn_gen``, ``_postprocess_fn``); where a NumPyro release lacks
them, :class:`RaveledNUTS` runs NumPyro's own per-site NUTS unchanged (``raveled`` says which
ran) and a test fails, so the project notices.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.flatten_util import ravel_pytree
from numpyro.infer import NUTS
from numpyro.infer.hmc import hmc
from numpyro.infer.hmc_util import euclidean_kinetic_energy
from numpyro.infer.util import ParamInfo
from numpyro.util import is_prng_key

RAVELED_SITE = "__raveled_sites__"
"""The one key of the position NUTS sees (the model has no site of this name)."""
_HMC_INTERNALS = ("_init_fn", "_sample_fn", "_potential_fn_gen", "_postprocess_fn")


class RaveledNUTS(NUTS):
    """:class:`numpyro.infer.NUTS` on the model's unconstrained sites as one vector.

    Takes NUTS's arguments; a model is required (a ``potential_fn`` runs NUTS as is). Samples,
    ``MCMC.get_samples`` and ArviZ's conversion see the model's own sites: the vector is
    unraveled and constrained by the model's transforms before anything is stored.
    ``raveled``: whether the last initialisation raveled the sites (False on a NumPyro release
    without the internals this relies on, which then runs unchanged).
    """

    raveled: bool = False

    def _init_state(self, rng_key, model_args, model_kwargs, init_params):
        params = super()._init_state(rng_key, model_args, model_kwargs, init_params)
        self.raveled = False
        if self._model is None or not all(hasattr(self, a) for a in _HMC_INTERNALS):
            return params
        potential_gen, postprocess_gen = self._potential_fn_gen, self._postprocess_fn
        if potential_gen is None or postprocess_gen is None:
            return params
        sites = params.z if isinstance(params, ParamInfo) else params
        batched = not is_prng_key(rng_key)  # one key per chain: chain_method="vectorized"
        one_chain = jax.tree.map(lambda v: v[0], sites) if batched else sites
        _, unravel = ravel_pytree(one_chain)

        def ravel(tree: Any) -> jax.Array:
            flat = lambda t: ravel_pytree(t)[0]  # noqa: E731
            return jax.vmap(flat)(tree) if batched else flat(tree)

        def raveled_potential(*args, **kwargs):
            potential = potential_gen(*args, **kwargs)
            return lambda z: potential(unravel(z[RAVELED_SITE]))

        def raveled_postprocess(*args, **kwargs):
            postprocess = postprocess_gen(*args, **kwargs)
            return lambda z: postprocess(unravel(z[RAVELED_SITE]))

        self._init_fn, self._sample_fn = hmc(
            potential_fn_gen=raveled_potential,
            kinetic_fn=getattr(self, "_kinetic_fn", None) or euclidean_kinetic_energy,
            algo="NUTS",
        )
        self._potential_fn_gen = raveled_potential
        self._postprocess_fn = raveled_postprocess
        self.raveled = True
        if isinstance(params, ParamInfo):
            return ParamInfo(
                {RAVELED_SITE: ravel(params.z)},
                params.potential_energy,
                {RAVELED_SITE: ravel(params.z_grad)},
            )
        return {RAVELED_SITE: ravel(params)}
