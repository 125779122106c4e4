"""The plan physics: pure JAX functions of hardware, model shape and plan (float64, no I/O).

Callers switch JAX to float64 first (:func:`forecast.config.runtime.init_jax`); the searches check
it (:func:`forecast.config.runtime.require_x64`).
"""

from forecast.model.params import Assumptions, Hardware, assumptions_with

__all__ = ["Assumptions", "Hardware", "assumptions_with"]
