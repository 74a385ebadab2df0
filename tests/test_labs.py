"""The labs in ``labs/``: exercises stay in step with their solutions, and their checks can fail.

nbval runs every ``labs/*/solution.ipynb`` (the check must pass on it). These
tests cover the other half: an exercise run as handed out — TODOs unfilled —
must stop at the check with a checklist of ✗, and a check must reject wrong
answers with a specific message, not just accept anything.
"""
from __future__ import annotations

import glob
import os

import nbformat
import pandas as pd
import pytest

import kafkalab
from kafkalab.checks import READINGS_00, LabCheckFailed, check_00

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABS = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(ROOT, "labs", "*", "exercise.ipynb")))


def _read(path):
    return nbformat.read(path, as_version=4)


def _run(path):
    """Execute a notebook in a kernel of this Python; return (notebook, error or None)."""
    from jupyter_client import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

    nb = _read(path)
    km = KernelManager(kernel_name=CURRENT_ENV_KERNEL_NAME, kernel_spec_manager=NbvalKernelspecManager())
    client = NotebookClient(nb, km=km, timeout=120, resources={"metadata": {"path": os.path.dirname(path)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        return nb, exc
    return nb, None


def test_every_lab_has_exercise_and_solution():
    assert LABS, "no labs found under labs/"
    for lab in LABS:
        assert os.path.exists(os.path.join(lab, "solution.ipynb")), f"{lab} has no solution.ipynb"


@pytest.mark.parametrize("lab", LABS, ids=os.path.basename)
def test_exercise_matches_solution_except_todo_cells(lab):
    exercise = _read(os.path.join(lab, "exercise.ipynb"))
    solution = _read(os.path.join(lab, "solution.ipynb"))
    assert len(exercise.cells) == len(solution.cells)
    todos = 0
    for i, (e, s) in enumerate(zip(exercise.cells, solution.cells)):
        assert e.cell_type == s.cell_type, f"cell {i}"
        e_tags, s_tags = e.metadata.get("tags", []), s.metadata.get("tags", [])
        if "todo" in e_tags:
            todos += 1
            assert "solution" in s_tags, f"cell {i}: exercise TODO cell without a solution cell"
            assert "TODO" in e.source, f"cell {i} is tagged todo but says no TODO"
        elif i > 0:  # cell 0 is the title, which says "solution" in the solution
            assert e.source == s.source, f"cell {i} differs between exercise and solution but is not a TODO cell"
    assert todos > 0


@pytest.mark.parametrize("lab", LABS, ids=os.path.basename)
def test_unfilled_exercise_fails_at_the_check(lab):
    nb, error = _run(os.path.join(lab, "exercise.ipynb"))
    assert error is not None, "the exercise passed its check with the TODOs unfilled"
    assert error.ename == "LabCheckFailed", f"the exercise failed before its check: {error.ename}: {error.evalue}"
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "✗" in printed and "All checks passed" not in printed


# --- check_00 on its own: right answers pass, each kind of wrong answer is named -------------------

def _produce(kafka, topic, readings, header=b"celsius"):
    from confluent_kafka import Producer

    producer = Producer(kafka.client_config())
    for sensor, celsius, ts in readings:
        producer.produce(topic, key=sensor, value=celsius, timestamp=ts, headers=[("unit", header)])
    assert producer.flush(10) == 0
    producer.close()


def _answers():
    frame = pd.DataFrame([{"offset": i, "key": s, "value": c} for i, (s, c, _) in enumerate(READINGS_00)])
    return dict(delivered_offsets=[0, 1, 2, 3, 4], readings=frame,
                from_offset_3=[c for _, c, _ in READINGS_00[3:]], watermarks=(0, 5))


@pytest.fixture
def lab_kafka(tmp_path):
    with kafkalab.connect(log_dir=str(tmp_path / "broker")) as kafka:
        yield kafka


def test_check_00_passes_right_answers(lab_kafka, capsys):
    topic = lab_kafka.create_topic("readings")
    _produce(lab_kafka, topic, READINGS_00)
    check_00(lab_kafka, topic, **_answers())
    assert "All checks passed" in capsys.readouterr().out


def test_check_00_names_what_the_broker_got_wrong(lab_kafka, capsys):
    topic = lab_kafka.create_topic("readings")
    swapped = [READINGS_00[1], READINGS_00[0], *READINGS_00[2:]]
    _produce(lab_kafka, topic, swapped, header=b"fahrenheit")
    with pytest.raises(LabCheckFailed):
        check_00(lab_kafka, topic, **_answers())
    out = capsys.readouterr().out
    assert "✗ step 1: the five readings" in out
    assert "offset 0: stored key/value/timestamp" in out
    assert "expected a header ('unit', b'celsius')" in out


def test_check_00_names_wrong_answers(lab_kafka, capsys):
    topic = lab_kafka.create_topic("readings")
    _produce(lab_kafka, topic, READINGS_00)
    answers = _answers()
    answers["readings"] = answers["readings"].iloc[::-1]
    answers["from_offset_3"] = ["10.8"]
    answers["watermarks"] = (5, 5)
    with pytest.raises(LabCheckFailed, match="3 of 5 checks failed"):
        check_00(lab_kafka, topic, **answers)
    out = capsys.readouterr().out
    assert "✓ step 1: the five readings" in out
    assert "✗ step 2" in out and "✗ step 3" in out and "✗ step 4" in out


def test_check_00_counts_duplicates(lab_kafka, capsys):
    topic = lab_kafka.create_topic("readings")
    _produce(lab_kafka, topic, READINGS_00 + READINGS_00[:1])   # the produce cell run "one and a bit" times
    with pytest.raises(LabCheckFailed):
        check_00(lab_kafka, topic, **_answers())
    assert "the topic holds 6 record(s), expected 5" in capsys.readouterr().out
