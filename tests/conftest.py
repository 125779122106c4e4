"""Shared fixtures.

``prefect_harness`` is session-scoped but *not* autouse: only tests that request it (the flow
tests) pay for the temporary Prefect API server (~20 s on 2 cores).  ``PREFECT_HOME`` points at a
temporary folder for the whole session (set before Prefect is imported), so cache records,
results and the SQLite database never touch ``~/.prefect``; subprocesses inherit it. JAX's
persistent compilation cache is one temporary folder for the whole run (below), never
``~/.cache``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import filelock  # noqa: F401  (JAX's cache lock below: without it JAX only warns, runs uncached)
import pytest

_PREFECT_HOME = Path(tempfile.mkdtemp(prefix="wallcast-prefect-home-"))
atexit.register(shutil.rmtree, _PREFECT_HOME, True)
os.environ["PREFECT_HOME"] = str(_PREFECT_HOME)
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# `make test`'s workers already keep the cores busy, one each: their searches (and the commands
# they start) run their chunks in place, as before helper threads (forecast.config.runtime
# .chunk_helpers); the tests of the helper threads set WALLCAST_CHUNK_THREADS themselves.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("WALLCAST_CHUNK_THREADS", "1")
# One JAX persistent compilation cache for the whole test run, never ~/.cache: the tests'
# processes, both pytest-xdist workers (they inherit the folder from the controller, which
# imports this file first and removes the folder at its exit) and the wallcast commands the tests
# start. NumPyro traces a new program for every fit, so without it each fit of the same model
# compiles again (tests/stats/test_joint.py run a second time: 95 s of CPU on an empty cache, 35 s
# on a warm one; BENCHMARKS.md section 7). A size limit turns on JAX's file lock (the `filelock`
# package), so no process reads an entry another is still writing (one killed mid-write leaves a
# truncated entry: JAX warns and compiles again).
_SHARED_JAX_CACHE_ENV = "WALLCAST_TEST_JAX_CACHE"
_inherited = os.environ.get(_SHARED_JAX_CACHE_ENV)
if _inherited and Path(_inherited).is_dir():  # a worker of this run: the controller's folder
    _JAX_CACHE = Path(_inherited)
else:
    _JAX_CACHE = Path(tempfile.mkdtemp(prefix="wallcast-jax-cache-"))
    atexit.register(shutil.rmtree, _JAX_CACHE, True)
    os.environ[_SHARED_JAX_CACHE_ENV] = str(_JAX_CACHE)
os.environ["WALLCAST_JAX_CACHE_DIR"] = str(_JAX_CACHE)
os.environ["JAX_COMPILATION_CACHE_DIR"] = str(_JAX_CACHE)
# programs that took 0.1 s or more to compile: the NUTS kernels and wall searches (seconds each)
# are kept; the ~2,000 eager one-op programs are not, which the cache's size check would scan
# at every write (BENCHMARKS.md section 7: the same CPU either way on 5 files, 80 entries not 862)
_CACHE_MIN_COMPILE_S, _CACHE_MAX_BYTES = 0.1, 16 << 30
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(_CACHE_MIN_COMPILE_S)
os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"] = str(_CACHE_MAX_BYTES)

from forecast.config.filelock import exclusive_lock  # noqa: E402
from forecast.config.runtime import (  # noqa: E402
    init_jax,
    release_compiled_programs_near_limit,
)

# The tests call the model layer directly, as a caller of the library does: float64 first.
init_jax()
# the cache settings above in this process too (the environment reaches JAX only if it is
# imported after them; the wallcast commands the tests start read it)
import jax  # noqa: E402

jax.config.update("jax_compilation_cache_dir", str(_JAX_CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", _CACHE_MIN_COMPILE_S)
jax.config.update("jax_compilation_cache_max_size", _CACHE_MAX_BYTES)


@pytest.fixture(autouse=True, scope="module")
def _bounded_memory_mappings():
    """After each module, drop JAX's compiled programs once the process holds half the kernel's
    memory mappings: the suite's ~80 fits in one process otherwise pass ``vm.max_map_count`` and
    XLA segfaults compiling the next program (forecast.config.runtime)."""
    yield
    release_compiled_programs_near_limit()


@pytest.fixture(scope="session")
def prefect_home() -> Path:
    """The session's PREFECT_HOME (cache records under ``storage/``)."""
    return _PREFECT_HOME


@pytest.fixture(scope="session")
def prefect_harness(prefect_home: Path):
    """One temporary Prefect API (SQLite) for every flow test of the session."""
    from prefect.settings import (
        PREFECT_HOME,
        PREFECT_RESULTS_LOCAL_STORAGE_PATH,
        temporary_settings,
    )
    from prefect.testing.utilities import prefect_test_harness

    updates = {
        PREFECT_HOME: str(prefect_home),
        PREFECT_RESULTS_LOCAL_STORAGE_PATH: str(prefect_home / "storage"),
    }
    with temporary_settings(updates=updates), prefect_test_harness(server_startup_timeout=120):
        yield prefect_home


# ----------------------------------------------------------------------------- a published forecast

