"""TxnOffsetCommit (key 28), versions 0-4: a transaction's consumer offsets, to the group coordinator (KIP-98).

v1   same as v0
v2   + committed_leader_epoch
v3   flexible; + generation_id, member_id, group_instance_id (KIP-447: the group
     coordinator fences a producer whose consumer left the generation)
v4   same as v3 (KIP-890)
Not implemented: v5 (transactions V2); in cluster mode a group coordinator that is
not also the transactional id's coordinator does not verify the transaction
(Kafka asks the transaction coordinator, KIP-890 part 1).

After AddOffsetsToTxn, ``send_offsets_to_transaction`` sends the offsets here.
They are written at once to ``__consumer_offsets`` in a transactional batch of
the producer (as Kafka writes them) and are *pending*: OffsetFetch does not return them (with ``require_stable``
it answers UNSTABLE_OFFSET_COMMIT) until the transaction's COMMIT marker
reaches the group's ``__consumer_offsets`` partition; an ABORT drops them
(Kafka's ``GroupMetadataManager.handleTxnCompletion``). The group's
``__consumer_offsets`` partition must be in the producer's ongoing transaction
(INVALID_TXN_STATE otherwise; INVALID_PRODUCER_EPOCH for a fenced producer).
"""
import time

from kafka.protocol.producer.transaction import TxnOffsetCommitRequest, TxnOffsetCommitResponse

from ..common.errors import ErrorCode, KafkaError
from ..coordinator.group.offsets_topic import OffsetAndMetadata
from ..security.auth_helper import AclOperation, ResourceType, authorize, authorizer_of, filter_by_authorized
from . import api


def _refused(ctx, request, offsets) -> dict:
    """Kafka 3.9's checks: WRITE on the transactional id, READ on the group (else every partition fails with
    it), READ on each topic (else its partitions are TOPIC_AUTHORIZATION_FAILED, and the others committed)."""
    if authorizer_of(ctx) is None:
        return {}
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in offsets}
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {tp: ErrorCode.GROUP_AUTHORIZATION_FAILED for tp in offsets}
    allowed = filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, [t.name for t in request.topics or []])
    return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in offsets if tp[0] not in allowed}


@api(TxnOffsetCommitRequest, TxnOffsetCommitResponse, versions=(0, 4))
async def handle_txn_offset_commit(ctx, request):
    v = ctx.api_version
    broker = ctx.broker
    offsets = {}
    for t in request.topics or []:
        for p in t.partitions or []:
            epoch = p.committed_leader_epoch if v >= 2 else -1
            offsets[(t.name, p.partition_index)] = OffsetAndMetadata(
                p.committed_offset, epoch, p.committed_metadata or "", int(time.time() * 1000))
    txn = broker.transaction_coordinator
    refused = _refused(ctx, request, offsets)
    wanted, offsets = offsets, {tp: om for tp, om in offsets.items() if tp not in refused}
    errors: dict = {}
    if not offsets:
        pass
    elif txn is None:
        errors = {tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in offsets}
    else:
        code = txn.verify_transaction(request.transactional_id, request.producer_id, request.producer_epoch,
                                      txn.offsets_partition_for(request.group_id or ""))
        if code:
            errors = {tp: code for tp in offsets}
        else:
            gc = broker.group_coordinator
            errors = gc.commit_transactional_offsets(
                request.group_id, request.producer_id, request.generation_id if v >= 3 else -1,
                request.member_id if v >= 3 else "", offsets)
            staged = {tp: offsets[tp] for tp, c in errors.items() if c == ErrorCode.NONE}
            try:   # written at once, in a transactional batch, as Kafka does
                await gc.manager.store_transactional_offsets(request.group_id, request.producer_id,
                                                             request.producer_epoch, staged)
            except KafkaError as exc:
                gc.drop_transactional_offsets(request.group_id, request.producer_id, staged)
                errors.update({tp: exc.code for tp in staged})
    errors = {tp: refused[tp] if tp in refused else errors[tp] for tp in wanted}
    by_topic: dict[str, list[dict]] = {}
    for (name, index), code in errors.items():
        by_topic.setdefault(name, []).append({"partition_index": index, "error_code": code})
    return {"throttle_time_ms": 0, "topics": [{"name": n, "partitions": parts} for n, parts in by_topic.items()]}
