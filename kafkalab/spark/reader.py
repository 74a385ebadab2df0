"""Reading Kafka in Spark: batch queries and micro-batch streaming, one input partition per Kafka partition.

How Spark's Kafka source works, and so this one:

* **Planning, on the driver** (:class:`~.offset_reader.KafkaOffsetReader`):
  a batch query resolves ``startingOffsets``/``endingOffsets`` (or the
  timestamps) to concrete offsets once. A streaming query starts from
  ``startingOffsets`` (default ``latest``), and before each micro-batch asks
  for every partition's latest offset (its high watermark): the batch is the
  range from the previous end to that, capped by ``maxOffsetsPerTrigger``,
  which Spark shares out in proportion to what each partition has waiting.
  Spark writes each batch's end offsets into the checkpoint's ``offsets/``
  *before* running it, so a restarted query re-plans the same range and
  continues from its end: no gap, no repeat.
* **Reading, in the executors** (:func:`read_range`): each (topic,
  partition, start, end) is one Spark input partition, read by one task with
  its own assigned consumer (no group, no commits), as Arrow record batches.
* **Data loss**: when a range starts below the partition's log start offset
  (retention deleted those records before the query read them), the query
  fails with ``failOnDataLoss=true`` (the default) and skips to the log
  start offset with ``false``.
* New partitions of a subscribed topic (CreatePartitions) are found at the
  next planning and read from their earliest offset.

kafkalab simplifies: no consumer cache or pool across tasks (a task opens and
closes its consumer), no ``minOffsetsPerTrigger``/``maxTriggerDelay``, no
``startingOffsetsByTimestamp`` (per-partition timestamps), and Kafka
transactions' ``isolation.level`` is librdkafka's (``read_committed``).
"""
from __future__ import annotations

import time

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from .offset_reader import KafkaOffsetReader, consumer_config, from_spark, to_spark
from .options import EARLIEST

ARROW_BATCH = 20_000


class KafkaDataLossError(RuntimeError):
    """Records a query needed are gone from Kafka (retention, or the topic was deleted)."""


def data_loss_message(topic, partition, wanted, available):
    return (f"Some data may have been lost: {topic}-{partition} starts at offset {available} now, but the query "
            f"needed offset {wanted} (retention deleted those records, or the topic was deleted and created again, "
            f"before the query read them). Set the source option failOnDataLoss to 'false' to skip what is gone "
            f"and go on.")


class KafkaPartition(InputPartition):
    """One Spark input partition: the offsets [start, end) of one Kafka partition (start -2: its earliest)."""

    def __init__(self, topic: str, partition: int, start: int, end: int):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


def read_range(options, schema, part: KafkaPartition):
    """Yield the records of ``part`` as pyarrow RecordBatches in the source's schema (runs in a task)."""
    import pyarrow as pa
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    headers_type = arrow_schema.field("headers").type if options.include_headers else None
    topic, partition, start, end = part.topic, part.partition, part.start, part.end
    consumer = Consumer(consumer_config(options, **{
        "auto.offset.reset": "error" if options.fail_on_data_loss else "earliest",
        "error_cb": lambda err: None}))
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                   timeout=options.poll_timeout_ms / 1000)
        if start == EARLIEST:
            start = low
        if start < low:
            if options.fail_on_data_loss:
                raise KafkaDataLossError(data_loss_message(topic, partition, start, low))
            start = low
        if start >= end:
            return
        consumer.assign([TopicPartition(topic, partition, start)])
        deadline = time.monotonic() + options.poll_timeout_ms / 1000
        next_offset, rows = start, []
        while next_offset < end:
            messages = consumer.consume(num_messages=10_000, timeout=0.5)
            if not messages:
                position = consumer.position([TopicPartition(topic, partition)])[0].offset
                if position >= end:        # the range ends in a gap (compaction, transaction markers)
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no record of {topic}-{partition} arrived within kafkaConsumer.pollTimeoutMs="
                                       f"{options.poll_timeout_ms} ms (wanted offsets {next_offset} to {end - 1})")
                continue
            deadline = time.monotonic() + options.poll_timeout_ms / 1000
            for m in messages:
                error = m.error()
                if error is not None:
                    if error.code() == KafkaError._AUTO_OFFSET_RESET:
                        raise KafkaDataLossError(data_loss_message(topic, partition, next_offset, "a later offset"))
                    raise RuntimeError(f"reading {topic}-{partition}: {error.str()}")
            if messages[-1].offset() >= end:
                messages = [m for m in messages if m.offset() < end]
            if messages:
                rows.extend(messages)
                next_offset = messages[-1].offset() + 1
            if len(rows) >= ARROW_BATCH:
                yield _to_arrow(rows, topic, partition, arrow_schema, headers_type, pa)
                rows = []
        if rows:
            yield _to_arrow(rows, topic, partition, arrow_schema, headers_type, pa)
    finally:
        consumer.close()


