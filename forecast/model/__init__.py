"""Pure model functions (JAX, float64, no I/O).

Importing this package enables JAX's 64-bit mode: FLOP counts reach 1e36 and step times 1e-6 s,
which float32 cannot hold side by side.
"""

import jax

jax.config.update("jax_enable_x64", True)

from forecast.model.params import Assumptions, Hardware, assumptions_with  # noqa: E402

__all__ = ["Assumptions", "Hardware", "assumptions_with"]
