"""Fetch (key 1), versions 4-17: read record batches, waiting for data if asked to.

v4   isolation level, last stable offset, aborted transactions (message format v2)
v5   + log_start_offset
v7   fetch sessions (KIP-227, :mod:`kafkalab.broker.server.fetch_session`):
     a full fetch (epoch 0) gets a session id when the cache has room, an
     incremental one names only what changed (and ``forgotten_topics_data``)
     and is answered only what changed
v9   + current leader epoch (KIP-320): an older one gets FENCED_LEADER_EPOCH,
     a newer one UNKNOWN_LEADER_EPOCH
v11  + rack id / preferred read replica (KIP-392), answered with -1
v12  flexible; + last fetched epoch, diverging epoch
v13  topics by id instead of name (KIP-516)
v15  replica state replaces replica id (KIP-903)
v16  + node endpoints (KIP-951)
v17  + replica directory id (KIP-853)

A consumer's fetch is a *long poll*: when fewer than ``min_bytes`` are ready
the request waits in the fetch purgatory until enough data arrives or
``max_wait_ms`` passes. ``max_bytes`` bounds the whole response and
``partition_max_bytes`` each partition, except that the first batch of the
first non-empty partition is always returned whole (KIP-74), so a batch
larger than the limits can never block a consumer. Consumers read up to the
high watermark only; a fetch at the log end offset waits and returns empty,
one outside [log start offset, log end offset] gets OFFSET_OUT_OF_RANGE and
the consumer's ``auto.offset.reset`` decides where to go.
A *follower* (replica id >= 0; from v15 ``replica_state.replica_id``) of a
cluster-mode partition must fetch from the leader (else NOT_LEADER_OR_FOLLOWER)
and be one of its replicas; it reads past the high watermark, and its fetch
offset tells the leader how far its log goes, which moves the high watermark
and may bring it into the ISR (``Partition.read_for_follower``). Only the
first read of a fetch records that, not the reads after waiting, as Kafka's
DelayedFetch. The handler decodes the request, hands it to
``ReplicaManager.fetch_messages`` (the reads, ``Partition.fetch_records``, and
the wait, :mod:`kafkalab.broker.server.delayed_fetch`) and builds the response. If the follower's
``last_fetched_epoch`` ends earlier on the leader than its fetch offset, the answer is a ``diverging_epoch`` (epoch, end
offset) instead of records: the follower truncates there (KIP-595). A
consumer's ``last_fetched_epoch`` is checked the same way, as Kafka does (an
epoch the leader does not know is OFFSET_OUT_OF_RANGE).
Transactions (KIP-98): ``isolation_level`` 1 (read_committed) reads up to the
last stable offset (the first offset of the earliest open transaction, else
the high watermark) and gets the aborted transactions (producer id, first
offset) overlapping what it read, so the consumer can drop their records;
read_uncommitted reads up to the high watermark and gets a null list. Control
batches (the markers) are returned to both: the consumer skips them.
A consumer under a ``consumer_byte_rate`` quota gets at most what the quota allows
at once (``ClientQuotaManager.max_value_in_quota_window``), and a response that
would put it over the quota is sent empty (:mod:`kafkalab.broker.kafka_apis`), as in Kafka.
Not implemented: fetch from follower for consumers (preferred read replica is -1).
"""
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize_cluster, authorizer_of, filter_by_authorized
from ..server.client_quota_manager import CONSUMER_BYTE_RATE
from ..server.delayed_fetch import FetchParams, FetchPartitionData
from ..server.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID, IncrementalFetchContext
from ..server.metadata_cache import NULL_UUID
from . import api

READ_COMMITTED = 1  # isolation_level


def _replica_id(ctx, request) -> int:
    """-1 for a consumer; a broker id for a follower replica (which may read past the HW)."""
    if ctx.api_version >= 15:
        return request.replica_state.replica_id if request.replica_state is not None else -1
    return request.replica_id


