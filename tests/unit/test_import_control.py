"""The layering of kafkalab/, as import-control.toml writes it down (Kafka's import-control-*.xml, in small).

Every module of kafkalab/ is parsed with ``ast``, never imported: each ``import`` and ``from ... import`` counts,
at module level, inside functions and under ``if TYPE_CHECKING:`` alike, relative ones resolved against the
module's package. ``from pkg import name`` is an import of ``pkg.name`` when that is a module, else of ``pkg``
(its ``__init__``). A parent package's ``__init__`` running first is Python's doing, not the module's import.

Each module belongs to a row of the table (see the file's header); an import from one row into another must be
listed in the importing row's entries. The failures name file:line, the import and the rule, so that a
violation can be fixed where it is (or, for a new dependency that belongs there, the row changed in the same
commit, saying why).
"""
from __future__ import annotations

import ast
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:   # Python 3.10: the test extra installs tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "import-control.toml"


# -- reading the code -----------------------------------------------------------------------------------------

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


# -- reading the table ----------------------------------------------------------------------------------------

@dataclass
class Table:
    allow: dict[str, list[str]]
    forbidden: dict[str, list[str]]
    split: set[str]

    @classmethod
    def load(cls, path: Path = TABLE) -> "Table":
        with open(path, "rb") as f:
            data = tomllib.load(f)
        return cls(allow=data["allow"], forbidden=data.get("forbidden", {}),
                   split=set(data.get("layout", {}).get("split", [])))

    def row(self, module: str) -> str | None:
        """The row a module belongs to: the longest row that is the module or one of its packages (a split
        package's row holds its ``__init__`` only)."""
        name = module
        while name:
            if name in self.allow and (name == module or name not in self.split):
                return name
            name = name.rpartition(".")[0]
        return None

    def matches(self, entry: str, row: str) -> bool:
        if entry.endswith(".*"):
            stem = entry[:-2]
            return row == stem or row.startswith(stem + ".")
        return row == entry

    def allows(self, source_row: str, target_row: str) -> bool:
        return source_row == target_row or any(self.matches(e, target_row) for e in self.allow[source_row])

    def edges(self) -> dict[str, set[str]]:
        """The graph the table allows, between rows."""
        return {r: {t for t in self.allow if t != r and self.allows(r, t)} for r in self.allow}


def violations(table: Table, found: list[Import], root: Path = ROOT) -> list[str]:
    wrong = []
    for imp in found:
        source, target = table.row(imp.source), table.row(imp.target)
        if source is None or target is None or table.allows(source, target):
            continue
        may = ", ".join(table.allow[source]) or "nothing in kafkalab"
        wrong.append(f"{os.path.relpath(imp.path, root)}:{imp.line}: `{imp.text}` imports {imp.target} "
                     f"({target}); {source} may import only: {may}")
    return sorted(wrong)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One loop for each strongly connected component of more than one node (Tarjan, iterative)."""
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
    loops = []
    for component in components:
        members, path = set(component), [component[0]]
        while True:
            nxt = sorted(d for d in graph[path[-1]] if d in members)
            back = [d for d in nxt if d in path]
            if back:
                loops.append(path[path.index(back[0]):] + [back[0]])
                break
            path.append(nxt[0])
    return loops


def row_graph(table: Table, found: list[Import]) -> tuple[dict[str, set[str]], dict[tuple[str, str], Import]]:
    graph: dict[str, set[str]] = defaultdict(set)
    example: dict[tuple[str, str], Import] = {}
    for imp in found:
        source, target = table.row(imp.source), table.row(imp.target)
        if source and target and source != target:
            graph[source].add(target)
            example.setdefault((source, target), imp)
            graph.setdefault(target, set())
    return dict(graph), example


# -- the tests ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def table() -> Table:
    return Table.load()


@pytest.fixture(scope="module")
def found() -> list[Import]:
    return imports(modules(ROOT / "kafkalab"), "kafkalab")


def test_every_module_has_a_row(table):
    missing = sorted(m for m in modules(ROOT / "kafkalab") if table.row(m) is None)
    assert not missing, ("modules of kafkalab/ with no row in import-control.toml (add the row, with what it may "
                         "import):\n  " + "\n  ".join(missing))


def test_entries_name_rows(table):
    unknown = sorted(f"{row}: {e}" for row, entries in {**table.allow, **table.forbidden}.items() for e in entries
                     if not any(table.matches(e, r) for r in table.allow) and not e.endswith(".*"))
    assert not unknown, ("entries of import-control.toml that are no row of [allow] (a typo?):\n  "
                         + "\n  ".join(unknown))


def test_imports_follow_the_table(table, found):
    wrong = violations(table, found)
    assert not wrong, (f"{len(wrong)} import(s) that import-control.toml does not allow (move the code to the "
                       f"layer it belongs to; see CONTRIBUTING.md):\n  " + "\n  ".join(wrong))


def test_no_cycle_between_packages(table, found):
    graph, example = row_graph(table, found)
    loops = []
    for loop in cycles(graph):
        steps = [f"{a} -> {b} ({os.path.relpath(example[a, b].path, ROOT)}:{example[a, b].line})"
                 for a, b in zip(loop, loop[1:])]
        loops.append("\n    ".join(steps))
    assert not loops, "import cycles between the packages of import-control.toml:\n    " + "\n  and\n    ".join(loops)


def test_the_table_has_no_cycle(table):
    loops = [" -> ".join(loop) for loop in cycles(table.edges())]
    assert not loops, "import-control.toml allows a cycle:\n  " + "\n  ".join(loops)


def test_the_broker_never_imports_the_kraft_side_or_the_lab(table, found):
    """Whatever the table says: kafkalab/broker/ imports nothing from raft, controller, kraft, snapshot,
    registry, kafka_connect, cluster, spark, viz, streams, tools or the lab's modules."""
    granted = sorted(f"import-control.toml: {row} may import {e}" for scope, banned in table.forbidden.items()
                     for row, entries in table.allow.items() if table.matches(scope, row)
                     for e in entries for b in banned
                     if any(table.matches(e, r) and table.matches(b, r) for r in table.allow))
    done = sorted(f"{os.path.relpath(i.path, ROOT)}:{i.line}: `{i.text}`" for i in found
                  for scope, banned in table.forbidden.items()
                  if (s := table.row(i.source)) and (t := table.row(i.target))
                  and table.matches(scope, s) and any(table.matches(b, t) for b in banned))
    assert not granted and not done, "the broker reaches what it may never import:\n  " + "\n  ".join(granted + done)


