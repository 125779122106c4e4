"""The repository stands alone: nothing refers outside it, and every citation resolves.

``docs/sources.md`` is the bibliography. An entry is a line ``- **[key]** reference ...`` (lower-case
key) followed by its indented continuation lines; a short label is ``- **[P]** = [key]``.
"""

from __future__ import annotations

import csv
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "docs" / "sources.md"
THIS_FILE = Path(__file__).resolve().relative_to(ROOT).as_posix()

# Material that lived next to the repository but never in it, and absolute paths of one machine.
OUTSIDE = re.compile(
    r"\.\./shared|MODEL\.md|hardware-trends\.md|ECOSYSTEM\.md|(?<![\w.~-])/(?:work|home|root)/"
)
KEY = r"[a-z0-9][a-z0-9.+-]*"
ENTRY = re.compile(rf"^- \*\*\[({KEY})\]\*\* (?!=)", re.MULTILINE)
ALIAS = re.compile(rf"^- \*\*\[([A-Z])\]\*\* = \[({KEY})\]\s*$", re.MULTILINE)
URL = re.compile(r"https?://[^\s;,\"']+")
# A bracketed citation in prose: a key of three or more characters (``x[i]`` is not one), or a
# one-letter short label; not a markdown link text.
CITATION = re.compile(r"\[([a-z0-9][a-z0-9.+-]{2,}|[A-Z])\](?![(\[])")
PRIOR_FIELDS = {"value", "quantiles", "interval90", "dist", "source"}


def _bibliography() -> tuple[dict[str, str], dict[str, str]]:
    """Entries (key -> text of the entry) and short labels (label -> key) of docs/sources.md."""
    text = SOURCES.read_text(encoding="utf-8")
    starts = [(m.start(), m.group(1)) for m in ENTRY.finditer(text)]
    entries: dict[str, str] = {}
    for i, (start, key) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        block = text[start:end]
        block = re.split(r"\n(?=\S)", block, maxsplit=1)[0]  # up to the next unindented line
        assert key not in entries, f"docs/sources.md: key [{key}] defined twice"
        entries[key] = block
    aliases = dict(ALIAS.findall(text))
    return entries, aliases


def _resolves(token: str, entries: dict[str, str], aliases: dict[str, str]) -> bool:
    return token in entries or aliases.get(token) in entries


def _tracked_files() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [p for p in out.decode().split("\0") if p]


def _prose(markdown: str) -> str:
    """Markdown without code (fenced, indented, inline), where brackets are not citations."""
    markdown = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    markdown = re.sub(r"(?m)(?<=\n\n)(?:(?: {4}|\t).*(?:\n|$))+", "", markdown)
    return re.sub(r"`[^`\n]*`", "", markdown)


def _prior_tables(node: dict, prefix: str = ""):
    """(key, table) of every parameter table of a priors TOML document."""
    for name, value in node.items():
        if not isinstance(value, dict) or (not prefix and name == "meta"):
            continue
        key = f"{prefix}{name}"
        if PRIOR_FIELDS & value.keys():
            yield key, value
        else:
            yield from _prior_tables(value, key + ".")


def _prior_files() -> list[Path]:
    files = sorted((ROOT / "priors").rglob("*.toml"))
    assert len(files) >= 3, files  # baseline, epoch-2030 and the scenarios
    return files


def _strings(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


# ---------------------------------------------------------------------------- (a) stands alone


@pytest.mark.parametrize(
    ("text", "outside"),
    [
        ("see .." + "/shared/docs/x", True),  # split so this file holds no such reference
        ("docs/MODEL" + ".md section 2", True),
        ("hardware-trends" + ".md §3.1", True),
        ('SHARED = "/wo' + 'rk/shared/data"', True),
        ("cache in /home/alice/.cache", True),
        ("(/root/.local/bin)", True),
        ("the ECOSYSTEM.md notes", True),
        ("https://github.com/stas00/ml-engineering/blob/master/network/README.md", False),
        ("https://example.com/home/page", False),
        ("docs/sources.md lists every key", False),
        ("~/wo" + "rk/notes and ./home/x", False),
    ],
)
def test_outside_pattern(text, outside):
    assert bool(OUTSIDE.search(text)) is outside


def test_no_tracked_file_refers_outside_the_repository():
    hits = []
    for rel in _tracked_files():
        path = ROOT / rel
        if rel == THIS_FILE or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="ignore")
        for lineno, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE.search(line):
                hits.append(f"{rel}:{lineno}: {line.strip()[:120]}")
    assert not hits, "references to material outside the repository:\n" + "\n".join(hits)