def _fetch_params(ctx, request) -> FetchParams:
    replica_id = _replica_id(ctx, request)
    max_bytes = request.max_bytes
    if replica_id < 0:   # a consumer under consumer_byte_rate: no more than its quota allows at once
        quotas = ctx.quotas
        cap = quotas.max_value_in_quota_window(CONSUMER_BYTE_RATE, ctx.client_id) if quotas.enabled else None
        if cap is not None:
            max_bytes = min(max_bytes, int(cap))
    return FetchParams(replica_id, request.max_wait_ms, request.min_bytes, max_bytes,
                       request.isolation_level == READ_COMMITTED)


def _partition_data(name, topic_id, pdata) -> FetchPartitionData:
    last_fetched_epoch = getattr(pdata, "last_fetched_epoch", -1)   # v12+
    return FetchPartitionData(name, pdata.partition, pdata.fetch_offset, pdata.current_leader_epoch,
                              -1 if last_fetched_epoch is None else last_fetched_epoch,
                              getattr(pdata, "log_start_offset", -1), pdata.partition_max_bytes, topic_id)


def _partition_response(ctx, name, index, result) -> dict:
    if result.error_code:
        return _error(index, result.error_code, known=name is not None and _in_metadata(ctx, name, index))
    if result.aborted_transactions is None:
        aborted = None
    else:
        aborted = [{"producer_id": t.producer_id, "first_offset": t.first_offset} for t in result.aborted_transactions]
    answer = {"partition_index": index, "error_code": 0, "high_watermark": result.high_watermark,
              "last_stable_offset": result.last_stable_offset, "log_start_offset": result.log_start_offset,
              "aborted_transactions": aborted, "preferred_read_replica": -1, "records": result.records}
    if result.diverging_epoch is not None:
        answer["diverging_epoch"] = {"epoch": result.diverging_epoch[0], "end_offset": result.diverging_epoch[1]}
    return answer


def _error(index, code, known=False):
    """A partition's error answer. As in Kafka, a partition the metadata does not know is refused before
    any read (``FetchResponse.partitionResponse``: an empty aborted-transactions list), one whose read
    failed (out of range, leader epoch, not the leader) answers a null list."""
    return {"partition_index": index, "error_code": code, "high_watermark": -1, "last_stable_offset": -1,
            "log_start_offset": -1, "aborted_transactions": None if known else [], "preferred_read_replica": -1,
            "records": b""}


def _in_metadata(ctx, topic_name, partition) -> bool:
    meta = ctx.broker.metadata_cache.get(topic_name)
    return meta is not None and 0 <= partition < meta.num_partitions


def _denied_topics(ctx, params, partitions: list[FetchPartitionData]) -> set:
    """Kafka 3.9's checks (``handleFetchRequest``): a follower needs CLUSTER_ACTION on the cluster (else every
    partition is TOPIC_AUTHORIZATION_FAILED), a consumer READ on each topic."""
    if authorizer_of(ctx) is None:
        return set()
    names = list(dict.fromkeys(p.topic for p in partitions if p.topic is not None))
    if params.is_from_follower:
        return set() if authorize_cluster(ctx, AclOperation.CLUSTER_ACTION) else set(names)
    return set(names) - filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, names)


def _requested(ctx, request) -> tuple[list[FetchPartitionData], list]:
    """The partitions the request names (by name, by id from v13) and those it forgets (v7+), as session keys."""
    cache = ctx.broker.metadata_cache
    by_id = ctx.api_version >= 13
    fetch_data: list[FetchPartitionData] = []
    for t in request.topics:
        if by_id:
            meta = cache.by_id(t.topic_id)
            name, topic_id = (meta.name if meta else None), t.topic_id
        else:
            meta = cache.get(t.topic)
            name, topic_id = t.topic, (meta.topic_id if meta else NULL_UUID)
        fetch_data.extend(_partition_data(name, topic_id, p) for p in t.partitions)
    forgotten = [((t.topic_id if by_id else t.topic), index)
                 for t in (getattr(request, "forgotten_topics_data", None) or ()) for index in t.partitions]
    return fetch_data, forgotten


def _topic_name(ctx):
    def name(topic_id):
        meta = ctx.broker.metadata_cache.by_id(topic_id)
        return meta.name if meta is not None else None
    return name


