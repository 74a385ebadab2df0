"""The import graph of a package, read with ``ast`` (never by importing), for the layout tests.

Every ``import`` and ``from ... import`` counts: at module level, inside functions and under ``if TYPE_CHECKING:``
alike, relative ones resolved against the module's package. ``from pkg import name`` is an import of ``pkg.name``
when that is a module, else of ``pkg`` (its ``__init__``). A parent package's ``__init__`` running first is
Python's doing, not the module's import, so it is no edge. Used by ``tests/unit/test_layout.py`` (no cycle between
modules) and ``tests/unit/test_import_control.py`` (the layering of ``import-control.toml``).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


def module_name(path: Path, base: Path) -> str:
    parts = path.relative_to(base).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path) -> dict[str, Path]:
    """Every module of ``package`` (a directory), by dotted name."""
    return {module_name(p, package.parent): p for p in sorted(package.rglob("*.py"))}


@dataclass(frozen=True)
class Import:
    path: Path          # the importing file
    line: int
    source: str         # the importing module
    target: str         # the imported module (of the same top-level package)
    text: str           # the statement as written, for the failure


def _enclosing(name: str, mods: dict[str, Path]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def imports(mods: dict[str, Path], top: str) -> list[Import]:
    """Every import of a module of ``top`` by a module of ``mods``."""
    found: list[Import] = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == top]
                text = "import " + ", ".join(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = name.split(".") if is_package else name.split(".")[:-1]
                    parts = parts[:len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if base.split(".")[0] != top:
                    continue
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
                text = f"from {'.' * node.level}{node.module or ''} import " + ", ".join(a.name for a in node.names)
            else:
                continue
            for target in dict.fromkeys(targets):
                owner = _enclosing(target, mods)
                if owner and owner != name:
                    found.append(Import(path, node.lineno, name, owner, text))
    return found


def import_graph(mods: dict[str, Path], top: str = "kafkalab") -> dict[str, set[str]]:
    """Module -> the modules of ``top`` it imports (every module of ``mods`` is a node)."""
    graph: dict[str, set[str]] = {name: set() for name in mods}
    for found in imports(mods, top):
        graph[found.source].add(found.target)
    return graph


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node, each sorted (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph[start])))]
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete loop inside a strongly connected component, to name in a failure."""
    members, path = set(component), [component[0]]
    while True:
        nxt = sorted(d for d in graph[path[-1]] if d in members)
        back = [d for d in nxt if d in path]
        if back:
            return path[path.index(back[0]):] + [back[0]]
        path.append(nxt[0])


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One loop for each strongly connected component of more than one node."""
    return [one_cycle(graph, component) for component in components(graph)]
