"""Process-wide JAX state: releasing compiled programs keeps a long process under the kernel's
memory-mapping cap (forecast.config.runtime; the suite's segfault in CI came from passing it)."""

from __future__ import annotations

import sys

import jax
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC, NUTS

from forecast.config import runtime


def test_map_count_and_limit_read_their_files(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("a\nb\nc\n")
    assert runtime.memory_map_count(maps) == 3
    assert runtime.memory_map_count(tmp_path / "absent") is None
    limit = tmp_path / "max_map_count"
    limit.write_text("262144\n")
    assert runtime.memory_map_limit(limit) == 262_144
    limit.write_text("not a number")
    assert runtime.memory_map_limit(limit) == 65_530
    assert runtime.memory_map_limit(tmp_path / "absent") == 65_530


def test_release_drops_compiled_programs():
    add_one = jax.jit(lambda x: x + 1.0)
    add_one(1.0)
    assert add_one._cache_size() == 1
    runtime.release_compiled_programs()
    assert add_one._cache_size() == 0
    assert float(add_one(1.0)) == 2.0  # and compiles again on the next call


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/maps is Linux's")
def test_a_nuts_run_holds_mappings_until_released():
    """A tiny NUTS run maps ~240 regions of compiled code (a production fit ~1,300-2,000); they
    stay mapped while JAX keeps the programs and go when they are released."""

    def model(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    runtime.release_compiled_programs()
    before = runtime.memory_map_count()
    mcmc = MCMC(NUTS(model), num_warmup=20, num_samples=20, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), 1.0)
    held = runtime.memory_map_count()
    assert held - before > 50
    runtime.release_compiled_programs()
    assert runtime.memory_map_count() - before < (held - before) / 4


def test_release_near_limit_only_past_the_fraction(monkeypatch):
    add_one = jax.jit(lambda x: x + 1.0)
    add_one(1.0)
    monkeypatch.setattr(runtime, "memory_map_limit", lambda: 10**9)
    assert runtime.release_compiled_programs_near_limit() is False
    assert add_one._cache_size() == 1
    monkeypatch.setattr(runtime, "memory_map_limit", lambda: 2)
    assert runtime.release_compiled_programs_near_limit() is True
    assert add_one._cache_size() == 0
