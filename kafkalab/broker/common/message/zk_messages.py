"""The ZooKeeper-era inter-broker messages, which kafka-python's codec does not ship.

In ZooKeeper mode Kafka's controller (one broker, elected through the
``/controller`` znode) drives the other brokers with three requests, and
brokers answer back with two:

===================  ====  ======  ==========================================
message              key   served  direction
===================  ====  ======  ==========================================
LeaderAndIsr           4   v7      controller -> replicas of some partitions
StopReplica            5   v4      controller -> replicas (stop, maybe delete)
UpdateMetadata         6   v8      controller -> every live broker
ControlledShutdown     7   v3      stopping broker -> controller
AlterPartition        56   v1      partition leader -> controller (ISR change)
===================  ====  ======  ==========================================

The schemas in ``schemas/*.json`` are written in Kafka's message-JSON format
(which kafka-python's ``ApiMessage`` reads), but declare only the version the
mini broker serves. Field names are Kafka's, in snake_case
(``controller_epoch``, ``partition_states``...). Build them like any other
message with :func:`kafkalab.broker.common.message.codec.build`.

One rename: Kafka's field ``Type`` (LeaderAndIsr, UpdateMetadata: full or
incremental, used only by KRaft migration) is called ``request_type`` here,
because a field named ``type`` would hide kafka-python's ``ApiMessage.type``
("request"/"response"). The wire format is unchanged.
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from . import schemas

LEADER_AND_ISR_VERSION = 7
STOP_REPLICA_VERSION = 4
UPDATE_METADATA_VERSION = 8
CONTROLLED_SHUTDOWN_VERSION = 3
ALTER_PARTITION_VERSION = 1


class LeaderAndIsrRequest(ApiMessage, load_json=schemas): pass
class LeaderAndIsrResponse(ApiMessage, load_json=schemas): pass

class StopReplicaRequest(ApiMessage, load_json=schemas): pass
class StopReplicaResponse(ApiMessage, load_json=schemas): pass

class UpdateMetadataRequest(ApiMessage, load_json=schemas): pass
class UpdateMetadataResponse(ApiMessage, load_json=schemas): pass

class ControlledShutdownRequest(ApiMessage, load_json=schemas): pass
class ControlledShutdownResponse(ApiMessage, load_json=schemas): pass

class AlterPartitionRequest(ApiMessage, load_json=schemas): pass
class AlterPartitionResponse(ApiMessage, load_json=schemas): pass


__all__ = [
    "LeaderAndIsrRequest", "LeaderAndIsrResponse",
    "StopReplicaRequest", "StopReplicaResponse",
    "UpdateMetadataRequest", "UpdateMetadataResponse",
    "ControlledShutdownRequest", "ControlledShutdownResponse",
    "AlterPartitionRequest", "AlterPartitionResponse",
    "LEADER_AND_ISR_VERSION", "STOP_REPLICA_VERSION", "UPDATE_METADATA_VERSION",
    "CONTROLLED_SHUTDOWN_VERSION", "ALTER_PARTITION_VERSION",
]
