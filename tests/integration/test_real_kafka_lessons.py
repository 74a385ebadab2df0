"""The lessons and lab solutions, held against Apache Kafka 3.9 itself.

Real Kafka is the oracle: a lesson's asserts are claims about Kafka, so they must hold on Kafka's own
brokers, not only on the mini broker. The cluster is the workshop's (docker-compose.yml runs
Confluent's cp-kafka 7.9, which is Apache Kafka 3.9), minus the containers: three Kafka 3.9 JVMs from
``kafkalab fetch-kafka 3.9`` on the lab's real ZooKeeper, each with every broker setting the compose
file gives its brokers, behind :class:`fake_docker.FakeDocker`, whose kill/stop/start act on the JVMs.
A notebook sees it as a notebook in the workshop's JupyterLab container does (``kafkalab.connect()``
returns an :class:`~kafkalab.cluster.external.ExternalCluster`).

Outputs are not compared (``--nbval-lax``: addresses, ids and timings differ); the notebooks' own
asserts on measured data are what must hold. One cluster serves the module; after each notebook it
must be whole again (every broker running and registered).

Lesson 02 injects faults, which only kafkalab's brokers take, into a cluster of its own
(``connect(brokers=3, local=True)``). Its other steps (acks latency, batching, compression, a full buffer
with Kafka's Java producer, a producer shared by threads, the leader's ``request.timeout.ms`` and the
client's ``socket.timeout.ms`` against paused brokers, byte-rate and request quotas) run here on three
Kafka 3.9 brokers of their own (``KAFKALAB_BACKEND=kafka``), without the cells tagged ``kafkalab-only``. Lesson 04's sections 2 to 4 (segments rolled by size and by time, the dump tool on
the segment files, the offset and time indexes, offsetsForTimes) run the same way on one Kafka 3.9
broker of their own, whose files are on this machine; its steps from section 5 on set the broker's
clock (retention and the cleaner run at a chosen time) and are tagged ``kafkalab-only``.

Lesson 05 runs on the shared cluster without its section 14 (KIP-848's consumer protocol: Kafka 4), whose
cells are tagged ``kafka4-only``, and without section 15's two cells that dump the broker's ``__consumer_offsets``
files (tagged ``kafkalab-only``).

Lesson 07 (transactions) runs whole the same way, on one Kafka 3.9 broker of its own, reading Kafka's
own segment and ``.txnindex`` files. Lab 07's solution runs on the shared cluster. Lesson 08 (a schema
registry and Kafka Connect, both clients of Kafka) runs on one Kafka 3.9 broker of its own, without its two cells
that inject a lost response (tagged ``kafkalab-only``); lab 08's solution runs on the shared cluster. Lab 02's solution
runs on three Kafka 3.9 brokers of its own: its drill leaves out the faults, which only kafkalab's
brokers take, but still SIGKILLs the leader mid-stream. Lab 04's steps 1 and 2 run on one Kafka 3.9
broker of its own; its steps 3 to 5 set the broker's clock (tagged ``kafkalab-only``; the test gives
their answers as None), and ``check_04`` lists them as not checked.

Lesson 11 (TLS listeners and ACLs) is not run here yet: it starts embedded mini brokers of its own with SSL
listeners, mutual TLS and ``AclAuthorizer`` (``kafkalab.mini(**configs)``), and reads their connections' principals and
``authorizer_log()``, which a Kafka broker does not give; the compose cluster has no SSL listener.
"""
from __future__ import annotations

import os
import re

import nbformat
import pytest

from tests.helpers.cluster_helpers import restore_brokers
from tests.helpers.fake_docker import (ROOT, ComposeLikeCluster, assert_whole, lesson_03_done_as_expected,
                                      lesson_03_for_external, run_copy, run_nbval)
from kafkalab.cluster import KafkaBackend
from kafkalab.cluster.distribution import fetch_kafka

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def real_compose(tmp_path_factory):
    backend = KafkaBackend(str(fetch_kafka("3.9")))
    lab = ComposeLikeCluster(str(tmp_path_factory.mktemp("real-kafka") / "cluster"), backend=backend)
    try:
        assert lab.cluster.backend.name == "kafka"
        yield lab
    finally:
        lab.close()


@pytest.fixture
def lab(real_compose):
    """The shared cluster, with this test's Docker actions only; it must be whole afterwards."""
    before = len(real_compose.actions())
    yield real_compose, before
    try:
        assert_whole(real_compose)
    finally:   # a lesson that failed half-way leaves brokers down: bring them back, so that the next test starts whole
        restore_brokers(real_compose.cluster, timeout=90)


def _run(notebook: str, lab: ComposeLikeCluster) -> None:
    run, took = run_nbval(os.path.join(ROOT, notebook), lab.jupyter_env(), timeout_s=420)
    assert run.returncode == 0, (f"{notebook} on Kafka 3.9: nbval --nbval-lax failed after {took:.0f} s:\n"
                                 f"{run.stdout[-6000:]}\n{run.stderr[-2000:]}")


