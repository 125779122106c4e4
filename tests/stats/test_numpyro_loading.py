"""NumPyro loaded whole whatever the import order (forecast.stats.load_numpyro): ArviZ imports
NumPyro lazily, and a process that imported ``arviz`` first used to end with a ``numpyro.infer``
that lacked its submodules, so ``az.from_numpyro`` failed with ``AttributeError`` (seen when
tests/stats/test_scaling_fits.py and tests/analyses/test_backtest.py shared one process)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# ArviZ's own step that failed: it reads numpyro.infer.initialization to trace a model's dims.
_CONVERT = (
    "import numpyro, numpyro.distributions as dist\n"
    "from arviz_base.io_numpyro import infer_dims\n"
    "def model():\n"
    "    with numpyro.plate('row', 3):\n"
    "        numpyro.sample('x', dist.Normal(0.0, 1.0))\n"
    "print(infer_dims(model))\n"
)


# the two modules whose own imports reach numpyro.infer right after arviz (frontier_backtest
# imports numpyro.diagnostics first, which loads the placeholder: it never broke)
@pytest.mark.parametrize("module", ["forecast.analyses.law_holdout", "forecast.inference.fit"])
def test_a_fit_converts_to_arviz_after_arviz_was_imported_first(module: str) -> None:
    code = f"import arviz\nimport {module}\n" + _CONVERT
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "'x': ['row']" in result.stdout


def test_the_mend_applies_where_numpyro_infer_was_imported_before_forecast() -> None:
    """``import arviz`` then ``import numpyro.infer`` breaks it before any forecast module loads;
    importing forecast.stats afterwards mends the process."""
    code = "import arviz\nimport numpyro.infer\nimport forecast.stats\n" + _CONVERT
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "'x': ['row']" in result.stdout
