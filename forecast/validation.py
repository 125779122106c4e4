"""Reproductions of published distributions (used by tests and docs/validation.md)."""

from __future__ import annotations

import numpy as np

from forecast.priors import PriorSet

H100 = dict(
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
    from forecast.model.fast import fast_walls
    from forecast.model.params import Hardware
    from forecast.propagate import PROPAGATED_KEYS, assumptions_from_inputs

    draws = prior_set.sample(n, seed)
    inputs = {k: np.asarray(draws[k], dtype=float) for k in PROPAGATED_KEYS}
    if vary is not None:
        unknown = sorted(set(vary) - set(PROPAGATED_KEYS))
        if unknown:
            raise KeyError(f"not a propagated prior key: {', '.join(unknown)}")
        inputs = {k: v if k in vary else np.full(n, float(np.median(v))) for k, v in inputs.items()}
    a = assumptions_from_inputs(inputs, np.array([2024.0]))
    hw = Hardware(**H100)._replace(
        flops=H100["flops"] * 2.0 / np.asarray(inputs["training.bytes_per_number"])[:, None]
    )
    dm, lat = fast_walls(hw, a)
    return {"data_movement": dm[:, 0], "latency": lat[:, 0]}
