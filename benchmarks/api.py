"""Benchmark: ``GET /v1/query`` under concurrent load, on loopback, against a published forecast.

Starts ``wallcast api`` (one uvicorn process, as a user runs it) on a free 127.0.0.1 port, waits
for ``/healthz``, sends a few warm-up requests, then ``--requests`` (default 1,000) queries from
``--clients`` (default 20) concurrent clients (one keep-alive HTTP/1.1 connection each, plain
asyncio streams so that the load generator takes little CPU from the server beside it),
cycling through walls, quantities, scenarios and probabilities.  Reports p50, p99 and max latency
per request, throughput and errors (non-200 answers or transport errors).  Target (issue 15):
0 errors, p99 <= 50 ms.  Last line: ``p50_ms=<x> p99_ms=<y> errors=<n>``.

Usage: ``python benchmarks/api.py [--outputs-dir outputs] [--requests 1000] [--clients 20]``
(default outputs: WALLCAST_OUTPUTS_DIR or outputs/; make a forecast with ``wallcast run``).
Only loopback addresses are used.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def query_params(scenarios: list[str]) -> itertools.cycle:
    combos = [
        {"wall": wall, "what": what, "scenario": scenario, "prob": prob}
        for wall in ("data_movement", "latency")
        for what in ("year", "flop")
        for scenario in scenarios
        for prob in (0.5, 0.8, 0.9)
    ]
    return itertools.cycle(combos)


async def _get(reader, writer, target: str) -> tuple[int, bytes]:
    """One HTTP/1.1 keep-alive GET on an open connection: (status, body)."""
    writer.write(f"GET {target} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, await reader.readexactly(length)


async def load(port: int, n_requests: int, n_clients: int, scenarios: list[str]) -> tuple:
    """Each client is one keep-alive connection speaking plain HTTP/1.1 (asyncio streams), so
    that the load generator costs little CPU next to the server on the same machine."""
    params = query_params(scenarios)
    jobs: asyncio.Queue = asyncio.Queue()
    for _ in range(n_requests):
        jobs.put_nowait("/v1/query?" + urlencode(next(params)))
    latencies: list[float] = []
    errors: list[str] = []

    async def client() -> None:
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            while True:
                try:
                    target = jobs.get_nowait()
                except asyncio.QueueEmpty:
                    return
                t = time.perf_counter()
                try:
                    status, body = await _get(reader, writer, target)
                    if status != 200 or "median" not in json.loads(body):
                        errors.append(f"{status} {body[:200]!r}")
                except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    errors.append(repr(exc))
                    writer.close()
                    reader, writer = await asyncio.open_connection(HOST, port)
                latencies.append(time.perf_counter() - t)
        finally:
            writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(n_clients)))
    return latencies, errors, time.perf_counter() - t0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs-dir", type=Path, default=None)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    args = parser.parse_args()

    from forecast.paths import outputs_dir

    outputs = outputs_dir(args.outputs_dir)
    port = free_port()
    base = f"http://{HOST}:{port}"
    env = {**os.environ, "WALLCAST_OUTPUTS_DIR": str(outputs)}
    cmd = [sys.executable, "-m", "forecast", "api", "--host", HOST, "--port", str(port)]
    server = subprocess.Popen(cmd, env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                health = httpx.get(f"{base}/healthz", timeout=2).json()
                break
            except httpx.HTTPError:
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit("error: wallcast api did not start")
                time.sleep(0.2)
        if health["latest"] is None:
            sys.exit(f"error: no published forecast in {outputs}; run `wallcast run` first")
        scenarios = httpx.get(f"{base}/v1/forecasts/latest").json()["scenarios"]
        for p in itertools.islice(query_params(scenarios), 2 * 2 * len(scenarios) * 3):
            httpx.get(f"{base}/v1/query", params=p).raise_for_status()  # warm-up
        latencies, errors, seconds = asyncio.run(load(port, args.requests, args.clients, scenarios))
    finally:
        server.terminate()
        server.wait(timeout=30)

    ms = [1e3 * v for v in latencies]
    p50, p99 = statistics.median(ms), percentile(ms, 0.99)
    print(f"forecast: {health['latest']} ({len(scenarios)} scenarios) under {outputs}")
    print(f"{len(ms)} requests from {args.clients} concurrent clients in {seconds:.2f} s")
    print(f"throughput {len(ms) / seconds:.0f} requests/s")
    print(f"latency p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {max(ms):.1f} ms")
    print(f"errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    print(f"load average (1 min) during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"p50_ms={p50:.1f} p99_ms={p99:.1f} errors={len(errors)}")


if __name__ == "__main__":
    main()
