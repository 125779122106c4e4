"""The layer contract of the ``forecast`` package, checked over the sources (stdlib only).

Run: ``python scripts/check_layers.py`` (``make lint`` and ``make test`` run it); prints one line
per breach and exits 1, or prints a summary and exits 0.

The folders of ``forecast/`` are its layers, lowest first (docs/architecture.md draws them):

    config -> priors, model -> data, stats -> store -> queries -> inference -> analyses -> report
           -> jobs -> service -> cli             (flows/, outside the package, wraps jobs)

Rules:

1. **No upward import.** A module imports only from its own folder and from lower layers; two
   folders of the same rank do not import each other.  Imports under ``if TYPE_CHECKING:`` are
   annotations, not dependencies, and are not counted.
2. **No JAX below the computing layers.** ``config``, ``priors``, ``data``, ``store`` and
   ``queries`` import neither ``jax`` nor ``numpyro`` at module level, and never import ``model``,
   ``stats`` or ``inference`` (not even inside a function), so that a command that only reads a
   dataset never loads JAX.
3. **No cycle** among the modules' module-level imports.
4. **Function-level imports say why**: a comment on the import line or above it (one comment may
   head a block of consecutive imports).
5. **Size**: a module over 600 lines says in its docstring which one concept it holds
   (``One concept:``).
6. **Prefect only in flows/** (and the CLI commands that start flows, and the service's what-if
   runs, :data:`PREFECT_CLIENTS`, which submit and read runs of a served deployment through
   Prefect's client); the package never imports ``flows`` except from ``forecast/cli``.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "forecast"

RANK = {
    "config": 0,
    "priors": 1,
    "model": 1,
    "data": 2,
    "stats": 2,
    "store": 3,
    "queries": 4,
    "inference": 5,
    "analyses": 6,
    "report": 7,
    "jobs": 8,
    "service": 9,
    "cli": 10,
}
"""Rank of each folder: a module may import folders of lower rank (and its own)."""

PREFECT_CLIENTS = {"forecast.service.whatif"}
"""Modules outside the CLI that talk to a Prefect server (by deployment name; never ``flows``)."""

TOP_LEVEL_MODULES = {"__init__": 0, "__main__": 11}
JAX_FREE = {"config", "priors", "data", "store", "queries"}
COMPUTING = {"model", "stats", "inference"}
"""The JAX layers, which no JAX-free layer imports at all (not even inside a function)."""
JAX_MODULES = ("jax", "numpyro")
MAX_LINES = 600


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer(module: str) -> str:
    """The folder (layer) of a ``forecast`` module: ``forecast.store.reader`` -> ``store``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def rank(module: str) -> int:
    name = layer(module)
    return RANK[name] if name in RANK else TOP_LEVEL_MODULES.get(name, 0)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


class Imports(ast.NodeVisitor):
    """Module-level and function-level imports of one module (TYPE_CHECKING blocks skipped)."""

    def __init__(self, module: str, is_package: bool, modules: set[str]) -> None:
        self.module, self.is_package, self.modules = module, is_package, modules
        self.top: list[tuple[int, str]] = []
        self.local: list[tuple[int, str]] = []
        self._depth = 0

    def _targets(self, node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = _resolve(node, self.module, self.is_package)
        names = [f"{base}.{a.name}" for a in node.names]
        submodules = [n for n in names if n in self.modules]
        # `from forecast import store` imports the module forecast.store (and its package first,
        # which every submodule import does: not an edge of its own)
        return submodules if len(submodules) == len(names) else [base, *submodules]

    def _record(self, node: ast.Import | ast.ImportFrom) -> None:
        bucket = self.local if self._depth else self.top
        for target in self._targets(node):
            bucket.append((node.lineno, target))

    visit_Import = visit_ImportFrom = _record  # noqa: N815

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def _function(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = _function  # noqa: N815


def sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def known_modules(paths: list[Path]) -> set[str]:
    return {module_name(p) for p in paths}


def _target_module(target: str, modules: set[str]) -> str | None:
    """The ``forecast`` module an import target names (a module, or a name in one)."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def check() -> tuple[list[str], dict[str, int]]:
    paths = sources()
    modules = known_modules(paths)
    problems: list[str] = []
    graph: dict[str, set[str]] = defaultdict(set)
    counts = {"modules": len(paths), "function_imports": 0}
    for path in paths:
        module = module_name(path)
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        where = path.relative_to(ROOT)
        visitor = Imports(module, path.name == "__init__.py", modules)
        visitor.visit(tree)
        for lineno, target in visitor.top + visitor.local:
            top = target.split(".")[0]
            if top == "flows" and layer(module) != "cli":
                problems.append(f"{where}:{lineno}: imports {target} (only the CLI starts flows)")
            if top == "prefect" and layer(module) != "cli" and module not in PREFECT_CLIENTS:
                problems.append(f"{where}:{lineno}: imports {target} (Prefect belongs to flows/)")
            if top != "forecast":
                continue
            other = _target_module(target, modules)
            if other is None or other == module or layer(other) == layer(module):
                continue
            if layer(module) in JAX_FREE and layer(other) in COMPUTING:
                problems.append(
                    f"{where}:{lineno}: {layer(module)} imports {other}: a JAX-free layer never "
                    "imports the computing layers"
                )
            elif rank(other) >= rank(module):
                problems.append(
                    f"{where}:{lineno}: {layer(module)} (rank {rank(module)}) imports {other} "
                    f"({layer(other)}, rank {rank(other)}): upward or sideways"
                )
        for lineno, target in visitor.top:
            other = _target_module(target, modules) if target.startswith("forecast") else None
            if other and other != module:
                graph[module].add(other)
            if layer(module) in JAX_FREE and target.split(".")[0] in JAX_MODULES:
                problems.append(
                    f"{where}:{lineno}: imports {target} at module level (JAX-free layer)"
                )
        seen_local: set[int] = set()
        for lineno, _target in visitor.local:
            if lineno in seen_local:
                continue
            seen_local.add(lineno)
            counts["function_imports"] += 1
            line = lines[lineno - 1]
            j = lineno - 2  # the comment may head a block of consecutive imports
            while j >= 0 and lines[j].strip().startswith(("import ", "from ")):
                j -= 1
            above = lines[j].strip() if j >= 0 else ""
            if "#" not in line and not above.startswith("#"):
                problems.append(f"{where}:{lineno}: function-level import without a reason")
        if len(lines) > MAX_LINES:
            doc = ast.get_docstring(tree) or ""
            if "One concept:" not in doc:
                problems.append(
                    f"{where}: {len(lines)} lines (over {MAX_LINES}) and no 'One concept:' in its "
                    "docstring"
                )
    problems += [f"import cycle: {' -> '.join(c)}" for c in cycles(graph)]
    return problems, counts


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main() -> int:
    problems, counts = check()
    for p in problems:
        print(p)
    if problems:
        print(f"layer contract: {len(problems)} breach(es)", file=sys.stderr)
        return 1
    print(
        f"layer contract holds: {counts['modules']} modules, "
        f"{counts['function_imports']} function-level imports (each with its reason)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
