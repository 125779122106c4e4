"""Closed-form latency wall of Sevilla et al. (2024), "Can AI scaling continue through 2030?" [R].

A run of D = r N tokens at a fixed batch of B tokens takes S = D / B serial steps; each step
passes through L = coef * N^alpha layers, and each layer takes at least t_L seconds.  Training
fits in T seconds only if T >= t_L * L * D / B, so

    N_max = [T B / (r t_L coef)]^(1 / (1 + alpha)),    C_max = 6 r N_max^2 (= 120 N_max^2).
"""

from __future__ import annotations

import jax.numpy as jnp


def latency_wall_params(
    t_layer_s,
    batch_tokens,
    duration_s,
    layer_coef=0.088,
    layer_exponent=0.27,
    tokens_per_param=20.0,
):
    """Largest parameter count trainable in ``duration_s`` under the per-layer latency floor."""
    base = duration_s * batch_tokens / (tokens_per_param * t_layer_s * layer_coef)
    return base ** (1.0 / (1.0 + layer_exponent))


def latency_wall_flop(
    t_layer_s,
    batch_tokens,
    duration_s,
    layer_coef=0.088,
    layer_exponent=0.27,
    tokens_per_param=20.0,
):
    """Training compute (FLOP) at the closed-form latency wall: 6 r N_max^2."""
    n = latency_wall_params(
        t_layer_s, batch_tokens, duration_s, layer_coef, layer_exponent, tokens_per_param
    )
    return 6.0 * tokens_per_param * jnp.square(n)
