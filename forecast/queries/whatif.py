"""Live what-if: a changed prior's hit-year and hit-FLOP distributions by reweighting stored draws.

A forecast stores, per scenario, the walls' hit year and hit FLOP of every propagated posterior
draw and the inputs that draw used.  Changing the prior of an input from p to p' changes the
posterior by the factor p'(x) / p(x) at each draw's value x (for a fitted input the likelihood
is unchanged; for an input drawn from its prior the posterior is the prior), so the new
distributions are the stored ones with importance weights p'(x) / p(x), Pareto-smoothed
(:mod:`forecast.queries.psis`, [vehtari2024]).  The Pareto k says when this is unreliable
(k > 0.7: the new prior puts its mass where the stored draws are few, or changes a fixed
value); the answer then says so and names the real run that answers it instead (a flow run of
the ``whatif-forecast`` deployment of ``wallcast serve``: the base prior file with the changed
tables, refitted).  This is the Bayesian change of a prior: a fitted input moves only as far as
its data allow (each change reports the input's median over the draws before and after).  A
scenario overlay is the other kind of what-if: it replaces a fitted input's posterior by the
overlay's distribution (``priors/README.md``), which reweighting does not answer.

Where each input's per-draw value and old prior come from (the forecast's ``input_provenance``):
a *fitted* input's value is its posterior site (``fit_law_priors``: the site and the prior the fit
used), thinned as the propagation thinned it; a *prior* input's value is its ``forecast_inputs``
entry and its old prior the scenario's; a *fixed* input has no density, so any other value is
unreachable by reweighting (k = inf).

h5py and NumPy only (no JAX, no xarray): the arrays of a forecast are read once per file and
kept (:func:`load_draws`), so an answer after the first is a few milliseconds of arithmetic.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special, stats

from forecast.config import paths
from forecast.config.errors import WallcastError
from forecast.priors.distributions import Prior, log10_normal
from forecast.priors.parsing import _validate_table, loads
from forecast.priors.registry import PARAMETERS
from forecast.queries.psis import K_THRESHOLD, psis_log_weights
from forecast.store.reader import read_attrs, read_variable, resolve_forecast_path

PROB = 0.8
Z80 = 1.2815515655446004  # the standard normal's 90 % quantile: a 10-90 % width is 2 Z80 sigma
OUTSIDE_TOLERANCE = 0.01  # new-prior mass allowed where the old prior has none (the bias it leaves)
_GRID = (np.arange(20_000) + 0.5) / 20_000  # probabilities at which a new prior is inspected
SPEC_HELP = (
    "KEY=VALUE (a fixed value) or KEY=P10,P50,P90 (its 10/50/90 % quantiles), e.g. "
    "scaling.batch_exponent=0.33,0.38,0.43"
)


class WhatIfInputError(WallcastError, ValueError):
    """A what-if request that cannot be answered (bad spec, unknown or non-input key)."""

    def __init__(self, message: str, parameter: str = "prior", allowed: Any = None) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.allowed = allowed


@dataclass(frozen=True)
class Change:
    """One prior change: the key and its new prior."""

    key: str
    prior: Prior
    spec: str


def parse_change(spec: str) -> Change:
    """``KEY=VALUE`` or ``KEY=P10,P50,P90`` -> a validated :class:`Change` (the registry checks the
    key, the domain and the order of the quantiles)."""
    key, sep, rhs = str(spec).partition("=")
    key = key.strip()
    if not sep or not key or not rhs.strip():
        raise WhatIfInputError(f"prior {spec!r}: expected {SPEC_HELP}")
    try:
        numbers = [float(v) for v in rhs.split(",")]
    except ValueError:
        raise WhatIfInputError(f"prior {spec!r}: expected numbers, {SPEC_HELP}") from None
    if not all(math.isfinite(v) for v in numbers):
        raise WhatIfInputError(f"prior {spec!r}: numbers must be finite")
    if len(numbers) == 1:
        table: dict[str, Any] = {"value": numbers[0]}
    elif len(numbers) == 3:
        table = {"quantiles": dict(zip(("p10", "p50", "p90"), numbers, strict=True))}
    else:
        raise WhatIfInputError(f"prior {spec!r}: give 1 or 3 numbers, {SPEC_HELP}")
    table["source"] = "what-if"
    result = _validate_table(key, table, None)
    if not isinstance(result, Prior):
        raise WhatIfInputError(f"prior {spec!r}: {'; '.join(p.reason for p in result)}")
    return Change(key, result, str(spec))


@dataclass
class StoredDraws:
    """What a forecast stores for the what-if, per scenario (arrays over flattened draws)."""

    forecast_id: str
    attrs: dict[str, Any]
    scenarios: list[str]
    walls: list[str]
    hit_year: np.ndarray  # (scenario, draw, wall); +inf where the wall is not hit
    hit_flop: np.ndarray
    path: Path
    _values: dict[tuple[str, str], np.ndarray]

    def scenario(self, name: str | None) -> str:
        """``name`` checked against the forecast's scenarios (None: the first, the base)."""
        if name is None:
            return self.scenarios[0]
        if name not in self.scenarios:
            raise WhatIfInputError(
                f"scenario {name!r} is not in forecast {self.forecast_id}", "scenario",
                self.scenarios,
            )  # fmt: skip
        return name

    def provenance(self, scenario: str) -> dict[str, dict]:
        return json.loads(str(self.attrs.get("input_provenance", "{}"))).get(scenario, {})

    def values(self, scenario: str, key: str) -> np.ndarray:
        """Each draw's value of ``key`` in the key's units (fitted: the posterior site)."""
        cache_key = (scenario, key)
        if cache_key not in self._values:
            self._values[cache_key] = self._read_values(scenario, key)
        return self._values[cache_key]

    def _read_values(self, scenario: str, key: str) -> np.ndarray:
        # forecast_inputs holds every input in its key's units, paired with the draws (a fitted
        # one is its posterior draw; the batch exponent on N, twice the fit's compute exponent)
        dims, values, _, coords, _ = read_variable(
            self.path, "forecast_inputs", key.replace(".", "__")
        )
        axis = dims.index("scenario")
        values = np.take(np.asarray(values, float), coords["scenario"].index(scenario), axis)
        return values.ravel()

    def fit_scale(self, key: str) -> str | None:
        """The scale of a fitted key's sample site (log10, logit or linear), None if not fitted."""
        site = self.fit_prior(key).get("site", "") if self.is_fitted(key) else ""
        if not site:
            return None
        if site.startswith("log10_") or site.endswith("_dex_per_year"):
            return "log10"
        return "logit" if site.startswith("logit_") else "linear"

    def is_fitted(self, key: str, scenario: str | None = None) -> bool:
        scenario = self.scenarios[0] if scenario is None else scenario
        return self.provenance(scenario).get(key, {}).get("kind") == "fitted"

    def fit_prior(self, key: str) -> dict:
        return json.loads(str(self.attrs.get("fit_law_priors", "{}")))[key]

    def old_prior(self, scenario: str, key: str) -> Prior:
        """The prior the stored draws of ``key`` came from."""
        kind = self.provenance(scenario).get(key, {}).get("kind")
        if kind == "fitted":
            fit = self.fit_prior(key)
            return Prior(key, fit["dist"], dict(fit["params"]), source="the forecast's fit")
        text = self.attrs.get(f"scenario_text_{scenario}") or self.attrs.get("priors_text", "")
        scenario_set = loads(str(text), f"{scenario}.toml", overlay=True)
        if key in scenario_set:
            return scenario_set[key]
        return loads(str(self.attrs["priors_text"]), "priors.toml")[key]


