"""``__transaction_state`` (#19): the transaction coordinator's state survives the broker.

* A real broker process SIGKILLed while a transaction is open: restarted, it loads the topic and
  aborts the transaction at its timeout (the LSO moves on), and the producer's next
  InitProducerId gets a higher epoch.
* A broker stopped between PrepareCommit and the markers (the record written as the coordinator
  writes it, then the broker stopped before it sends the markers): the restarted broker writes the
  COMMIT markers and the records become visible to read_committed consumers.
* The records have Kafka's format (``kafkalab dump-log --transaction-log-decoder``), the
  ``.txnindex`` is dumped as Kafka's tool does, the log cleaner keeps it, and idle transactional
  ids expire with a tombstone.
"""
from __future__ import annotations

import glob
import io
import os
import re
import struct
import time

from confluent_kafka import Consumer, Producer, TopicPartition as CTopicPartition
from kafka import KafkaConsumer, TopicPartition
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from tests.helpers import kafka_wire as wire
import kafkalab
from conftest import NO_RETENTION_CHECK
from tests.helpers.txn_helpers import read_committed, wait_stable
from kafkalab.broker.common.records import ABORT, COMMIT, iter_batches, iter_records
from kafkalab.broker.coordinator.transaction.transaction_log import (STATUS_IDS, TRANSACTION_STATE_TOPIC,
                                                                     TransactionLogValue, key_to_bytes,
                                                                     read_key, read_value, value_to_bytes)

WAIT_S = 20
#: a short cleanup interval so a timed-out transaction is aborted within a second; 5 partitions to be quick
FAST = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 300,
        "transaction.state.log.num.partitions": 5, "num.partitions": 1, **NO_RETENTION_CHECK}


def read_dir(path):
    """[(header, [records])] of every segment of a partition directory, read from the files."""
    out = []
    for seg in sorted(glob.glob(os.path.join(path, "*.log"))):
        data = open(seg, "rb").read()
        for pos, h in iter_batches(data, strict=False):
            out.append((h, list(iter_records(memoryview(data)[pos:pos + h.size]))))
    return out


def marker_types(path):
    return [struct.unpack(">hh", recs[0].key)[1] for h, recs in read_dir(path) if h.is_control]


