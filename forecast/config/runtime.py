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

This module imports JAX only inside :func:`init_jax` and :func:`require_x64`: the configuration
layer stays importable by commands that only read a dataset.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

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
