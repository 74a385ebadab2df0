"""Lab checks speak to students: one line instead of a traceback, `...` instead of Ellipsis, str not bytes."""
from __future__ import annotations

import pandas as pd
import pytest

from kafkalab.checks import READINGS_00, LabCheckFailed, Report, shown


def test_a_failed_check_renders_as_one_line_in_ipython():
    report = Report("Lab 99")
    report.step("step 1", False, "why")
    with pytest.raises(LabCheckFailed) as info:
        report.finish()
    lines = info.value._render_traceback_()
    assert len(lines) == 1 and "LabCheckFailed" in lines[0] and "step 1" in lines[0]
    assert isinstance(info.value, AssertionError)   # still stops a notebook run


def test_a_step_not_checked_is_listed_with_why_in_its_place_and_does_not_fail():
    report = Report("Lab 99")
    report.step("step 1", True)
    report.skip("step 2", "it needs kafkalab's broker")
    report.step("step 3", True)
    report.finish()          # no LabCheckFailed
    lines = report.render().splitlines()
    assert lines[1:4] == ["  ✓ step 1", "  – step 2 (not checked: it needs kafkalab's broker)", "  ✓ step 3"]
    assert lines[-1] == "All the checks run passed (1 not checked here)."
    report.step("step 4", False, "why")
    assert report.render().splitlines()[-1].startswith("1 of 3 checks failed")


def test_unfilled_values_read_as_not_filled_in():
    assert shown(...) == "`...` (not filled in yet)" and "Ellipsis" not in shown(...)
    assert shown("orders") == "'orders'"


def test_lab_04_title_and_message_for_an_unfilled_topic(capsys):
    import importlib.util
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.util.spec_from_file_location("check_04", os.path.join(root, "labs", "04_retention", "check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class NoBroker:
        broker = None
    with pytest.raises(LabCheckFailed):
        module.check_04(NoBroker(), ..., ..., ..., ..., ..., ..., ..., ...)
    out = capsys.readouterr().out
    assert "Ellipsis" not in out and "topics `...` (not filled in yet)" in out


def test_lab_00_rejects_bytes_where_the_step_asks_for_str(broker, capsys):
    import kafkalab
    from confluent_kafka import Producer

    from kafkalab.checks import check_00
    kafka = kafkalab.connect(bootstrap_servers=broker.bootstrap_servers)
    topic = "readings-bytes"
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for sensor, celsius, ts in READINGS_00:
        producer.produce(topic, key=sensor, value=celsius, timestamp=ts, headers=[("unit", b"celsius")], partition=0)
    assert producer.flush(10) == 0
    frame = pd.DataFrame([{"offset": i, "key": s.encode(), "value": c.encode()}
                          for i, (s, c, _) in enumerate(READINGS_00)])
    with pytest.raises(LabCheckFailed):
        check_00(kafka, topic, [0, 1, 2, 3, 4], frame, [c.encode() for _, c, _ in READINGS_00[3:]], (0, 5))
    out = capsys.readouterr().out
    assert "✗ step 2" in out and "are bytes" in out
    assert "✗ step 3" in out and "holds bytes" in out
    assert "✓ step 1" in out and "✓ step 4" in out
