"""What the data says: the fitted inputs' prior against posterior, and where every input comes from.

NumPy/xarray only.  Reads, from a published forecast (fitted by the joint model):

* the ``/prior`` and ``/posterior`` groups: for every key of
  :data:`forecast.priors.registry.FITTED_INPUTS`, its variable's draws (dims chain, draw, in the
  key's unit) under the joint model's prior and posterior (:func:`fitted_inputs`);
* the root attr ``input_provenance``: per scenario and propagated key, whether the input was
  fitted (to how many rows of which table), taken from a prior (with its source), fixed, or
  replaced by a scenario's what-if (:func:`input_provenance`, :func:`provenance_rows`).

Forecasts from before the joint model have neither; the report then says so in one line.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from forecast.priors.registry import (
    FITTED_INPUTS,
    FRONTIER_SERIES,
    PARAMETERS,
    input_label,
    input_unit,
)
from forecast.queries.formatting import fmt_count, fmt_pct, fmt_quantity, fmt_value
from forecast.queries.headline import PROB, Forecast
from forecast.report.executive import Figure

__all__ = [
    "InputEvidence",
    "ASSUMPTION_HEADER",
    "AssumptionRow",
    "INPUT_LABELS",
    "assumption_count_sentence",
    "assumption_rows",
    "PROVENANCE_HEADER",
    "ProvenanceRow",
    "fitted_inputs",
    "fitted_keys",
    "input_provenance",
    "provenance_counts",
    "provenance_rows",
    "scenario_overrides",
]

INPUT_LABELS = {
    "scaling.layer_exponent": "The depth exponent (layers against parameters)",
    "scaling.layers_at_reference": "The depth at the reference size",
    "scaling.batch_tokens_2024": "The 2024 critical batch",
    "scaling.batch_exponent": "The batch exponent (on parameters)",
    "training.max_utilization": "The maximum utilization",
    "hardware.scaleup_domain_size_growth_per_year": "The scale-up domain growth",
}
"""A noun phrase per fitted input, for sentences and chart panels."""

AXIS_LABELS = {
    "tokens": "Tokens (count)",
    "layers": "Layers (count)",
    "1": "Exponent (unitless)",
    "fraction": "Utilization (fraction of peak)",
    "x/yr": "Growth (x per year)",
}
"""x-axis labels of the prior-against-posterior panels, by registry unit."""

TABLE_NOUNS = {
    "data/model_shapes.csv": "published models",
    "data/scaleup_domains.csv": "shipped systems",
    "data/training_runs.csv": "published training runs",
    "data/hardware.csv": "shipped accelerators",
    "data/frontier_runs.csv": "frontier training runs",
    "data/latency_measurements.csv": "published latency measurements",
}
"""What each data table holds, in the words a report reader needs (the report names no file)."""
KINDS = ("fitted", "prior", "fixed", "scenario")
CITE = re.compile(r"\[([a-z0-9][a-z0-9.+-]*)\]")


def _quantiles(values: np.ndarray, prob: float = PROB) -> tuple[float, float, float]:
    lo, med, hi = np.quantile(values, [(1 - prob) / 2, 0.5, (1 + prob) / 2])
    return float(lo), float(med), float(hi)


def _draws(ds: Any, variable: str) -> np.ndarray | None:
    if ds is None or variable not in ds:
        return None
    v = np.asarray(ds[variable].values, float).ravel()
    v = v[np.isfinite(v)]
    return v if v.size else None


# ----------------------------------------------------------------------------- provenance


def input_provenance(fc: Forecast) -> dict[str, dict[str, dict[str, Any]]] | None:
    """The root attr ``input_provenance`` parsed: ``{scenario: {key: entry}}``; None when the
    forecast has none (or it is not a JSON object)."""
    raw = fc.attrs.get("input_provenance")
    if raw is None:
        return None
    try:
        parsed = json.loads(raw) if isinstance(raw, str | bytes) else raw
    except (TypeError, ValueError):
        return None
    return parsed if isinstance(parsed, dict) and parsed else None


def _scenario_entries(fc: Forecast, scenario: str | None) -> dict[str, dict[str, Any]] | None:
    prov = input_provenance(fc)
    if prov is None:
        return None
    scenario = fc.scenarios[0] if scenario is None else scenario
    if scenario in prov:
        return prov[scenario]
    return prov.get("baseline", next(iter(prov.values())))


def _cites(source: str, limit: int = 90) -> str:
    """A source as its cite keys ('[a] [b]'), or clipped when it cites none."""
    keys = list(dict.fromkeys(CITE.findall(source)))
    if keys:
        return " ".join(f"[{k}]" for k in keys)
    source = source.strip()
    return source if len(source) <= limit else source[: limit - 1].rstrip() + "…"


def input_cell(key: str) -> str:
    """An input in a report table: its plain name first, then the key a priors file uses for it
    (as code, for the reader who will change that prior); a key outside the registry by its
    plain name alone."""
    return f"{input_label(key)} (`{key}`)" if key in PARAMETERS else input_label(key)


def data_words(table: str) -> str:
    """The reader's name of a data table ('published models' for data/model_shapes.csv); a
    table without one is 'published data', never its file name."""
    table = str(table)
    return TABLE_NOUNS.get(table if "/" in table else f"data/{table}", "published data")


def _rows_text(entry: dict[str, Any]) -> str:
    noun = data_words(str(entry.get("table", "")))
    rows = entry.get("rows")
    return f"{int(rows)} {noun}" if rows is not None else noun


@dataclass
class ProvenanceRow:
    """One propagated input: where its values come from, in words."""

    key: str
    kind: str
    detail: str

    def cells(self) -> list[str]:
        return [input_cell(self.key), self.kind, self.detail]


PROVENANCE_HEADER = ["input", "kind", "from"]


def provenance_rows(fc: Forecast, scenario: str | None = None) -> list[ProvenanceRow] | None:
    """Every input of ``scenario`` (default: the first, the baseline) with its kind and origin;
    fitted inputs first, then priors, fixed values and overrides, each in the attr's order."""
    entries = _scenario_entries(fc, scenario)
    if entries is None:
        return None
    out = []
    for key, entry in entries.items():
        kind = str(entry.get("kind", "?"))
        if kind == "fitted":
            law = entry.get("law")
            detail = f"fitted to {_rows_text(entry)}" + (f" ({law} law)" if law else "")
            if entry.get("prior_source"):
                detail += f"; prior {_cites(str(entry['prior_source']))}"
        elif kind == "scenario":
            detail = f"scenario override {_cites(str(entry.get('source', '')))}".rstrip()
        else:
            detail = _cites(str(entry.get("source", ""))) or "–"
        out.append(ProvenanceRow(key, kind, detail))
    order = {k: i for i, k in enumerate(KINDS)}
    out.sort(key=lambda r: order.get(r.kind, len(KINDS)))
    return out


