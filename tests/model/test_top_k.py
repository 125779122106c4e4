"""``forecast.model.fast.top_k_indices``: ``jax.lax.top_k``'s indices, in its order, through a
float32 selection checked against the whole row (issue 23: the realistic search's screen picks
its 64 best-ranked shapes of 979 at every budget, and XLA's float64 top-k is a full sort)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from forecast.config.runtime import init_jax
from forecast.model.fast import TOP_K_SPARE, _top_k_through_float32, top_k_indices

init_jax()

ROWS, N, K = 3, 120, 8  # one compiled shape for every Hypothesis example

#: Values that make ties, near-ties (equal in float32, not in float64), signed zeros, NaN,
#: infinities and numbers float32 cannot hold.
AWKWARD = [0.0, -0.0, 1.0, 0.5, 0.5 + 1e-12, 0.5 - 1e-12, 1e-300, -1e-300, 1e300]
AWKWARD += [float("nan"), float("inf"), -float("inf"), 0.25, 0.75]
values_strategy = st.lists(
    st.one_of(st.sampled_from(AWKWARD), st.floats(-2.0, 2.0, allow_nan=False)),
    min_size=ROWS * N,
    max_size=ROWS * N,
)

_fast = jax.jit(lambda v: top_k_indices(v, K))
_reference = jax.jit(lambda v: jax.lax.top_k(v, K)[1])
_selection = jax.jit(lambda v: _top_k_through_float32(v, K, TOP_K_SPARE))


@settings(max_examples=300, deadline=None)
@given(values_strategy)
def test_the_same_indices_in_the_same_order_as_top_k(flat):
    values = jnp.asarray(np.asarray(flat, dtype=np.float64).reshape(ROWS, N))
    np.testing.assert_array_equal(np.asarray(_fast(values)), np.asarray(_reference(values)))


@settings(max_examples=300, deadline=None)
@given(values_strategy)
def test_a_row_the_check_passes_is_top_ks(flat):
    """The check alone (no fallback): wherever it passes a row, that row is top_k's."""
    values = jnp.asarray(np.asarray(flat, dtype=np.float64).reshape(ROWS, N))
    idx, exact = _selection(values)
    reference = np.asarray(_reference(values))
    for row in np.flatnonzero(np.asarray(exact)):
        np.testing.assert_array_equal(np.asarray(idx)[row], reference[row])


def test_the_check_passes_distinct_values_and_exact_ties_and_fails_near_ties():
    rng = np.random.default_rng(7)
    distinct = rng.random(N)
    zeros_at_the_edge = np.where(np.arange(N) < 5, rng.random(N), 0.0)  # ties at the k-th: 0.0
    # more than TOP_K_SPARE values equal in float32, different in float64, around the k-th, in
    # an order float32 cannot see: the float32 candidates miss the largest of them
    near = np.full(N, 0.1)
    near[: K + 2 * TOP_K_SPARE] = 0.5 + np.arange(K + 2 * TOP_K_SPARE) * 1e-13
    _, exact = _selection(jnp.asarray(np.stack([distinct, zeros_at_the_edge, near])))
    assert np.asarray(exact).tolist() == [True, True, False]
    idx, _ = _selection(jnp.asarray(np.stack([near] * ROWS)))
    reference = _reference(jnp.asarray(np.stack([near] * ROWS)))
    assert not np.array_equal(np.asarray(idx), np.asarray(reference))  # the check is needed
    np.testing.assert_array_equal(
        np.asarray(_fast(jnp.asarray(np.stack([near] * ROWS)))), np.asarray(reference)
    )


def test_nan_and_negative_zero_rows_fall_back():
    rows = np.tile(np.linspace(0.0, 1.0, N), (ROWS, 1))
    rows[1, 3] = np.nan
    rows[2, 0] = -0.0
    _, exact = _selection(jnp.asarray(rows))
    assert np.asarray(exact).tolist() == [True, False, False]


def test_short_rows_and_other_dtypes_use_top_k_itself():
    short = jnp.asarray(np.random.default_rng(3).random(K + TOP_K_SPARE))
    np.testing.assert_array_equal(top_k_indices(short, K), jax.lax.top_k(short, K)[1])
    single = jnp.asarray(np.random.default_rng(4).random(N), dtype=jnp.float32)
    np.testing.assert_array_equal(top_k_indices(single, K), jax.lax.top_k(single, K)[1])
