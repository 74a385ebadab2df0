"""The package's shape: no import cycle anywhere in kafkalab/, no module over 600 lines.

The import graph is read with ``ast``, not by importing: every ``import`` and ``from ... import``
counts, at module level, inside functions and under ``if TYPE_CHECKING:`` alike. ``from pkg import
name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg`` itself (its ``__init__``).
A package's parent ``__init__`` running first is Python's doing, not an import of the module's, so
it is not an edge.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "kafkalab"
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p): p for p in sorted(root.rglob("*.py"))}


def _absolute(module: str | None, level: int, current: str, is_package: bool) -> str:
    if level == 0:
        return module or ""
    parts = current.split(".")
    base = parts if is_package else parts[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    """The module that ``name`` (a dotted path) lives in: itself, or its nearest enclosing module."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(mods: dict[str, Path], top: str = "kafkalab") -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        deps: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == top and (owner := _owner(alias.name, mods)):
                        deps.add(owner)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node.module, node.level, name, is_package)
                if base.split(".")[0] != top:
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    owner = full if full in mods else _owner(base, mods)
                    if owner:
                        deps.add(owner)
        deps.discard(name)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete loop inside a strongly connected component, to name in the failure."""
    members = set(component)
    start = component[0]
    path, seen = [start], {start}
    while True:
        nxt = sorted(d for d in graph[path[-1]] if d in members)
        back = [d for d in nxt if d in seen]
        if back:
            return path[path.index(back[0]):] + [back[0]]
        path.append(nxt[0])
        seen.add(nxt[0])


def test_no_import_cycle():
    mods = modules()
    graph = import_graph(mods)
    loops = [" -> ".join(one_cycle(graph, c)) for c in cycles(graph)]
    assert not loops, "import cycles in kafkalab/:\n  " + "\n  ".join(loops)


def test_no_module_over_600_lines():
    too_long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
                if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"


def test_the_broker_never_imports_the_lab():
    """kafkalab/broker/ is Kafka in small: it may not depend on the launcher, the notebooks' helpers or the
    visual side (they depend on it)."""
    mods = modules()
    graph = import_graph(mods)
    lab = ("kafkalab.cluster", "kafkalab.lab", "kafkalab.viz", "kafkalab.spark", "kafkalab.streams",
           "kafkalab.progress", "kafkalab.tools", "kafkalab.cli", "kafkalab.drills", "kafkalab.checks")
    wrong = sorted(f"{m} -> {dep}" for m, deps in graph.items() if m.startswith("kafkalab.broker")
                   for dep in deps if dep == "kafkalab" or dep.startswith(lab))
    assert not wrong, "the broker imports the lab:\n  " + "\n  ".join(wrong)


# -- the checker itself must be able to fail ------------------------------------------------------------

def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        p = tmp_path / "kafkalab" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return {".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p
            for p in sorted((tmp_path / "kafkalab").rglob("*.py"))}


@pytest.mark.parametrize("files, loop", [
    # a function-level import closes the loop
    ({"__init__.py": "", "a.py": "from .b import x\n", "b.py": "def f():\n    from .a import y\n"},
     ["kafkalab.a", "kafkalab.b"]),
    # TYPE_CHECKING imports count too
    ({"__init__.py": "", "p/__init__.py": "", "p/a.py": "from typing import TYPE_CHECKING\n"
      "if TYPE_CHECKING:\n    from ..q import b\n", "q/__init__.py": "", "q/b.py": "import kafkalab.p.a\n"},
     ["kafkalab.p.a", "kafkalab.q.b"]),
    # a name taken from a package's __init__ is an edge to that __init__
    ({"__init__.py": "from .c import d\n", "c/__init__.py": "", "c/d.py": "from .. import __version__\n"},
     ["kafkalab", "kafkalab.c.d"]),
])
def test_checker_finds_cycles(tmp_path, files, loop):
    mods = _tree(tmp_path, files)
    graph = import_graph(mods)
    assert [sorted(c) for c in cycles(graph)] == [loop]


def test_checker_passes_a_tree_without_cycles(tmp_path):
    mods = _tree(tmp_path, {"__init__.py": "from .a import x\n", "a.py": "from .b import y\n",
                            "b.py": "import os\nfrom . import c\n", "c.py": ""})
    assert cycles(import_graph(mods)) == []