def fitted_keys(fc: Forecast, scenario: str | None = None) -> list[str]:
    """The propagated keys of ``scenario`` (default: the first) drawn from the joint posterior:
    kind "fitted" in ``input_provenance``, or, without it, the fitted keys whose variable is in
    ``/posterior``; empty for a forecast from before the joint model."""
    entries = _scenario_entries(fc, scenario)
    if entries is not None:
        return [k for k, e in entries.items() if e.get("kind") == "fitted"]
    post = fc.group("posterior")
    if post is None:
        return []
    return [k for k, f in FITTED_INPUTS.items() if f.variable in post]


def provenance_counts(rows: list[ProvenanceRow]) -> dict[str, int]:
    """How many inputs of each kind (fitted, prior, fixed, scenario), in that order."""
    counts = {k: 0 for k in KINDS}
    for r in rows:
        counts[r.kind] = counts.get(r.kind, 0) + 1
    return counts


def scenario_overrides(fc: Forecast) -> dict[str, list[str]]:
    """Per scenario, the fitted keys its overlay replaces with a what-if distribution."""
    prov = input_provenance(fc) or {}
    out = {}
    for scenario, entries in prov.items():
        keys = [k for k, e in entries.items() if e.get("kind") == "scenario" and k in FITTED_INPUTS]
        if keys:
            out[str(scenario)] = keys
    return out


# ----------------------------------------------------------------------------- prior vs posterior


