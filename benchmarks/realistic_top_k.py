"""Benchmark: the realistic screen's best-ranked shapes picked through float32, against top_k.

    .venv/bin/python benchmarks/realistic_top_k.py [--conditions 500] [--frontier 500]
        [--seed 37] [--repeats 2]

At every budget of the realistic search the screen (:func:`forecast.model.realistic_fast.
_evaluators`) picks the 64 best-ranked of the shortlist's 979 shapes. ``jax.lax.top_k`` does
that in float64, which XLA's CPU backend runs as a full sort; in float32 it has a fast kernel.
``float32_selection`` (the default) takes the 80 best in float32, the 64 best of those in float64,
and checks the result against the whole row, falling back to ``top_k`` where the check fails
(:func:`forecast.model.fast.top_k_indices`): the same indices in the same order, so the walls are
the same. Both variants run in this process on the same conditions (random accelerators and
assumptions of ``benchmarks/realistic_fast.py`` and ``--frontier`` (draw, year) pairs of the
published forecast), compiled first, then alternately ``--repeats`` times each (best of them),
one thread (``WALLCAST_CHUNK_THREADS=1`` unless set). The script counts the conditions whose
walls or small-scale maximum differ (it must be none).

Last line: ``speedup=<x> identical=<k>/<n> new_ms=<a> old_ms=<b>``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("WALLCAST_CHUNK_THREADS", "1")

from forecast.config.runtime import init_jax  # noqa: E402  isort: skip

init_jax()

sys.path.insert(0, str(Path(__file__).parent))
from realistic_fast import compare_two_variants  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conditions", type=int, default=500)
    p.add_argument("--frontier", type=int, default=500)
    p.add_argument("--seed", type=int, default=37)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    return compare_two_variants(
        args, ("top_k (float64)", {"float32_selection": False}), ("float32 selection", {})
    )


if __name__ == "__main__":
    raise SystemExit(main())
