"""Benchmark: how much of the test suite's time is JAX tracing, lowering and compiling.

A pytest plugin and its summary (issue 23 item 3, "measure first"; BENCHMARKS.md section 7):

    COMPILE_PROFILE_DIR=/tmp/prof PYTHONPATH=benchmarks .venv/bin/pytest -q -n 2 \\
        --dist loadfile --no-loadscope-reorder -p suite_compile_profile
    .venv/bin/python benchmarks/suite_compile_profile.py /tmp/prof [--top 25]

The plugin listens to JAX's monitoring events (``jax.monitoring``: the durations of tracing a
function to a jaxpr, lowering it to StableHLO, and the backend compile, which includes reading a
program from the persistent compilation cache) and adds them up per test (setup, call and
teardown together) and per compiled function, with the test's own wall clock; each pytest process
(an xdist worker) writes ``<worker>.json`` into ``COMPILE_PROFILE_DIR`` at the end (use an empty
folder: the summary adds up every file in it). What a test
runs in a subprocess (``wallcast serve``, the CLI tests' commands) is not seen.

The summary prints the totals, the tests that spend most on compiling and the functions compiled
most; last line ``test_seconds=<a> compile_seconds=<b> trace_lower_seconds=<c> share=<(b+c)/a>``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path

import pytest

_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
    "/jax/compilation_cache/compile_time_saved_sec": "cache_saved",
}
_current = ["<outside a test>"]
_by_test: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
_by_function: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
_by_pair: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
_listening = [False]


def _listener(event: str, duration: float, **kwargs) -> None:
    kind = _EVENTS.get(event)
    if kind is None:
        return
    function = kwargs.get("fun_name", "?")
    pair = f"{function} in {_current[0]}"
    for table, key in ((_by_test, _current[0]), (_by_function, function), (_by_pair, pair)):
        table[key][kind] += duration
        table[key][f"{kind}_n"] += 1


def _listen() -> None:
    if not _listening[0]:
        import jax.monitoring

        jax.monitoring.register_event_duration_secs_listener(_listener)
        _listening[0] = True


# ----------------------------------------------------------------------------- pytest hooks


def pytest_configure(config) -> None:
    _listen()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Setup, call and teardown of one test, together."""
    _current[0] = item.nodeid
    start = time.perf_counter()
    yield
    _by_test[item.nodeid]["wall"] += time.perf_counter() - start
    _current[0] = "<between tests>"


def pytest_sessionfinish(session) -> None:
    folder = os.environ.get("COMPILE_PROFILE_DIR")
    if not folder:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    Path(folder).mkdir(parents=True, exist_ok=True)
    record = {
        "tests": {k: dict(v) for k, v in _by_test.items()},
        "functions": {k: dict(v) for k, v in _by_function.items()},
        "pairs": {k: dict(v) for k, v in _by_pair.items()},
    }
    Path(folder, f"{worker}.json").write_text(json.dumps(record, indent=0))


# ----------------------------------------------------------------------------- summary


def summarize(folder: Path, top: int) -> str:
    tests: dict[str, collections.Counter] = {}
    functions: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    pairs: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        for name, values in record["tests"].items():
            tests[f"{path.stem} {name}"] = collections.Counter(values)
        for name, values in record["functions"].items():
            functions[name].update(values)
        for name, values in record.get("pairs", {}).items():
            pairs[name].update(values)
    outside = {k: v for k, v in tests.items() if k.split(" ", 1)[1].startswith("<")}
    tests = {k: v for k, v in tests.items() if k not in outside}
    total = sum(tests.values(), collections.Counter())
    wall, comp = total["wall"], total["compile"]
    trace_lower = total["trace"] + total["lower"]
    between = sum(outside.values(), collections.Counter())
    print(
        f"{len(tests)} tests, {wall:.0f} s of test wall clock (the workers' sum); compiling "
        f"{comp:.0f} s ({total['compile_n']:.0f} programs, persistent-cache reads included), "
        f"tracing {total['trace']:.0f} s, lowering {total['lower']:.0f} s; the persistent cache "
        f"saved {total['cache_saved']:.0f} s ({total['cache_saved_n']:.0f} hits); outside the "
        f"tests (collection, between tests) compiling {between['compile']:.1f} s"
    )
    print(f"\ntests that compile most (of {len(tests)}):")
    for name, v in sorted(tests.items(), key=lambda kv: -kv[1]["compile"])[:top]:
        print(
            f"  {v['wall']:6.1f} s, compiling {v['compile']:6.1f} s ({v['compile_n']:4.0f}), "
            f"tracing + lowering {v['trace'] + v['lower']:5.1f} s  {name[:100]}"
        )
    print("\nfunctions compiled most:")
    for name, v in sorted(functions.items(), key=lambda kv: -kv[1]["compile"])[:top]:
        print(f"  {v['compile']:6.1f} s in {v['compile_n']:4.0f} compilations  {name[:70]}")
    print("\nfunctions compiled most, per test:")
    for name, v in sorted(pairs.items(), key=lambda kv: -kv[1]["compile"])[:top]:
        print(f"  {v['compile']:6.1f} s in {v['compile_n']:4.0f} compilations  {name[:120]}")
    share = (comp + trace_lower) / wall if wall else float("nan")
    return (
        f"test_seconds={wall:.0f} compile_seconds={comp:.0f} "
        f"trace_lower_seconds={trace_lower:.0f} share={share:.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="COMPILE_PROFILE_DIR of the profiled run")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    print(summarize(args.folder, args.top))


if __name__ == "__main__":
    main()