@dataclass
class InputEvidence:
    """One fitted input: its prior and posterior draws, their 80 % intervals and the sentence."""

    key: str
    label: str
    unit: str
    law: str
    table: str
    prior: np.ndarray
    posterior: np.ndarray
    prior_q: tuple[float, float, float]  # 10 %, 50 %, 90 %
    posterior_q: tuple[float, float, float]
    provenance: dict[str, Any] | None = None
    figures: dict[str, Figure] = field(default_factory=dict)

    @property
    def log_scale(self) -> bool:
        """Positive and spanning orders of magnitude under its prior (1 %-99 % over 10x)."""
        if PARAMETERS[self.key].domain != "positive" or np.min(self.prior) <= 0:
            return False
        lo, hi = np.quantile(self.prior, [0.01, 0.99])
        return bool(hi / lo > 10)

    @property
    def fitted_to(self) -> str:
        """'54 published models' (the data's name alone without provenance)."""
        if self.provenance is not None and self.provenance.get("kind") == "fitted":
            return _rows_text(self.provenance)
        return data_words(self.table)

    @property
    def sentence(self) -> str:
        f = self.figures
        unit = {"tokens": " tokens", "layers": " layers", "x/yr": " a year"}.get(self.unit, "")
        return (
            f"{self.label}: prior median {f['prior_median'].text}{unit} ({fmt_pct(PROB)}: "
            f"{f['prior_lower'].text}–{f['prior_upper'].text}), posterior "
            f"{f['posterior_median'].text}{unit} ({f['posterior_lower'].text}–"
            f"{f['posterior_upper'].text}), fitted to {self.fitted_to} ({self.law} law)."
        )


def _label(fc: Forecast, key: str) -> str:
    """The input's noun phrase; the depth level names its reference size from the priors."""
    if key == "scaling.layers_at_reference":
        try:
            ref = tomllib.loads(str(fc.attrs.get("priors_text", "")))["scaling"][
                "layer_reference_params"
            ]["value"]
            return f"The depth of a {fmt_count(float(ref), 3)}-parameter dense model"
        except (KeyError, TypeError, ValueError, tomllib.TOMLDecodeError):
            pass
    return INPUT_LABELS.get(key, key)


def fitted_inputs(fc: Forecast, scenario: str | None = None) -> list[InputEvidence] | None:
    """The fitted inputs of the joint model, in registry order, with prior and posterior draws;
    None when the forecast has no ``/prior`` group or none of the variables."""
    prior, post = fc.group("prior"), fc.group("posterior")
    if prior is None or post is None:
        return None
    entries = _scenario_entries(fc, scenario) or {}
    out = []
    for key, spec in FITTED_INPUTS.items():
        pr, po = _draws(prior, spec.variable), _draws(post, spec.variable)
        if pr is None or po is None:
            continue
        unit = PARAMETERS[key].unit
        table = spec.table if "/" in spec.table else f"data/{spec.table}"
        item = InputEvidence(
            key=key,
            label=_label(fc, key),
            unit=unit,
            law=spec.law,
            table=table,
            prior=pr,
            posterior=po,
            prior_q=_quantiles(pr),
            posterior_q=_quantiles(po),
            provenance=entries.get(key),
        )
        for which, q in (("prior", item.prior_q), ("posterior", item.posterior_q)):
            for name, v in zip(("lower", "median", "upper"), q, strict=True):
                item.figures[f"{which}_{name}"] = Figure(v, fmt_value(v, unit))
        out.append(item)
    return out or None


def headline_input(items: list[InputEvidence]) -> InputEvidence:
    """The input the deck's title names: the 2024 critical batch when fitted (the forecast's
    largest driver before the joint model), else the one whose median moved most against its prior
    80 % width."""
    for it in items:
        if it.key == "scaling.batch_tokens_2024":
            return it

    def moved(it: InputEvidence) -> float:
        t = np.log10 if it.log_scale else (lambda x: x)
        width = t(it.prior_q[2]) - t(it.prior_q[0])
        shift = abs(t(it.posterior_q[1]) - t(it.prior_q[1]))
        return shift / width if width > 0 and math.isfinite(width) else 0.0

    return max(items, key=moved)


ASSUMPTION_HEADER = ["Assumption", "Prior: median (80% interval)", "Fitted to data (posterior)"]
"""Columns of the deck's assumptions appendix."""


@dataclass
class AssumptionRow:
    """One input of the priors file as a reader sees it: plain name, prior and posterior with
    units (no registry key)."""

    key: str
    label: str
    prior: str
    fitted: str
    fixed: bool

    def cells(self) -> list[str]:
        return [self.label, self.prior, self.fitted]