PUBLISHED_SCENARIOS = ["baseline", "six-month-runs"]
PUBLISHED_YEARS = [2024.0, 2027.0, 2030.0, 2034.0, 2039.0, 2045.0]
#: Posterior draws propagated per scenario of the session's published forecast (`wallcast run`
#: propagates 400): the tests on it check that every surface shows the dataset's numbers, not
#: their Monte Carlo precision, and the realistic regime costs ~9 ms a draw-year (issue 23: the
#: fixture took ~130 s at 400 draws, ~60 s of it propagation and per-accelerator walls).
PUBLISHED_PROPAGATE_DRAWS = 48


@contextlib.contextmanager
def own_prefect_cache(storage: Path):
    """Prefect results and cache records under ``storage`` (not the session's): flows run here
    leave no cache behind for the flow tests, which expect a first run to compute everything."""
    from prefect.settings import PREFECT_RESULTS_LOCAL_STORAGE_PATH, temporary_settings

    with temporary_settings(updates={PREFECT_RESULTS_LOCAL_STORAGE_PATH: str(storage)}):
        yield storage


def refresh_small_forecast(outputs: Path) -> dict:
    """The ``refresh-forecast`` flow at the gated settings of :mod:`support.fit_settings` (the
    default 4 chains x 1,000 draws: passes the convergence gate on any CPU measured), two
    scenarios, six output years, :data:`PUBLISHED_PROPAGATE_DRAWS` propagated draws, without
    reports."""
    from support.fit_settings import GATED_CHAINS, GATED_DRAWS, GATED_SEED

    from flows.refresh import refresh_forecast

    return refresh_forecast(
        outputs_dir=str(outputs),
        scenarios=PUBLISHED_SCENARIOS,
        chains=GATED_CHAINS,
        draws=GATED_DRAWS,
        seed=GATED_SEED,
        years=PUBLISHED_YEARS,
        reports=False,
        propagate_draws=PUBLISHED_PROPAGATE_DRAWS,
    )


def publish_small_forecast(outputs: Path) -> Path:
    """:func:`refresh_small_forecast`, then its report and deck; returns the forecast file."""
    from forecast.report import write_deck_file, write_report_files

    path = Path(refresh_small_forecast(outputs)["path"])
    write_report_files(path, previous=False, accelerators=False)
    write_deck_file(path, previous=False)
    return path


def _shared_folder(request, tmp_path_factory) -> Path | None:
    """The folder the pytest-xdist workers of this run share (their base temps' parent), or
    None in a single process."""
    if getattr(request.config, "workerinput", None) is None:
        return None
    return tmp_path_factory.getbasetemp().parent


@pytest.fixture(scope="session")
def published_cache(prefect_harness, tmp_path_factory, request) -> Path:
    """Prefect storage of the published-forecast flow runs (see :func:`own_prefect_cache`),
    shared by the workers (Prefect keeps its cache records with the results, so a worker whose
    forecast another built still finds the fit and propagation cached)."""
    shared = _shared_folder(request, tmp_path_factory)
    if shared is None:
        return tmp_path_factory.mktemp("published-prefect-storage")
    path = shared / "published-prefect-storage"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def published_forecast(published_cache, tmp_path_factory, request) -> Path:
    """A real forecast published by the flow in this session (with report.html and deck.pptx).

    Built once per test run: with two workers, the first to ask builds it in the shared folder
    under a lock and each worker gets its own copy (tests write beside it: new forecasts,
    corrupted files), which saves the other worker ~2 minutes of fit and propagation (issue 23)."""
    shared = _shared_folder(request, tmp_path_factory)
    if shared is None:
        with own_prefect_cache(published_cache):
            return publish_small_forecast(tmp_path_factory.mktemp("published") / "outputs")
    built = shared / "published" / "outputs"
    record = shared / "published" / "forecast-path.txt"
    # the refresh lock of forecast.config.filelock, waiting for the worker that builds it
    with exclusive_lock(shared / "published.lock", "published-forecast build", wait=1800.0):
        if not record.exists():
            with own_prefect_cache(published_cache):
                path = publish_small_forecast(built)
            record.write_text(str(path.relative_to(built)))
    mine = tmp_path_factory.mktemp("published") / "outputs"
    shutil.copytree(built, mine, symlinks=True)
    return mine / record.read_text()


# The longest test files first: `make test`'s two workers take whole files (--dist loadfile) in
# the order they are collected, so a long file collected late left one worker running alone for
# the last minutes of a run (BENCHMARKS.md section 7). Longest first is the classic heuristic for
# two machines. The order comes from the clean-clone runs' --durations; the test files not named
# here keep their collected order after these, and the tests of each file keep theirs.
LONGEST_FILES_FIRST = (
    "tests/flows/test_flows.py",
    "tests/flows/test_serve.py",
    "tests/service/test_api.py",  # builds the published forecast the service tests share ...
    "tests/priors/test_shipped_priors.py",
    "tests/stats/test_joint.py",
    "tests/adversarial/test_service_corpus.py",  # ... which this one then only copies
    "tests/inference/test_forecast.py",
    "tests/store/test_publish_kill.py",
    "tests/inference/test_propagate_regimes.py",
    "tests/model/test_model_fast.py",
    "tests/model/test_realistic_fast.py",
    "tests/analyses/test_sensitivity.py",
    "tests/model/test_model_properties.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
