"""NUTS on a model's unconstrained sites raveled into one vector (:class:`RaveledNUTS`).

NumPyro's NUTS keeps the position, momentum and gradient as a dict of the model's sites and
applies every step of its tree building (leapfrog, U-turn checks, the proposal's choice) to each
site's array separately. The joint model has 28 sites of 1 to 6 numbers: its gradient costs
~0.02 ms for four vectorized chains, a leapfrog step of NumPyro's NUTS ~0.2 ms (0.14 raveled).
:class:`RaveledNUTS` hands NUTS one array instead: the sites raveled in the order NumPyro itself
ravels them for the mass matrix and the momentum (``jax.flatten_util.ravel_pytree``: sorted site
names), unraveled inside the potential and before the transform to constrained values. The
sampler is the same algorithm on the same vector (the same momentum draws, step-size and
diagonal mass-matrix adaptation, U-turn rule); what differs is the rounding of XLA's fused
operations, and NUTS amplifies a last-bit difference over thousands of iterations into other
trajectories, as another CPU does (README, "Reproducibility"). The posterior is the same
distribution: tests/inference/test_sampler.py checks it against the exact posterior of a
conjugate model, and the reference forecast's Monte Carlo-error tests hold. BENCHMARKS.md
section 2 has the speed (benchmarks/nuts_sampler.py).

It relies on five attributes of NumPyro's ``HMC`` that are not public API (``_init_fn``,
``_sample_fn``, ``_potential_fn_gen``, ``_postprocess_fn``, ``_algo``) and on
``numpyro.infer.hmc.hmc``, ``ParamInfo`` and ``is_prng_key``: where a NumPyro release lacks the
attributes, :class:`RaveledNUTS` runs NumPyro's own per-site NUTS unchanged (``raveled`` says
which ran) and tests/inference/test_sampler.py fails, so the project notices; a release that
moves the functions fails at import.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from numpyro.infer import NUTS
from numpyro.infer.hmc import hmc
from numpyro.infer.hmc_util import euclidean_kinetic_energy
from numpyro.infer.util import ParamInfo
from numpyro.util import is_prng_key

from forecast.config.errors import WallcastError

UNBATCHED = "unbatched"
"""The fits' chain method (:func:`mcmc_chain_method`): each chain a run of its own, one after another."""

RAVELED_SITE = "__raveled_sites__"
"""The one key of the position NUTS sees (the model has no site of this name)."""
_HMC_INTERNALS = ("_init_fn", "_sample_fn", "_potential_fn_gen", "_postprocess_fn", "_algo")


def _on_sites(fn_gen, unravel, *args, **kwargs):
    """``fn_gen(*args, **kwargs)`` (a function of the model's sites) as a function of the
    raveled position (module level, so a kernel pickles as NumPyro's does)."""
    fn = fn_gen(*args, **kwargs)
    return partial(_unraveled, fn, unravel)


def _unraveled(fn, unravel, z):
    return fn(unravel(z[RAVELED_SITE]))


class RaveledNUTS(NUTS):
    """:class:`numpyro.infer.NUTS` on the model's unconstrained sites as one vector.

    Takes NUTS's arguments; a model is required (a ``potential_fn``, a mass matrix structured by
    site names, ``dense_mass=[(site, ...)]`` or a dict ``inverse_mass_matrix``, runs NumPyro's
    per-site NUTS unchanged). Samples, ``MCMC.get_samples``, ``get_extra_fields`` and ArviZ's
    conversion see the model's own sites: the vector is unraveled and constrained by the model's
    transforms before anything is stored. What holds the raveled position instead of sites:
    ``MCMC.last_state.z`` and the adapted mass matrix (key ``(RAVELED_SITE,)``), so
    ``MCMC.print_summary`` needs ``exclude_deterministic=False`` and ``extra_fields`` cannot name
    ``z.<site>``. It cannot be the inner kernel of a composite kernel (Gibbs, MixedHMC), which
    reads sites from the position. ``raveled``: whether the last initialisation raveled the
    sites (False where it ran per site, as above or on a NumPyro release without the internals
    this relies on).
    """

    raveled: bool = False
    _unravel: Any = None

    def _init_state(self, rng_key, model_args, model_kwargs, init_params):
        params = super()._init_state(rng_key, model_args, model_kwargs, init_params)
        self.raveled = False
        structured = isinstance(getattr(self, "_dense_mass", False), list) or isinstance(
            getattr(self, "_inverse_mass_matrix", None), dict
        )
        if self._model is None or structured or not all(hasattr(self, a) for a in _HMC_INTERNALS):
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

        raveled_potential = partial(_on_sites, potential_gen, unravel)
        self._init_fn, self._sample_fn = hmc(
            potential_fn_gen=raveled_potential,
            kinetic_fn=getattr(self, "_kinetic_fn", None) or euclidean_kinetic_energy,
            algo=self._algo,
        )
        self._potential_fn_gen = raveled_potential
        self._postprocess_fn = partial(_on_sites, postprocess_gen, unravel)
        self._unravel = unravel
        self.raveled = True
        if isinstance(params, ParamInfo):
            return ParamInfo(
                {RAVELED_SITE: ravel(params.z)},
                params.potential_energy,
                {RAVELED_SITE: ravel(params.z_grad)},
            )
        return {RAVELED_SITE: ravel(params)}

    def get_constrain_fn(self, model_args=(), model_kwargs=None, *, return_deterministic=False):
        """As NumPyro's, of the raveled position once the sites are raveled."""
        fn = super().get_constrain_fn(
            model_args, model_kwargs, return_deterministic=return_deterministic
        )
        if not self.raveled or return_deterministic or getattr(self, "_dynamic_support", False):
            return fn  # per site, or the raveled postprocess (a function of the position)
        return partial(_unraveled, fn, self._unravel)

    def wrap_model(self, wrapper):
        raise NotImplementedError(
            "RaveledNUTS cannot be the inner kernel of a composite kernel (its position is one "
            "raveled vector, not the model's sites): use numpyro.infer.NUTS there"
        )