def _mass_outside(new: Prior, old: Prior, scale: str | None) -> float:
    """Share of the new prior's mass where the old prior has no density (no stored draw can
    carry it; importance weights cannot see it, so the Pareto k would not either)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.mean(~np.isfinite(fit_logpdf(old, scale, new.ppf(_GRID)))))


def fit_logpdf(prior: Prior, scale: str | None, x: np.ndarray) -> np.ndarray:
    """Log density at ``x`` (key units) of ``prior`` as a fit uses it: on a log10 or logit
    site a split or piecewise form becomes the nearest Normal on that scale (same median and
    10-90 % width, as ``forecast.stats.joint.site_prior``); otherwise the prior's own density."""
    x = np.asarray(x, dtype=float)
    if prior.is_point or scale not in ("log10", "logit", "linear"):
        return prior.logpdf(x)
    if scale == "log10" and prior.dist not in ("lognormal", "loguniform"):
        loc, sd = log10_normal(*(prior.quantile(q) for q in (0.1, 0.5, 0.9)))
        with np.errstate(divide="ignore", invalid="ignore"):
            return stats.norm.logpdf(np.log10(x), loc, sd) - np.log(x * math.log(10.0))
    if scale == "logit" and prior.dist != "logitnormal":
        lo, mid, hi = (special.logit(prior.quantile(q)) for q in (0.1, 0.5, 0.9))
        with np.errstate(divide="ignore", invalid="ignore"):
            return stats.norm.logpdf(special.logit(x), mid, (hi - lo) / (2 * Z80)) - np.log(
                x * (1 - x)
            )
    if prior.dist.startswith(("split_", "quantile_")):
        # a linear site takes prior.to_numpyro(): the nearest member of the family, a Normal
        # in the family's own transformed space (log, logit or identity)
        base = prior.dist.split("_", 1)[1]
        q10, q50, q90 = (prior.quantile(q) for q in (0.1, 0.5, 0.9))
        with np.errstate(divide="ignore", invalid="ignore"):
            if base == "lognormal":
                sd = (math.log(q90) - math.log(q10)) / (2 * Z80)
                return stats.norm.logpdf(np.log(x), math.log(q50), sd) - np.log(x)
            if base == "logitnormal":
                lo, mid, hi = (float(special.logit(q)) for q in (q10, q50, q90))
                return stats.norm.logpdf(special.logit(x), mid, (hi - lo) / (2 * Z80)) - np.log(
                    x * (1 - x)
                )
            return stats.norm.logpdf(x, q50, (q90 - q10) / (2 * Z80))
    return prior.logpdf(x)


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int) -> StoredDraws:
    p = Path(path)
    attrs = read_attrs(p)
    arrays = {}
    for name in ("hit_year", "hit_flop", "hit"):
        dims, values, _, coords, _ = read_variable(p, "forecast", name)
        order = [dims.index(d) for d in ("scenario", "chain", "draw", "wall")]
        arr = np.transpose(np.asarray(values), order)
        arrays[name] = arr.reshape(arr.shape[0], -1, arr.shape[-1])
        scenarios, walls = coords["scenario"], coords["wall"]
    hit = arrays["hit"].astype(bool)
    return StoredDraws(
        forecast_id=str(attrs.get("id", p.parent.name)),
        attrs=attrs,
        scenarios=scenarios,
        walls=walls,
        hit_year=np.where(hit, arrays["hit_year"].astype(float), np.inf),
        hit_flop=np.where(hit, arrays["hit_flop"].astype(float), np.inf),
        path=p,
        _values={},
    )


