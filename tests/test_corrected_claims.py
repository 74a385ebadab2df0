"""Claims a fact-check against Kafka 3.9 found wrong or misleading, and their corrections.

Each entry names the file, a phrase of the wrong wording that must not come back, and a phrase of
the correction that must stay, with the source that settles it. Notebooks are searched in their
markdown cells, the docs as they are, with whitespace folded (a re-wrapped line still counts).
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
]


def words(text: str) -> str:
    """Whitespace folded to single spaces: a wording is found however its lines are wrapped."""
    return " ".join(text.split())


def text_of(rel: str) -> str:
    path = os.path.join(ROOT, rel)
    if rel.endswith(".ipynb"):
        with open(path) as f:
            nb = json.load(f)
        return words("\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"))
    with open(path) as f:
        return words(f.read())


@pytest.mark.parametrize("rel, wrong, right, source", CLAIMS, ids=[f"{c[0].split('/')[-1]}:{c[2][:30]}" for c in CLAIMS])
def test_a_corrected_claim_stays_corrected(rel, wrong, right, source):
    text, wrong, right = text_of(rel), words(wrong), words(right)
    assert wrong not in text, f"{rel} says again what Kafka 3.9 does not do ({source}): {wrong!r}"
    assert right in text, f"{rel} lost its correction ({source}): {right!r}"
