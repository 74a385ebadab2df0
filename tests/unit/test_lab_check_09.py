"""check_09 (labs/09_share_groups): right answers pass, each kind of wrong or unfilled answer is named.

The check replays the student's acknowledgement policy and a poison record on a mini broker of its own topics;
here it runs against an embedded mini broker with the lab's share-group settings. The lab's solution notebook
runs the same check under nbval.
"""
from __future__ import annotations

import importlib.util
import os

import pytest
from confluent_kafka import AcknowledgeType

import kafkalab
from kafkalab.checks import LabCheckFailed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("lab09_check", os.path.join(ROOT, "labs", "09_share_groups", "check.py"))
lab09 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab09)

LIMIT = 3
HELD = [0, 1, 2, 3]


def right(value, delivery_count):
    if value == "corrupt":
        return AcknowledgeType.REJECT
    return AcknowledgeType.RELEASE if value == "retry" and delivery_count == 1 else AcknowledgeType.ACCEPT


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("lab09")), **{
            "group.share.record.lock.duration.ms": 3000, "group.share.delivery.count.limit": LIMIT,
            "group.share.heartbeat.interval.ms": 500}) as broker:
        yield broker


def answers(**overrides):
    return {"acknowledgement": right, "poison_deliveries": LIMIT, "held": HELD, "redelivered_offsets": HELD,
            "redelivered_count": 2, "back_after_s": 3.1, "cause": "lock expired", **overrides}


def test_right_answers_pass(kafka, capsys):
    lab09.check_09(kafka, **answers())
    assert "All checks passed" in capsys.readouterr().out


def test_wrong_answers_are_named(kafka, capsys):
    def release_all(value, delivery_count):          # the corrupt task comes back until the limit archives it
        return AcknowledgeType.ACCEPT if value == "ok" else AcknowledgeType.RELEASE
    with pytest.raises(LabCheckFailed):
        lab09.check_09(kafka, **answers(acknowledgement=release_all, poison_deliveries=LIMIT - 1, back_after_s=0.2,
                                        cause="connection closed", redelivered_count=1))
    out = capsys.readouterr().out
    assert "a RELEASEd record comes back: REJECT archives it" in out
    assert "the limit counts deliveries, not redeliveries" in out
    assert "was the child SIGKILLed instead of SIGSTOPped?" in out
    assert "a stopped process keeps its sockets open" in out
    assert "✗ redelivered_count" in out and "✓ redelivered_offsets" in out


def test_unfilled_answers_are_named(kafka, capsys):
    with pytest.raises(LabCheckFailed):
        lab09.check_09(kafka, **answers(acknowledgement=..., poison_deliveries=..., redelivered_offsets=...,
                                        redelivered_count=..., back_after_s=..., cause=...))
    out = capsys.readouterr().out
    assert out.count("TODO is not filled in yet") == 6, out