def load_draws(forecast: str | Path | None = None) -> StoredDraws:
    """A forecast's stored draws for the what-if, read once per file version and kept."""
    path = resolve_forecast_path(forecast)
    return _load(str(path), path.stat().st_mtime_ns)


def reweightable_priors(
    forecast: str | Path | None = None, scenario: str | None = None
) -> dict[str, Any]:
    """The inputs a what-if can change in a forecast's scenario: key, label, unit, how its draws
    were made (fitted / prior / fixed) and its current 10/50/90 % quantiles (the dashboard's
    sliders start there)."""
    draws = load_draws(forecast)
    scenario = draws.scenario(scenario)
    rows = []
    for key, info in draws.provenance(scenario).items():
        prior = draws.old_prior(scenario, key)
        spec = PARAMETERS.get(key)
        rows.append(
            {
                "key": key,
                "label": spec.label if spec else key,
                "unit": spec.unit if spec else "",
                "kind": info.get("kind", "prior"),
                "describe": prior.describe(),
                "p10": prior.quantile(0.1),
                "p50": prior.median(),
                "p90": prior.quantile(0.9),
            }
        )
    return {"forecast_id": draws.forecast_id, "scenario": scenario, "priors": rows}


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, probs) -> np.ndarray:
    """Quantiles of weighted draws (the smallest value whose cumulative weight reaches p; +inf
    values sort last)."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cum = np.cumsum(w) / np.sum(w)
    idx = np.searchsorted(cum, np.asarray(probs, float) - 1e-12, side="left")
    return v[np.clip(idx, 0, v.size - 1)]


def _summary(values: np.ndarray, weights: np.ndarray, prob: float) -> dict[str, Any]:
    lo, med, hi = weighted_quantiles(values, weights, [(1 - prob) / 2, 0.5, (1 + prob) / 2])

    def clean(x: float) -> float | None:
        return float(x) if math.isfinite(x) else None

    return {
        "median": clean(med),
        "lower": clean(lo),
        "upper": clean(hi),
        "hit_probability": float(np.sum(weights[np.isfinite(values)]) / np.sum(weights)),
    }


def whatif_answer(
    changes: list[str] | list[Change],
    forecast: str | Path | None = None,
    *,
    scenario: str | None = None,
    prob: float = PROB,
) -> dict[str, Any]:
    """The new hit-year and hit-FLOP distributions of each wall under the changed priors, beside
    the stored ones, with the Pareto k, the effective number of draws and whether the answer is
    reliable (k <= 0.7)."""
    if not changes:
        raise WhatIfInputError(f"give at least one prior change: {SPEC_HELP}")
    parsed = [c if isinstance(c, Change) else parse_change(c) for c in changes]
    keys = [c.key for c in parsed]
    if len(set(keys)) != len(keys):
        raise WhatIfInputError("each key may be changed once")
    draws = load_draws(forecast)
    scenario = draws.scenario(scenario)
    s = draws.scenarios.index(scenario)
    provenance = draws.provenance(scenario)
    n = draws.hit_year.shape[1]
    log_ratio = np.zeros(n)
    rows = []
    fixed_moved: list[str] = []
    point_asked: list[str] = []
    outside_support: list[str] = []
    for change in parsed:
        if change.key not in provenance:
            raise WhatIfInputError(
                f"prior {change.spec!r}: {change.key} is not an input of the propagated walls",
                "prior",
                sorted(provenance),
            )
        kind = provenance[change.key].get("kind", "prior")
        old = draws.old_prior(scenario, change.key)
        x = draws.values(scenario, change.key)
        scale = draws.fit_scale(change.key) if kind == "fitted" else None
        if old.is_point or change.prior.is_point:
            if not (
                old.is_point and change.prior.is_point and old.median() == change.prior.median()
            ):
                (fixed_moved if old.is_point else point_asked).append(change.key)
        elif (outside := _mass_outside(change.prior, old, scale)) > OUTSIDE_TOLERANCE:
            outside_support.append(f"{change.key} ({outside:.1%} of the new prior)")
        else:
            with np.errstate(invalid="ignore"):
                log_ratio = (
                    log_ratio + fit_logpdf(change.prior, scale, x) - fit_logpdf(old, scale, x)
                )
        rows.append(
            {
                "key": change.key,
                "kind": kind,
                "before": old.describe(),
                "after": change.prior.describe(),
                "values": x,
            }
        )
    unreachable = fixed_moved + point_asked + outside_support
    if unreachable:
        log_w, k = np.full(n, -math.log(n)), math.inf
    else:
        log_w, k = psis_log_weights(log_ratio)
        if not math.isfinite(k):  # too few draws keep weight to smooth: no answer
            unreachable = ["the reweighting"]
            log_w = np.full(n, -math.log(n))
    weights = np.exp(log_w)
    uniform = np.full(n, 1.0 / n)
    reliable = bool(math.isfinite(k) and k <= K_THRESHOLD)
    walls = []
    for j, wall in enumerate(draws.walls):
        year, flop = draws.hit_year[s, :, j], draws.hit_flop[s, :, j]
        walls.append(
            {
                "wall": wall,
                "before": {
                    "hit_year": _summary(year, uniform, prob),
                    "hit_flop": _summary(flop, uniform, prob),
                },
                "after": (
                    {
                        "hit_year": _summary(year, weights, prob),
                        "hit_flop": _summary(flop, weights, prob),
                    }
                    if not unreachable
                    else None
                ),
            }
        )
    for row in rows:  # the input itself over the draws: a fitted one moves as its data allow
        x = row.pop("values")
        row["input_median_before"] = float(weighted_quantiles(x, uniform, [0.5])[0])
        row["input_median_after"] = (
            None if unreachable else float(weighted_quantiles(x, weights, [0.5])[0])
        )
    ess = float(1.0 / np.sum(weights**2)) if not unreachable else 0.0
    if fixed_moved:
        message = (
            f"{', '.join(fixed_moved)} is fixed in this forecast: reweighting its draws cannot "
            "move it; a real run can (submit the same change as a what-if run)"
        )
    elif point_asked:
        message = (
            f"a fixed value of {', '.join(point_asked)} has no density: reweighting draws of a "
            "distribution cannot reach one value; a real run can (submit the same change as a "
            "what-if run)"
        )
    elif outside_support:
        message = (
            f"the new prior of {', '.join(outside_support)} lies outside the old prior's "
            "support, where no stored draw is: reweighting cannot reach it; a real run can "
            "(submit the same change as a what-if run)"
        )
    elif not math.isfinite(k):
        message = (
            "too few stored draws keep weight under the new prior to smooth their tail: "
            "reweighting cannot answer; a real run can"
        )
    elif not reliable:
        message = (
            f"Pareto k = {k:.2f} > {K_THRESHOLD}: the new prior puts its mass where the stored "
            "draws are few, so the reweighted answer is unreliable; a real run can answer it "
            "(submit the same change as a what-if run)"
        )
    else:
        message = f"Pareto k = {k:.2f} <= {K_THRESHOLD}: the reweighted answer is reliable"
    return {
        "forecast_id": draws.forecast_id,
        "scenario": scenario,
        "prob": float(prob),
        "changes": rows,
        "draws": int(n),
        "pareto_k": None if not math.isfinite(k) else float(k),
        "effective_draws": ess,
        "reliable": reliable,
        "message": message,
        "walls": walls,
    }


WHATIF_FOLDER = "whatif"
"""Where what-if runs publish, under the outputs folder: ``whatif/<digest>/`` (never the served
``latest``)."""


def changes_digest(changes: list[str]) -> str:
    """A what-if run's folder name: the hash of its validated, sorted changes."""
    parsed = sorted((c.key, c.prior.dist, tuple(sorted(c.prior.params.items())))
                    for c in map(parse_change, changes))  # fmt: skip
    return hashlib.sha256(repr(parsed).encode()).hexdigest()[:12]


