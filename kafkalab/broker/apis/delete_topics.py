"""DeleteTopics (key 20), versions 1-6: delete topics, by name or (v6) by topic id.

The topic leaves the metadata, its partitions leave the broker and their
directories are removed from disk (Kafka renames them ``*-delete`` and removes
them after ``file.delete.delay.ms``; the mini broker removes them at once).
Errors per topic: UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID (v6),
TOPIC_DELETION_DISABLED (``delete.topic.enable=false``), INVALID_REQUEST for
a topic named twice or by both name and id, and for the internal
``__consumer_offsets`` (the mini broker keeps its coordinator's state there).

v0   not served (Kafka 4 dropped it)
v1   + throttle_time_ms
v2-3 same as v1
v4   flexible
v5   + error_message per topic
v6   topics may be named by topic id (KIP-516); the result carries the id
``timeout_ms`` is ignored by a standalone broker: deletion is done before the answer.
In cluster mode the topic is marked for deletion in ZooKeeper
(``/admin/delete_topics/<t>``) and the controller deletes it; as Kafka's
``DelayedDeleteTopics``, the answer waits up to ``timeout_ms`` until the topic
is gone from this broker's metadata, else REQUEST_TIMED_OUT (the deletion goes on).
"""
import uuid
from collections import Counter

from kafka.protocol.admin.topics import DeleteTopicsRequest, DeleteTopicsResponse

from ..server.metadata_cache import NULL_UUID
from ..common.errors import ErrorCode, KafkaError
from ..security.auth_helper import AclOperation, ResourceType, authorize
from . import api

def _requested(ctx, request) -> list[tuple[str | None, uuid.UUID]]:
    if ctx.api_version >= 6:
        return [(t.name, t.topic_id or NULL_UUID) for t in request.topics]
    return [(name, NULL_UUID) for name in request.topic_names]


@api(DeleteTopicsRequest, DeleteTopicsResponse, versions=(1, 6))
async def handle_delete_topics(ctx, request):
    admin = ctx.broker.admin_manager
    wanted = _requested(ctx, request)
    counts = Counter(wanted)
    responses = []
    for name, topic_id in wanted:
        entry = {"name": name, "topic_id": topic_id, "error_code": 0, "error_message": None}
        try:
            if counts[(name, topic_id)] > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Duplicate topic in request: {name or topic_id}")
            if name is not None and topic_id != NULL_UUID:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
            if name is None:
                if topic_id == NULL_UUID:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Neither topic name nor topic id was given.")
                name = entry["name"] = admin.topic_by_id(topic_id).name
                if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):   # the name stays hidden
                    entry["name"] = None
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
            if not authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, name):   # Kafka 3.9: DELETE on the topic
                raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
            topic = admin.delete_topic(name)
            entry["topic_id"] = topic.topic_id
        except KafkaError as exc:
            entry.update(error_code=exc.code, error_message=exc.message)
        responses.append(entry)
    broker = ctx.broker
    if broker.in_cluster and request.timeout_ms > 0:
        deleted = [(e["name"], e["topic_id"]) for e in responses if e["error_code"] == 0]

        def gone(name, topic_id):
            t = broker.metadata_cache.get(name)
            return t is None or t.topic_id != topic_id

        if not await broker.admin_manager.wait_for_metadata(lambda: all(gone(*d) for d in deleted),
                                                            request.timeout_ms):
            for e in responses:
                if e["error_code"] == 0 and not gone(e["name"], e["topic_id"]):
                    e.update(error_code=ErrorCode.REQUEST_TIMED_OUT,
                             error_message=f"Timed out waiting for topic {e['name']} to be deleted.")
    return {"throttle_time_ms": 0, "responses": responses}
