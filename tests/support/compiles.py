"""Programs JAX compiles while a block runs (its own monitoring events): for the tests that a
second fit runs the program the first compiled."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import jax

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def compiled_programs() -> Iterator[list[str]]:
    """Yield a list that collects the name of every program compiled inside the ``with`` block
    (a read from the persistent cache counts too: JAX reports both as a backend compile)."""
    names: list[str] = []

    def listen(event: str, seconds: float, **kwargs) -> None:
        if event == COMPILE_EVENT:
            names.append(kwargs.get("fun_name", "?"))

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield names
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
