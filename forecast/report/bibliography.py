"""The report's references, built from ``docs/sources.md``: each cite key the report uses, with its
full reference and a link, so the report stands alone.

``docs/sources.md`` lists one source per entry, ``- **[key]** Authors (year). *Title*. ... URL``,
continued on indented lines by what the project takes from it; short labels read
``- **[P]** = [erdil2024]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from forecast.config.paths import DOCS_DIR
from forecast.report.frontier import Block

SOURCES_FILE = DOCS_DIR / "sources.md"
CITE = re.compile(r"\[([A-Za-z0-9][A-Za-z0-9.-]*)\]")
_ENTRY = re.compile(r"^- \*\*\[([^\]]+)\]\*\*\s*(.*)$")
_ALIAS = re.compile(r"^=\s*\[([^\]]+)\]\s*$")
_URL = re.compile(r"https?://[^\s)>\]]+")


@dataclass(frozen=True)
class Reference:
    """One source: its cite key, the reference in words (no markup) and its first link."""

    key: str
    text: str
    url: str | None


def parse_sources(markdown: str) -> tuple[dict[str, Reference], dict[str, str]]:
    """The references of a sources file by key, and its short labels (``{"P": "erdil2024"}``)."""
    refs: dict[str, Reference] = {}
    aliases: dict[str, str] = {}
    entries: list[tuple[str, list[str]]] = []
    for line in markdown.splitlines():
        m = _ENTRY.match(line)
        if m:
            entries.append((m.group(1), [m.group(2)]))
        elif entries and line.startswith("  ") and line.strip():
            entries[-1][1].append(line.strip())
        elif not line.strip() or line.startswith("#"):
            entries.append(("", []))  # a blank line or heading ends the entry
    for key, lines in entries:
        if not key:
            continue
        body = " ".join(lines).strip()
        alias = _ALIAS.match(body)
        if alias:
            aliases[key] = alias.group(1)
            continue
        url_match = _URL.search(body)
        url = url_match.group(0).rstrip(".,;") if url_match else None
        # the reference: up to and including its link (the rest says what the project takes)
        cited = body[: url_match.end()] if url_match else body
        if url:
            cited = cited[: -len(url_match.group(0))].rstrip()
        text = re.sub(r"[*`]", "", cited).strip()
        while text.count("(") > text.count(")"):  # a link inside a parenthesis: cut before it
            text = text[: text.rindex("(")].rstrip(" ,;:")
        text = text.rstrip(" .,;:") + "."
        refs[key] = Reference(key, text, url)
    return refs, aliases


@lru_cache(maxsize=4)
def load_sources(path: Path = SOURCES_FILE) -> tuple[dict[str, Reference], dict[str, str]]:
    """:func:`parse_sources` of the repository's ``docs/sources.md`` (empty when absent); read
    once per process (the report and the deck both ask). Callers must not mutate the dicts."""
    if not path.is_file():
        return {}, {}
    return parse_sources(path.read_text(encoding="utf-8"))


def link_cites(html_text: str, anchors: dict[str, str]) -> str:
    """Each cite key of ``anchors`` (key or short label -> reference key) in escaped HTML as a
    link to its entry in the references (``id="ref-<key>"``)."""
    return CITE.sub(
        lambda m: (
            f'<a href="#ref-{anchors[m.group(1)]}">[{m.group(1)}]</a>'
            if m.group(1) in anchors
            else m.group(0)
        ),
        html_text,
    )


def cited(texts: Iterable[str], refs: dict[str, Reference], aliases: dict[str, str]) -> list[str]:
    """The keys of ``refs`` cited in ``texts``, in order of first citation (labels resolved)."""
    seen: list[str] = []
    for text in texts:
        for m in CITE.finditer(text):
            key = aliases.get(m.group(1), m.group(1))
            if key in refs and key not in seen:
                seen.append(key)
    return seen


REFERENCES_HEADING = "References"


def _block_texts(blocks: list[Block]) -> list[str]:
    out: list[str] = []
    for b in blocks:
        out.append(b.text)
        out += b.items or []
        out += list(b.header or [])
        out += [str(c) for row in b.rows or [] for c in row]
    return out


def reference_blocks(blocks: list[Block]) -> list[Block]:
    """The bibliography: every source the blocks cite, in order of first citation, with its
    full reference and link (from docs/sources.md), so the report stands alone."""
    refs, aliases = load_sources()
    keys = cited(_block_texts(blocks), refs, aliases)
    if not keys:
        return []
    rows = [[k, refs[k].text, refs[k].url or ""] for k in keys]
    return [
        Block("h2", REFERENCES_HEADING),
        Block(
            "p",
            f"The {len(keys)} sources cited above, by the key in square brackets, in order of "
            "first citation.",
        ),
        Block("refs", rows=rows),
    ]


# The deck's short forms of the sources it cites most (cite keys of docs/sources.md).
DECK_SOURCES = (
    (
        "erdil2024",
        "Erdil & Schneider-Joseph, Data movement limits to frontier model training, "
        "arXiv:2411.01137 (2024)",
    ),
    (
        "sevilla2024-2030",
        "Sevilla et al., Can AI scaling continue through 2030?, Epoch AI (2024)",
    ),
    ("mccandlish2018", "McCandlish et al., An empirical model of large-batch training (2018)"),
    ("llama3-herd", "Llama Team, The Llama 3 herd of models, arXiv:2407.21783 (2024)"),
    ("nccl-tests", "NVIDIA nccl-tests, github.com/NVIDIA/nccl-tests"),
    (
        "nvidia-nvlink-domain",
        "NVIDIA, NVLink domain information (Mission Control), docs.nvidia.com",
    ),
    ("epoch-notable-models", "Epoch AI, Data on notable AI models, epoch.ai/data"),
    ("hoffmann2022", "Hoffmann et al., Training compute-optimal LLMs, arXiv:2203.15556 (2022)"),
)


def source_lines(texts: list[str]) -> list[str]:
    """'[key] reference' for each source ``texts`` (a deck's slides) cite, in order of first
    citation: the short form of :data:`DECK_SOURCES` where written, else the full reference."""
    refs, aliases = load_sources()
    short = dict(DECK_SOURCES)
    keys = cited(texts, refs, aliases)
    keys += [k for k in short if k not in keys and any(f"[{k}]" in t for t in texts)]
    lines = []
    for key in keys:
        ref = refs.get(key)
        text = short.get(key) or (
            ref.text + (f" {ref.url.split('://', 1)[-1]}" if ref and ref.url else "")
            if ref
            else key
        )
        lines.append(f"[{key}] {text}")
    return lines
