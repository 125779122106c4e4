"""The report as a reader without the repository reads it: every mention of a repository file
(a data table, a document, a priors file, a module) in the report's text becomes the words for
what it holds, or goes where it only pointed the way.

Prior sources and notes are written for the repository (``priors/*.toml`` cite the data files
they were inferred from); the report is read alone, so :func:`stand_alone_blocks` rewrites its
blocks once, before rendering, and the report test checks that no file name is left.
"""

from __future__ import annotations

import re
from dataclasses import replace

from forecast.report.fitted_inputs import data_words
from forecast.report.frontier import Block

_DATA_FILE = re.compile(r"\b(?:data/)?([a-z][a-z0-9_]*)\.csv\b")
_DOC_ONLY = re.compile(
    r"\s*\((?:see |from )?docs/[\w.-]+(?:[ ,]*(?:§|section|sections)\s*[\d.,\s–-]+)?\)"
)
_DOC_PREFIX = re.compile(r"docs/[\w.-]+(?:[ ,]*(?:§|section|sections)\s*[\d.]+)?(?::\s*|,\s*|\s+)")
_SCENARIO_FILE = re.compile(r"\bpriors/scenarios/([\w-]+)\.toml\b")
_PRIORS_FILE = re.compile(r"\b(?:priors/)?([\w-]+)\.toml\b")
_MODULE = re.compile(r"\s*\(?\bforecast/[\w/]+\.py\b(?: \(docstring\))?\)?")


def stand_alone(text: str) -> str:
    """``text`` with repository file names replaced by what they hold ('data/hardware.csv' ->
    'the data on shipped accelerators'; 'priors/scenarios/x.toml' -> 'the x scenario') and
    pointers to documents removed ('(docs/validation.md §4)')."""
    if "/" not in text and ".csv" not in text and ".toml" not in text:
        return text
    text = _DATA_FILE.sub(lambda m: f"the data on {data_words(m.group(1) + '.csv')}", text)
    text = _SCENARIO_FILE.sub(lambda m: f"the {m.group(1)} scenario", text)
    text = _PRIORS_FILE.sub(lambda m: f"the {m.group(1)} priors", text)
    text = _DOC_ONLY.sub("", text)
    text = _DOC_PREFIX.sub("", text)
    return _MODULE.sub("", text)


def stand_alone_blocks(blocks: list[Block]) -> list[Block]:
    """Every block's reader-facing text through :func:`stand_alone` (references untouched:
    their URLs are the way out of the report)."""
    out = []
    for b in blocks:
        if b.kind == "refs":
            out.append(b)
            continue
        out.append(
            replace(
                b,
                text=stand_alone(b.text),
                items=[stand_alone(i) for i in b.items] if b.items is not None else None,
                header=[stand_alone(h) for h in b.header] if b.header is not None else None,
                rows=[[stand_alone(str(c)) for c in row] for row in b.rows]
                if b.rows is not None
                else None,
            )
        )
    return out
