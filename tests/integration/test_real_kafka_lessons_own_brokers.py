"""The lessons and labs that need Kafka 3.9 brokers of their own, held against Apache Kafka 3.9 itself.

The companion of ``test_real_kafka_lessons.py`` (which runs the lessons that share the workshop-like cluster),
split from it so that the two test workers share the load. Each notebook here is run by nbval with
``KAFKALAB_BACKEND=kafka``: ``kafkalab.connect()`` starts Kafka 3.9 brokers of the notebook's own, minus the cells
tagged ``kafkalab-only`` (what only kafkalab's brokers do), with a cell that checks the brokers really are Kafka's.

Lesson 02 injects faults, which only kafkalab's brokers take, into a cluster of its own
(``connect(brokers=3, local=True)``). Its other steps (acks latency, batching, compression, a full buffer
with Kafka's Java producer, a producer shared by threads, the leader's ``request.timeout.ms`` and the
client's ``socket.timeout.ms`` against paused brokers, byte-rate and request quotas) run here on three
Kafka 3.9 brokers of their own. Lesson 04's sections 2 to 4 (segments rolled by size and by time, the dump
tool on the segment files, the offset and time indexes, offsetsForTimes) run the same way on one Kafka 3.9
broker of their own, whose files are on this machine; its steps from section 5 on set the broker's
clock (retention and the cleaner run at a chosen time) and are tagged ``kafkalab-only``.

Lesson 07 (transactions) runs whole the same way, on one Kafka 3.9 broker of its own, reading Kafka's
own segment and ``.txnindex`` files. Lesson 08 (a schema registry and Kafka Connect, both clients of Kafka)
runs on one Kafka 3.9 broker of its own, without its two cells that inject a lost response (tagged
``kafkalab-only``). Lab 02's solution runs on three Kafka 3.9 brokers of its own: its drill leaves out the
faults, which only kafkalab's brokers take, but still SIGKILLs the leader mid-stream. Lab 04's steps 1 and 2
run on one Kafka 3.9 broker of its own; its steps 3 to 5 set the broker's clock (tagged ``kafkalab-only``;
the test gives their answers as None), and ``check_04`` lists them as not checked.
"""
from __future__ import annotations

import os
import re

import nbformat
import pytest

from tests.helpers.fake_docker import ROOT, run_copy
from kafkalab.cluster.distribution import fetch_kafka

pytestmark = pytest.mark.cluster


def _without_kafkalab_only(name: str, tagged: int, is_kafka: str, tmp_path):
    """The notebook minus its cells tagged kafkalab-only (there must be ``tagged`` of them), with the cell
    ``is_kafka`` after its first assert, run by nbval with ``KAFKALAB_BACKEND=kafka``."""
    fetch_kafka("3.9")      # what KafkaBackend() finds
    nb = nbformat.read(os.path.join(ROOT, name), as_version=4)
    only = ["kafkalab-only" in c.get("metadata", {}).get("tags", []) for c in nb.cells]
    assert sum(only) == tagged, f"{name}: {sum(only)} cells tagged kafkalab-only, not {tagged}"
    kept = [c for c, o in zip(nb.cells, only) if not o]
    nb.cells = kept
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    after = next((i for i in code if nb.cells[i].source.startswith("assert")), code[0])   # a lab: its setup cell
    nb.cells.insert(after + 1, nbformat.v4.new_code_cell(is_kafka))
    run_copy(nb, name, tmp_path, "on_kafka", "on Kafka 3.9", KAFKALAB_BACKEND="kafka")
    return kept


def test_lesson_02_steps_without_fault_injection_hold_on_kafka(tmp_path):
    """acks latency, batching, compression ratios, a full buffer, threads sharing a producer, timeouts against
    paused brokers, producer and request quotas, on Kafka's own brokers: lesson 02 minus the cells tagged
    kafkalab-only, with a cell that checks the brokers really are Kafka's."""
    kept = _without_kafkalab_only(
        "notebooks/02_producer_acks_and_batching.ipynb", 15,
        'assert cluster.backend.name == "kafka" and "kafka.Kafka" in psutil.Process(int(cluster.brokers["pid"][0])).cmdline()',
        tmp_path)
    assert not any("inject_fault" in c.source for c in kept if c.cell_type == "code"), \
        "every cell that injects a fault is tagged kafkalab-only"