def committed_end(bootstrap, topic):
    """The partition's end offset for a read_committed consumer: its last stable offset (ListOffsets)."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed", request_timeout_ms=10000)
    try:
        return c.end_offsets([TopicPartition(topic, 0)])[TopicPartition(topic, 0)]
    finally:
        c.close()


def init_producer_id(bootstrap, txn_id, timeout_ms=3000):
    return wire.call(bootstrap, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout_ms,
                                                      producer_id=-1, producer_epoch=-1), InitProducerIdResponse, 4)


def test_sigkill_mid_transaction_then_restart_aborts_it(broker_process, tmp_path):
    bp = broker_process(str(tmp_path / "b"), configs=FAST).start()
    topic = "txn-crash"
    p = Producer({"bootstrap.servers": bp.bootstrap_servers, "transactional.id": "tx-crash",
                  "transaction.timeout.ms": 8000, "linger.ms": 5})
    p.init_transactions(WAIT_S)
    p.begin_transaction()
    p.produce(topic, b"before-commit", partition=0)
    p.commit_transaction(WAIT_S)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, b"open-%d" % i, partition=0)
    p.flush(WAIT_S)
    assert committed_end(bp.bootstrap_servers, topic) == 2      # held back by the open transaction

    bp.kill()                                                    # SIGKILL mid-transaction
    killed_at = time.monotonic()
    txn_dirs = glob.glob(os.path.join(bp.log_dir, TRANSACTION_STATE_TOPIC + "-*"))
    assert len(txn_dirs) == 5
    # what the coordinator wrote before dying: Empty, Ongoing, PrepareCommit, CompleteCommit, Ongoing
    states = [read_value(r.value).state_name for d in txn_dirs for h, recs in read_dir(d) for r in recs
              if read_key(r.key) == "tx-crash"]
    assert states == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing"]
    del p   # the old producer instance is gone with its broker

    bp.start()
    data_dir = os.path.join(bp.log_dir, f"{topic}-0")
    # recovery rebuilt the open transaction (producer snapshot + the log after it): the LSO is held again
    assert marker_types(data_dir) == [COMMIT]
    assert committed_end(bp.bootstrap_servers, topic) == 2
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and marker_types(data_dir) != [COMMIT, ABORT]:
        time.sleep(0.2)
    assert marker_types(data_dir) == [COMMIT, ABORT], bp.stderr_text()[-3000:]
    # aborted at its timeout (8 s from its start), not hanging: the LSO is the log end again
    assert time.monotonic() - killed_at < 20
    assert committed_end(bp.bootstrap_servers, topic) == 6       # 1 + marker + 3 + marker
    assert read_committed(bp.bootstrap_servers, topic, expected=1) == [b"before-commit"]

    batches = read_dir(data_dir)
    data_epoch = [h.producer_epoch for h, _ in batches if not h.is_control][-1]
    abort_epoch = [h.producer_epoch for h, _ in batches if h.is_control][-1]
    pid = batches[0][0].producer_id
    assert abort_epoch == data_epoch + 1                         # the zombie is fenced by the abort
    again = init_producer_id(bp.bootstrap_servers, "tx-crash")
    assert (again.error_code, again.producer_id) == (0, pid)     # the same producer id, remembered
    assert again.producer_epoch > abort_epoch


def _ongoing(broker, topic, txn_id):
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": txn_id, "linger.ms": 5})
    p.init_transactions(WAIT_S)
    p.begin_transaction()
    for i in range(2):
        p.produce(topic, b"%s-%d" % (txn_id.encode(), i), partition=0)
    p.flush(WAIT_S)
    return p


def test_prepared_transactions_complete_on_load_and_files_decode(tmp_path):
    """A broker stopped after writing PrepareCommit / PrepareAbort but before the markers (the
    records written as the coordinator writes them, then the broker closed without the markers):
    the next start writes the markers. Also: dump-log's decoders, the cleaner and expiry."""
    from kafkalab.tools.dump_log import dump_files
    log_dir = str(tmp_path / "b")
    topics = {"txn-prep-commit": "tx-prep-commit", "txn-prep-abort": "tx-prep-abort"}
    with kafkalab.mini(log_dir=log_dir, **FAST) as b:
        for topic, txn_id in topics.items():
            b.call(lambda t=topic: b.server.admin_manager.create_topic(t, 1, 1, {}))
            p = _ongoing(b, topic, txn_id)
            # consumer offsets in the transaction (TxnOffsetCommit): written at once, in a transactional batch
            group = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": f"g-{txn_id}"})
            p.send_offsets_to_transaction([CTopicPartition(topic, 0, 2)], group.consumer_group_metadata(), WAIT_S)
            group.close()
        coordinator = b.server.transaction_coordinator

        async def prepare():   # what EndTxn writes before the markers (TransactionCoordinator._complete)
            for txn_id, state in (("tx-prep-commit", "PrepareCommit"), ("tx-prep-abort", "PrepareAbort")):
                meta = coordinator.state_manager.get(txn_id)
                await coordinator.state_manager.append_transaction_to_log(
                    meta, meta.prepare_transition(type(meta.state)(state)))
        b.call(prepare)
        assert b.call(lambda: b.server.replica_manager.get_partition("txn-prep-commit", 0).log.last_stable_offset) == 0
    # closed cleanly but with no markers written: the partitions still hold open transactions
    assert marker_types(os.path.join(log_dir, "txn-prep-commit-0")) == []

    with kafkalab.mini(log_dir=log_dir, **FAST) as b:
        assert marker_types(os.path.join(log_dir, "txn-prep-commit-0")) == [COMMIT]
        assert marker_types(os.path.join(log_dir, "txn-prep-abort-0")) == [ABORT]
        assert sorted(read_committed(b.bootstrap_servers, "txn-prep-commit", expected=2)) == [
            b"tx-prep-commit-0", b"tx-prep-commit-1"]
        assert read_committed(b.bootstrap_servers, "txn-prep-abort", expected=0, timeout_s=1) == []
        states = b.call(lambda: {t: str(b.server.transaction_coordinator.state_manager.get(t).state)
                                 for t in topics.values()})
        assert states == {"tx-prep-commit": "CompleteCommit", "tx-prep-abort": "CompleteAbort"}
        # the offsets sent in the transaction were loaded as pending, and the markers decided them
        offsets = b.call(lambda: {t: b.server.group_coordinator.fetch_offsets(f"g-{t}", [(topic, 0)])[(topic, 0)]
                                  for topic, t in topics.items()})
        assert offsets["tx-prep-commit"].offset == 2 and offsets["tx-prep-abort"] is None

        # dump-log: __transaction_state records decoded, markers shown, .txnindex read
        coordinator = b.server.transaction_coordinator
        part = b.call(lambda: coordinator.state_manager.partition_for("tx-prep-abort"))
        seg = glob.glob(os.path.join(log_dir, f"{TRANSACTION_STATE_TOPIC}-{part}", "*.log"))[0]
        out = io.StringIO()
        assert dump_files([seg], print_data_log=True, transaction_log_decoder=True, file=out)
        text = out.getvalue()
        assert "key: transaction_metadata::transactionalId=tx-prep-abort payload: producerId:" in text
        assert re.search(r"state=PrepareAbort,partitions=\[__consumer_offsets-\d+,txn-prep-abort-0\]", text), text
        assert "state=CompleteAbort,partitions=[]" in text
        [txnindex] = glob.glob(os.path.join(log_dir, "txn-prep-abort-0", "*.txnindex"))
        out = io.StringIO()
        assert dump_files([txnindex], print_data_log=False, file=out)
        assert "version: 0 producerId:" in out.getvalue() and "firstOffset: 0 lastOffset: 2 lastStableOffset: 3" \
            in out.getvalue()

        # an idle transactional id expires: a tombstone, and the id is forgotten
        b.server.config.set("transactional.id.expiration.ms", 1)
        time.sleep(0.01)
        assert b.call(coordinator.remove_expired_transactional_ids) == 2
        assert b.call(lambda: coordinator.state_manager.get("tx-prep-abort")) is None
        recs = [r for h, rs in read_dir(os.path.dirname(seg)) for r in rs if read_key(r.key) == "tx-prep-abort"]
        assert recs[-1].value is None

    with kafkalab.mini(log_dir=log_dir, **FAST) as b:   # the tombstone wins on load
        assert b.call(lambda: b.server.transaction_coordinator.state_manager.get("tx-prep-abort")) is None


