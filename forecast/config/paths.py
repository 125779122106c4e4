"""Where wallcast reads and writes: the one place that resolves folders and environment overrides.

Every command and library default goes through these functions, so that an override means the
same thing everywhere.  Resolution order for each folder: an explicit argument (a CLI option),
then the environment variable, then the folder shipped in the repository.

============================  =========================  ==================================
folder                        environment variable       default
============================  =========================  ==================================
data tables (hardware.csv, …)  ``WALLCAST_DATA_DIR``      ``<repo>/data``
published forecasts            ``WALLCAST_OUTPUTS_DIR``   ``<repo>/outputs``
priors (baseline.toml, …)      ``WALLCAST_PRIORS_DIR``    ``<repo>/priors``
scenario overlays              (under the priors folder)  ``<priors>/scenarios``
============================  =========================  ==================================
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

DATA_DIR_ENV = "WALLCAST_DATA_DIR"
OUTPUTS_DIR_ENV = "WALLCAST_OUTPUTS_DIR"
PRIORS_DIR_ENV = "WALLCAST_PRIORS_DIR"

HARDWARE_FILE = "hardware.csv"
FRONTIER_RUNS_FILE = "frontier_runs.csv"
MODEL_SHAPES_FILE = "model_shapes.csv"
SCALEUP_DOMAINS_FILE = "scaleup_domains.csv"
TRAINING_RUNS_FILE = "training_runs.csv"
DATA_TABLE_FILES: tuple[str, ...] = (
    HARDWARE_FILE,
    FRONTIER_RUNS_FILE,
    MODEL_SHAPES_FILE,
    SCALEUP_DOMAINS_FILE,
    TRAINING_RUNS_FILE,
)
"""The tables a forecast is fitted to, in the order of the data hash."""
BASELINE_PRIORS_FILE = "baseline.toml"
SCENARIOS_SUBDIR = "scenarios"
DOCS_DIR = REPO_ROOT / "docs"


def _resolve(explicit: str | Path | None, env: str, default: Path) -> Path:
    if explicit is not None and str(explicit) != "":
        return Path(explicit)
    value = os.environ.get(env, "")
    return Path(value) if value else default


def data_dir(explicit: str | Path | None = None) -> Path:
    """Folder of the data tables (``hardware.csv``, ``frontier_runs.csv``, landing folders)."""
    return _resolve(explicit, DATA_DIR_ENV, REPO_ROOT / "data")


def outputs_dir(explicit: str | Path | None = None) -> Path:
    """Folder of published forecasts (``forecasts/<id>/`` and the ``latest`` pointer)."""
    return _resolve(explicit, OUTPUTS_DIR_ENV, REPO_ROOT / "outputs")


def priors_dir(explicit: str | Path | None = None) -> Path:
    """Folder of prior files (``baseline.toml``) with the scenario overlays under it."""
    return _resolve(explicit, PRIORS_DIR_ENV, REPO_ROOT / "priors")


def scenarios_dir(priors_folder: str | Path | None = None) -> Path:
    """Folder of the scenario overlays (``<priors>/scenarios``)."""
    return priors_dir(priors_folder) / SCENARIOS_SUBDIR


def default_priors_path() -> Path:
    """The baseline prior file (``<priors>/baseline.toml``)."""
    return priors_dir() / BASELINE_PRIORS_FILE


def hardware_path(data_folder: str | Path | None = None) -> Path:
    """The accelerator table of a data folder."""
    return data_dir(data_folder) / HARDWARE_FILE


def frontier_runs_path(data_folder: str | Path | None = None) -> Path:
    """The record training-runs table of a data folder."""
    return data_dir(data_folder) / FRONTIER_RUNS_FILE


def model_shapes_path(data_folder: str | Path | None = None) -> Path:
    """The published model-configuration table of a data folder (depth, batch, utilization laws)."""
    return data_dir(data_folder) / MODEL_SHAPES_FILE


def scaleup_domains_path(data_folder: str | Path | None = None) -> Path:
    """The scale-up domain table of a data folder (domain-growth law)."""
    return data_dir(data_folder) / SCALEUP_DOMAINS_FILE


def training_runs_path(data_folder: str | Path | None = None) -> Path:
    """The published-runs table of a data folder (the run-efficiency likelihood)."""
    return data_dir(data_folder) / TRAINING_RUNS_FILE


JAX_CACHE_ENV = "WALLCAST_JAX_CACHE_DIR"


def jax_cache_dir() -> Path | None:
    """Folder of JAX's persistent compilation cache for the ``wallcast`` commands.

    ``WALLCAST_JAX_CACHE_DIR`` if set (empty or ``off``: no cache), else
    ``$XDG_CACHE_HOME/wallcast/jax`` (``~/.cache/wallcast/jax``). Compiled programs are keyed by
    their computation, JAX version and backend, so a stale entry is never used, only kept.
    """
    value = os.environ.get(JAX_CACHE_ENV)
    if value is not None:
        return None if value.strip().lower() in ("", "off") else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "wallcast" / "jax"


#: Seconds a program must take to compile to be kept in the ``wallcast`` commands' cache: every
#: program (unless ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` says otherwise). A fit compiles
#: ~330 programs, most of them NumPyro's small one-op programs; keeping them all made a refit of
#: the same data on a warm machine 16.5-17.4 s instead of 28.9-34.7 s with only those of 0.5 s or
#: more kept (25.0 s at 0.1 s), for 3.1 MB of cache instead of 1.6 MB (BENCHMARKS.md section 7,
#: ``benchmarks/warm_refit.py``). No size limit is set, so JAX never scans the folder on a write,
#: and takes no lock: an entry cut short by a killed process is reported by JAX with a warning and
#: compiled again at each use until the folder is deleted.
JAX_CACHE_MIN_COMPILE_SECONDS = 0.0


def configure_jax_cache() -> Path | None:
    """Point JAX's persistent compilation cache at :func:`jax_cache_dir` through the environment
    (read when JAX is imported, so commands that never import JAX stay without it). Every program
    is kept (:data:`JAX_CACHE_MIN_COMPILE_SECONDS`). An explicit ``JAX_COMPILATION_CACHE_DIR``
    wins, with JAX's own threshold (1 s) unless ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` is
    set too; a folder that cannot be created means no cache. Returns the folder in use, or None."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
    folder = jax_cache_dir()
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(folder)
    os.environ.setdefault(
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", str(JAX_CACHE_MIN_COMPILE_SECONDS)
    )
    return folder
