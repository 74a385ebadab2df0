"""CreatePartitions (key 37), versions 0-3: add partitions to existing topics (KIP-195).

A topic's partition count can only grow: asking for the same or fewer partitions
is INVALID_PARTITIONS. Optional ``assignments`` give the replicas of each new
partition (on a standalone broker: ``[[0], [0], ...]``). ``validate_only``
checks and changes nothing. Keys are hashed modulo the partition count, so after
adding partitions the same key may land elsewhere: records of one key are no
longer all in one partition.

v0   topics with a new count and optional assignments, validate_only
v1   same as v0 (KIP-320 follow-up)
v2   flexible
v3   same as v2 (quota violation errors, KIP-599: no quotas here)
``timeout_ms`` is ignored by a standalone broker: the partitions exist before the answer.
In cluster mode the new assignment is written to ZooKeeper and the answer waits
up to ``timeout_ms`` until every partition has a leader in this broker's
metadata (Kafka's ``DelayedCreatePartitions``), else REQUEST_TIMED_OUT.
"""
from collections import Counter

from kafka.protocol.admin.topics import CreatePartitionsRequest, CreatePartitionsResponse

from ..common.errors import ErrorCode, KafkaError
from ..security.auth_helper import AclOperation, ResourceType, authorize
from . import api


@api(CreatePartitionsRequest, CreatePartitionsResponse, versions=(0, 3))
async def handle_create_partitions(ctx, request):
    admin = ctx.broker.admin_manager
    counts = Counter(t.name for t in request.topics)
    results = []
    request_state = {}   # partitions this request added so far (max.partitions.per.request)
    for t in request.topics:
        entry = {"name": t.name, "error_code": 0, "error_message": None}
        try:
            if counts[t.name] > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Duplicate topic in request: {t.name}")
            if not authorize(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name):   # Kafka 3.9: ALTER on the topic
                raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed.")
            assignments = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
            await admin.create_partitions_async(t.name, t.count, bool(request.validate_only), assignments,
                                                request_state=request_state)
        except KafkaError as exc:
            entry.update(error_code=exc.code, error_message=exc.message)
        results.append(entry)
    broker = ctx.broker
    if broker.in_cluster and not request.validate_only and request.timeout_ms > 0:
        counts_wanted = {t.name: t.count for t in request.topics}
        grown = [e["name"] for e in results if e["error_code"] == 0]
        ready = lambda n: admin.partitions_have_leaders(n, counts_wanted[n])  # noqa: E731
        if not await admin.wait_for_metadata(lambda: all(ready(n) for n in grown), request.timeout_ms):
            for e in results:
                if e["name"] in grown and not ready(e["name"]):
                    e.update(error_code=ErrorCode.REQUEST_TIMED_OUT,
                             error_message=f"Timed out waiting for the new partitions of {e['name']}.")
    return {"throttle_time_ms": 0, "results": results}
