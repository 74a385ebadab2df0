"""Fetch (key 1), versions 4-17: read record batches, waiting for data if asked to.

v4   isolation level, last stable offset, aborted transactions (message format v2)
v5   + log_start_offset
v7   fetch sessions (KIP-227): the broker answers session_id 0, "no session"
     (as Kafka does when its session cache is full), so clients keep sending
     full fetch requests; an incremental one gets FETCH_SESSION_ID_NOT_FOUND
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
DelayedFetch. If the follower's ``last_fetched_epoch`` ends earlier on the
leader than its fetch offset, the answer is a ``diverging_epoch`` (epoch, end
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
would put it over the quota is sent empty (``SocketServer``), as in Kafka.
Not implemented: fetch from follower for consumers (preferred read replica is -1).
"""
import time

from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

from ..common.errors import ErrorCode, KafkaError
from ..log.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from ..server.client_quota_manager import CONSUMER_BYTE_RATE
from ..server.metadata_cache import NULL_UUID
from . import api

#: FetchMetadata.INITIAL_EPOCH / FINAL_EPOCH: the two epochs of a full (sessionless) fetch
INITIAL_EPOCH, FINAL_EPOCH = 0, -1
READ_COMMITTED = 1  # isolation_level


def _read_partition(ctx, topic_name, pdata, budget, min_one, from_follower, read_committed, replica_id=-1,
                    first_read=True):
    try:
        partition = ctx.broker.replica_manager.get_partition(topic_name, pdata.partition)
        if from_follower and not partition.standalone:
            return _read_for_follower(partition, pdata, budget, min_one, replica_id, first_read)
        # (before v9 the request has no current_leader_epoch: the codec gives -1, "don't check")
        log = partition.local_log_with_epoch(pdata.current_leader_epoch, require_leader=not from_follower)
        diverging = _diverging_epoch(partition, log, pdata)
        lso = log.last_stable_offset
        if diverging is not None:
            return {"partition_index": pdata.partition, "error_code": 0, "high_watermark": log.high_watermark,
                    "last_stable_offset": lso, "log_start_offset": log.log_start_offset,
                    "diverging_epoch": diverging, "aborted_transactions": [] if read_committed else None,
                    "preferred_read_replica": -1, "records": b""}
        max_offset = None if from_follower else (lso if read_committed else log.high_watermark)
        limit = min(pdata.partition_max_bytes, budget)
        records = log.read(pdata.fetch_offset, limit, max_offset, min_one_message=min_one)
        aborted = None
        if read_committed:   # Kafka lists aborted transactions for READ_COMMITTED only, else null
            aborted = [{"producer_id": t.producer_id, "first_offset": t.first_offset}
                       for t in log.collect_aborted_transactions(pdata.fetch_offset, lso)]
        return {"partition_index": pdata.partition, "error_code": 0, "high_watermark": log.high_watermark,
                "last_stable_offset": lso, "log_start_offset": log.log_start_offset,
                "aborted_transactions": aborted, "preferred_read_replica": -1, "records": records}
    except KafkaError as exc:
        return _error(pdata.partition, exc.code, known=_in_metadata(ctx, topic_name, pdata.partition))


def _diverging_epoch(partition, log, pdata) -> dict | None:
    """A consumer's ``last_fetched_epoch`` (v12+) checked as Kafka's ``Partition.readRecords`` does for
    every fetcher: if that epoch ends here below the fetch offset (or is not known here), the answer is
    the diverging epoch instead of records (the consumer then validates its position)."""
    last_fetched_epoch = getattr(pdata, "last_fetched_epoch", -1)
    if last_fetched_epoch is None or last_fetched_epoch < 0:
        return None
    epoch, end = log.leader_epoch_cache.end_offset_for(last_fetched_epoch, log.log_end_offset)
    if epoch == UNDEFINED_EPOCH or end == UNDEFINED_EPOCH_OFFSET:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                         f"{partition.name}: no end offset for the last fetched epoch {last_fetched_epoch}")
    if pdata.fetch_offset < log.log_start_offset:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"{partition.name}: offset {pdata.fetch_offset} is below "
                                                        f"the log start offset {log.log_start_offset}")
    if epoch < last_fetched_epoch or end < pdata.fetch_offset:
        return {"epoch": epoch, "end_offset": end}
    return None


