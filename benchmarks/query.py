"""Benchmark: answering a question from a published forecast (no JAX on this path).

Times, side by side in one run:
* ``wallcast query`` as a fresh process (interpreter start, imports, opening the NetCDF group);
* ``forecast.queries.answers.query`` in process (open + interval), and ``wall_interval`` on a loaded group;
and checks that JAX was never imported.  Targets (issue 3): <= 1.5 s for the CLI, <= 50 ms in
process.  Last line: ``cli_s=<x> in_process_ms=<y>``.

Usage: ``python benchmarks/query.py [--forecast PATH] [--repeat 5]`` (default: outputs/latest;
make one with ``wallcast run``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forecast", type=Path, default=None, help="default: outputs/latest")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from forecast.queries.answers import query, wall_interval
    from forecast.store.reader import load_forecast_group, resolve_forecast_path

    path = resolve_forecast_path(args.forecast)
    exe = shutil.which("wallcast") or str(Path(sys.executable).parent / "wallcast")
    cmd = [
        exe,
        "query",
        "--wall",
        "data_movement",
        "--what",
        "year",
        "--forecast",
        str(path),
        "--json",
    ]
    subprocess.run(cmd, check=True, capture_output=True)  # warm the file cache
    cli = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        cli.append(time.perf_counter() - t)

    query(path, "data_movement", "year")  # warm imports
    full = []
    for _ in range(args.repeat * 4):
        t = time.perf_counter()
        query(path, "latency", "flop")
        full.append(time.perf_counter() - t)
    ds, _ = load_forecast_group(path, ["hit_year"])
    loaded = []
    for _ in range(args.repeat * 20):
        t = time.perf_counter()
        wall_interval(ds, "data_movement", "year")
        loaded.append(time.perf_counter() - t)
    assert "jax" not in sys.modules, "the query path imported jax"

    print(f"forecast: {path}")
    print(
        f"wallcast query (fresh process): median {statistics.median(cli):.2f} s, min {min(cli):.2f} s over {len(cli)}"
    )
    print(
        f"query() in process (open file + interval): median {1e3 * statistics.median(full):.1f} ms"
    )
    print(f"wall_interval() on a loaded group: median {1e3 * statistics.median(loaded):.2f} ms")
    print("jax imported: no")
    print(f"cli_s={statistics.median(cli):.2f} in_process_ms={1e3 * statistics.median(full):.1f}")


if __name__ == "__main__":
    main()