def test_transaction_log_records_have_kafkas_layout():
    """Byte for byte what Kafka 3.9's TransactionLog writes (TransactionLogKey v0, TransactionLogValue v0)."""
    key = key_to_bytes("tx")
    assert key == b"\x00\x00" + b"\x00\x02tx"
    value = TransactionLogValue(7, 3, 60000, STATUS_IDS["Ongoing"], {"t": [1, 0]}, 1700000000001, 1700000000000)
    data = value_to_bytes(value)
    assert data == (struct.pack(">hqhib", 0, 7, 3, 60000, 1) + struct.pack(">i", 1) + b"\x00\x01t"
                    + struct.pack(">iii", 2, 0, 1) + struct.pack(">qq", 1700000000001, 1700000000000))
    assert read_value(data).topic_partitions == {("t", 0), ("t", 1)}
    empty = value_to_bytes(TransactionLogValue(7, 4, 60000, STATUS_IDS["Empty"], None, 1, -1))
    assert empty[17:21] == b"\xff\xff\xff\xff" and read_value(empty).transaction_partitions is None
    # version 1 (flexible, Kafka 4): compact arrays and strings, tagged fields skipped
    v1 = (struct.pack(">hqhib", 1, 7, 3, 60000, 1) + bytes([2, 2]) + b"t" + bytes([2]) + struct.pack(">i", 5)
          + b"\x00" + struct.pack(">qq", 11, 10) + bytes([1, 2, 1, 9]))
    assert read_value(v1) == TransactionLogValue(7, 3, 60000, 1, {"t": [5]}, 11, 10)


