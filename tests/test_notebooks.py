"""House rules for the notebooks (see notebooks/README.md), checked on the files as committed.

nbval (run by ./scripts/test.sh) executes the lessons and lab solutions and
compares outputs; these tests check what nbval cannot: that the stored outputs
are there to compare against, that they hold no errors or stray stderr, that
exercises are handed out clean, and that every broker a notebook starts is
closed by its last cells.
"""
from __future__ import annotations

import glob
import os
import re

import nbformat
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LESSONS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "[0-9][0-9]_*.ipynb")))
SOLUTIONS = sorted(glob.glob(os.path.join(ROOT, "labs", "*", "solution.ipynb")))
EXERCISES = sorted(glob.glob(os.path.join(ROOT, "labs", "*", "exercise.ipynb")))
RUN_BY_NBVAL = LESSONS + SOLUTIONS
# librdkafka lines that depend on timing (a connection closed under a live client, a queue purged on
# destroy): they make stored outputs flaky. Deliberate, deterministic log output is fine.
NOISE = re.compile(r"Disconnected|Connection refused|BGQUEUE|\|FAIL\|")


def _id(path):
    return os.path.relpath(path, ROOT)


def _code_cells(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def test_the_first_lesson_exists():
    assert any(os.path.basename(p) == "00_first_events.ipynb" for p in LESSONS)


@pytest.mark.parametrize("path", RUN_BY_NBVAL, ids=_id)
def test_runs_on_the_python3_kernel(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("path", RUN_BY_NBVAL, ids=_id)
def test_outputs_are_stored_from_one_clean_run(path):
    counts = []
    for i, cell in enumerate(_code_cells(path)):
        if not cell.source.strip():
            continue
        assert cell.execution_count is not None, f"code cell {i} was never run: store outputs of a full run"
        counts.append(cell.execution_count)
        for out in cell.outputs:
            assert out.output_type != "error", f"code cell {i} has a stored error: {out.get('ename')}"
            if out.output_type == "stream" and out.name == "stderr" and NOISE.search(out.text):
                pytest.fail(f"code cell {i} has librdkafka connection noise in its stored output (close clients "
                            f"before the broker): {out.text[:200]!r}")
    assert counts == list(range(1, len(counts) + 1)), \
        f"execution counts {counts} are not one top-to-bottom run in a fresh kernel (Restart Kernel and Run All, " \
        f"then save)"


@pytest.mark.parametrize("path", EXERCISES, ids=_id)
def test_exercises_are_handed_out_without_outputs(path):
    for i, cell in enumerate(_code_cells(path)):
        assert not cell.outputs and cell.execution_count is None, \
            f"code cell {i} of the exercise has stored outputs: clear them before saving"


@pytest.mark.parametrize("path", LESSONS + SOLUTIONS + EXERCISES, ids=_id)
def test_what_a_notebook_starts_it_closes(path):
    cells = _code_cells(path)
    source = "\n".join(c.source for c in cells)
    starts = re.findall(r"(\w+)\s*=\s*kafkalab\.(?:connect|mini|schema_registry|connect_cluster)\(", source)
    tail = "\n".join(c.source for c in cells[-3:])
    for name in set(starts):
        assert f"{name}.close()" in tail, f"{name} = kafkalab...() is not closed in the last cells ({name}.close())"


@pytest.mark.parametrize("path", LESSONS, ids=_id)
def test_lesson_title_matches_its_number(path):
    number = os.path.basename(path)[:2]
    first = nbformat.read(path, as_version=4).cells[0]
    assert first.cell_type == "markdown" and first.source.startswith(f"# {number} "), \
        f"the first cell should be the title '# {number} · ...'"


@pytest.mark.parametrize("path", LESSONS, ids=_id)
def test_lesson_states_its_claims_with_asserts(path):
    assert sum("assert " in c.source for c in _code_cells(path)) >= 3