def _read_for_follower(partition, pdata, budget, min_one, replica_id, first_read):
    """A follower's read (raises KafkaError): past the HW, or a diverging epoch."""
    last_fetched_epoch = getattr(pdata, "last_fetched_epoch", -1)   # v12+
    result = partition.read_for_follower(
        replica_id, pdata.fetch_offset, -1 if last_fetched_epoch is None else last_fetched_epoch,
        pdata.current_leader_epoch, getattr(pdata, "log_start_offset", -1),
        min(pdata.partition_max_bytes, budget), min_one, update_fetch_state=first_read)
    answer = {"partition_index": pdata.partition, "error_code": 0, "high_watermark": result.high_watermark,
              "last_stable_offset": result.high_watermark, "log_start_offset": result.log_start_offset,
              "aborted_transactions": None, "preferred_read_replica": -1, "records": result.records}
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


def _replica_id(ctx, request) -> int:
    """-1 for a consumer; a broker id for a follower replica (which may read past the HW)."""
    if ctx.api_version >= 15:
        return request.replica_state.replica_id if request.replica_state is not None else -1
    return request.replica_id


def _read_all(ctx, request, topics, first_read=True):
    budget = request.max_bytes
    replica_id = _replica_id(ctx, request)
    from_follower = replica_id >= 0
    if not from_follower:   # a consumer under consumer_byte_rate: no more than its quota allows at once
        quotas = ctx.quotas
        cap = quotas.max_value_in_quota_window(CONSUMER_BYTE_RATE, ctx.client_id) if quotas.enabled else None
        if cap is not None:
            budget = min(budget, int(cap))
    read_committed = request.isolation_level == READ_COMMITTED
    responses, total, errors = [], 0, False
    for name, topic_id, partitions in topics:
        parts = []
        for pdata in partitions:
            if name is None:
                parts.append(_error(pdata.partition, ErrorCode.UNKNOWN_TOPIC_ID))
                errors = True
                continue
            # KIP-74: until some partition returned data, the first batch is returned even if too large
            result = _read_partition(ctx, name, pdata, max(budget - total, 0), total == 0, from_follower,
                                     read_committed, replica_id, first_read)
            # an error, or a diverging epoch, answers at once
            errors = errors or result["error_code"] != 0 or "diverging_epoch" in result
            total += len(result["records"])
            parts.append(result)
        responses.append({"topic": name, "topic_id": topic_id, "partitions": parts})
    return responses, total, errors


@api(FetchRequest, FetchResponse, versions=(4, 17))
async def handle_fetch(ctx, request):
    if ctx.api_version >= 7 and request.session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        # an incremental fetch names a session; this broker never hands one out
        return {"throttle_time_ms": 0, "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                "session_id": 0, "responses": []}
    cache = ctx.broker.metadata_cache
    topics = []
    for t in request.topics:
        if ctx.api_version >= 13:
            meta = cache.by_id(t.topic_id)
            topics.append((meta.name if meta else None, t.topic_id, t.partitions))
        else:
            meta = cache.get(t.topic)
            topics.append((t.topic, meta.topic_id if meta else NULL_UUID, t.partitions))
    watched = [(name, p.partition) for name, _, partitions in topics if name is not None for p in partitions]
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    first_read = True
    while True:
        responses, total, errors = _read_all(ctx, request, topics, first_read)
        first_read = False
        remaining = deadline - time.monotonic()
        if total >= request.min_bytes or errors or remaining <= 0 or not watched:
            break
        # the fetch purgatory (DelayedFetch): an append to a partition we asked for wakes us to read again
        await ctx.broker.replica_manager.wait_for_data(watched, remaining)
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}