def _answer(error_code: int, session_id: int, sent: list, throttle_ms: int = 0) -> dict:
    """The response: the partitions answered, grouped by topic as they come (Kafka's ``FetchResponse.of``)."""
    responses: list[dict] = []
    for request, answer in sent:
        if not responses or responses[-1]["_key"] != (request.topic, request.topic_id):
            responses.append({"_key": (request.topic, request.topic_id), "topic": request.topic,
                              "topic_id": request.topic_id, "partitions": []})
        responses[-1]["partitions"].append(answer)
    for r in responses:
        del r["_key"]
    return {"throttle_time_ms": throttle_ms, "error_code": error_code, "session_id": session_id,
            "responses": responses}


@api(FetchRequest, FetchResponse, versions=(4, 17))
async def handle_fetch(ctx, request):
    fetch_data, forgotten = _requested(ctx, request)
    params = _fetch_params(ctx, request)
    session_id, epoch = (request.session_id, request.session_epoch) if ctx.api_version >= 7 else (0, FINAL_EPOCH)
    broker = ctx.broker
    context = broker.fetch_manager.new_context(ctx.api_version, session_id, epoch, params.replica_id,
                                               fetch_data, forgotten, _topic_name(ctx))
    if context.error:
        return _answer(context.error, INVALID_SESSION_ID, [])
    if isinstance(context, IncrementalFetchContext):
        return await _incremental_fetch(ctx, params, context)
    wanted = context.partitions()
    denied = _denied_topics(ctx, params, wanted)
    fetch_infos = [p for p in wanted if p.topic is None or p.topic not in denied]
    # read, and wait for min_bytes in the fetch purgatory
    read = await broker.replica_manager.fetch_messages(params, fetch_infos, context.unchanged)
    stats = broker.replica_manager.broker_topic_stats
    if stats is not None and not params.is_from_follower:   # Kafka's updateBytesOut: a consumer's bytes
        for info, result in zip(fetch_infos, read):
            if info.topic is not None and result is not None and result.records:
                stats.bytes_out(info.topic, len(result.records))
    results = iter(read)
    answers: list = []
    signatures: list = []
    for p in wanted:
        if p.topic is not None and p.topic in denied:
            answers.append((p, _error(p.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
            signatures.append(None)
            continue
        result = next(results)   # None: the session's partition is unchanged, not read
        answers.append((p, None if result is None else _partition_response(ctx, p.topic, p.partition, result)))
        signatures.append(None if result is None else result.signature)
    return _respond(ctx, params, context, answers, signatures)


async def _incremental_fetch(ctx, params, context: IncrementalFetchContext) -> dict:
    """A Fetch in an incremental session: only the session's partitions that may have changed are read, and the
    ones of a topic the fetcher may not read answered TOPIC_AUTHORIZATION_FAILED, as every time."""
    broker = ctx.broker
    denied = _denied_topics(ctx, params, context.partitions()) if authorizer_of(ctx) is not None else set()
    read = await broker.replica_manager.fetch_session_messages(params, context, denied)
    stats = broker.replica_manager.broker_topic_stats
    answers: list = []
    signatures: list = []
    if denied:
        for p in context.partitions():
            if p.topic in denied:
                answers.append((p, _error(p.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
                signatures.append(None)
    for p, result in read:
        if stats is not None and not params.is_from_follower and p.topic is not None and result.records:
            stats.bytes_out(p.topic, len(result.records))
        answers.append((p, _partition_response(ctx, p.topic, p.partition, result)))
        signatures.append(result.signature)
    return _respond(ctx, params, context, answers, signatures)


def _respond(ctx, params, context, answers: list, signatures: list) -> dict:
    if not params.is_from_follower and ctx.quotas is not None and ctx.quotas.enabled:
        # a consumer's response may yet be throttled (sent empty): the session learns what it was told only
        # once KafkaApis knows (Kafka's getResponseSize, then getThrottledResponse or updateAndGenerateResponseData)
        def commit(throttle_ms: int) -> dict:
            if throttle_ms:
                error_code, throttled_session = context.throttled()
                return _answer(error_code, throttled_session, [], throttle_ms)
            return _answer(*context.response(answers, update=True, signatures=signatures))
        ctx.fetch_commit = commit
        return _answer(*context.response(answers, update=False))
    return _answer(*context.response(answers, update=True, signatures=signatures))
