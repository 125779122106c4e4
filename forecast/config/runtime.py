"""Process-wide runtime state: JAX's set-up and the one lock around NumPyro model runs.

* :func:`init_jax` switches JAX to float64 (and optionally turns on its persistent compilation
  cache). It is explicit, not an import side effect: every function that runs the physics or a
  NumPyro program (the jobs, the fits, the propagation, the wall searches, the analyses) calls it
  first, and the model layer refuses float32 (:func:`require_x64`).  FLOP counts reach 1e36 and
  step times 1e-6 s, and the NUTS log densities sum log10 values around 25: float32 cannot hold
  either side by side.
* :data:`NUMPYRO_LOCK` / :func:`exclusive`: NumPyro's effect handlers live on one process-global
  stack. Two threads that trace a model at the same time (the Prefect flow propagates scenarios
  in threads; ``wallcast analyse`` refits beside its Sobol run) push onto the same stack and
  corrupt each other's traces ("all sites must have unique names"). Every function that runs NUTS
  or ``Predictive`` is wrapped in :func:`exclusive`, so model runs take turns; the vectorized wall
  computations, which use no handler, still run in parallel.

* :func:`release_compiled_programs`: XLA's CPU backend maps each compiled program's code into
  memory mappings of its own, and JAX keeps every program it compiled alive for reuse.  A NUTS
  fit adds ~1,300-2,000 mappings, a full forecast ~6,400, and a refit of a newly built model
  compiles again; Linux caps mappings per process (``vm.max_map_count``, 65,530 by default) and
  XLA, failing to map the next program, crashes the process (SIGSEGV, no Python error).  A
  process that runs many independent jobs calls :func:`release_compiled_programs_near_limit`
  between them.  (The Prefect runner runs every flow run in a fresh subprocess; the test suite,
  ~80 fits in one process, is what met the limit.)

* :func:`chunk_helpers`: the vectorized searches split their draws into chunks of one compiled
  call each (:func:`forecast.model.fast.in_draw_chunks`), and XLA runs each call on one thread,
  so a single search (the Sobol run, the accelerator walls, a what-if's one scenario, a CLI
  search) kept one core busy.  The process now has :func:`chunk_threads` threads for its
  searches: every running search holds one (its own) and borrows what is left, without waiting,
  as helpers that run its chunks side by side with it (JAX releases the GIL while a compiled call
  runs).  A search that finds nothing left runs its chunks in place, one after another, as
  before: the eight scenario propagations of a refresh, side by side in threads, hold the
  threads themselves, and the first to start borrows at most what the others have not taken.
  Each chunk is computed alone, so results do not depend on how many threads ran them
  (BENCHMARKS.md section 11).

This module imports JAX only inside the functions that use it: the configuration layer stays
importable by commands that only read a dataset.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from forecast.config.errors import WallcastError

NUMPYRO_LOCK = threading.RLock()
"""Held while a NumPyro model is traced or run (re-entrant: a locked call may call another)."""


def exclusive[**P, R](fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` holding :data:`NUMPYRO_LOCK`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with NUMPYRO_LOCK:
            return fn(*args, **kwargs)

    return wrapper


class Float32Error(RuntimeError):
    """The physics was called with JAX in float32 (``init_jax`` was not called)."""


def init_jax(
    *,
    x64: bool = True,
    host_device_count: int | None = None,
    compilation_cache_dir: str | None = None,
) -> None:
    """Set up JAX for wallcast (idempotent; call before any JAX computation).

    Parameters
    ----------
    x64 : bool
        Enable float64 (process-wide).
    host_device_count : int, optional
        Call ``numpyro.set_host_device_count`` (only useful for ``chain_method="parallel"``;
        it has no effect once JAX has initialised its CPU backend).
    compilation_cache_dir : str, optional
        Turn on JAX's persistent compilation cache there: a refit on identical data and
        settings then reuses the compiled NUTS program.
    """
    import jax  # why here: the configuration layer must not import JAX (read-only commands)

    if compilation_cache_dir is not None:
        jax.config.update("jax_compilation_cache_dir", str(compilation_cache_dir))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if host_device_count is not None:
        import numpyro  # why here: as above; only this option needs it

        numpyro.set_host_device_count(host_device_count)
    if x64:
        jax.config.update("jax_enable_x64", True)


def require_x64() -> None:
    """Raise :class:`Float32Error` unless JAX is in float64 (the model layer's entry check)."""
    import jax  # why here: as in init_jax

    if not jax.config.jax_enable_x64:
        raise Float32Error(
            "JAX is in float32: call forecast.config.runtime.init_jax() before the model"
        )


MAX_MAP_COUNT_FILE = Path("/proc/sys/vm/max_map_count")
DEFAULT_MAX_MAP_COUNT = 65_530  # Linux's default (DEFAULT_MAX_MAP_COUNT in include/linux/mm.h)


def memory_map_count(maps_file: Path = Path("/proc/self/maps")) -> int | None:
    """Memory mappings of this process (lines of ``/proc/self/maps``); None where unreadable."""
    try:
        with open(maps_file, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return None


def memory_map_limit(limit_file: Path = MAX_MAP_COUNT_FILE) -> int:
    """The kernel's cap on mappings per process (``vm.max_map_count``; Linux's default elsewhere)."""
    try:
        return int(limit_file.read_text().strip())
    except (OSError, ValueError):
        return DEFAULT_MAX_MAP_COUNT


def release_compiled_programs() -> None:
    """Drop JAX's in-memory compiled programs and trace caches (nothing if JAX is not imported).

    The next call of each jitted function compiles again (or reads JAX's persistent cache)."""
    if "jax" not in sys.modules:
        return
    import jax  # why here: only a process that already runs JAX has programs to release

    jax.clear_caches()
    gc.collect()


def release_compiled_programs_near_limit(fraction: float = 0.5) -> bool:
    """:func:`release_compiled_programs` once this process holds more than ``fraction`` of the
    kernel's memory mappings (module docstring); True if it released them."""
    count = memory_map_count()
    if count is None or count <= fraction * memory_map_limit():
        return False
    release_compiled_programs()
    return True


CHUNK_THREADS_ENV = "WALLCAST_CHUNK_THREADS"
MAX_CHUNK_THREADS = 4
"""Default ceiling on :func:`chunk_threads`: each thread holds a chunk's arrays, and the gain was
measured on two vCPUs only (a second thread: 1.5-2.0x for a search alone, BENCHMARKS.md
section 11)."""


CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")  # cgroup v2: "<quota> <period>" or "max ..."
CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")  # cgroup v1: cpu.cfs_quota_us (-1: none), cfs_period_us


def cgroup_cpu_limit() -> int | None:
    """CPUs' worth of time this process's cgroup may use (a container's ``--cpus``, rounded up),
    None where no quota is set or none can be read."""
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota = (CGROUP_V1_CPU / "cpu.cfs_quota_us").read_text().strip()
            period = (CGROUP_V1_CPU / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    try:
        q, t = int(quota), int(period)
    except ValueError:  # "max": no quota
        return None
    return max(1, -(-q // t)) if q > 0 and t > 0 else None


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity where the OS has one (else every CPU),
    capped by its cgroup's CPU quota (:func:`cgroup_cpu_limit`)."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    limit = cgroup_cpu_limit()
    return max(1, min(cpus, limit) if limit is not None else cpus)


def chunk_threads() -> int:
    """Threads this process's searches may keep busy at once (each running search holds one and
    may borrow others as helpers, :func:`chunk_helpers`): ``WALLCAST_CHUNK_THREADS`` (1: every
    search runs its chunks one after another, as before 2026-12-07), else :func:`usable_cpus`,
    at most :data:`MAX_CHUNK_THREADS`.  A bad value raises :class:`WallcastError` (the CLI checks
    it at start-up)."""
    value = os.environ.get(CHUNK_THREADS_ENV, "").strip()
    if not value:
        return min(usable_cpus(), MAX_CHUNK_THREADS)
    try:
        threads = int(value)
    except ValueError:
        threads = 0
    if threads < 1:
        raise WallcastError(f"{CHUNK_THREADS_ENV}={value!r}: expected a whole number >= 1")
    return threads


_threads_lock = threading.Lock()
_threads_in_use = [0]  # held by the searches running now: one each, plus their helpers
_in_place = threading.local()


@contextlib.contextmanager
def chunks_in_place() -> Iterator[None]:
    """Searches started in this thread inside the block hold no thread of :func:`chunk_threads`
    and borrow no helper: a chunk thread's own searches (its search holds the thread), the
    service's expensive-work thread (a job's searches keep to one core)."""
    before = getattr(_in_place, "active", False)
    _in_place.active = True
    try:
        yield
    finally:
        _in_place.active = before


@contextlib.contextmanager
def chunk_helpers(chunks: int) -> Iterator[int]:
    """For the block, the search holds one of the process's :func:`chunk_threads` and borrows, as
    helpers for its ``chunks`` compiled calls, up to ``chunks - 1`` of those no running search
    holds, without waiting; yields how many (0: its chunks run in place, one after another).  In
    a :func:`chunks_in_place` block it holds and borrows nothing."""
    if getattr(_in_place, "active", False):
        yield 0
        return
    held = 0
    try:
        with _threads_lock:
            helpers = max(0, min(chunks - 1, chunk_threads() - _threads_in_use[0] - 1))
            held = 1 + helpers
            _threads_in_use[0] += held
        yield helpers
    finally:
        if held:
            with _threads_lock:
                _threads_in_use[0] -= held


def _reset_chunk_helpers() -> None:
    """In a forked child no search of the parent is running: no thread is held."""
    global _threads_lock
    _threads_lock = threading.Lock()
    _threads_in_use[0] = 0


os.register_at_fork(after_in_child=_reset_chunk_helpers)