def test_lesson_04_segments_and_indexes_hold_on_kafka(tmp_path):
    """Segments rolled by segment.bytes and segment.ms, the dump tool on Kafka's own segment files, the offset
    and time indexes and offsetsForTimes, on one Kafka 3.9 broker: lesson 04 minus the cells that set the
    broker's clock (tagged kafkalab-only)."""
    kept = _without_kafkalab_only(
        "notebooks/04_retention_and_segments.ipynb", 33,
        'import psutil\nassert kafka.broker is None and kafka.cluster.backend.name == "kafka" and '
        '"kafka.Kafka" in psutil.Process(int(kafka.cluster.brokers["pid"][0])).cmdline()',
        tmp_path)
    assert not any(re.search(r"(?<!def )\b(cleanup_logs|run_cleaner|dirty_state)\(", c.source)
                   for c in kept if c.cell_type == "code"), \
        "every cell that runs retention or the cleaner at a chosen time is tagged kafkalab-only"


KAFKA_BROKER = ('import psutil\nassert kafka.broker is None and kafka.cluster.backend.name == "kafka" and '
                '"kafka.Kafka" in psutil.Process(int(kafka.cluster.brokers["pid"][0])).cmdline()')


def test_lesson_07_exactly_once_holds_on_kafka(tmp_path):
    """read_committed against read_uncommitted and the LSO, the control batches and the .txnindex in Kafka's own
    files, a copier SIGKILLed mid-transaction, a zombie fenced, the cost: lesson 07 on one Kafka 3.9 broker."""
    _without_kafkalab_only("notebooks/07_exactly_once.ipynb", 0, KAFKA_BROKER, tmp_path)


def test_lesson_08_schemas_and_pipelines_hold_on_kafka(tmp_path):
    """The registry's _schemas topic, the Avro wire format in Kafka's own segment file, compatibility, old and new
    readers; Kafka Connect's workers, a worker SIGKILLed, source offsets and what is sent twice, Spark's word count
    over the pipeline, a sink's consumer reading an aborted line and one with read_committed skipping it: lesson 08
    on one Kafka 3.9 broker of its own, without its two cells that count a retry of Connect's producer (a fault
    injected: tagged kafkalab-only)."""
    kept = _without_kafkalab_only("notebooks/08_schemas_and_pipelines.ipynb", 2, KAFKA_BROKER, tmp_path)
    assert not any("inject_fault" in c.source for c in kept if c.cell_type == "code"), \
        "every cell that injects a fault is tagged kafkalab-only"


def test_lab_02_solution_holds_on_kafka(tmp_path):
    """Lab 02's drill on three Kafka 3.9 brokers of its own: without the faults only kafkalab's brokers take (the
    drill says so), but with its leader SIGKILLed mid-stream; the solution's settings lose and duplicate nothing,
    and check_02 passes."""
    _without_kafkalab_only(
        "labs/02_producer/solution.ipynb", 0,
        'import psutil\nassert kafka.cluster.backend.name == "kafka" and len(kafka.cluster.broker_ids) == 3 and '
        '"kafka.Kafka" in psutil.Process(int(kafka.cluster.brokers["pid"][0])).cmdline()',
        tmp_path)


def test_lab_04_segments_hold_on_kafka(tmp_path):
    """Lab 04's steps 1 and 2 (a topic with small segments, offset 30 found in Kafka's own segment files) on one
    Kafka 3.9 broker, checked by check_04 on Kafka's files and configs; its steps 3 to 5 set the broker's clock
    (tagged kafkalab-only), so their answers are absent and check_04 lists them as not checked."""
    kept = _without_kafkalab_only(
        "labs/04_retention/solution.ipynb", 3,
        KAFKA_BROKER + "\nlog_start = first_offset_read = prices = latest_prices = None   # steps 3 to 5: not run",
        tmp_path)
    assert not any(re.search(r"(?<!def )\b(cleanup_logs|run_cleaner)\(", c.source) for c in kept if c.cell_type == "code"), \
        "every cell that runs retention or the cleaner at a chosen time is tagged kafkalab-only"
