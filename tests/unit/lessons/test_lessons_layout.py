"""kafkalab.lessons is client-side code for the notebooks: the broker never imports it."""
from __future__ import annotations

import ast
from pathlib import Path

KAFKALAB = Path(__file__).resolve().parents[3] / "kafkalab"


def imported_modules(path: Path, root: Path = KAFKALAB) -> set[str]:
    """Absolute names of everything ``path`` imports (relative imports resolved against its package)."""
    package = path.relative_to(root.parent).with_suffix("").parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = list(package[:len(package) - (node.level - 1)]) if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return names


def lessons_imports(root: Path) -> dict[str, list[str]]:
    found = {str(p.relative_to(root.parent)): sorted(n for n in imported_modules(p, root)
                                                    if n.startswith("kafkalab.lessons"))
             for p in sorted((root / "broker").rglob("*.py"))}
    return {p: names for p, names in found.items() if names}


def test_the_broker_does_not_import_the_lessons():
    assert lessons_imports(KAFKALAB) == {}


def test_the_check_catches_absolute_and_relative_imports(tmp_path):
    (tmp_path / "kafkalab" / "broker" / "log").mkdir(parents=True)
    (tmp_path / "kafkalab" / "broker" / "log" / "bad.py").write_text("from ...lessons import reading\n")
    (tmp_path / "kafkalab" / "broker" / "worse.py").write_text("import kafkalab.lessons.waiting\n")
    (tmp_path / "kafkalab" / "broker" / "fine.py").write_text("from ..lab import connect\nfrom .log import x\n")
    assert lessons_imports(tmp_path / "kafkalab") == {
        "kafkalab/broker/log/bad.py": ["kafkalab.lessons", "kafkalab.lessons.reading"],
        "kafkalab/broker/worse.py": ["kafkalab.lessons.waiting"]}
