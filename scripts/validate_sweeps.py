# ruff: noqa: E701, E702
"""Numbers for docs/validation.md: find_walls for the H100 under one-parameter changes.

Run: .venv/bin/python scripts/validate_sweeps.py  (prints markdown table rows; ~35 min on 2 cores
under load: every row in both regimes, the paper's relaxation and the realistic plans)
"""

import sys
from pathlib import Path

from forecast.config.runtime import init_jax
from forecast.model import assumptions_with
from forecast.model.latency import latency_wall_flop, latency_wall_params
from forecast.model.search import find_walls

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/support
from support.validation import H100_SXM5  # noqa: E402

H = H100_SXM5
init_jax()


def row(label, hw=H, **kw):
    a = assumptions_with(**kw)
    w = find_walls(hw, a)
    r = find_walls(hw, a, regime="realistic")
    p = w.plan_at_wall
    plan = (
        f"tp {p['tensor_parallel']} {p['tensor_parallel_layout']}, pp {p['pipeline_parallel']}, m {p['microbatches']:.0f}, b {p['microbatch_tokens']:.0f}"
        if p
        else "-"
    )
    q = r.plan_at_wall
    real = (
        f"tp {q['tensor_parallel']} {q['tensor_parallel_layout']}, pp {q['pipeline_parallel']} x{q['virtual_stages']}, cp {q['context_parallel']}, m {q['microbatches']}"
        if q
        else "-"
    )
    print(
        f"| {label} | {10**w.data_movement_wall_log10_flop:.1e} | {10**w.latency_wall_log10_flop:.1e} | {10**r.data_movement_wall_log10_flop:.1e} | {10**r.latency_wall_log10_flop:.1e} | {plan} | {real} |",
        flush=True,
    )


print("## baseline")
row("H100 baseline")
print("## network")
for m in (0.25, 0.5, 1, 2, 4, 16):
    row(f"scaleout_multiplier {m}", scaleout_multiplier=m)
row("scale-out = scale-up (450 GB/s)", hw=H._replace(scaleout_bandwidth=H.scaleup_bandwidth))
row("one NVLink domain = whole cluster (domain 1e9)", hw=H._replace(scaleup_domain_size=1e9))
print("## batch")
for be in (0.0, 0.2, 0.36, 0.45):
    row(f"batch_exponent {be}", batch_exponent=be)
for b0 in (16e6, 60e6, 360e6):
    row(f"batch_tokens_ref {b0:.0e}", batch_tokens_ref=b0)
print("## depth")
row("layer_exponent 0.21", layer_exponent=0.21)
row("layer_exponent 0.33", layer_exponent=0.33)
row("layers_ref halved (59.9)", layers_ref=59.9)
print("## util")
for u in (0.5, 0.6, 0.7, 0.8):
    row(f"max_utilization {u}", max_utilization=u)
print("## fp8")
row("FP8: 1.979e15 FLOP/s, 1 byte", hw=H._replace(flops=1.979e15), bytes_per_number=1.0)
print("## latency")
for k in (2e-6, 4.5e-6, 8e-6, 16e-6):
    row(f"kernel_latency {k * 1e6:g} us", kernel_latency_s=k)
print("## duration")
for d in (60, 180, 274):
    row(f"duration {d} d", duration_days=d)
print(
    "## closed form",
    latency_wall_params(120e-6, 60e6, 274 * 86400.0, batch_exponent=0.0),
    latency_wall_flop(120e-6, 60e6, 274 * 86400.0, batch_exponent=0.0),
)
print("## closed form 400us", latency_wall_flop(400e-6, 60e6, 274 * 86400.0, batch_exponent=0.0))
