"""The automatic check of lab 04 (retention and segments): ``check_04(...)``.

Like the checks in :mod:`kafkalab.checks`, it looks at two things — the
broker itself (its topic configs, its segment files, its log start offset)
and the answers the student computed — and prints a ✓/✗ checklist, raising
:class:`kafkalab.checks.LabCheckFailed` if a step is wrong.

The expected answers are derived here from the data and the configs the lab
asks for (record batch sizes come from Kafka's message format), not read back
from the student's own results.

On Apache Kafka's own broker (``KAFKALAB_BACKEND=kafka``: ``connect(local=True)``
starts one on this machine, so its files are here) steps 1 and 2 are checked on
Kafka's files and configs; steps 3 to 5 run retention and the cleaner at a
chosen time with kafkalab's broker's clock (their cells are tagged
``kafkalab-only``), so they are listed as not checked, with why.
"""
from __future__ import annotations

import os

from kafkalab.broker.common.records import Record, build_batch
from kafkalab.checks import Report, as_text, shown, unfilled, unfilled_detail
from kafkalab.tools import dump_log_df, list_segments

T0 = 1735722000000          # 2025-01-01 09:00 UTC
MINUTE = 60_000
SEGMENT_BYTES = 2048
RETENTION_MS = 20 * MINUTE
NOW = T0 + 60 * MINUTE      # "10:00", when step 3 runs the retention check

#: (key, value, timestamp): 50 orders, one a minute from 09:00; every value has the same length
ORDERS = [(f"customer-{i % 7}", f'{{"order": {1000 + i}, "amount": "{10 + (i * 37) % 90}.{i % 10}0"}}',
           T0 + i * MINUTE) for i in range(50)]

#: (product, price or None for "no longer sold"), in produce order
PRICES = [(product, f"{price:.2f}") for round_ in range(4)
          for product, price in zip(("apple", "bread", "cheese", "eggs", "milk"),
                                    (0.5 + round_ * 0.1, 2.2 + round_ * 0.05, 4.9 - round_ * 0.2,
                                     3.1 + round_ * 0.15, 1.05 + round_ * 0.02))]
PRICES += [("milk", None),                          # milk is taken off the shelf: a tombstone
           ("bread", "2.49"), ("flour", "1.80")]


def batch_size(key: str, value: str) -> int:
    """Bytes one record takes in the log when it is sent as a batch of its own."""
    return len(build_batch([Record(0, 0, key.encode(), value.encode(), [])]))


def expected_layout() -> dict:
    """Where ORDERS end up with segment.bytes=2048: segment bases, and each offset's (segment, position)."""
    bases, where, size, base = [0], {}, 0, 0
    for offset, (key, value, _) in enumerate(ORDERS):
        b = batch_size(key, value)
        if size > 0 and size + b > SEGMENT_BYTES:   # Kafka rolls before the batch that would not fit
            base, size = offset, 0
            bases.append(base)
        where[offset] = (base, size)
        size += b
    return {"bases": bases, "where": where}


def expected_log_start() -> int:
    """The first segment retention.ms=20 min keeps at NOW: the oldest whose newest record is recent enough."""
    bases = expected_layout()["bases"]
    for base, next_base in zip(bases, bases[1:] + [len(ORDERS)]):   # the active segment too
        newest = ORDERS[next_base - 1][2]
        if NOW - newest <= RETENTION_MS:
            return base
    return len(ORDERS)  # every segment expired, the active one too: Kafka rolls a new, empty one and deletes it


def expected_prices() -> dict:
    latest = {}
    for product, price in PRICES:
        latest[product] = price
    return {p: v for p, v in sorted(latest.items()) if v is not None}


#: steps 3 to 5, and why they are not checked on Apache Kafka's broker (their cells are tagged kafkalab-only)
NEEDS_THE_CLOCK = {
    "step 3: the log start after the retention check at 10:00": "it runs retention at a chosen time, with the "
                                                                "clock only kafkalab's broker lets you set",
    "step 4: where auto.offset.reset=earliest starts": "it asks for an offset that step 3's retention deleted",
    "step 5: the compacted topic 'prices'": "it runs the cleaner at a chosen time, with the clock only "
                                            "kafkalab's broker lets you set",
}


def _on_kafka(kafka) -> bool:
    """Apache Kafka's own broker, started on this machine by ``connect(local=True)`` (``KAFKALAB_BACKEND=kafka``)."""
    backend = getattr(getattr(kafka, "cluster", None), "backend", None)
    return kafka.broker is None and getattr(backend, "name", None) == "kafka"


