"""Claims a fact-check found wrong or misleading, and their corrections (Kafka 3.9 for ZooKeeper mode and the
lessons up to 06; Kafka 4.x, librdkafka, Kafka Connect and Confluent's schema registry for lessons 07-10).

Each entry names the file, a phrase of the wrong wording that must not come back, and a phrase of
the correction that must stay, with the source that settles it. Notebooks are searched in all their
cells (a code cell's comment is a claim too), the docs as they are, with whitespace folded (a re-wrapped
line still counts).
"""
from __future__ import annotations

import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (file, wrong wording, corrected wording, the source that settles it)
CLAIMS = [
    ("notebooks/02_producer_acks_and_batching.ipynb",
     "keeps up to five\nrequests in flight",
     "librdkafka's `max.in.flight` defaults to 1,000,000",
     "librdkafka CONFIGURATION.md: max.in.flight.requests.per.connection default 1000000"),
    ("notebooks/03_replication_and_failure.ipynb",
     "| `min.insync.replicas` matters only with `acks=all` | yes (section 7) |",
     "only the refusal (`NOT_ENOUGH_REPLICAS`) is specific to `acks=all`",
     "Partition.scala (KAFKA-15583, 3.7): the high watermark waits while the ISR is below min.insync.replicas"),
    ("notebooks/05_consumer_groups_and_offsets.ipynb",
     "until every member lists cooperative-sticky first",
     "as long as an eager assignor such as\n`RangeAssignor` is anywhere in its list",
     "ConsumerCoordinator.java: the protocol is EAGER if any assignor in the list does not support COOPERATIVE"),
    ("notebooks/03_replication_and_failure.ipynb",
     "(and if the ISR shrinks while the write waits, it\nanswers **`NOT_ENOUGH_REPLICAS_AFTER_APPEND`**)",
     "so the write usually ends in **`REQUEST_TIMED_OUT`**",
     "Partition.checkEnoughReplicasReachOffset: AFTER_APPEND only once the high watermark passed the offset"),
    ("notebooks/03_replication_and_failure.ipynb",
     "One replica is the **leader**: producers write to it and consumers read from it.\n",
     "KIP-392",
     "KIP-392 (Kafka 2.4): fetch from the closest replica, replica.selector.class and client.rack"),
    ("notebooks/03_replication_and_failure.ipynb",
     "before fetching, a follower compares its log with the leader's by\n**leader epoch**",
     "the leader's Fetch response names that\n*diverging epoch*",
     "AbstractFetcherThread.scala: truncation on fetch (diverging epoch, Fetch v12+)"),
    ("notebooks/06_streams_word_count.ipynb",
     "| `toStream().to(...)` with `Serdes.Long()`: every update of the table |",
     "`statestore.cache.max.bytes=0`",
     "WordCountDemo.java sets STATESTORE_CACHE_MAX_BYTES_CONFIG to 0; the default record cache is 10 MB"),
    ("docs/differences.md",
     "otherwise it silently falls back",
     "logs a NOTICE saying so",
     "librdkafka 2.11.1 (#5130): feature checks accept any version from the minimum up"),
    ("docs/differences.md",
     "DescribeCluster with endpoint type 2 (controllers) answers\n  UNSUPPORTED_ENDPOINT_TYPE",
     "MISMATCHED_ENDPOINT_TYPE",
     "AuthHelper.computeDescribeClusterResponse: type 2 on a broker is MISMATCHED_ENDPOINT_TYPE"),
    ("docs/differences.md",
     "Topic creation on any broker writes the assignment to ZooKeeper",
     "answers NOT_CONTROLLER on any other broker",
     "KafkaApis.scala (ZooKeeper mode): CreateTopics only on the active controller"),
    ("docs/differences.md",
     "As in Kafka's `LogSegment.append`, index\nentries are written per batch",
     "adds at most one entry per *call*",
     "LogSegment.java: one index entry per append call"),
    ("docs/differences.md",
     "magic-2 records and rewrites batches with odd offset deltas;",
     "does not check an uncompressed v2 batch's\n  deltas at all",
     "LogValidator.java: only compressed batches are re-assigned"),
    ("docs/differences.md",
     "DescribeCluster 0–2 (confluent-kafka's\n`describe_cluster()` uses Metadata), OffsetForLeaderEpoch",
     "v2 is Kafka 4.x's, 3.9 stops at v1",
     "Kafka 3.9's DescribeCluster is v0-1 (v2: KIP-1073, Kafka 4.x)"),
    ("docs/differences.md",
     "DescribeGroups v0–6, ListGroups v0–5 (states and types filters), DeleteGroups v0–2. Measured:",
     "Kafka 3.9 stops at OffsetCommit v9, OffsetFetch v9, DescribeGroups v5 and DescribeCluster v1",
     "Kafka 3.9's message schemas: OffsetCommit and OffsetFetch validVersions 0-9, DescribeGroups 0-5"),
    ("docs/differences.md",
     "and an entry can point at the last of several batches",
     "pairs the call's largest offset with the file position of the call's *first* batch",
     "LogSegment.append: offsetIndex().append(largestOffset, physicalPosition) once per call"),
    # lessons 07-10, checked against Kafka 4.x, Kafka Connect 3.9 and Confluent's schema registry
    ("docs/schema-registry.md",
     "| 42201 invalid schema, 409 incompatible |",
     "40901 incompatible (HTTP 409)",
     "Confluent schema-registry Errors.java: INCOMPATIBLE_SCHEMA_ERROR_CODE = 40901 (since 8.0.4 / 8.1.2 / 8.2.0)"),
    ("notebooks/08_schemas_and_pipelines.ipynb",
     "assert (refused.http_status_code, refused.error_code) == (409, 409)",
     "HTTP **409** (Conflict) and Confluent's error code **40901**",
     "Confluent schema-registry Errors.java: INCOMPATIBLE_SCHEMA_ERROR_CODE = 40901"),
    ("notebooks/08_schemas_and_pipelines.ipynb",
     "(Confluent's format: `keytype` `SCHEMA`, `CONFIG`, `DELETE_SUBJECT` or `NOOP`)",
     "Confluent's registry has eight key types",
     "Confluent schema-registry SchemaRegistryKeyType: ASSOC, CONFIG, SCHEMA, MODE, NOOP, DELETE_SUBJECT, "
     "CLEAR_SUBJECT, CONTEXT"),
    ("notebooks/08_schemas_and_pipelines.ipynb",
     "`exactly.once.source.support=enabled` (the whole cluster) and, per connector, `exactly.once.support=required`, "
     "a source task's records",
     "`required` only adds a preflight check",
     "Kafka 3.9 DistributedConfig EXACTLY_ONCE_SOURCE_SUPPORT_DOC (preparing, then enabled); SourceConnectorConfig "
     "EXACTLY_ONCE_SUPPORT_DOC (default requested; required forces a preflight check)"),
    ("notebooks/08_schemas_and_pipelines.ipynb",
     "lists the few worker configs the lab changes, e.g. `offset.flush.interval.ms` 1 s instead of 60 s).",
     "`offset.storage.partitions` 5 instead of Kafka's 25",
     "Kafka 3.9 DistributedConfig: offset.storage.partitions 25, status.storage.partitions 5"),
    ("notebooks/08_schemas_and_pipelines.ipynb",
     "but not Protobuf or schema references. ## 5 · Kafka Connect",
     "its compatibility is checked only under `NONE`",
     "docs/schema-registry.md: JSON Schema compatibility only under NONE; Confluent checks it at every level"),
    ("notebooks/07_exactly_once.ipynb",
     "default since Kafka 3.0 / librdkafka's opt-in",
     "not applied in 3.0.0 and 3.1.0 (KAFKA-13598)",
     "KAFKA-13598; ProducerConfig (idempotence only without conflicting configs); Connect's "
     "Worker.baseProducerConfigs sets enable.idempotence=false"),
    ("notebooks/07_exactly_once.ipynb",
     "asks the group coordinator to commit the offsets *as part of the transaction* (AddOffsetsToTxn, TxnOffsetCommit)",
     "AddOffsetsToTxn to the **transaction coordinator**",
     "Kafka 3.9 TransactionManager: AddOffsetsToTxn to the transaction coordinator, TxnOffsetCommit to the group "
     "coordinator"),
    ("notebooks/07_exactly_once.ipynb",
     "34-byte entry per aborted transaction — producer id, first offset",
     "a 2-byte entry version (0), then four 8-byte fields",
     "Kafka 3.9 AbortedTxn.java: VERSION_SIZE 2 + 4 x 8 = TOTAL_SIZE 34"),
    ("notebooks/09_share_groups.ipynb",
     "early access in Kafka 4.0, on by default in Kafka 4.4",
     "production-ready and on by default since 4.2",
     "KIP-932: early access in 4.0, preview in 4.1, production-ready in 4.2; share.version 2 in 4.4"),
    ("notebooks/09_share_groups.ipynb",
     "(Kafka 4.4's ShareGroupConfig: a 30 s acquisition lock,",
     "5 s heartbeats and a 45 s session (GroupCoordinatorConfig's",
     "Kafka 4.x GroupCoordinatorConfig: group.share.session.timeout.ms 45000 (min 45000), "
     "group.share.heartbeat.interval.ms 5000 (min 5000); ShareGroupConfig: record lock 30000 (min 15000)"),
    ("notebooks/10_kraft.ipynb",
     "each is a broker, and each is a **voter** of the Raft quorum listed in `controller.quorum.voters`; the quorum's "
     "elected leader is the **active controller**. Kafka's",
     "`controller.quorum.voters` is the *static* quorum",
     "KIP-853; Kafka 4.x documentation: controller.quorum.bootstrap.servers and dynamic quorums"),
    # the omissions of lessons 07-10, filled: each pins the added claim; where the lesson had no wording of it
    # before, the wrong phrase is the mistake the pin guards against
    ("notebooks/07_exactly_once.ipynb",
     "(the producer tells the coordinator about each new partition: AddPartitionsToTxn)",
     "AddPartitionsToTxn — in transaction version 1, the protocol this lesson shows",
     "Kafka 4.4 Feature/TransactionVersion: transaction.version 2 the default from 4.0 (KIP-890 part 2); a Java 4.x "
     "producer then sends no AddPartitionsToTxn; librdkafka 2.16 sends AddPartitionsToTxn v0, EndTxn v1 (debug log)"),
    ("notebooks/07_exactly_once.ipynb",
     "the mini broker serves transaction version 2",
     "it bumps the epoch only for an EndTxn of version 5 or newer",
     "Kafka 4.x KafkaApis.handleEndTxnRequest: TV_2 only for EndTxn v5+; TransactionMetadata.prepareAbortOrCommit "
     "bumps the epoch for TV_2; the mini broker serves EndTxn v0-4, Produce v3-11"),
    ("notebooks/07_exactly_once.ipynb",
     "verifies each transactional Produce with the coordinator, which is why the zombie",
     "The zombie here was refused by the **first** check",
     "Kafka 3.9 UnifiedLog.maybeStartTransactionVerification: no verification while the partition has a "
     "transaction of the producer id open; Kafka 4.4's UnifiedLog refuses an older epoch before verifying"),
    ("notebooks/07_exactly_once.ipynb",
     "kafkalab's `dump-log` does not decode `.txnindex` files yet",
     "`kafkalab dump-log` prints it too, as Kafka's `kafka-dump-log.sh` does",
     "kafkalab/tools/dump_snapshot.py dump_txn_index; test_transaction_state.py compares it with Kafka 3.9's "
     "DumpLogSegments on the same .txnindex"),
    ("notebooks/07_exactly_once.ipynb",
     "`PrepareEpochFence` is written",
     "`PrepareEpochFence` is held only in\nmemory and never appears in the log",
     "Kafka 3.9 TransactionCoordinator.handleInitProducerId: an Ongoing transaction gets prepareFenceProducerEpoch "
     "(pending state only), then endTransaction(ABORT) appends PrepareAbort with the bumped epoch"),
    ("notebooks/09_share_groups.ipynb",
     "`share.isolation.level` defaults to `read_committed`",
     "its default is **`read_uncommitted`** (Kafka 4.4's `GroupConfig`)",
     "Kafka 4.4 GroupConfig: share.isolation.level default read_uncommitted"),
    ("notebooks/09_share_groups.ipynb",
     "`__share_group_state` is created with one replica",
     "with `share.coordinator.state.topic.replication.factor` replicas (default **3**)",
     "Kafka 4.4 ShareCoordinatorConfig: share.coordinator.state.topic.replication.factor 3, .min.isr 2"),
    ("notebooks/09_share_groups.ipynb",
     "Kafka takes the lab's values as they are",
     "| `group.share.record.lock.duration.ms` 3000 | 30000 | `group.share.min.record.lock.duration.ms` 15000 |",
     "Kafka 4.4 ShareGroupConfig: group.share.min.record.lock.duration.ms 15000; GroupCoordinatorConfig: "
     "group.share.min.session.timeout.ms 45000, group.share.min.heartbeat.interval.ms 5000"),
    ("notebooks/09_share_groups.ipynb",
     "`ShareConsumer` is thread-safe",
     "`ShareConsumer` is a *Preview*, single-threaded and not thread-safe",
     "confluent-kafka-python 2.15.0 release notes; 2.16 ShareConsumer docstring (ConcurrentModificationException)"),
    ("notebooks/08_schemas_and_pipelines.ipynb",
     "Connect's producers are idempotent by default",
     "Connect makes its producers with `enable.idempotence=false`",
     "Kafka 3.9 Worker.baseProducerConfigs: enable.idempotence=false, acks=all, max.in.flight 1"),
    ("notebooks/08_schemas_and_pipelines.ipynb",
     "a sink's consumer reads `read_committed`",
     "A sink's consumer reads `read_uncommitted`.**",
     "Kafka 3.9 Worker.baseConsumerConfigs sets no isolation.level: the Java consumer's default read_uncommitted"),
    ("notebooks/10_kraft.ipynb",
     "4 controllers tolerate 2",
     "a quorum of 3 controllers keeps working with 1 of them dead",
     "Kafka documentation, KRaft > Controllers (#kraft_voter): 3 tolerate 1 failure, 5 tolerate 2"),
    ("notebooks/10_kraft.ipynb",
     "every node of a dynamic quorum is formatted with `--standalone`",
     "`--no-initial-controllers` formats a node that only joins an existing quorum",
     "Kafka 4.4 kafka-storage format --help: --standalone | --no-initial-controllers | --initial-controllers"),
]


def words(text: str) -> str:
    """Whitespace folded to single spaces: a wording is found however its lines are wrapped."""
    return " ".join(text.split())


def text_of(rel: str) -> str:
    path = os.path.join(ROOT, rel)
    if rel.endswith(".ipynb"):
        with open(path) as f:
            nb = json.load(f)
        return words("\n\n".join("".join(c["source"]) for c in nb["cells"]))
    with open(path) as f:
        return words(f.read())


@pytest.mark.parametrize("rel, wrong, right, source", CLAIMS, ids=[f"{c[0].split('/')[-1]}:{c[2][:30]}" for c in CLAIMS])
def test_a_corrected_claim_stays_corrected(rel, wrong, right, source):
    text, wrong, right = text_of(rel), words(wrong), words(right)
    assert wrong not in text, f"{rel} says again what Kafka 3.9 does not do ({source}): {wrong!r}"
    assert right in text, f"{rel} lost its correction ({source}): {right!r}"
