"""Reading prior files: TOML text -> validated :class:`~forecast.priors.priorset.PriorSet`.

A prior file has one TOML table per parameter; the table name is the parameter key (see
``priors/README.md`` for the format). Every key must be in the registry
(:data:`forecast.priors.registry.PARAMETERS`). :func:`loads` parses text; :func:`load_priors` (a
*full* file: every registry key present) and :func:`load_overlay` (a *scenario* that gives only some
keys and is laid on top of a full set with :meth:`PriorSet.overlay`) are thin wrappers that read a
path.

Every problem is reported as a :class:`PriorError` that names the file, the parameter key and the line
of the parameter's table header (tomllib gives no positions, so lines are found by matching the text).
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from forecast.config import paths
from forecast.config.errors import WallcastError
from forecast.priors import distributions as dists
from forecast.priors.distributions import DISTRIBUTIONS, FORMS, InvalidPrior, Prior
from forecast.priors.priorset import PriorSet
from forecast.priors.registry import PARAMETERS, ParameterSpec, suggest_key

__all__ = [
    "PriorError",
    "Problem",
    "default_priors_path",
    "load_overlay",
    "load_priors",
    "loads",
    "parse_prior",
]

_META_FIELDS = ("source", "note", "unit")


class Problem(NamedTuple):
    """One validation problem: the parameter key (if any), the line (if known) and why."""

    key: str | None
    line: int | None
    reason: str


def _format_problem(file: str, p: Problem) -> str:
    where = file
    if p.line is not None:
        where += f", line {p.line}"
    if p.key is not None:
        where += f", '{p.key}'"
    return f"{where}: {p.reason}"


class PriorError(WallcastError, ValueError):
    """A bad prior file. Names the file, the parameter key and the line of its table header.

    ``file``, ``key``, ``line`` and ``reason`` describe the first problem; ``problems`` holds them all
    (the message has one line per problem).
    """

    def __init__(self, file: str | Path, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("PriorError needs at least one problem")
        self.file = str(file)
        self.problems = list(problems)
        first = self.problems[0]
        self.key = first.key
        self.line = first.line
        self.reason = first.reason
        super().__init__("\n".join(_format_problem(self.file, p) for p in self.problems))


def _norm_unit(u: str) -> str:
    u = u.strip().lower().replace("×", "x").replace("µ", "u").replace("μ", "u").replace(" ", "")
    return {"x/year": "x/yr", "day": "days", "byte": "bytes", "": "1", "dimensionless": "1"}.get(
        u, u
    )


# --------------------------------------------------------------------------------------------------
# One parameter table
# --------------------------------------------------------------------------------------------------


def parse_prior(
    key: str,
    table: Mapping[str, Any],
    *,
    file: str | Path = "<memory>",
    line: int | None = None,
) -> Prior:
    """Validate one parameter table (as tomllib returns it) and build its :class:`Prior`.

    Raises :class:`PriorError` naming ``file``, ``key`` and ``line``.
    """
    result = _validate_table(key, table, line)
    if isinstance(result, Prior):
        return replace(result, file=str(file))
    raise PriorError(file, result)


def _validate_table(
    key: str, table: Any, line: int | None, specs: Mapping[str, ParameterSpec] | None = None
) -> Prior | list[Problem]:
    """One parameter table as a :class:`Prior`, or its problems; ``specs``: the known keys
    (default: the model's registry)."""
    spec = (PARAMETERS if specs is None else specs).get(key)
    if spec is None:
        hint = suggest_key(key) if specs is None else f" (known: {', '.join(specs)})"
        return [Problem(key, line, f"unknown parameter key{hint}")]
    if not isinstance(table, Mapping):
        return [Problem(key, line, f"must be a table [{key}], got {table!r}")]
    problems: list[Problem] = []

    def bad(reason: str) -> None:
        problems.append(Problem(key, line, reason))

    source = table.get("source")
    if not isinstance(source, str) or not source.strip():
        bad("missing source (a non-empty string saying where the numbers come from)")
    note = table.get("note", "")
    if not isinstance(note, str):
        bad("note must be a string")
    unit = table.get("unit")
    if unit is not None and (
        not isinstance(unit, str) or _norm_unit(unit) != _norm_unit(spec.unit)
    ):
        bad(f"unit {unit!r} does not match the registry unit {spec.unit!r}")

    forms = [f for f in FORMS if f in table]
    allowed = set(_META_FIELDS) | set(FORMS)
    if "dist" in forms and isinstance(table.get("dist"), str):
        allowed |= set(DISTRIBUTIONS.get(table["dist"], ()))
    extra = [f for f in table if f not in allowed]
    if extra:
        bad(
            f"unknown field(s) {', '.join(map(repr, extra))}; allowed: "
            f"source, note, unit and one of value / quantiles / interval90 / dist (+ its parameters)"
        )
    if not forms:
        bad("no distribution given: use exactly one of value, quantiles, interval90, dist")
    elif len(forms) > 1:
        bad(f"two distributions given ({' and '.join(forms)}): use exactly one")
    if problems:
        return problems

    form = forms[0]
    try:
        if form == "value":
            dist, params = dists.fixed_value(spec, table["value"])
        elif form == "quantiles":
            dist, params = dists.fit_quantiles(
                spec, dists.parse_quantiles(spec, table["quantiles"])
            )
        elif form == "interval90":
            dist, params = dists.fit_interval90(spec, table["interval90"])
        else:
            dist, params = dists.named_distribution(spec, table)
        prior = Prior(
            key=key,
            dist=dist,
            params=params,
            source=str(source).strip(),
            note=str(note).strip(),
            line=line,
            unit=spec.unit,
            form=form,
        )
        dists.check_usable(spec, prior)
    except InvalidPrior as e:
        return [Problem(key, line, str(e))]
    return prior


# --------------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------------


def _find_line(lines: Sequence[str], key: str) -> int | None:
    """1-based line of the table header ``[group.name]`` of ``key`` (tomllib gives no positions)."""
    parts = key.split(".")
    q = [rf"""["']?{re.escape(p)}["']?""" for p in parts]
    dotted = r"\s*\.\s*".join(q)
    patterns = [
        rf"^\s*\[\s*{dotted}\s*\]",
        rf"^\s*{dotted}\s*=",
        rf"^\s*\[\s*{dotted}\s*\.",  # a deeper table under an (unknown) key
    ]
    if len(parts) > 1:
        patterns.append(rf"^\s*{q[-1]}\s*=")  # `name = {...}` inside a [group] table
        patterns.append(rf"^\s*\[\s*{q[0]}\s*\]")
    for pat in patterns:
        rx = re.compile(pat)
        for i, text in enumerate(lines, start=1):
            if rx.match(text):
                return i
    return None


def _toml_error_line(e: tomllib.TOMLDecodeError, text: str) -> int:
    m = re.search(r"line (\d+)", str(e))
    if m:
        return int(m.group(1))
    return max(1, text.count("\n") + (0 if text.endswith("\n") else 1))


MAX_SET_NAME_CHARS = 64
"""Longest ``[meta] name`` of a prior set (it becomes a ``scenario`` coordinate and a CLI argument)."""


def _bad_set_name(name: str) -> str | None:
    """Why ``name`` cannot name a prior set (scenario), or None."""
    if len(name) > MAX_SET_NAME_CHARS:
        return f"meta.name is {len(name)} characters long; at most {MAX_SET_NAME_CHARS}"
    if unicodedata.normalize("NFKC", name) != name or any(
        unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name
    ):
        return f"meta.name {name!r} has control, invisible or non-normalised characters"
    if name.strip() != name or name[0] in "=+-@":
        return f"meta.name {name!r} must not start with a space or one of = + - @"
    return None


def _default_name(file: str) -> str:
    return Path(file).stem if file.endswith(".toml") else file


def loads(
    text: str,
    name: str | Path = "<string>",
    *,
    overlay: bool = False,
    path: Path | None = None,
    specs: Mapping[str, ParameterSpec] | None = None,
) -> PriorSet:
    """Parse prior-file text.

    ``name`` labels the text in error messages (a file name) and, without ``.toml``, is the set's
    name when ``[meta] name`` is absent. ``overlay=False`` requires every registry key (a full
    file); ``overlay=True`` accepts any subset (a scenario). ``path`` is recorded on the set.
    ``specs``: the known keys (default: the model's registry; the planner's cost priors,
    :mod:`forecast.priors.costs`, bring their own).
    """
    known = PARAMETERS if specs is None else specs

    def suggest(key: str) -> str:
        return suggest_key(key) if specs is None else f" (known: {', '.join(known)})"

    file = str(name)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line = _toml_error_line(e, text)
        raise PriorError(file, [Problem(None, line, f"invalid TOML: {e}")]) from e
    lines = text.splitlines()
    problems: list[Problem] = []

    meta = doc.pop("meta", {})
    if not isinstance(meta, dict):
        problems.append(Problem("meta", _find_line(lines, "meta"), "[meta] must be a table"))
        meta = {}
    set_name = meta.get("name", _default_name(file))
    if not isinstance(set_name, str) or not set_name.strip():
        problems.append(Problem("meta", _find_line(lines, "meta"), "meta.name must be a string"))
        set_name = _default_name(file)
    elif "name" in meta and (reason := _bad_set_name(set_name)):
        problems.append(Problem("meta", _find_line(lines, "meta"), reason))

    found: dict[str, Prior] = {}
    groups = {k.split(".")[0] for k in known}
    for group, sub in doc.items():
        if not isinstance(sub, dict):
            reason = (
                "must be a table of parameters"
                if group in groups
                else f"unknown parameter key{suggest(group)}"
            )
            problems.append(Problem(group, _find_line(lines, group), reason))
            continue
        for pname, tbl in sub.items():
            key = f"{group}.{pname}"
            line = _find_line(lines, key)
            result = _validate_table(key, tbl, line, specs)
            if isinstance(result, Prior):
                found[key] = replace(result, file=file)
            else:
                problems.extend(result)

    if not overlay and not problems:
        for key in known:
            if key not in found:
                problems.append(
                    Problem(
                        key, None, "missing required parameter (a full prior file gives every key)"
                    )
                )
    if problems:
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise PriorError(file, problems)

    ordered = {k: found[k] for k in known if k in found}
    return PriorSet(name=set_name.strip(), path=path, text=text, meta=dict(meta), priors=ordered)


def _load(path: str | Path, *, overlay: bool) -> PriorSet:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        reason = e.strerror or str(e)
        raise PriorError(path, [Problem(None, None, f"cannot read prior file: {reason}")]) from e
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        raise PriorError(
            path, [Problem(None, line, f"not UTF-8 text (byte {e.object[e.start]:#04x})")]
        ) from e
    return loads(text, str(path), overlay=overlay, path=path)


def load_priors(path: str | Path) -> PriorSet:
    """Read a full prior file: every key of the registry is required."""
    return _load(path, overlay=False)


def load_overlay(path: str | Path) -> PriorSet:
    """Read an overlay (scenario) file: any subset of the registry keys."""
    return _load(path, overlay=True)


def default_priors_path() -> Path:
    """The baseline prior file (``forecast.config.paths.default_priors_path``: honours WALLCAST_PRIORS_DIR)."""
    return paths.default_priors_path()
