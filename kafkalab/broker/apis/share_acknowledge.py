"""ShareAcknowledge (key 79), versions 1-2: acknowledge records in a share session without fetching (KIP-932).

v0   Kafka 4.0's early access (not served)
v1   flexible; the first production version (Kafka 4.1); what confluent-kafka 2.16 sends (commit_sync, close)
v2   + IsRenewAck (KIP-1222: RENEW (4) acknowledgements extend locks), AcquisitionLockTimeoutMs in the response

Acknowledgement batches per partition, as in ShareFetch: types 0 gap, 1 ACCEPT (the record is done),
2 RELEASE (available again, to any member; the delivery count stays), 3 REJECT (archived: never delivered
again). The session epoch must be the next one of the member's share session (an epoch of 0 is
INVALID_SHARE_SESSION_EPOCH: a ShareAcknowledge cannot open a session); -1 closes the session, releasing the
member's other acquired records. Per partition errors: INVALID_RECORD_STATE (a record this member does not hold:
its lock expired, or it was acknowledged already), UNKNOWN_TOPIC_ID, NOT_LEADER_OR_FOLLOWER, INVALID_REQUEST.
"""
from kafka.protocol.api_message import ApiMessage

from ..common.errors import ErrorCode, KafkaError
from ..server.share.share_partition_manager import FINAL_EPOCH, INITIAL_EPOCH
from ..common.message import schemas
from ..security.auth_helper import AclOperation, ResourceType, authorize
from ..server.faults import error_response
from . import api
from .share_fetch import apply_acknowledgements


class ShareAcknowledgeRequest(ApiMessage, load_json=schemas): pass
class ShareAcknowledgeResponse(ApiMessage, load_json=schemas): pass


@api(ShareAcknowledgeRequest, ShareAcknowledgeResponse, versions=(1, 2))
async def handle_share_acknowledge(ctx, request):
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):   # Kafka 4: READ on the group
        return error_response("ShareAcknowledge", request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    manager = ctx.broker.share_partition_manager

    lock_ms = ctx.broker.config["group.share.record.lock.duration.ms"]

    def top(code, message):
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "responses": [],
                "node_endpoints": [], "acquisition_lock_timeout_ms": 0}
    if not request.group_id or not request.member_id:
        return top(ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set")
    if request.share_session_epoch == INITIAL_EPOCH:
        return top(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "a ShareAcknowledge cannot open a share session (epoch 0)")
    try:
        session = manager.session_for(request.group_id, request.member_id, request.share_session_epoch)
    except KafkaError as exc:
        return top(exc.code, exc.message)
    results: dict[tuple, tuple] = {}
    renew = ctx.api_version >= 2 and bool(request.is_renew_ack)
    await apply_acknowledgements(ctx, manager, request.group_id, request.member_id, request.topics, results, renew)
    if request.share_session_epoch == FINAL_EPOCH:
        manager.close_session(session)
    by_topic: dict = {}
    for (topic_id, index), (code, message) in results.items():
        leader = {"leader_id": ctx.broker.broker_id, "leader_epoch": 0}
        by_topic.setdefault(topic_id, []).append({"partition_index": index, "error_code": code,
                                                  "error_message": message, "current_leader": leader})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "acquisition_lock_timeout_ms": lock_ms,
            "responses": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()], "node_endpoints": []}
