"""Reproductions of published distributions and comparison draws (tests, benchmarks, docs)."""

from __future__ import annotations

import numpy as np

from forecast.model.params import Assumptions, Hardware
from forecast.priors import PriorSet

#: NVIDIA H100 SXM5 as the model sees it at BF16: the figures of its row in data/hardware.csv
#: (dense FLOP/s, HBM B/s and bytes, scale-up B/s per direction, domain size, scale-out B/s per
#: direction).  The one hard-coded copy of them: tests, benchmarks and scripts import it, and
#: tests/model/test_model.py checks it against the table.
H100_SXM5 = Hardware(
    flops=9.89e14,
    hbm_bandwidth=3.35e12,
    hbm_capacity=8.0e10,
    scaleup_bandwidth=4.5e11,
    scaleup_domain_size=8.0,
    scaleout_bandwidth=5.0e10,
)


def h100_wall_distribution(
    prior_set: PriorSet, n: int = 4000, seed: int = 0, vary: tuple[str, ...] | None = None
) -> dict[str, np.ndarray]:
    """Both walls (log10 FLOP) of an H100 cluster over a prior set's parameter draws.

    This is the question of Sevilla et al. (2024), Figure 6: the latency wall of H100-class
    hardware when the scaling exponents, batch size, run length and latencies are uncertain.
    FP8 runs (1 byte per number) use the H100's FP8 FLOP/s (2x BF16).

    ``vary`` names the prior keys that keep their draws; every other input is held at its prior
    median.  ``vary=("scaling.batch_tokens_2024",)`` shows how wide the distribution is from the
    2024 batch size alone (docs/validation.md 7.1).  ``None`` varies everything.
    """
    from forecast.inference.propagate import PROPAGATED_KEYS, assumptions_from_inputs
    from forecast.model.fast import fast_walls

    draws = prior_set.sample(n, seed)
    inputs = {k: np.asarray(draws[k], dtype=float) for k in PROPAGATED_KEYS}
    if vary is not None:
        unknown = sorted(set(vary) - set(PROPAGATED_KEYS))
        if unknown:
            raise KeyError(f"not a propagated prior key: {', '.join(unknown)}")
        inputs = {k: v if k in vary else np.full(n, float(np.median(v))) for k, v in inputs.items()}
    a = assumptions_from_inputs(inputs, np.array([2024.0]))
    hw = H100_SXM5._replace(
        flops=H100_SXM5.flops * 2.0 / np.asarray(inputs["training.bytes_per_number"])[:, None]
    )
    dm, lat = fast_walls(hw, a)
    return {"data_movement": dm[:, 0], "latency": lat[:, 0]}


# Real parts (dense BF16 FLOP/s, HBM B/s, HBM bytes, scale-up B/s, domain size, scale-out B/s).
COMPARISON_PARTS = np.array(
    [
        tuple(H100_SXM5),
        (2.5e15, 8.0e12, 1.86e11, 9.0e11, 72.0, 5.0e10),  # GB200 NVL72 (per GPU)
        (4.59e14, 2.765e12, 9.5e10, 6.0e11, 8960.0, 6.25e9),  # TPU v5p
        (1.3074e15, 5.3e12, 1.92e11, 4.48e11, 8.0, 5.0e10),  # MI300X (+ default NIC)
        (2.25e15, 8.0e12, 1.8e11, 9.0e11, 8.0, 5.0e10),  # B200
    ]
)


def comparison_draws(n: int, seed: int) -> tuple[Hardware, Assumptions]:
    """Random hardware and assumptions for comparing the fast path with the full search.

    Real parts times log-normal factors (sd 0.4) on every bandwidth, capacity and FLOP/s; the
    assumptions uniform over the prior ranges ([R]'s batch, exponents and run length, latency,
    network).  Every field is an array of shape (n,).
    """
    rng = np.random.default_rng(seed)
    hw = COMPARISON_PARTS[rng.integers(0, len(COMPARISON_PARTS), n)].copy()
    for j in (0, 1, 2, 3, 5):
        hw[:, j] *= np.exp(rng.normal(0.0, 0.4, n))

    def u(lo, hi):
        return rng.uniform(lo, hi, n)

    a = Assumptions(
        duration_s=u(60.0, 274.0) * 86_400.0,
        max_utilization=u(0.55, 0.8),
        batch_tokens_ref=np.exp(u(np.log(16e6), np.log(360e6))),
        batch_exponent=u(0.31, 0.41),
        layer_exponent=u(0.21, 0.33),
        kernel_latency_s=u(2e-6, 8e-6),
        collective_efficiency=u(0.7, 0.9),
        scaleout_multiplier=np.exp(u(np.log(0.5), np.log(2.0))),
    )
    a = Assumptions(*(np.broadcast_to(np.asarray(v, dtype=float), (n,)) for v in a))
    return Hardware(*hw.T), a
