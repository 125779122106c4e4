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

from forecast.report.fitted_inputs import TABLE_NOUNS, data_words
from forecast.report.frontier import Block

_NOT_IN_A_PATH = r"(?<![/\w.-])"  # a file named on its own, not the tail of a URL or a path
_DATA_FILE = re.compile(
    _NOT_IN_A_PATH
    + r"(?:data/)?("
    + "|".join(re.escape(t.removeprefix("data/").removesuffix(".csv")) for t in TABLE_NOUNS)
    + r")\.csv\b"
)
_DOC_ONLY = re.compile(
    r"\s*\((?:see |from )?docs/[\w.-]+(?:[ ,]*(?:§|section|sections)\s*[\d.,\s–-]+)?\)"
)
# a document as the label of what follows ('(docs/validation.md §4: the H100 wall ...)')
_DOC_LABEL = re.compile(_NOT_IN_A_PATH + r"docs/[\w.-]+(?:[ ,]*(?:§|section)\s*[\d.]+)?:\s*")
_DOC_IN_PROSE = re.compile(_NOT_IN_A_PATH + r"docs/[\w.-]+(?:[ ,]*(?:§|section)\s*[\d.]+)?")
_SCENARIO_FILE = re.compile(_NOT_IN_A_PATH + r"priors/scenarios/([\w-]+)\.toml\b")
_PRIORS_FILE = re.compile(_NOT_IN_A_PATH + r"(?:priors/)?([\w-]+)\.toml\b")
_MODULE = re.compile(
    r"\s*\((?:see )?forecast/[\w/]+\.py(?: \(docstring\))?\)"  # the pointer in brackets, whole
    + "|"
    + _NOT_IN_A_PATH
    + r"forecast/[\w/]+\.py(?: \(docstring\))?"
)


def stand_alone(text: str) -> str:
    """``text`` with repository file names replaced by what they hold ('data/hardware.csv' ->
    'the data on shipped accelerators'; 'priors/scenarios/x.toml' -> 'the x scenario';
    'baseline.toml' -> 'the baseline priors file') and pointers to documents and modules removed
    ('(docs/validation.md §4)'; a document named in a sentence becomes 'the validation notes').
    A name inside a URL or a longer path is left alone."""
    if "/" not in text and ".csv" not in text and ".toml" not in text:
        return text
    text = _DATA_FILE.sub(lambda m: f"the data on {data_words(m.group(1) + '.csv')}", text)
    text = _SCENARIO_FILE.sub(lambda m: f"the {m.group(1)} scenario", text)
    text = _PRIORS_FILE.sub(
        lambda m: m.group(0) if m.group(1) == "pyproject" else f"the {m.group(1)} priors file",
        text,
    )
    text = _DOC_ONLY.sub("", text)
    text = _DOC_LABEL.sub("", text)
    text = _DOC_IN_PROSE.sub("the project's validation notes", text)
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