def _span(q: tuple[float, float, float], unit: str) -> str:
    """'23M tokens (18M–30M)': the median with its unit, the 80 % interval's ends without."""
    lo, hi = (fmt_quantity(v, unit, with_unit=False) for v in (q[0], q[2]))
    return f"{fmt_quantity(q[1], unit)} ({lo}–{hi})"


def _trend_posterior(fc: Forecast, key: str) -> str | None:
    """The fitted trends' posterior of a trend key, as the appendix writes it: a growth is
    10^slope of its series, the 2024 frontier compute 10^intercept; the trends' residual scale
    is fitted per series (the range of their medians); None when the forecast has no trend fit."""
    post = fc.group("posterior")
    spec = PARAMETERS.get(key)
    if (
        post is None
        or spec is None
        or spec.role not in ("trend_growth", "trend_level", "trend_noise")
    ):
        return None

    def q(values: np.ndarray) -> tuple[float, float, float]:
        lo, med, hi = np.quantile(np.asarray(values, dtype=float).ravel(), [0.1, 0.5, 0.9])
        return float(lo), float(med), float(hi)

    if spec.role == "trend_noise":
        if "sigma" not in post:
            return None
        meds = np.median(post["sigma"].values.reshape(-1, post["sigma"].shape[-1]), axis=0)
        lo, hi = (
            fmt_quantity(float(v), spec.unit, with_unit=False) for v in (meds.min(), meds.max())
        )
        return f"{lo}–{hi} {spec.unit} by series"
    if spec.series == FRONTIER_SERIES:
        var = "frontier_slope" if spec.role == "trend_growth" else "frontier_intercept"
        return _span(q(10 ** post[var].values), spec.unit) if var in post else None
    if "slope" in post and spec.series in post["slope"].coords.get("metric", []):
        return _span(q(10 ** post["slope"].sel(metric=spec.series).values), spec.unit)
    return None


def assumption_rows(fc: Forecast) -> list[AssumptionRow]:
    """Every input of the forecast's priors file, in the file's order: its plain label, the
    prior's median and 80 % interval (or its fixed value) and, for an input fitted to data, the
    posterior's, each with its unit."""
    from forecast.priors.parsing import parse_prior  # the priors layer, only for this table

    try:
        data = tomllib.loads(str(fc.attrs.get("priors_text", "")) or "")
    except tomllib.TOMLDecodeError:
        return []
    fitted = {it.key: it for it in fitted_inputs(fc) or []} if fitted_keys(fc) else {}
    out: list[AssumptionRow] = []

    def walk(prefix: str, table: dict) -> None:
        for name, value in table.items():
            if not isinstance(value, dict):
                continue
            key = f"{prefix}.{name}" if prefix else name
            if "source" not in value:
                if key != "meta":
                    walk(key, value)
                continue
            unit = input_unit(key)
            try:
                prior = parse_prior(key, value)
            except Exception:  # a key the registry does not know: its table, plainly
                text = ", ".join(
                    f"{k} = {v}" for k, v in value.items() if k not in ("source", "note")
                )
                out.append(AssumptionRow(key, input_label(key), text, "—", False))
                continue
            if prior.is_point:
                text = f"fixed at {fmt_quantity(float(prior.params['value']), unit)}"
            else:
                text = _span(tuple(prior.quantile(q) for q in (0.1, 0.5, 0.9)), unit)
            item = fitted.get(key)
            post = _span(item.posterior_q, unit) if item is not None else _trend_posterior(fc, key)
            post = post or "—"
            out.append(AssumptionRow(key, input_label(key), text, post, prior.is_point))

    walk("", data)
    return out


def assumption_count_sentence(fc: Forecast, counts: dict[str, int]) -> str:
    """How the propagated inputs relate to the priors file's assumptions (the deck's count)."""
    rows = assumption_rows(fc)
    fixed = sum(r.fixed for r in rows)
    uncertain = len(rows) - fixed
    trend = uncertain - counts["fitted"] - counts["prior"] - counts.get("scenario", 0)
    if trend <= 0:
        return ""
    return (
        f"The priors file holds {uncertain} uncertain and {fixed} fixed assumptions (the "
        f"deck's count): the other {trend} uncertain ones are the hardware and frontier-compute "
        "trend inputs, which enter through the fitted trends (Trend fits, above). "
    )