def unbatched_chains(single_chain):
    """A chain method for :class:`numpyro.infer.MCMC` (its ``chain_method`` takes a callable that
    maps the one-chain run over the chains' stacked keys and states): each chain a run of its
    own of one compiled program, one after another, instead of all chains in lock step
    (``"vectorized"``), where every NUTS iteration lasts as long as the longest tree of any
    chain. The draws of a chain depend on its key only, not on the chains beside it; they are
    NumPyro's ``"parallel"`` method's draws without its extra devices. BENCHMARKS.md section 2:
    the joint fit's NUTS in a new process 1.79x faster than vectorized (mostly compilation: the
    batched tree building compiles slower; the sampling itself about the same), a cold fit ~10 s
    and ~13 s of CPU less; ``"parallel"`` over host devices gained nothing on 2 cores."""
    compiled = jax.jit(single_chain)  # one compilation for every chain

    def run(stacked):
        chains = jax.tree.leaves(stacked)[0].shape[0]
        runs = [compiled(jax.tree.map(lambda x, i=i: x[i], stacked)) for i in range(chains)]
        return jax.tree.map(lambda *parts: jnp.stack(parts), *runs)

    return run


class SamplerStartError(WallcastError, RuntimeError):
    """NUTS found no starting point: the model's log density was not finite where its chains
    began (NumPyro raises this itself only where the start-up runs outside a compiled program,
    not in :func:`unbatched_chains`)."""


def require_finite_start(mcmc) -> None:
    """Raise :class:`SamplerStartError` where a chain of ``mcmc`` (run) ended at a point of
    non-finite potential energy (:func:`require_finite_energy` of its last state)."""
    require_finite_energy(getattr(mcmc.last_state, "potential_energy", 0.0))


def require_finite_energy(energy) -> None:
    """Raise :class:`SamplerStartError` where a chain's last potential energy (one per chain in
    ``energy``) is not finite: a chain that starts where the log density is not finite never
    moves (every proposal diverges), so its last state says so."""
    energy = np.asarray(energy, dtype=float)
    stuck = np.flatnonzero(~np.isfinite(energy.reshape(-1)))
    if stuck.size:
        raise SamplerStartError(
            f"NUTS could not start: the model's log density is not finite where chain(s) "
            f"{', '.join(str(int(c)) for c in stuck)} of {energy.size} began; check the priors "
            "(a prior with no mass where the data are, a bound the data cross) and the data"
        )


def compiled_nuts(make_mcmc):
    """A whole NUTS run as one ``jax.jit`` program: ``(rng_key, *model_args, **model_kwargs) ->
    (samples by chain, divergence flags by chain, each chain's last potential energy)``;
    ``make_mcmc()`` builds the :class:`numpyro.infer.MCMC` while tracing.

    For refits of one model on other data of the same shapes: the data are the program's
    arguments, so keep the returned function (e.g. in a cache) and every refit runs the program
    compiled once. An ``MCMC`` reused across runs instead (``jit_model_args=True``) compiles its
    loop again each run: NumPyro 0.22 wraps the loop's body in a new ``jax.jit`` object on every
    ``run``, a new static argument of the loop's program (BENCHMARKS.md section 7). Inside the
    program NumPyro cannot refuse a start with no valid point: pass the energies to
    :func:`require_finite_energy`. JAX's trace cache keeps the one ``MCMC`` built while tracing
    per compiled program."""

    def run(rng_key, *args, **kwargs):
        mcmc = make_mcmc()
        mcmc.run(rng_key, *args, extra_fields=("diverging",), **kwargs)
        return (
            mcmc.get_samples(group_by_chain=True),
            mcmc.get_extra_fields(group_by_chain=True)["diverging"],
            mcmc.last_state.potential_energy,
        )

    return jax.jit(run)


def mcmc_chain_method(name: str):
    """What :class:`numpyro.infer.MCMC` takes for a chain method's name: :func:`unbatched_chains`
    for :data:`UNBATCHED`, NumPyro's own names (``"vectorized"``, ``"sequential"``,
    ``"parallel"``) as they are."""
    return unbatched_chains if name == UNBATCHED else name