# ------------------------------------------------------------------------ (b) the bibliography


def test_bibliography_entries_have_a_public_address():
    entries, aliases = _bibliography()
    assert len(entries) >= 20
    for key in ("erdil2024", "sevilla2024-2030", "nccl-tuning", "epoch-notable-models"):
        assert key in entries, key
    missing = [key for key, block in entries.items() if not URL.search(block)]
    assert not missing, f"entries without a URL or doi link: {missing}"
    assert aliases == {
        "P": "erdil2024",
        "R": "sevilla2024-2030",
        "S": "epoch-simulator",
        "E": "ml-par-sim",
    }


def test_every_citation_in_priors_resolves():
    entries, aliases = _bibliography()
    unknown = []
    for path in _prior_files():
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        for text in _strings(doc):
            for token in re.findall(r"\[([^\[\]\s]+)\](?!\()", text):
                if not _resolves(token, entries, aliases):
                    unknown.append(f"{path.relative_to(ROOT)}: [{token}]")
    assert not unknown, "citations with no entry in docs/sources.md:\n" + "\n".join(unknown)


def test_every_citation_in_docs_resolves():
    entries, aliases = _bibliography()
    docs = sorted((ROOT / "docs").glob("*.md")) + [
        ROOT / name for name in ("README.md", "data/README.md", "priors/README.md")
    ]
    unknown, cited = [], 0
    for path in docs:
        if not path.is_file():
            continue
        for token in CITATION.findall(_prose(path.read_text(encoding="utf-8"))):
            cited += 1
            if not _resolves(token, entries, aliases):
                unknown.append(f"{path.relative_to(ROOT)}: [{token}]")
    assert cited > 0
    assert not unknown, "citations with no entry in docs/sources.md:\n" + "\n".join(unknown)


def test_unknown_citation_is_caught():
    entries, aliases = _bibliography()
    assert _resolves("R", entries, aliases)
    assert _resolves("sevilla2024-2030", entries, aliases)
    assert not _resolves("sevilla2031", entries, aliases)
    assert not _resolves("Q", entries, aliases)
    prose = "as [hoffmann2022] says, `x[idx]`, y[i]; see [the docs](url)\n\n    z[key] = 1\n"
    assert CITATION.findall(_prose(prose)) == ["hoffmann2022"]
    assert CITATION.findall("[R] and [sevilla2024-2030]") == ["R", "sevilla2024-2030"]


# -------------------------------------------------------------------- (c) every prior cites one


def test_every_shipped_prior_cites_a_public_source():
    entries, aliases = _bibliography()
    bad, count = [], 0
    for path in _prior_files():
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        for key, table in _prior_tables(doc):
            count += 1
            source = table.get("source")
            where = f"{path.relative_to(ROOT)} [{key}]"
            if not isinstance(source, str) or not source.strip():
                bad.append(f"{where}: no source")
                continue
            keys = [
                t for t in re.findall(r"\[([^\[\]\s]+)\]", source) if _resolves(t, entries, aliases)
            ]
            if not keys and not URL.search(source):
                bad.append(f"{where}: cites neither a key of docs/sources.md nor a URL: {source!r}")
    assert count >= 40  # baseline and epoch-2030 have ~25 parameters each
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "table",
    [
        "hardware.csv",
        "model_shapes.csv",
        "scaleup_domains.csv",
        "latency_measurements.csv",
        "accelerator_costs.csv",
    ],
)
def test_curated_table_sources_are_in_the_bibliography(table):
    """Every source_url of a curated row is listed in docs/sources.md (an arXiv paper by its number).

    frontier_runs.csv is Epoch AI's model data, one entry ([epoch-notable-models]); merged rows
    (``added_from`` set) are checked when they are curated.
    """
    path = ROOT / "data" / table
    if not path.is_file():
        pytest.skip(f"data/{table} is not in this checkout")
    bibliography = SOURCES.read_text(encoding="utf-8")
    listed = {u.rstrip(".)") for u in URL.findall(bibliography)}
    with open(path, newline="", encoding="utf-8") as f:
        rows = [row for row in csv.DictReader(f) if not (row.get("added_from") or "").strip()]
    assert rows
    missing = set()
    for row in rows:
        for url in URL.findall(row["source_url"]):
            url = url.rstrip(".)")
            arxiv = re.fullmatch(r"https?://arxiv\.org/abs/([0-9.]+)", url)
            if url not in listed and not (arxiv and f"arXiv:{arxiv.group(1)}" in bibliography):
                missing.add(url)
    assert not missing, f"data/{table} sources missing from docs/sources.md:\n" + "\n".join(
        sorted(missing)
    )
