"""One lock for every call that runs a NumPyro model in this process.

NumPyro's effect handlers live on one process-global stack. Two threads that trace a model at
the same time (the Prefect flow propagates scenarios in threads; ``wallcast analyse`` refits
beside its Sobol run) push onto the same stack and corrupt each other's traces (seen as
"all sites must have unique names"). Every function here that runs NUTS or ``Predictive`` is
wrapped in :func:`exclusive`, so model runs take turns; the vectorized wall computations, which
use no handler, still run in parallel.
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
