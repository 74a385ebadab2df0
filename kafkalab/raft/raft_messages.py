"""The KRaft quorum's RPCs as kafka-python message classes (Kafka's ``org.apache.kafka.raft.RaftUtil`` builds them).

=================  ====  ======  ===================================================
message            key   served  who sends it
=================  ====  ======  ===================================================
Fetch                1   v17     followers and observers -> the leader (KIP-595: Raft's
                                 AppendEntries turned around: the followers pull)
Vote                52   v0-2    a prospective (pre-vote, v2) or a candidate -> every voter
BeginQuorumEpoch    53   v0      a new leader -> every voter
EndQuorumEpoch      54   v0      a resigning leader -> every voter
DescribeQuorum      55   v2      a tool (``kafka-metadata-quorum.sh``) -> the leader
=================  ====  ======  ===================================================

Every RPC a replica answers is registered in ``RAFT_APIS`` beside its handler, as the broker's APIs
are (:mod:`kafkalab.broker.apis`). Fetch and DescribeQuorum are kafka-python's; Vote, BeginQuorumEpoch and
EndQuorumEpoch are
kafkalab's schemas in ``schemas/`` (version 0, what a static quorum needs; Vote up to v2 for KIP-996's pre-vote,
its v1 fields, KIP-853's directory ids, left empty). Each carries one
topic, ``__cluster_metadata``, with one partition, 0; Fetch v13+ names it by its topic id, Kafka's
``Uuid.METADATA_TOPIC_ID`` (``AAAAAAAAAAAAAAAAAAAAAQ``).
"""
from __future__ import annotations

import uuid

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import FetchRequest, FetchResponse  # noqa: F401 (re-exported)
from kafka.protocol.admin import DescribeQuorumRequest, DescribeQuorumResponse  # noqa: F401

from ..broker.apis import ApiRegistry
from . import schemas

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
#: Kafka's Uuid.METADATA_TOPIC_ID: the uuid (0, 1)
METADATA_TOPIC_ID = uuid.UUID(int=1)
FETCH_VERSION = 17
VOTE_VERSION = 2
BEGIN_QUORUM_EPOCH_VERSION = 0
END_QUORUM_EPOCH_VERSION = 0
DESCRIBE_QUORUM_VERSION = 2

#: the quorum's APIs (api key -> ApiSpec), registered with ``@RAFT_APIS.api`` beside their handlers
#: (:mod:`kafkalab.raft.raft_apis`, :mod:`kafkalab.raft.fetch_snapshot`); each handler takes the
#: replica (``KafkaRaftClient``) and the request
RAFT_APIS = ApiRegistry()


class VoteRequest(ApiMessage, load_json=schemas): pass
class VoteResponse(ApiMessage, load_json=schemas): pass

class BeginQuorumEpochRequest(ApiMessage, load_json=schemas): pass
class BeginQuorumEpochResponse(ApiMessage, load_json=schemas): pass

class EndQuorumEpochRequest(ApiMessage, load_json=schemas): pass
class EndQuorumEpochResponse(ApiMessage, load_json=schemas): pass


def single_partition(response_or_request, topic_field: str = "topics"):
    """The one partition entry of a quorum RPC (``__cluster_metadata``-0), or None if it has none."""
    for topic in getattr(response_or_request, topic_field) or ():
        for partition in topic.partitions or ():
            return partition
    return None
