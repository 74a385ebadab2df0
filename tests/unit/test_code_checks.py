"""The code's own habits, checked in CI: ruff with ``[tool.ruff]`` and mypy with ``[tool.mypy]`` (pyproject.toml).

Both are pinned in the ``test`` extra, which ``./scripts/test.sh`` installs; a test is skipped (saying why) only
where the tool is not installed at all. The tools run as ``python -m ruff`` / ``python -m mypy`` of this
interpreter, from the repository root, so they read the repository's pyproject.toml.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINTED = ["kafkalab", "tests", "benchmarks"]


def _run(tool: str, args: list[str], timeout: int) -> subprocess.CompletedProcess:
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} is not installed in this environment (pip install -e '.[test]' installs the pinned one)")
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_ruff_passes():
    proc = _run("ruff", ["check", "--no-cache", "--output-format", "concise", *LINTED], timeout=300)
    assert proc.returncode == 0, (
        f"`ruff check {' '.join(LINTED)}` found problems (rules: [tool.ruff] in pyproject.toml; fix the code, "
        f"or for a deliberate exception a `# noqa: CODE` on the line):\n{proc.stdout}{proc.stderr}")


def test_mypy_passes():
    # no arguments: mypy reads [tool.mypy] from pyproject.toml, its `files` list included
    proc = _run("mypy", [], timeout=600)
    assert proc.returncode == 0, (
        "mypy found type errors in the files [tool.mypy] lists in pyproject.toml "
        f"(`mypy` from the repository root shows the same):\n{proc.stdout}{proc.stderr}")