def test_kafkas_dump_tool_reads_the_files_as_kafkalab_does(tmp_path):
    """Kafka 3.9's own DumpLogSegments (``kafka-dump-log.sh``) on a mini broker's ``__transaction_state``
    segment (``--transaction-log-decoder``), ``.txnindex`` and markers prints exactly what
    ``kafkalab dump-log`` prints."""
    import subprocess

    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.tools.dump_log import dump_files
    home = fetch_kafka("3.9")
    log_dir = str(tmp_path / "b")
    with kafkalab.mini(log_dir=log_dir, **FAST) as b:
        b.call(lambda: b.server.admin_manager.create_topic("txn-dump", 1, 1, {}))
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "transactional.id": "tx-dump", "linger.ms": 5})
        p.init_transactions(WAIT_S)
        for end in (p.commit_transaction, p.abort_transaction):
            p.begin_transaction()
            p.produce("txn-dump", b"v", partition=0)
            p.flush(WAIT_S)
            end(WAIT_S)
        wait_stable(b.bootstrap_servers, "txn-dump")   # the ABORT marker follows EndTxn's answer, as on Kafka
        part = b.call(lambda: b.server.transaction_coordinator.state_manager.partition_for("tx-dump"))
    files = [glob.glob(os.path.join(log_dir, f"{TRANSACTION_STATE_TOPIC}-{part}", "*.log"))[0],
             os.path.join(log_dir, "txn-dump-0", "00000000000000000000.txnindex"),
             os.path.join(log_dir, "txn-dump-0", "00000000000000000000.log")]
    def kafka_dump(*args):
        out = subprocess.run(["java", "-cp", str(home / "libs" / "*"), "kafka.tools.DumpLogSegments", *args],
                             capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    ours = io.StringIO()
    dump_files(files[:2], print_data_log=True, transaction_log_decoder=True, file=ours)
    theirs = kafka_dump("--transaction-log-decoder", "--print-data-log", "--files", ",".join(files[:2]))
    assert theirs == ours.getvalue().splitlines()
    assert sum("state=" in line for line in theirs) == 7         # Empty, 2 x (Ongoing, Prepare..., Complete...)
    assert sum(line.startswith("version: 0 producerId:") for line in theirs) == 1   # the aborted one
    ours = io.StringIO()
    dump_files(files[2:], print_data_log=False, deep_iteration=True, file=ours)
    assert kafka_dump("--deep-iteration", "--files", files[2]) == ours.getvalue().splitlines()
    text = ours.getvalue()
    assert "endTxnMarker: COMMIT coordinatorEpoch: 0" in text and "endTxnMarker: ABORT coordinatorEpoch: 0" in text


def test_kafkas_dump_tool_prints_a_transactions_partitions_in_kafkalabs_order(tmp_path):
    """A transaction over many partitions and the group's ``__consumer_offsets`` partition: Kafka 3.9's
    DumpLogSegments prints its partitions in its Scala HashSet's order, and ``kafkalab dump-log`` the same."""
    import subprocess

    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.tools.dump_log import dump_files
    home = fetch_kafka("3.9")
    log_dir = str(tmp_path / "b")
    with kafkalab.mini(log_dir=log_dir, **FAST) as b:
        for topic, count in (("alpha", 7), ("orders-copied", 1), ("zz", 13)):
            b.call(lambda t=topic, n=count: b.server.admin_manager.create_topic(t, n, 1, {}))
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "transactional.id": "tx-many", "linger.ms": 5})
        p.init_transactions(WAIT_S)
        group = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "g-many"})
        for parts in ([("alpha", i) for i in range(7)] + [("orders-copied", 0)], [("zz", i) for i in range(13)]):
            p.begin_transaction()
            for topic, i in parts:
                p.produce(topic, b"v", partition=i)
            p.flush(WAIT_S)
            p.send_offsets_to_transaction([CTopicPartition("alpha", 0, 1)], group.consumer_group_metadata(), WAIT_S)
            p.commit_transaction(WAIT_S)
        group.close()
        wait_stable(b.bootstrap_servers, "orders-copied")
        part = b.call(lambda: b.server.transaction_coordinator.state_manager.partition_for("tx-many"))
    [segment] = glob.glob(os.path.join(log_dir, f"{TRANSACTION_STATE_TOPIC}-{part}", "*.log"))
    ours = io.StringIO()
    dump_files([segment], print_data_log=True, transaction_log_decoder=True, file=ours)
    theirs = subprocess.run(["java", "-cp", str(home / "libs" / "*"), "kafka.tools.DumpLogSegments",
                             "--transaction-log-decoder", "--print-data-log", "--files", segment],
                            capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert theirs.returncode == 0, theirs.stderr
    assert theirs.stdout.splitlines() == ours.getvalue().splitlines()
    printed = re.findall(r"partitions=\[([^\]]*)\]", theirs.stdout)
    assert max(p.count(",") + 1 for p in printed) == 14                  # zz's 13 and __consumer_offsets
    assert any(p != ",".join(sorted(p.split(","))) for p in printed)     # not sorted: the set's own order


def test_compaction_keeps_the_txnindex(tmp_path):
    """The cleaner rewrites segments holding an aborted transaction: the cleaned segment keeps its
    ``.txnindex`` entry, so after a restart read_committed consumers still skip the aborted records;
    and it never cleans past the last stable offset (an open transaction's records stay)."""
    log_dir = str(tmp_path / "b")
    topic = "txn-compacted"
    with kafkalab.mini(log_dir=log_dir, **FAST) as b:
        b.call(lambda: b.server.admin_manager.create_topic(
            topic, 1, 1, {"cleanup.policy": "compact", "segment.bytes": "200"}))   # a segment per batch or two
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "transactional.id": "tx-compact", "linger.ms": 0})
        p.init_transactions(WAIT_S)
        for i, end in enumerate((p.abort_transaction, p.commit_transaction, p.commit_transaction)):
            p.begin_transaction()
            p.produce(topic, key=b"k%d" % i, value=b"aborted" if i == 0 else b"v%d" % i, partition=0)
            p.flush(WAIT_S)
            end(WAIT_S)
        p.begin_transaction()                                    # one left open: above the LSO
        p.produce(topic, key=b"k0", value=b"open", partition=0)
        p.flush(WAIT_S)
        ulog = b.server.replica_manager.get_partition(topic, 0).log
        before = b.call(lambda: (len(ulog.segments), ulog.last_stable_offset, list(ulog.aborted_txns)))
        assert before[0] >= 3 and len(before[2]) == 1
        stats = b.call(b.server.log_manager.run_cleaner, None, True)
        [mine] = [s for s in stats if s.topic == topic]
        assert mine.segments_before >= 2                         # rewritten, the aborted transaction's one too
        # the open transaction's record is still there, above what was cleaned
        assert mine.end_offset == before[1]
        p.abort_transaction(WAIT_S)
        wait_stable(b.bootstrap_servers, topic)   # its ABORT marker (and .txnindex entry) follows EndTxn's answer
    sizes = [os.path.getsize(f) for f in glob.glob(os.path.join(log_dir, f"{topic}-0", "*.txnindex"))]
    assert sum(sizes) == 2 * 34                                  # the first abort, and the last one
    with kafkalab.mini(log_dir=log_dir, **FAST) as b:
        assert sorted(read_committed(b.bootstrap_servers, topic, expected=2)) == [b"v1", b"v2"]
