"""A set of validated priors (one file, or a base with an overlay on top): lookup and sampling."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from forecast.priors.distributions import Prior
from forecast.priors.registry import PARAMETERS, suggest_key

__all__ = ["PriorSet"]


def _key_seed(seed: int, key: str) -> np.random.SeedSequence:
    """A per-key stream: independent across keys, unchanged when other keys are added or replaced."""
    return np.random.SeedSequence(seed, spawn_key=(zlib.crc32(key.encode("utf-8")),))


@dataclass(frozen=True)
class PriorSet:
    """The priors of one file (or of a base with an overlay on top), in registry order.

    ``path`` is the file read (``None`` for a set parsed from text with no file behind it).
    """

    name: str
    path: Path | None
    text: str
    meta: dict[str, Any]
    priors: dict[str, Prior]
    base: PriorSet | None = field(default=None, repr=False)

    def __getitem__(self, key: str) -> Prior:
        try:
            return self.priors[key]
        except KeyError:
            raise KeyError(f"no prior for {key!r} in {self.name!r}{suggest_key(key)}") from None

    def __contains__(self, key: object) -> bool:
        return key in self.priors

    def __iter__(self) -> Iterator[str]:
        return iter(self.priors)

    def __len__(self) -> int:
        return len(self.priors)

    def keys(self) -> list[str]:
        return list(self.priors)

    def overlay(self, other: PriorSet) -> PriorSet:
        """``other`` (a scenario) laid on top of this set: its keys replace ours, the rest stay.

        The result takes ``other``'s name, path and text, merges ``meta`` (other wins) and keeps
        this set as ``base``.
        """
        merged = dict(self.priors)
        merged.update(other.priors)
        ordered = {k: merged[k] for k in PARAMETERS if k in merged}
        ordered.update({k: v for k, v in merged.items() if k not in ordered})
        return PriorSet(
            name=other.name,
            path=other.path,
            text=other.text,
            meta={**self.meta, **other.meta},
            priors=ordered,
            base=self,
        )

    def uncertain_keys(self) -> list[str]:
        """Keys whose prior is not a point mass."""
        return [k for k, p in self.priors.items() if not p.is_point]

    def medians(self) -> dict[str, float]:
        return {k: p.median() for k, p in self.priors.items()}

    def sample(self, n: int, seed: int) -> dict[str, np.ndarray]:
        """``n`` independent draws of every parameter, reproducible from ``seed``.

        Each key has its own random stream derived from (seed, key), so a key's draws do not change
        when an overlay replaces other keys.
        """
        return {
            k: p.sample(np.random.default_rng(_key_seed(seed, k)), n)
            for k, p in self.priors.items()
        }

    def sample_from_uniforms(
        self,
        u: np.ndarray,
        keys: Sequence[str],
        *,
        fill: Literal["median"] | None = "median",
    ) -> dict[str, np.ndarray]:
        """Map a design of uniforms ``u`` (shape ``(n, len(keys))``) through the keys' inverse CDFs.

        For Sobol / quasi-Monte-Carlo designs and sensitivity analyses. With ``fill="median"`` (default)
        every other key of the set is included too, held at its median (a point mass at its value);
        with ``fill=None`` only ``keys`` are returned.
        """
        u = np.asarray(u, dtype=float)
        keys = list(keys)
        if u.ndim != 2 or u.shape[1] != len(keys):
            raise ValueError(f"u must have shape (n, {len(keys)}), got {u.shape}")
        if len(set(keys)) != len(keys):
            raise ValueError("keys must be distinct")
        if np.any((u < 0) | (u > 1)):
            raise ValueError("u must lie in [0, 1]")
        out: dict[str, np.ndarray] = {}
        for j, k in enumerate(keys):
            out[k] = self[k].ppf(u[:, j])
        if fill == "median":
            n = u.shape[0]
            for k, p in self.priors.items():
                if k not in out:
                    out[k] = np.full(n, p.median())
        return out

    def describe(self) -> str:
        """One line per parameter: key, summary and source."""
        width = max((len(k) for k in self.priors), default=0)
        return "\n".join(f"{k:<{width}}  {p.describe()}" for k, p in self.priors.items())