def _to_arrow(messages, topic, partition, arrow_schema, headers_type, pa):
    n = len(messages)
    stamps = [m.timestamp() for m in messages]
    columns = [
        pa.array([m.key() for m in messages], pa.binary()),
        pa.array([m.value() for m in messages], pa.binary()),
        pa.array([topic] * n, pa.string()),
        pa.array([partition] * n, pa.int32()),
        pa.array([m.offset() for m in messages], pa.int64()),
        pa.array([ms * 1000 for _, ms in stamps], pa.int64()).cast(arrow_schema.field("timestamp").type),
        pa.array([kind - 1 if kind > 0 else -1 for kind, _ in stamps], pa.int32()),   # Kafka: 0 Create, 1 LogAppend
    ]
    if headers_type is not None:   # a record without headers: null, as Spark's source (not an empty array)
        columns.append(pa.array([[{"key": k, "value": v} for k, v in headers] if (headers := m.headers()) else None
                                 for m in messages], headers_type))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema)


class KafkaBatchReader(DataSourceReader):
    """``spark.read.format(...)``: the offsets are resolved once, when the query is planned."""

    def __init__(self, options, schema):
        self.options, self.schema = options, schema

    def partitions(self):
        offsets = KafkaOffsetReader(self.options)
        try:
            tps = offsets.topic_partitions()
            o = self.options
            start = offsets.resolve(o.starting, tps, "startingOffsets", o.starting_timestamp)
            end = offsets.resolve(o.ending, tps, "endingOffsets", o.ending_timestamp, ending=True)
        finally:
            offsets.close()
        parts = [KafkaPartition(t, p, start[(t, p)], end[(t, p)]) for t, p in tps if end[(t, p)] > start[(t, p)]]
        return parts or [KafkaPartition("", -1, 0, 0)]   # Spark wants at least one input partition

    def read(self, partition):
        if partition.partition < 0:
            return iter(())
        return read_range(self.options, self.schema, partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format(...)``: offsets per Kafka partition, planned before every micro-batch."""

    def __init__(self, options, schema):
        self.options, self.schema = options, schema
        self._offsets = None
        self._available_now = None

    @property
    def offsets(self) -> KafkaOffsetReader:
        if self._offsets is None:
            self._offsets = KafkaOffsetReader(self.options)
        return self._offsets

    def initialOffset(self):
        tps = self.offsets.topic_partitions()
        o = self.options
        return to_spark(self.offsets.resolve(o.starting, tps, "startingOffsets", o.starting_timestamp))

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.options.max_offsets) if self.options.max_offsets else ReadAllAvailable()

    def _latest(self):
        tps = self.offsets.topic_partitions()
        return {tp: high for tp, (_, high) in self.offsets.watermarks(tps).items()}

    def prepareForTriggerAvailableNow(self):
        self._available_now = self._latest()

    def latestOffset(self, start, limit):
        begin = from_spark(start)
        latest = self._latest() if self._available_now is None else dict(self._available_now)
        for tp in begin:                        # a partition never goes backwards within a query
            if tp in latest:
                latest[tp] = max(latest[tp], begin[tp])
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows, self.offsets)
        return to_spark(latest)

    def reportLatestOffset(self):
        return to_spark(self._latest())

    def partitions(self, start, end):
        begin, finish = from_spark(start), from_spark(end)
        return [KafkaPartition(t, p, begin.get((t, p), EARLIEST), stop)
                for (t, p), stop in sorted(finish.items()) if stop > begin.get((t, p), 0) or (t, p) not in begin]

    def read(self, partition):
        return read_range(self.options, self.schema, partition)

    def commit(self, end):
        pass   # Spark's checkpoint holds the offsets; nothing is committed to Kafka

    def stop(self):
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None


def rate_limit(begin: dict, latest: dict, limit: int, offsets: KafkaOffsetReader) -> dict:
    """At most ``limit`` offsets in all, shared out in proportion to what each partition has waiting (as Spark)."""
    new = [tp for tp in latest if tp not in begin]
    if new:   # new partitions start at their earliest offset
        begin = {**begin, **{tp: low for tp, (low, _) in offsets.watermarks(new).items()}}
    sizes = {tp: latest[tp] - begin[tp] for tp in latest if latest[tp] > begin[tp]}
    total = sum(sizes.values())
    if total <= limit:
        return latest
    capped = dict(latest)
    for tp, size in sizes.items():
        share = limit * size / total
        step = int(share) if share >= 1 else (1 if share > 0 else 0)   # Spark: floor, or ceil below 1
        capped[tp] = min(latest[tp], begin[tp] + step)
    for tp in new:
        capped.setdefault(tp, begin[tp])
    return capped