def test_the_compose_settings_reach_the_kafka_brokers(lab):
    real, _ = lab
    # what the mini broker lacks (transactions) is set on Kafka's brokers, as the compose file sets it
    assert real.configs["transaction.state.log.min.isr"] == "2"
    assert set(real.skipped) <= {"zookeeper.connect", "listener.security.protocol.map", "inter.broker.listener.name",
                                 "heap.opts", "broker.id", "listeners", "advertised.listeners"}
    props = open(os.path.join(real.cluster.dir, "broker-1.properties")).read()
    assert "zookeeper.session.timeout.ms=6000" in props and "transaction.state.log.min.isr=2" in props


@pytest.mark.parametrize("notebook", [
    "notebooks/00_first_events.ipynb", "notebooks/01_partitions_and_keys.ipynb",
    "labs/00_first_events/solution.ipynb", "labs/01_partitions/solution.ipynb",
    "labs/05_consumer_groups/solution.ipynb",
    "labs/06_word_count/solution.ipynb", "labs/07_exactly_once/solution.ipynb",
    "labs/08_schemas/solution.ipynb",
])
def test_lessons_that_break_nothing_hold_on_kafka(lab, notebook):
    real, before = lab
    _run(notebook, real)
    assert real.actions()[before:] == []


def test_lesson_05_holds_on_kafka_but_its_kafka_4_section(lab, tmp_path):
    """Lesson 05 on the shared cluster, without the cells tagged ``kafka4-only`` (section 14: KIP-848's consumer
    protocol, which Kafka 3.9 does not serve with ZooKeeper) and the two tagged ``kafkalab-only`` (section 15
    reads the broker's ``__consumer_offsets`` files, which the workshop's brokers keep in their containers; the
    same dump of a Kafka 3.9 broker's files is checked by test_offsets_decoder_on_kafka.py)."""
    real, before = lab
    name = "notebooks/05_consumer_groups_and_offsets.ipynb"
    nb = nbformat.read(os.path.join(ROOT, name), as_version=4)
    only = ["kafka4-only" in c.get("metadata", {}).get("tags", []) for c in nb.cells]
    assert sum(only) == 8, f"{name}: {sum(only)} cells tagged kafka4-only, not 8"
    files = ["kafkalab-only" in c.get("metadata", {}).get("tags", []) for c in nb.cells]
    assert sum(files) == 2, f"{name}: {sum(files)} cells tagged kafkalab-only, not 2"
    nb.cells = [c for c, o, f in zip(nb.cells, only, files) if not (o or f)]
    assert not any("dump_log(" in c.source for c in nb.cells if c.cell_type == "code"), \
        "every cell that reads the broker's files is tagged kafkalab-only"
    assert not any("run_protocols(" in c.source or "runs[" in c.source for c in nb.cells if c.cell_type == "code"), \
        "every cell of the consumer protocol's section is tagged kafka4-only"
    copy = tmp_path / "05_consumer_groups_and_offsets_on_kafka_3_9.ipynb"
    nbformat.write(nb, str(copy))
    _run(str(copy), real)
    assert real.actions()[before:] == []


def test_lesson_03_replication_and_failure_holds_on_kafka(lab, tmp_path):
    """Kill the leader, preferred leader election by the controller, a frozen follower leaving the ISR,
    min.insync.replicas, an unclean election losing acknowledged writes, controlled shutdown against a crash, the
    controller failing over: every claim measured on Kafka's own brokers (without the cells that read the brokers'
    files, tagged kafkalab-only: the workshop's brokers keep them in their containers)."""
    real, before = lab
    _run(lesson_03_for_external(str(tmp_path)), real)
    actions = real.actions()[before:]
    done = [(a, b) for a, b, _ in actions]
    assert lesson_03_done_as_expected(done), done
    assert all(q == {"signal": "SIGKILL"} for a, _, q in actions if a == "kill")
    assert all(q == {"t": "30"} for a, _, q in actions if a == "stop")   # compose's stop_grace_period


def test_lab_03_drill_holds_on_kafka(lab):
    real, before = lab
    _run("labs/03_replication/solution.ipynb", real)
    actions = real.actions()[before:]
    assert sorted(a for a, _, _ in actions) == ["kill", "kill", "start", "start", "start", "stop"]
    assert sorted(b for a, b, _ in actions if a == "start") == [1, 2, 3]


def test_lesson_06_word_count_holds_on_kafka(lab):
    """The PySpark word count reads and writes Kafka's own brokers, Kafka Streams' word count (a JVM) runs beside it
    on the same input and folds into the same table, and Spark's own Kafka source reads the same rows as kafkalab's;
    its leader kill is on a cluster of its own."""
    real, before = lab
    _run("notebooks/06_streams_word_count.ipynb", real)
    assert real.actions()[before:] == []


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
