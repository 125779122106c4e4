"""Closed-form latency wall of Sevilla et al. (2024), "Can AI scaling continue through 2030?" [R].

A run of D = r N tokens at a batch of B tokens takes S = D / B serial steps; each step passes
through L = coef * N^alpha layers, and each layer takes at least t_L seconds.  Training fits in
T seconds only if T >= t_L * L * D / B.  The batch grows with the model as the plan model's does,
B = B0 (N / N0)^beta (``batch_exponent`` = 0 is [R]'s fixed batch), so

    N_max = [T B0 / (r t_L coef N0^beta)]^(1 / (1 + alpha - beta)),    C_max = 6 r N_max^2,

and there is no latency wall (N_max = inf) when the batch grows at least as fast as the serial
work, beta >= 1 + alpha.  Before issue 22 the batch was held fixed here while the plan search
grew it, so ``wallcast latency-wall`` and ``wallcast walls`` disagreed by 1.7 dex on the H100.
"""

from __future__ import annotations

import jax.numpy as jnp

from forecast.model.params import Assumptions

_DEFAULT = Assumptions()
BATCH_EXPONENT = _DEFAULT.batch_exponent  # the plan model's default growth of the batch with N
BATCH_REF_PARAMS = _DEFAULT.batch_ref_params  # N0: the size at which the batch is B0


def latency_wall_params(
    t_layer_s,
    batch_tokens,
    duration_s,
    layer_coef=0.088,
    layer_exponent=0.27,
    tokens_per_param=20.0,
    batch_exponent=BATCH_EXPONENT,
    batch_ref_params=BATCH_REF_PARAMS,
):
    """Largest parameter count trainable in ``duration_s`` under the per-layer latency floor.

    ``batch_tokens`` is the batch at ``batch_ref_params`` parameters; it grows as
    N^``batch_exponent`` (0: a fixed batch).  +inf where the batch outgrows the serial work.
    """
    power = 1.0 + layer_exponent - batch_exponent
    base = (
        duration_s
        * batch_tokens
        / (tokens_per_param * t_layer_s * layer_coef * batch_ref_params**batch_exponent)
    )
    safe = jnp.where(power > 0.0, power, 1.0)
    return jnp.where(power > 0.0, base ** (1.0 / safe), jnp.inf)


def latency_wall_flop(
    t_layer_s,
    batch_tokens,
    duration_s,
    layer_coef=0.088,
    layer_exponent=0.27,
    tokens_per_param=20.0,
    batch_exponent=BATCH_EXPONENT,
    batch_ref_params=BATCH_REF_PARAMS,
):
    """Training compute (FLOP) at the closed-form latency wall: 6 r N_max^2."""
    n = latency_wall_params(
        t_layer_s,
        batch_tokens,
        duration_s,
        layer_coef,
        layer_exponent,
        tokens_per_param,
        batch_exponent,
        batch_ref_params,
    )
    return 6.0 * tokens_per_param * jnp.square(n)
