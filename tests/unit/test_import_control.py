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

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.import_graph import Import, cycles, imports, modules

try:
    import tomllib
except ModuleNotFoundError:   # Python 3.10: the test extra installs tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "import-control.toml"


# -- reading the code: tests/helpers/import_graph.py ------------------------------------------------------------
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
