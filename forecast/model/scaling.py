"""Scaling relations: model size, depth, width and critical batch for a compute budget."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from forecast.model.params import LAYER_REFERENCE_PARAMS, LAYERS_AT_REFERENCE, Assumptions


class ModelShape(NamedTuple):
    """A compute-optimal dense transformer for a training budget (all float arrays)."""

    params: jnp.ndarray  # N
    tokens: jnp.ndarray  # D
    layers: jnp.ndarray  # L (continuous)
    d_model: jnp.ndarray
    batch_tokens: jnp.ndarray  # B, critical batch
    steps: jnp.ndarray  # S = D / B, serial optimizer steps


def params_for_flop(training_flop, tokens_per_param=20.0):
    """N from C = 6 N D with D = tokens_per_param * N (Chinchilla): N = sqrt(C / (6 r))."""
    return jnp.sqrt(training_flop / (6.0 * tokens_per_param))


def flop_for_params(params, tokens_per_param=20.0):
    """Inverse of :func:`params_for_flop`: C = 6 r N^2 (= 120 N^2 for r = 20)."""
    return 6.0 * tokens_per_param * params**2


def layers_for_params(
    params,
    layers_ref=LAYERS_AT_REFERENCE,
    layer_ref_params=LAYER_REFERENCE_PARAMS,
    layer_exponent=0.27,
):
    """Depth L = L_ref (N / N_ref)^exponent, pivoting [R]'s fit 0.088 N^0.27 at N_ref."""
    return layers_ref * (params / layer_ref_params) ** layer_exponent


def critical_batch_tokens(
    params, batch_tokens_ref=60e6, batch_ref_params=5.6e11, batch_exponent=0.36
):
    """Critical batch B = B0 (N / N0)^alpha_B in tokens."""
    return batch_tokens_ref * (params / batch_ref_params) ** batch_exponent


def model_shape(log10_flop, a: Assumptions) -> ModelShape:
    """Shape of the compute-optimal model trained with 10**log10_flop FLOP.

    Width follows N = 12 L d_model^2 (standard block, d_ff = 4 d_model, embeddings ignored);
    with a mixture of experts N counts active parameters, N = (4 + 8 k) L d_model^2 for k active
    experts of the dense MLP's size.
    """
    flop = 10.0 ** jnp.asarray(log10_flop, dtype=jnp.float64)
    n = params_for_flop(flop, a.tokens_per_param)
    tokens = a.tokens_per_param * n
    layers = layers_for_params(n, a.layers_ref, a.layer_ref_params, a.layer_exponent)
    d_model = jnp.sqrt(n / ((4.0 + 8.0 * a.moe_active_experts) * layers))
    batch = critical_batch_tokens(n, a.batch_tokens_ref, a.batch_ref_params, a.batch_exponent)
    return ModelShape(n, tokens, layers, d_model, batch, tokens / batch)
