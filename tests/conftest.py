"""Shared fixtures.

``prefect_harness`` is session-scoped but *not* autouse: only tests that request it (the flow
tests) pay for the temporary Prefect API server (~20 s on 2 cores).  ``PREFECT_HOME`` points at a
temporary folder for the whole session (set before Prefect is imported), so cache records,
results and the SQLite database never touch ``~/.prefect``; subprocesses inherit it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

_PREFECT_HOME = Path(tempfile.mkdtemp(prefix="wallcast-prefect-home-"))
atexit.register(shutil.rmtree, _PREFECT_HOME, True)
os.environ["PREFECT_HOME"] = str(_PREFECT_HOME)
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


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
