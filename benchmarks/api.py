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

``--attack SECONDS`` (issue 26) measures the cheap endpoints while ``--clients`` attackers send
expensive or oversized requests for SECONDS: new plan searches (a fresh run length each, so no
cache hit), a 95,000-character accelerator name, and ``/intervals`` with every selection
parameter repeated 40 times. One probe asks ``/healthz`` and a cached ``/v1/query`` in turn every
50 ms during the attack and for 10 s after it; it reports p50/p99 during the attack and the
recovery time (from the attack's end until every later probe answers within 100 ms). Targets:
p99 < 100 ms, recovery < 5 s. Last line: ``attack_p99_ms=<x> recovery_s=<y> probe_errors=<n>``.
Requests are bounded in count and time; loopback only.
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


ATTACK_TARGETS = (
    "walls",  # a new plan search: queued, or 503 when the queue is full
    "oversized",  # a 95 k character accelerator name
    "repeated",  # /intervals with scenario, year and wall repeated 40 times
)


def _attack_target(kind: str, n: int) -> str:
    if kind == "walls":
        days = 1 + (n * 37) % 3600  # a fresh whole-day run length each time: no cache hit
        return "/v1/walls?" + urlencode({"accelerator": "H100 SXM5", "duration_days": days})
    if kind == "oversized":
        return "/v1/walls?" + urlencode({"accelerator": "H100" + "x" * 95_000})
    pairs = [("var", "wall_flop")] + [
        ("scenario", "baseline"),
        ("year", "2030"),
        ("wall", "latency"),
    ] * 40
    return "/v1/forecasts/latest/intervals?" + urlencode(pairs)


async def attack(port: int, seconds: float, n_clients: int) -> tuple:
    """``n_clients`` attackers for ``seconds`` plus one probe of the cheap endpoints (during the
    attack and 10 s after): (probe samples [(t, latency, ok)], attack end time, attacker counts)."""
    stop_at = time.perf_counter() + seconds
    counts: dict[str, int] = {}
    sent = itertools.count()

    async def attacker(i: int) -> None:
        kind = ATTACK_TARGETS[i % len(ATTACK_TARGETS)]
        while time.perf_counter() < stop_at:
            try:
                reader, writer = await asyncio.open_connection(HOST, port)
                try:
                    status, _ = await asyncio.wait_for(
                        _get(reader, writer, _attack_target(kind, next(sent))),
                        timeout=max(0.1, stop_at - time.perf_counter()),
                    )
                    counts[f"{kind} {status}"] = counts.get(f"{kind} {status}", 0) + 1
                finally:
                    writer.close()
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
                counts[f"{kind} dropped"] = counts.get(f"{kind} dropped", 0) + 1
                await asyncio.sleep(0.05)

    samples: list[tuple[float, float, bool]] = []

    async def probe() -> None:
        reader, writer = await asyncio.open_connection(HOST, port)
        targets = itertools.cycle(["/healthz", "/v1/query?wall=latency"])
        end = stop_at + 10.0
        while time.perf_counter() < end:
            t = time.perf_counter()
            try:
                status, _ = await asyncio.wait_for(_get(reader, writer, next(targets)), 30)
                ok = status == 200
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
                ok = False
                writer.close()
                reader, writer = await asyncio.open_connection(HOST, port)
            samples.append((t, time.perf_counter() - t, ok))
            await asyncio.sleep(0.05)
        writer.close()

    await asyncio.gather(probe(), *(attacker(i) for i in range(n_clients)))
    return samples, stop_at, counts


def attack_report(
    samples: list, stop_at: float, limit_s: float = 0.1
) -> tuple[float, float, float, int]:
    """(p50 ms and p99 ms during the attack, recovery seconds after it, failed probes)."""
    during = [1e3 * lat for t, lat, _ in samples if t < stop_at]
    errors = sum(1 for _, _, ok in samples if not ok)
    recovered_at = stop_at
    for t, lat, ok in samples:
        if t >= stop_at and (lat > limit_s or not ok):
            recovered_at = t + lat
    return statistics.median(during), percentile(during, 0.99), recovered_at - stop_at, errors


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs-dir", type=Path, default=None)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--attack", type=float, default=0.0, help="seconds of attack (0: none)")
    args = parser.parse_args()

    from forecast.config.paths import outputs_dir

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
        if args.attack > 0:
            httpx.get(f"{base}/v1/walls", params={"accelerator": "H100 SXM5"}, timeout=300)
            samples, stop_at, counts = asyncio.run(attack(port, args.attack, args.clients))
            queue = httpx.get(f"{base}/healthz").json().get("expensive_work")
        else:
            latencies, errors, seconds = asyncio.run(
                load(port, args.requests, args.clients, scenarios)
            )
    finally:
        server.terminate()
        server.wait(timeout=30)

    if args.attack > 0:
        p50, p99, recovery, probe_errors = attack_report(samples, stop_at)
        print(f"forecast: {health['latest']} under {outputs}")
        print(
            f"{args.clients} attackers for {args.attack:g} s: "
            + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        )
        print(f"expensive-work queue after the attack: {queue}")
        print(
            f"probe (/healthz, cached /v1/query) during the attack: {len(samples)} samples in all, "
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms; failed probes {probe_errors}"
        )
        print(f"recovery after the attack: {recovery:.2f} s")
        print(f"load average (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        print(f"attack_p99_ms={p99:.1f} recovery_s={recovery:.2f} probe_errors={probe_errors}")
        return

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
