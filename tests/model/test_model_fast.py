"""``fast_walls`` (vectorized bisection and dip scan) against the full plan search.

Draws: real parts of ``data/hardware.csv`` (H100, GB200 NVL72, TPU v5p, MI300X-like, B200) with
every rate and capacity scaled by a lognormal factor (sd 0.4 in ln), and assumptions uniform in
the prior ranges.  Issue 11: both paths define the data-movement wall as the *first* compute
after the small-scale maximum at which the best plan falls below the threshold, and the fast
path must find that crossing within 0.05 dex on >= 99 % of draws (measured on 1,000 draws by
``benchmarks/walls.py --full-draws 1000``: 997/1000 and 994/1000 for the latency wall,
BENCHMARKS.md; here on 16, all of which must agree).
Before, bisection alone stopped at a later crossing on 10-14 % of draws (0.1-0.7 dex).
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from support.validation import COMPARISON_PARTS, comparison_draws

from forecast.config import runtime
from forecast.config.errors import WallcastError
from forecast.config.runtime import MAX_CHUNK_THREADS, chunk_threads, chunks_in_place
from forecast.model import Assumptions, Hardware
from forecast.model.fast import _walls, fast_walls, in_draw_chunks, padded_size
from forecast.model.search import find_walls

AGREE_DEX = 0.05  # issue 11
N_DRAWS = 16


def _one(x, i):
    return type(x)(*(float(np.broadcast_to(v, (N_DRAWS,))[i]) for v in x))


@pytest.fixture(scope="module")
def comparison():
    hw, a = comparison_draws(N_DRAWS, seed=20241104)
    dm_fast, lat_fast = fast_walls(hw, a)
    rows = []
    for i in range(N_DRAWS):
        w = find_walls(_one(hw, i), _one(a, i))
        rows.append(
            (i, dm_fast[i], w.data_movement_wall_log10_flop, lat_fast[i], w.latency_wall_log10_flop)
        )
    return hw, a, rows


def _describe(hw, a, rows) -> str:
    lines = []
    for i, dmf, dmw, latf, latw in rows:
        lines.append(
            f"draw {i}: dm fast {dmf:.3f} full {dmw:.3f} (diff {dmf - dmw:+.3f}); "
            f"lat fast {latf:.3f} full {latw:.3f}\n    hw={_one(hw, i)}\n    a={_one(a, i)}"
        )
    return "\n".join(lines)


def _diff(x, y) -> float:
    if np.isinf(x) or np.isinf(y):
        return 0.0 if x == y else np.inf
    return abs(x - y)


def test_latency_walls_agree(comparison):
    hw, a, rows = comparison
    bad = [r for r in rows if _diff(r[3], r[4]) > AGREE_DEX]
    assert not bad, _describe(hw, a, bad)


def test_data_movement_walls_agree_within_005_dex(comparison):
    """The fast path finds the full search's first crossing on each of these 16 draws (the
    old bisection missed it by 0.34-0.73 dex on 3 of them)."""
    hw, a, rows = comparison
    bad = [r for r in rows if _diff(r[1], r[2]) > AGREE_DEX]
    assert not bad, _describe(hw, a, bad)


def test_walls_are_finite_and_ordered(comparison):
    _, _, rows = comparison
    for _, dmf, dmw, latf, latw in rows:
        assert np.isfinite([dmf, dmw, latf, latw]).all()
        assert dmf <= latf + 1e-9
        assert dmw <= latw + 1e-9


def test_broadcasts_scalar_hardware_over_array_assumptions():
    hw = Hardware(*COMPARISON_PARTS[0])
    a = Assumptions(batch_exponent=np.array([0.31, 0.36, 0.41]))
    dm, lat = fast_walls(hw, a)
    assert dm.shape == lat.shape == (3,)
    # Faster batch scaling pushes both walls out.
    assert np.all(np.diff(dm) > 0) and np.all(np.diff(lat) > 0)
    # Elementwise identical to scalar calls.
    dm1, lat1 = fast_walls(hw, Assumptions(batch_exponent=0.41))
    assert dm1.shape == () and float(dm1) == pytest.approx(dm[2], abs=1e-9)
    assert float(lat1) == pytest.approx(lat[2], abs=1e-9)
    # 2-D broadcasting: (2, 1) hardware against (3,) assumptions.
    hw2 = Hardware(*(np.array([[v], [v]]) for v in COMPARISON_PARTS[0]))
    dm2, _ = fast_walls(hw2, a)
    assert dm2.shape == (2, 3)
    np.testing.assert_allclose(dm2, np.broadcast_to(dm, (2, 3)), atol=1e-9)


def test_chunking_does_not_change_results():
    hw, a = comparison_draws(N_DRAWS, seed=7)
    dm7, lat7 = fast_walls(hw, a, chunk=7)
    dm_big, lat_big = fast_walls(hw, a, chunk=4096)
    np.testing.assert_array_equal(dm7, dm_big)
    np.testing.assert_array_equal(lat7, lat_big)


def _names_of_chunk_threads(hw, a, chunk=5, on_first=None, inside=None):
    """``in_draw_chunks`` of a function that records the thread of each chunk call: (doubled
    flops, thread names in call order).  ``on_first()`` runs in the first chunk call (chosen
    under a lock), ``inside()`` in every call."""
    seen: list[str] = []
    claim = threading.Lock()

    def doubled(h, aa):
        with claim:
            first = not seen
            seen.append(threading.current_thread().name)
        if first and on_first is not None:
            on_first()
        if inside is not None:
            inside(h, aa)
        return 2.0 * h.flops

    (out,) = in_draw_chunks(doubled, hw, a, chunk=chunk)
    return out, seen


def test_chunks_run_side_by_side_on_borrowed_threads_with_the_same_walls(monkeypatch):
    """``in_draw_chunks`` runs a search's chunks on the helper threads it can borrow
    (``WALLCAST_CHUNK_THREADS`` for the process, the search's own included; 1: one after another
    in the calling thread, as before), in order, and the walls do not depend on it."""
    hw, a = comparison_draws(N_DRAWS, seed=7)
    me = threading.current_thread().name
    results = {}
    for threads in ("1", "3"):
        monkeypatch.setenv("WALLCAST_CHUNK_THREADS", threads)
        results[threads], names = _names_of_chunk_threads(hw, a)
        assert len(names) == -(-N_DRAWS // 5)
        if threads == "1":
            assert set(names) == {me}
        else:  # the search's own thread and two helpers: a pool of three
            assert all(n.startswith("wallcast-chunks") for n in names)
            assert 1 <= len(set(names)) <= 3
    np.testing.assert_array_equal(results["1"], 2.0 * np.asarray(hw.flops))  # in order
    np.testing.assert_array_equal(results["3"], results["1"])
    with chunks_in_place():
        assert set(_names_of_chunk_threads(hw, a)[1]) == {me}
    walls = {}
    for threads in ("1", "2"):
        monkeypatch.setenv("WALLCAST_CHUNK_THREADS", threads)
        walls[threads] = fast_walls(hw, a, chunk=7)  # chunk 7: the program of the test above
    for one, side_by_side in zip(walls["1"], walls["2"], strict=True):
        np.testing.assert_array_equal(one, side_by_side)
    assert runtime._threads_in_use[0] == 0


def test_searches_side_by_side_share_the_allowance_and_never_wait(monkeypatch):
    """Every running search holds one of the process's ``WALLCAST_CHUNK_THREADS`` and borrows
    helpers only from what is left, never waiting: while one search holds both threads of 2, a
    second runs every chunk in its own thread (and finishes first); a search running in place
    beside another leaves it one helper fewer; a chunk's own searches run in its thread; a
    failed chunk returns what its search held."""
    hw, a = comparison_draws(20, seed=7)
    me = threading.current_thread().name
    started, hold, first = threading.Event(), threading.Event(), {}

    def first_search(chunk):
        def wait():
            started.set()
            assert hold.wait(60)

        first["out"], first["names"] = _names_of_chunk_threads(hw, a, chunk=chunk, on_first=wait)

    def beside(chunk):  # the first search in a thread of its own, held in its first chunk
        started.clear(), hold.clear(), first.clear()
        thread = threading.Thread(target=first_search, args=(chunk,), name="first-search")
        thread.start()
        assert started.wait(60)
        return thread

    monkeypatch.setenv("WALLCAST_CHUNK_THREADS", "2")
    holder = beside(chunk=5)
    try:
        assert runtime._threads_in_use[0] == 2  # its own and the one helper
        second, names = _names_of_chunk_threads(hw, a)
        assert set(names) == {me}  # in place, while the first waits
    finally:
        hold.set()
        holder.join(60)
    np.testing.assert_array_equal(first["out"], second)
    assert all(n.startswith("wallcast-chunks") for n in first["names"])
    assert runtime._threads_in_use[0] == 0

    monkeypatch.setenv("WALLCAST_CHUNK_THREADS", "3")
    holder = beside(chunk=100)  # one chunk: in place, but it holds a thread
    in_use = []
    try:
        _, names = _names_of_chunk_threads(
            hw, a, inside=lambda *_: in_use.append(runtime._threads_in_use[0])
        )
    finally:
        hold.set()
        holder.join(60)
    assert first["names"] == ["first-search"]
    assert set(in_use) == {3}  # the first's one, this search's own and one helper (of 3)
    assert all(n.startswith("wallcast-chunks") for n in names) and len(set(names)) <= 2

    monkeypatch.setenv("WALLCAST_CHUNK_THREADS", "4")
    inner_threads = []

    def nested(h, aa):  # a search inside each of two chunks run side by side
        inner = _names_of_chunk_threads(h, aa, chunk=2)[1]
        inner_threads.append((threading.current_thread().name, set(inner)))

    _names_of_chunk_threads(hw, a, chunk=10, inside=nested)
    assert len(inner_threads) == 2 and all({outer} == inner for outer, inner in inner_threads)

    def failing(h, aa):
        raise ValueError("a chunk failed")

    with pytest.raises(ValueError, match="a chunk failed"):
        in_draw_chunks(failing, hw, a, chunk=5)
    assert runtime._threads_in_use[0] == 0


def test_a_search_while_the_interpreter_shuts_down_runs_in_place(monkeypatch):
    """At exit, Python's thread pools take no new work (a search left running in a daemon
    thread): the search runs its chunks in its own thread instead of failing."""
    import concurrent.futures.thread as pool_module

    hw, a = comparison_draws(20, seed=7)
    monkeypatch.setenv("WALLCAST_CHUNK_THREADS", "3")
    expected, _ = _names_of_chunk_threads(hw, a)
    monkeypatch.setattr(pool_module, "_shutdown", True)  # what Python sets at interpreter exit
    out, names = _names_of_chunk_threads(hw, a)
    assert set(names) == {threading.current_thread().name}
    np.testing.assert_array_equal(out, expected)
    assert runtime._threads_in_use[0] == 0


def test_the_services_expensive_work_runs_its_searches_in_place(monkeypatch):
    """The API's expensive-work thread keeps a job's searches to one core (its own thread)."""
    import asyncio

    from forecast.service.guard import ExpensiveWork

    hw, a = comparison_draws(20, seed=7)
    monkeypatch.setenv("WALLCAST_CHUNK_THREADS", "4")
    work = ExpensiveWork()

    def job(cancelled):
        return threading.current_thread().name, _names_of_chunk_threads(hw, a)

    try:
        thread, (_, names) = asyncio.run(work.run(job))
    finally:
        work.shutdown()
    assert thread.startswith("wallcast-expensive") and set(names) == {thread}


def test_chunk_threads_setting(monkeypatch, tmp_path):
    """``WALLCAST_CHUNK_THREADS``: a whole number >= 1, else one error naming it (the CLI says
    so at start-up, exit 2); unset: the usable CPUs (the process's affinity, or every CPU where
    the OS has none, capped by a container's CPU quota), at most four."""
    from adversarial.harness import run_main

    for bad in ("0", "two", "-1", "1.5"):
        monkeypatch.setenv("WALLCAST_CHUNK_THREADS", bad)
        with pytest.raises(WallcastError, match="WALLCAST_CHUNK_THREADS"):
            chunk_threads()
    res = run_main(["query", "--help"], env={"WALLCAST_CHUNK_THREADS": "two"})
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip() == (
        "error: WALLCAST_CHUNK_THREADS='two': expected a whole number >= 1"
    )
    monkeypatch.setenv("WALLCAST_CHUNK_THREADS", "6")
    assert chunk_threads() == 6
    monkeypatch.delenv("WALLCAST_CHUNK_THREADS")
    monkeypatch.setattr(runtime, "CGROUP_CPU_MAX", tmp_path / "none")  # no quota, below
    monkeypatch.setattr(runtime, "CGROUP_V1_CPU", tmp_path / "none")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert runtime.usable_cpus() == 3 and chunk_threads() == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert chunk_threads() == MAX_CHUNK_THREADS == 4
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # macOS: every CPU
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert runtime.usable_cpus() == 2 and chunk_threads() == 2
    # a container's CPU quota caps it (cgroup v2, then v1); "max" or -1: no quota
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    cpu_max = tmp_path / "cpu.max"
    monkeypatch.setattr(runtime, "CGROUP_CPU_MAX", cpu_max)
    for text, cpus in (("150000 100000\n", 2), ("max 100000\n", 64), ("50000 100000", 1)):
        cpu_max.write_text(text)
        assert runtime.usable_cpus() == cpus, text
    monkeypatch.setattr(runtime, "CGROUP_CPU_MAX", tmp_path / "none")
    v1 = tmp_path / "v1"
    v1.mkdir()
    monkeypatch.setattr(runtime, "CGROUP_V1_CPU", v1)
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    for quota, cpus in (("300000", 3), ("-1", 64)):
        (v1 / "cpu.cfs_quota_us").write_text(quota + "\n")
        assert runtime.usable_cpus() == cpus, quota


def test_calls_of_different_sizes_share_a_compiled_shape():
    """A call compiles once per shape (seconds): 3, 5 or 11 draws run as one padded shape of
    16, with each draw's walls those of a call of its own."""
    assert [padded_size(n, 256) for n in (1, 16, 17, 64, 65, 200, 256, 257, 5000)] == [
        16, 16, 64, 64, 256, 256, 256, 256, 256,
    ]  # fmt: skip
    assert padded_size(5, 7) == 7 and padded_size(40, 4096) == 64 and padded_size(3, 1) == 1
    hw, a = comparison_draws(11, seed=3)
    dm11, lat11 = fast_walls(hw, a)
    shapes = _walls._cache_size()
    dm3, lat3 = fast_walls(Hardware(*(v[:3] for v in hw)), Assumptions(*(v[:3] for v in a)))
    dm5, _ = fast_walls(Hardware(*(v[3:8] for v in hw)), Assumptions(*(v[3:8] for v in a)))
    assert _walls._cache_size() == shapes  # no new compilation
    np.testing.assert_array_equal(dm3, dm11[:3])
    np.testing.assert_array_equal(lat3, lat11[:3])
    np.testing.assert_array_equal(dm5, dm11[3:8])


def test_infinity_conventions():
    h100 = Hardware(*COMPARISON_PARTS[0])
    # A range that starts above the latency wall: no budget is feasible -> latency wall -inf.
    _, lat = fast_walls(h100, log10_flop_range=(33.0, 40.0))
    assert float(lat) == -np.inf
    # No small-scale plan fits in 1 MB of HBM: max utilization 0 -> data-movement wall -inf.
    dm, _ = fast_walls(h100._replace(hbm_capacity=1e6))
    assert float(dm) == -np.inf
    # A one-second run: nothing is feasible at any budget of the range.
    dm, lat = fast_walls(h100, Assumptions(duration_s=1.0))
    assert float(dm) == -np.inf and float(lat) == -np.inf
    # A range that ends below the data-movement wall: both walls lie beyond it -> +inf.
    dm, lat = fast_walls(h100, log10_flop_range=(20.0, 27.0))
    assert float(lat) == np.inf
    assert float(dm) == np.inf
    # A range ending between the walls: latency +inf, data-movement wall finite.
    dm, lat = fast_walls(h100, log10_flop_range=(20.0, 30.0))
    assert float(lat) == np.inf
    assert 27.0 < float(dm) < 30.0


def test_dm_wall_respects_search_range():
    h100 = Hardware(*COMPARISON_PARTS[0])
    dm, lat = fast_walls(h100, log10_flop_range=(33.0, 40.0))
    assert float(dm) <= float(lat)
    dm, _ = fast_walls(h100, log10_flop_range=(29.0, 40.0))
    assert float(dm) == -np.inf or float(dm) >= 29.0
