"""The statistical programs: NumPyro models of the hardware trends, the scaling laws and the joint
model, pure functions of data and an explicit ``rng_key`` (running them is :mod:`forecast.inference`).

Importing this package loads NumPyro whole (:func:`load_numpyro`), so every module that fits or
converts a fit (they all import from here) sees a complete ``numpyro.infer``.
"""

from __future__ import annotations

import sys

import numpyro


def load_numpyro() -> None:
    """Load NumPyro for real and give each of its packages the attributes of its loaded submodules.

    ArviZ imports NumPyro lazily (``lazy_loader``): in a process that imports ``arviz`` first,
    ``numpyro`` is a placeholder that loads itself on first attribute access, and a first
    ``from numpyro.infer import ...`` then executes ``numpyro/infer/__init__.py`` twice (the
    placeholder's load imports it once, the pending import again). The second module object
    replaces the first, and as its submodules are already loaded it never receives them as
    attributes, so ``az.from_numpyro`` fails on ``numpyro.infer.initialization``
    (``AttributeError``). Reading an attribute loads the placeholder before any such import;
    binding the submodules mends a process where it already happened. Idempotent and cheap.
    """
    _ = numpyro.__version__  # a lazy placeholder loads here (a no-op once loaded)
    for name, module in list(sys.modules.items()):
        parent_name, _, child = name.rpartition(".")
        if module is None or not (parent_name == "numpyro" or parent_name.startswith("numpyro.")):
            continue
        parent = sys.modules.get(parent_name)
        if parent is not None and child not in vars(parent):
            setattr(parent, child, module)


load_numpyro()
