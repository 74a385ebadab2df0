"""check_10 (labs/10_kraft): right answers pass, each kind of wrong or unfilled answer is named.

The check reads the cluster's metadata log; here the "cluster" is a stand-in whose ``metadata_log_dir`` holds a
segment written byte by byte (kafka_spec's record batches around metadata record values in Kafka's layout): a
topic created, an election after the controller's kill, a broker fenced after its kill. No JVM needed; the lab's
solution notebook runs the same check against Kafka 4.4 under nbval.
"""
from __future__ import annotations

import importlib.util
import os
import struct

import pytest
from tests.helpers.kafka_spec import record, records_batch

from kafkalab.checks import LabCheckFailed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("lab10_check", os.path.join(ROOT, "labs", "10_kraft", "check.py"))
lab10 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab10)

T0 = 1_800_000_000_000            # ms
TOPIC = bytes(range(16))
TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"   # TOPIC as Kafka prints a uuid


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def cstring(s: str) -> bytes:
    return uvarint(len(s) + 1) + s.encode()


def int32s(xs) -> bytes:
    return uvarint(len(xs) + 1) + b"".join(struct.pack(">i", x) for x in xs)


def topic_record() -> bytes:
    return bytes([1, 2, 0]) + cstring("payments") + TOPIC + b"\x00"


def partition_record(p: int, replicas: list[int]) -> bytes:   # PartitionRecord v0
    return (bytes([1, 3, 0]) + struct.pack(">i", p) + TOPIC + int32s(replicas) + int32s(replicas) + int32s([])
            + int32s([]) + struct.pack(">iii", replicas[0], 0, 0) + b"\x00")


def fenced(broker: int, how: int) -> bytes:                   # BrokerRegistrationChangeRecord v0, tag 0 = fenced
    return bytes([1, 17, 0]) + struct.pack(">iq", broker, 10) + b"\x01\x00\x01" + struct.pack(">b", how)


def leader_change(leader: int) -> bytes:
    voters = uvarint(4) + b"".join(struct.pack(">i", v) + b"\x00" for v in (1, 2, 3))
    return struct.pack(">hi", 0, leader) + voters + voters + b"\x00"


class FakeCluster:
    broker_ids = [1, 2, 3]
    configs = {"broker.session.timeout.ms": "3000"}

    def __init__(self, directory):
        self.directory = directory

    def metadata_log_dir(self, node):
        return self.directory


@pytest.fixture
def cluster(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    batches = [
        records_batch(0, [record(0, 0, struct.pack(">hh", 0, 2), leader_change(1))], base_ts=T0, attributes=0x20,
                      leader_epoch=1),
        records_batch(1, [record(0, 0, None, topic_record())] +
                      [record(1 + p, 0, None, partition_record(p, r)) for p, r in enumerate([[1, 2, 3], [2, 3, 1], [3, 1, 2]])],
                      base_ts=T0 + 1000, leader_epoch=1),
        # the controller (1) killed at T0 + 10 s: node 2 wins epoch 2 a second later
        records_batch(5, [record(0, 0, struct.pack(">hh", 0, 2), leader_change(2))], base_ts=T0 + 11_000,
                      attributes=0x20, leader_epoch=2),
        records_batch(6, [record(0, 0, None, fenced(1, 1))], base_ts=T0 + 14_000, leader_epoch=2),
        records_batch(7, [record(0, 0, None, fenced(1, -1))], base_ts=T0 + 20_000, leader_epoch=2),
        # broker 3 killed at T0 + 30 s, fenced 2.8 s later
        records_batch(8, [record(0, 0, None, fenced(3, 1))], base_ts=T0 + 32_800, leader_epoch=2),
    ]
    (d / "00000000000000000000.log").write_bytes(b"".join(batches))
    return FakeCluster(str(d))


RIGHT = dict(topic="payments", topic_id=TOPIC_ID, partition_leaders={0: 1, 1: 2, 2: 3}, killed_controller=1,
             killed_controller_at=(T0 + 10_000) / 1000, new_controller=2, new_epoch=2, killed_broker=3,
             killed_broker_at=(T0 + 30_000) / 1000, fenced_offset=8)


def test_right_answers_pass(cluster, capsys):
    lab10.check_10(cluster, **RIGHT)
    out = capsys.readouterr().out
    assert "All checks passed" in out and "✗" not in out


@pytest.mark.parametrize("wrong, says", [
    (dict(topic_id="AAAAAAAAAAAAAAAAAAAAAA"), "the TopicRecord says 'AAECAwQFBgcICQoLDA0ODw'"),
    (dict(partition_leaders={1: 0, 2: 1, 3: 2}), "keys are partition ids, values broker ids"),
    (dict(new_controller=1), "that is the controller you killed"),
    (dict(new_epoch=1), "that is the epoch before the kill"),
    (dict(fenced_offset=7), "fenced: -1 is an unfencing"),
    (dict(fenced_offset=6), "was fenced at offset 8"),
    (dict(topic_id=...), "topic_id is still `...`"),
    (dict(new_epoch=...), "new_epoch is still `...`"),
    (dict(partition_leaders="0:1"), "could not check `partition_leaders`"),
])
def test_wrong_answers_are_named(cluster, capsys, wrong, says):
    with pytest.raises(LabCheckFailed):
        lab10.check_10(cluster, **{**RIGHT, **wrong})
    out = capsys.readouterr().out
    assert says in out
    assert out.count("  ✗ ") == 1                    # only the wrong answer is marked


def test_a_stopped_broker_is_not_a_killed_one(cluster, capsys):
    """Fenced 0.5 s after the 'kill': that was no missed-heartbeat fencing."""
    with pytest.raises(LabCheckFailed):
        lab10.check_10(cluster, **{**RIGHT, "killed_broker_at": (T0 + 32_300) / 1000})
    assert "was the broker killed (SIGKILL), or stopped?" in capsys.readouterr().out
