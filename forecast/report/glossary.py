"""The glossary every reader of the report and the deck needs: the model's terms, the scenarios
(from the scenario files the forecast recorded) and the inputs (from the input registry).

Terms are written once here; scenarios and inputs are generated, so a new scenario or input is
defined as soon as a forecast uses it.
"""

from __future__ import annotations

import re
import tomllib

from forecast.priors.registry import PARAMETERS, input_label
from forecast.queries.headline import Forecast, assumptions
from forecast.report.frontier import Block

TERMS: tuple[tuple[str, str], ...] = (
    (
        "data-movement wall",
        "The training compute (FLOP) above which the best parallel plan for a fixed-length run "
        "can no longer keep utilization at 80% of its small-scale maximum: moving weights, "
        "activations and gradients through memory and the network starts to cost more time "
        "than it hides behind arithmetic [epoch-simulator].",
    ),
    (
        "latency wall",
        "The training compute above which no plan finishes the run in time at any utilization: "
        "each optimizer step has a minimum duration set by latencies (kernel launches and "
        "collectives along the model's depth), and a run has only so many steps at the "
        "critical batch size [erdil2024] [sevilla2024-2030].",
    ),
    (
        "hit year",
        "The first year in which the largest training run (the frontier run) reaches a wall. "
        "In sentences a hit year is the calendar year it falls in ('in 2029' means during "
        "2029); tables give it as a decimal year (2029.5 is mid-2029).",
    ),
    (
        "frontier run",
        "The largest training run of a year, on the fitted trend of published training "
        "compute [epoch-notable-models].",
    ),
    (
        "frontier accelerator",
        "The accelerator of a year on the fitted hardware trends (FLOP/s, memory, network "
        "bandwidth and scale-up domain size growing from the shipped chips), with latencies "
        "changing by their own trend.",
    ),
    (
        "utilization (MFU)",
        "Model FLOP utilization: the training FLOP per second achieved, as a share of the "
        "accelerators' peak.",
    ),
    (
        "small-scale maximum",
        "The utilization a run reaches where data movement costs nothing extra (a small run "
        "on the same hardware); the walls are read against it.",
    ),
    (
        "critical batch size",
        "The largest batch (in tokens) a model can train with before extra batch stops "
        "saving steps [mccandlish2018]; it grows with model size and caps data parallelism.",
    ),
    (
        "scale-up domain",
        "The accelerators joined by the fast intra-node network (NVLink-class), e.g. 8 in an "
        "H100 server, 72 in a GB200 NVL72 rack; scale-out is the slower network between domains.",
    ),
    (
        "cost multiplier",
        "Accelerator-time per FLOP at the year's best plan, divided by that at the small-scale "
        "maximum: how much more each FLOP costs because of data movement.",
    ),
    (
        "80% interval",
        "The range holding the middle 80% of the forecast's draws (10th to 90th percentile): "
        "a 1 in 10 chance of a value below it, and the same above.",
    ),
    (
        "prior, posterior",
        "A prior is an input's distribution from published sources before the fit; the "
        "posterior is that distribution after fitting the model to data (hardware, training "
        "runs, model shapes); the forecast propagates the posterior wherever data exist.",
    ),
    (
        "draw",
        "One joint sample of every input; the forecast computes both walls and their hit years "
        "for each draw, and every interval is taken over the draws.",
    ),
    (
        "likelihood words",
        "'likely', 'very likely', 'virtually certain': the IPCC's calibrated scale (66-100%, "
        "90-100%, 99-100%) [ipcc-uncertainty], always beside the share of draws they stand for.",
    ),
)

_KEY = re.compile(r"\b[a-z]+\.[a-z_0-9]+\b")


def scenario_definitions(fc: Forecast) -> list[tuple[str, str]]:
    """Each scenario of the forecast with the description its scenario file gives (recorded in
    the forecast's attrs, so the glossary matches the run)."""
    out = []
    for name in fc.scenarios:
        text = fc.attrs.get(f"scenario_text_{name}", "")
        try:
            meta = tomllib.loads(text).get("meta", {}) if text else {}
        except tomllib.TOMLDecodeError:
            meta = {}
        description = str(meta.get("description", "")).strip()
        if not description and name == "baseline":
            description = "The fitted forecast: every input from data or its published prior."
        out.append((name, description or "(no description recorded)"))
    return out


def input_definitions(keys: list[str] | None = None) -> list[tuple[str, str, str]]:
    """Plain label, unit and meaning of each input (every registry input when ``keys`` is
    None); registry keys inside a meaning are replaced by their labels."""
    out = []
    for key in keys if keys is not None else list(PARAMETERS):
        spec = PARAMETERS.get(key)
        if spec is None:
            continue

        def plain(m: re.Match) -> str:
            return input_label(m.group(0)).lower() if m.group(0) in PARAMETERS else m.group(0)

        meaning = _KEY.sub(plain, spec.description)
        out.append((spec.label, spec.unit, meaning[:1].upper() + meaning[1:]))
    return out


GLOSSARY_HEADING = "Glossary"


def glossary_blocks(fc: Forecast) -> list[Block]:
    """The terms, the forecast's scenarios (from its scenario files) and its inputs (from the
    input registry), each defined in a sentence."""
    keys = [it["key"] for it in assumptions(fc.attrs.get("priors_text", ""))]
    return [
        Block("h2", GLOSSARY_HEADING),
        Block("table", header=["term", "meaning"], rows=[list(t) for t in TERMS]),
        Block("p", "Scenarios: each changes the baseline's inputs as its file describes."),
        Block(
            "table",
            header=["scenario", "what it assumes"],
            rows=[list(r) for r in scenario_definitions(fc)],
        ),
        Block("p", "Inputs: the uncertain and fixed inputs of the model."),
        Block(
            "table",
            header=["input", "unit", "meaning"],
            rows=[list(r) for r in input_definitions(keys or None)],
        ),
    ]