# -- the checker itself must be able to fail ------------------------------------------------------------------

def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        p = tmp_path / "pkg" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return modules(tmp_path / "pkg")


SMALL = Table(allow={"pkg": ["pkg.low.*", "pkg.high"], "pkg.low": ["pkg.low.deep"], "pkg.low.deep": ["pkg.low"],
                     "pkg.high": ["pkg.low.*"]},
              forbidden={"pkg.low.*": ["pkg.high"]}, split={"pkg"})


@pytest.mark.parametrize("text", [
    "from pkg.high import x\n",                                          # absolute
    "from ..high import x\n",                                            # relative, resolved
    "def f():\n    import pkg.high.mod\n",                               # inside a function
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import high\n",   # under TYPE_CHECKING
])
def test_checker_finds_an_import_the_table_does_not_allow(tmp_path, text):
    mods = _tree(tmp_path, {"__init__.py": "", "low/__init__.py": "", "low/a.py": text,
                            "high/__init__.py": "", "high/mod.py": "x = 1\n"})
    wrong = violations(SMALL, imports(mods, "pkg"), root=tmp_path)
    assert len(wrong) == 1 and wrong[0].startswith(os.path.join("pkg", "low", "a.py") + ":")
    assert "imports pkg.high" in wrong[0] and wrong[0].endswith("pkg.low may import only: pkg.low.deep")


def test_checker_passes_allowed_imports_and_finds_cycles(tmp_path):
    mods = _tree(tmp_path, {"__init__.py": "from .high import y\n", "low/__init__.py": "",
                            "low/deep/__init__.py": "from .. import a\n", "low/a.py": "from .deep import z\n",
                            "high/__init__.py": "from pkg.low import a\ny = 1\n"})
    found = imports(mods, "pkg")
    assert violations(SMALL, found, root=tmp_path) == []      # within a row, and down the table
    graph, _ = row_graph(SMALL, found)
    assert cycles(graph) == [["pkg.low", "pkg.low.deep", "pkg.low"]]
    assert cycles(SMALL.edges()) == [["pkg.low", "pkg.low.deep", "pkg.low"]]


def test_a_split_package_needs_a_row_per_module():
    assert SMALL.row("pkg") == "pkg" and SMALL.row("pkg.other") is None
    assert SMALL.row("pkg.low.deep.x") == "pkg.low.deep"
