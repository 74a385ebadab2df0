"""Fetch (key 1), versions 4-17: read record batches, waiting for data if asked to.

v4   isolation level, last stable offset, aborted transactions (message format v2)
v5   + log_start_offset
v7   fetch sessions (KIP-227): the broker answers session_id 0, "no session",
     so clients send full fetch requests
v9   + current leader epoch (KIP-320)
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
high watermark only.
"""
import time
import uuid

from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

from ..errors import ErrorCode, KafkaError
from . import api

NULL_UUID = uuid.UUID(int=0)


def _read_partition(broker, topic_name, pdata, budget, min_one, from_follower):
    try:
        partition = broker.replica_manager.get_partition(topic_name, pdata.partition)
        log = partition.log
        max_offset = None if from_follower else log.high_watermark
        limit = min(pdata.partition_max_bytes, budget)
        records = log.read(pdata.fetch_offset, limit, max_offset, min_one_message=min_one)
        return {"partition_index": pdata.partition, "error_code": 0, "high_watermark": log.high_watermark,
                "last_stable_offset": log.high_watermark, "log_start_offset": log.log_start_offset,
                "aborted_transactions": None if not records else [], "preferred_read_replica": -1,
                "records": records}
    except KafkaError as exc:
        return _error(pdata.partition, exc.code)


def _error(index, code):
    return {"partition_index": index, "error_code": code, "high_watermark": -1, "last_stable_offset": -1,
            "log_start_offset": -1, "preferred_read_replica": -1, "records": b""}


def _replica_id(ctx, request) -> int:
    """-1 for a consumer; a broker id for a follower replica (which may read past the HW)."""
    if ctx.api_version >= 15:
        return request.replica_state.replica_id if request.replica_state is not None else -1
    return request.replica_id


def _read_all(ctx, request, topics):
    budget = request.max_bytes if ctx.api_version >= 3 else 2**31 - 1
    from_follower = _replica_id(ctx, request) >= 0
    responses, total, errors = [], 0, False
    for name, topic_id, partitions in topics:
        parts = []
        for pdata in partitions:
            if name is None:
                parts.append(_error(pdata.partition, ErrorCode.UNKNOWN_TOPIC_ID))
                errors = True
                continue
            result = _read_partition(ctx.broker, name, pdata, max(budget - total, 0), total == 0, from_follower)
            errors = errors or result["error_code"] != 0
            total += len(result["records"])
            parts.append(result)
        responses.append({"topic": name, "topic_id": topic_id, "partitions": parts})
    return responses, total, errors


@api(FetchRequest, FetchResponse, versions=(4, 17))
async def handle_fetch(ctx, request):
    cache = ctx.broker.metadata_cache
    topics = []
    for t in request.topics:
        if ctx.api_version >= 13:
            meta = cache.by_id(t.topic_id)
            topics.append((meta.name if meta else None, t.topic_id, t.partitions))
        else:
            meta = cache.get(t.topic)
            topics.append((t.topic, meta.topic_id if meta else NULL_UUID, t.partitions))
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    while True:
        responses, total, errors = _read_all(ctx, request, topics)
        remaining = deadline - time.monotonic()
        if total >= request.min_bytes or errors or remaining <= 0 or not topics:
            break
        await ctx.broker.replica_manager.wait_for_data(remaining)
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}
