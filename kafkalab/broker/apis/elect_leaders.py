"""ElectLeaders (key 43), versions 0-2: elect the preferred (or, unclean, any live) replica as leader.

What ``kafka-leader-election.sh`` and ``AdminClient.perform_leader_election``
send, to the controller. Election type 0 (PREFERRED) moves leadership back to
the first assigned replica if it is live and in the ISR; type 1 (UNCLEAN)
gives a leaderless partition the first live replica even if it is not in the
ISR (records may be lost). A null partition list means every partition.

v0   preferred elections only; no top-level error code
v1   + ElectionType (KIP-460), top-level ErrorCode
v2   flexible
Per-partition errors: ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION. NOT_CONTROLLER when
this broker is not the active controller (a standalone broker has none).
A KRaft broker never gets here: its forwarding manager sends the request, whole,
in an Envelope to the active controller (kafkalab/kraft/forwarding_manager.py),
which elects (kafkalab.controller.controller_apis.handle_elect_leaders).
Not implemented: TimeoutMs (the election is done before answering).
"""
from __future__ import annotations

from kafka.protocol.admin.topics import ElectLeadersRequest, ElectLeadersResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, authorize_cluster
from . import api

PREFERRED = 0


def _error_response(request, code):
    results = []
    for t in request.topic_partitions or []:
        results.append({"topic": t.topic, "partition_result": [
            {"partition_id": p, "error_code": int(code), "error_message": code.name} for p in t.partitions]})
    return {"throttle_time_ms": 0, "error_code": int(code), "replica_election_results": results}


@api(ElectLeadersRequest, ElectLeadersResponse, versions=(0, 2))
async def handle_elect_leaders(ctx, request):
    if not authorize_cluster(ctx, AclOperation.ALTER):   # Kafka 3.9: ALTER on the cluster
        return _error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    controller = ctx.broker.kafka_controller
    if controller is None or not controller.is_active:
        return _error_response(request, ErrorCode.NOT_CONTROLLER)
    election_type = request.election_type if ctx.api_version >= 1 else PREFERRED
    partitions = None
    if request.topic_partitions is not None:
        partitions = [(t.topic, p) for t in request.topic_partitions for p in t.partitions]
    results = await controller.elect_leaders(election_type, partitions)
    if None in results:   # the controller stopped being active meanwhile
        return _error_response(request, ErrorCode(results[None][0]))
    by_topic: dict[str, list] = {}
    for (topic, p), (code, message) in sorted(results.items()):
        by_topic.setdefault(topic, []).append({"partition_id": p, "error_code": int(code), "error_message": message})
    return {"throttle_time_ms": 0, "error_code": 0,
            "replica_election_results": [{"topic": t, "partition_result": ps} for t, ps in by_topic.items()]}
