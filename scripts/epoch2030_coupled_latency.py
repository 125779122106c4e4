"""Cross-check for docs/validation.md 7.1: [R]'s coupled latency wall under priors/epoch-2030.toml.

Sevilla et al. (2024) [R] solve the latency wall with a per-layer floor of 8 x (kernel +
all-reduce), the all-reduce over one axis of a 2D tensor-parallel mesh with 2.75 ranks per
8-GPU pod, the tensor-parallel degree from the GPU count (tp = GPUs x B_MIN / B) and the GPU count
from the compute (C / (u x H x T)).  This script samples the same priors as the forecast and
bisects the largest N per draw, for three readings of the batch-size exponent.

Run: .venv/bin/python scripts/epoch2030_coupled_latency.py
"""

from pathlib import Path

import numpy as np

from forecast.data.hardware import get_accelerator, load_hardware
from forecast.priors import load_priors

ROOT = Path(__file__).resolve().parents[1]
_H100 = get_accelerator(load_hardware(), "H100 SXM5")  # data/hardware.csv
H100_FP8, HBM = _H100.flops_fp8, _H100.hbm_bandwidth  # dense FP8 FLOP/s, HBM bytes/s
UTILIZATION = 0.5  # [R]
B_MIN = H100_FP8 * 1.0 / (2 * HBM)  # [R]: tokens per microbatch for a compute-bound FP8 matmul
RANKS_PER_POD = 2.75  # [R] main text


def coupled_latency_wall_flop(d: dict, exponent_scale: float, n: int) -> np.ndarray:
    t = d["training.duration_days"] * 86_400.0
    b0, n0 = d["scaling.batch_tokens_2024"], d["scaling.batch_reference_params"]
    a_b = d["scaling.batch_exponent"] * exponent_scale
    l_ref, n_ref = d["scaling.layers_at_reference"], d["scaling.layer_reference_params"]
    a_l = d["scaling.layer_exponent"]
    kernel = d["latency.kernel_us"] * 1e-6
    base, intra = d["latency.allreduce_base_us"] * 1e-6, d["latency.intra_domain_hop_us"] * 1e-6
    inter = d["latency.inter_domain_hop_us"] * 1e-6

    def slack(log10_n):
        params = 10.0**log10_n
        flop, tokens = 120.0 * params**2, 20.0 * params
        layers, batch = l_ref * (params / n_ref) ** a_l, b0 * (params / n0) ** a_b
        gpus = flop / (H100_FP8 * UTILIZATION * t)
        axis = np.sqrt(np.maximum(1.0, gpus * B_MIN / batch))
        ranks = np.minimum(axis, RANKS_PER_POD)
        allreduce = base + 2.0 * (ranks * intra + np.log2(np.maximum(axis / ranks, 1.0)) * inter)
        return t - 8.0 * (kernel + allreduce) * layers * tokens / batch

    lo, hi = np.full(n, 10.0), np.full(n, 18.0)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        ok = slack(mid) >= 0.0
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return 120.0 * 10.0 ** (2.0 * lo)


def main() -> None:
    n = 4000
    draws = load_priors(ROOT / "priors" / "epoch-2030.toml").sample(n, 0)
    print("[R] Figure 6: 10/50/90 % = 3e30 / 3e31 / 1e32 FLOP")
    for scale, label in (
        (1.0, "batch exponent as read"),
        (0.5, "half the exponent"),
        (0.0, "fixed batch"),
    ):
        q = np.quantile(coupled_latency_wall_flop(draws, scale, n), [0.1, 0.5, 0.9])
        print(f"{label:>24}: " + " / ".join(f"{v:.1e}" for v in q))


if __name__ == "__main__":
    main()