def _log_dir(kafka) -> str:
    return kafka.broker.log_dir if kafka.broker is not None else kafka.cluster.brokers["log_dir"][0]


def _topic_config(kafka, topic):
    if kafka.broker is not None:
        return kafka.broker.server.topic_configs.get(topic)
    # Apache Kafka's broker: DescribeConfigs (what kafka-configs.sh --describe asks); None for an unknown topic
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient(kafka.client_config())     # kept until the answer is in: a dropped client cancels it
    [future] = admin.describe_configs([ConfigResource("TOPIC", str(topic))]).values()
    try:
        entries = future.result(15)
    except KafkaException:
        return None
    finally:
        del admin
    return {name: int(e.value) if name in ("segment.bytes", "retention.ms") else e.value for name, e in entries.items()}


def _log_end_offset(kafka, topic):
    if kafka.broker is not None:
        ulog = kafka.broker.server.log_manager.get_log(topic, 0)
        return None if ulog is None else ulog.log_end_offset
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "lab-04-check", "log_level": 4})
    try:
        return consumer.get_watermark_offsets(TopicPartition(str(topic), 0), timeout=10, cached=False)[1]
    finally:
        consumer.close()


def check_04(kafka, orders, segment_count, segment_of_30, position_of_30, log_start, first_offset_read,
             prices, latest_prices) -> None:
    """Check lab 04 (``labs/04_retention``); the arguments are the variables the lab asks for."""
    report = Report(f"Lab 04 — retention and segments (topics {shown(orders)}, {shown(prices)})")
    layout = expected_layout()
    on_kafka = _on_kafka(kafka)
    if kafka.broker is None and not on_kafka:
        report.step("the lab runs on the embedded broker", False,
                    "this lab reads the broker's files: run it without KAFKALAB_BOOTSTRAP_SERVERS")
        report.finish()

    # Step 1: the topic, its configs, its segments.
    name = "step 1: 'orders' has segment.bytes=2048 and retention.ms=20 minutes, and holds the 50 orders"
    config = None if unfilled(orders) else _topic_config(kafka, orders)
    end = None if config is None else _log_end_offset(kafka, orders)
    if config is None:
        report.step(name, False, unfilled_detail("orders", orders, "orders = kafka.create_topic('orders', partitions=1, **{...})")
                    if unfilled(orders) else
                    f"orders is {orders!r}, not the name of a topic on this broker — "
                    "orders = kafka.create_topic('orders', partitions=1, **{...})")
    else:
        problems = []
        if config["segment.bytes"] != SEGMENT_BYTES:
            problems.append(f"segment.bytes is {config['segment.bytes']}, expected {SEGMENT_BYTES}")
        if config["retention.ms"] != RETENTION_MS:
            problems.append(f"retention.ms is {config['retention.ms']}, expected {RETENTION_MS} (20 minutes)")
        if end != len(ORDERS):
            problems.append(f"the partition's log end offset is {end}, expected {len(ORDERS)} — produce every "
                            "order exactly once (re-run the notebook from the top rather than one cell twice)")
        else:
            batches = dump_log_df(os.path.join(_log_dir(kafka), f"{orders}-0"), level="batch")
            shared = batches[batches["count"] > 1]
            if len(shared):
                problems.append(f"{int(shared['count'].sum())} orders share {len(shared)} batch(es) — flush() after "
                                f"each produce() so that every order is a batch of its own (the segment sizes "
                                f"the later steps expect depend on it)")
        report.step(name, not problems, "\n".join(problems))
    # The expected answers of steps 2-4 assume step 1's layout; say so where they fail.
    after_step_1 = "" if report.results[-1][1] else ("\n(the topic of step 1 is not right yet: fix the first ✗ above first, this answer depends on it)")

    name = "step 1: segment_count is the number of segments right after producing"
    want = len(layout["bases"])
    with report.answer(name, "segment_count"):
        if unfilled(segment_count):
            report.step(name, False, unfilled_detail("segment_count", segment_count,
                                                     "len(list_segments(partition_dir(orders)))"))
        else:
            report.step(name, int(segment_count) == want,
                        f"got {segment_count}, expected {want} — count the .log files (one per segment), "
                        f"right after producing{after_step_1}")

    # Step 2: the dump.
    name = "step 2: offset 30's batch: its segment file and byte position"
    base, position = layout["where"][30]
    want_file = f"{base:020d}.log"
    with report.answer(name, "segment_of_30 / position_of_30"):
        if unfilled(segment_of_30) or unfilled(position_of_30):
            report.step(name, False, unfilled_detail("segment_of_30" if unfilled(segment_of_30) else "position_of_30",
                                                     segment_of_30 if unfilled(segment_of_30) else position_of_30))
        else:
            got = (os.path.basename(str(segment_of_30)), int(position_of_30))
            report.step(name, got == (want_file, position),
                        f"got {got}, expected {(want_file, position)} — the segment is the last one whose base "
                        f"offset is <= 30; the position is in dump_log_df(..., level='batch'){after_step_1}")

    if on_kafka:
        for name, why in NEEDS_THE_CLOCK.items():
            report.skip(name, why + " (on Apache Kafka's broker)")
        report.finish()
        return

    # Step 3: retention.
    name = "step 3: after the retention check at 10:00 the log starts where retention.ms says"
    want = expected_log_start()
    ulog = None if config is None else kafka.broker.server.log_manager.get_log(orders, 0)   # config: orders'
    broker_start = None if ulog is None else ulog.log_start_offset
    with report.answer(name, "log_start"):
        if unfilled(log_start):
            report.step(name, False, unfilled_detail("log_start", log_start,
                                                     "run cleanup_logs(now), then ask for the watermarks"))
        elif isinstance(log_start, (tuple, list)):
            report.step(name, False, f"log_start is {log_start!r}: get_watermark_offsets() returns (low, high); "
                                     f"log_start is the low watermark, the first of the two")
        else:
            problems = []
            if broker_start != want:
                problems.append(f"the broker's log start offset is {broker_start}, expected {want} — "
                                f"did you run cleanup_logs(now) at now = T0 + 60 * MINUTE?{after_step_1}")
            if int(log_start) != want:
                problems.append(f"log_start is {log_start}, expected {want} (the low watermark)")
            report.step(name, not problems, "\n".join(problems))

    # Step 4: auto.offset.reset.
    name = "step 4: a consumer asking for offset 0 with auto.offset.reset=earliest starts at the log start"
    with report.answer(name, "first_offset_read"):
        if unfilled(first_offset_read):
            report.step(name, False, unfilled_detail(
                "first_offset_read", first_offset_read,
                "if your consumer got no record: with auto.offset.reset=latest (the default) it jumps to the end "
                "of the log and waits for new records — set auto_offset_reset='earliest'"))
        else:
            report.step(name, int(first_offset_read) == want,
                        f"got {first_offset_read}, expected {want} — offset 0 is gone; 'earliest' jumps to the "
                        f"log start offset{after_step_1}")

    # Step 5: compaction.
    name = "step 5: 'prices' is compacted: in its cleaned segments each product appears once"
    config = None if unfilled(prices) else _topic_config(kafka, prices)
    if config is None:
        report.step(name, False, unfilled_detail("prices", prices, "prices = kafka.create_topic('prices', partitions=1, **{...})")
                    if unfilled(prices) else
                    f"prices is {prices!r}, not the name of a topic on this broker — "
                    "prices = kafka.create_topic('prices', partitions=1, **{...})")
    else:
        problems = []
        if not config.compact:
            problems.append(f"cleanup.policy is {config['cleanup.policy']!r}, expected 'compact'")
        if config["segment.bytes"] != 512:
            problems.append(f"segment.bytes is {config['segment.bytes']}, expected 512 — the cleaner only "
                            f"cleans inactive segments, so the log needs several")
        directory = os.path.join(_log_dir(kafka), f"{prices}-0")
        records, segments = dump_log_df(directory), list_segments(directory)
        cleaned = records[records["offset"] < int(segments["baseOffset"].iloc[-1])] if len(segments) else records
        if not len(records):
            problems.append("the topic is empty — produce the PRICES to it")
        elif sorted(set(records["offset"])) == list(range(len(PRICES))):
            why = ("all records are in the active segment, which the cleaner never cleans" if len(segments) == 1
                   else "run run_cleaner(now) after producing")
            problems.append(f"no record was removed: the cleaner has not compacted the topic — {why}")
        elif not cleaned["key"].is_unique:
            problems.append("the cleaned part of the log still has several records for one product")
        report.step(name, not problems, "\n".join(problems))

    name = "step 5: latest_prices maps each product still sold to its latest price"
    with report.answer(name, "latest_prices"):
        if unfilled(latest_prices):
            report.step(name, False, unfilled_detail("latest_prices", latest_prices))
        else:
            got = {as_text(k): as_text(v) for k, v in dict(latest_prices).items()}
            report.step(name, got == expected_prices(),
                        f"got {got}\nexpected {expected_prices()} — the latest value per key wins, and a "
                        f"tombstone (value None) removes its key")

    report.finish()