def whatif_outputs_dir(outputs_dir: str | Path | None, changes: list[str]) -> Path:
    """The outputs folder of the what-if run of ``changes``."""
    return paths.outputs_dir(outputs_dir) / WHATIF_FOLDER / changes_digest(changes)


def _table_lines(change: Change) -> list[str]:
    p = change.prior
    lines = [f"[{change.key}]"]
    if p.form == "value":
        lines.append(f"value = {p.median()!r}")
    else:
        _, rhs = change.spec.split("=", 1)
        p10, p50, p90 = (float(v) for v in rhs.split(","))
        lines.append(f"quantiles = {{ p10 = {p10!r}, p50 = {p50!r}, p90 = {p90!r} }}")
    lines.append(f"source = {json.dumps(f'what-if ({change.spec.strip()})')}")
    return lines


def changed_priors_text(base_text: str, changes: list[str]) -> str:
    """A full prior file: ``base_text`` with each changed key's table replaced by its new prior
    (the Bayesian change the reweighting answers: a fitted input is refitted under the new prior,
    its data still count).  A table is its header line (spaces and a trailing comment allowed)
    and the lines after it up to the first blank line or the next header; comments and the other
    tables stay as they are."""
    parsed = [parse_change(c) for c in changes]
    keys = [c.key for c in parsed]
    if len(set(keys)) != len(keys):
        raise WhatIfInputError("each key may be changed once")
    lines = base_text.splitlines()
    for change in parsed:
        header = re.compile(rf"^\s*\[\s*{re.escape(change.key)}\s*\]\s*(#.*)?$")
        starts = [i for i, line in enumerate(lines) if header.match(line)]
        if len(starts) != 1:
            raise WhatIfInputError(f"{change.key}: not one table in the base prior file")
        start = starts[0]
        end = start + 1
        while end < len(lines) and lines[end].strip() and not lines[end].lstrip().startswith("["):
            end += 1
        lines[start:end] = _table_lines(change)
    text = "\n".join(lines) + "\n"
    try:
        loads(text, "what-if priors")  # a full, valid prior file, or one clear error here
    except WallcastError as exc:
        raise WhatIfInputError(f"the changed prior file is not valid: {exc}") from None
    return text


def forecast_comparison(
    before: str | Path, after: str | Path, prob: float = PROB
) -> list[dict[str, Any]]:
    """Per wall, the hit year and hit FLOP of the first scenario of two forecasts (a what-if
    run's answer: the served forecast before, the run's after), in the shape of
    :func:`whatif_answer`'s ``walls``."""
    b, a = load_draws(before), load_draws(after)

    def summary(draws: StoredDraws, j: int) -> dict[str, Any]:
        n = draws.hit_year.shape[1]
        uniform = np.full(n, 1.0 / n)
        return {
            "hit_year": _summary(draws.hit_year[0, :, j], uniform, prob),
            "hit_flop": _summary(draws.hit_flop[0, :, j], uniform, prob),
        }

    return [
        {"wall": wall, "before": summary(b, j), "after": summary(a, a.walls.index(wall))}
        for j, wall in enumerate(b.walls)
        if wall in a.walls
    ]
