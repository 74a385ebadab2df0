"""The package's shape: no import cycle anywhere in kafkalab/, no module over 600 lines.

The import graph is read with ``ast`` (``tests/helpers/import_graph.py``: every import counts, in functions and
under ``if TYPE_CHECKING:`` too).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.import_graph import components, import_graph, modules, one_cycle

PACKAGE = Path(__file__).resolve().parents[2] / "kafkalab"
MAX_LINES = 600


def test_no_import_cycle():
    mods = modules(PACKAGE)
    graph = import_graph(mods)
    loops = [" -> ".join(one_cycle(graph, c)) for c in components(graph)]
    assert not loops, "import cycles in kafkalab/:\n  " + "\n  ".join(loops)


def test_no_module_over_600_lines():
    too_long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
                if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"


def test_test_modules_have_unique_names():
    # tests/ has no __init__.py in its folders: pytest imports each test module by its bare name, so two
    # test_x.py in different folders fail collection ("import file mismatch") in whichever order loads second
    tests = PACKAGE.parent / "tests"
    seen: dict[str, list[str]] = {}
    for p in tests.rglob("test_*.py"):
        seen.setdefault(p.name, []).append(str(p.relative_to(tests)))
    shared = {n: ps for n, ps in seen.items() if len(ps) > 1}
    assert not shared, f"test modules sharing a name: {shared}"


def test_the_broker_never_imports_the_lab():
    """kafkalab/broker/ is Kafka in small: it may not depend on the launcher, the notebooks' helpers or the
    visual side (they depend on it)."""
    mods = modules(PACKAGE)
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
    assert [sorted(c) for c in components(graph)] == [loop]


def test_checker_passes_a_tree_without_cycles(tmp_path):
    mods = _tree(tmp_path, {"__init__.py": "from .a import x\n", "a.py": "from .b import y\n",
                            "b.py": "import os\nfrom . import c\n", "c.py": ""})
    assert components(import_graph(mods)) == []
