"""Writing to Kafka from Spark, in batch (``df.write``) and streaming (``df.writeStream``) queries.

As Spark's Kafka sink: each row becomes one record. The ``value`` column is
required (string or binary; null writes a tombstone); ``key`` (string or
binary), ``topic`` (string), ``partition`` (int) and ``headers``
(array<struct<key: string, value: binary>>) are optional. The ``topic``
option, when given, overrides any ``topic`` column; without either the
query is refused. Rows without a ``partition`` go where the producer's
partitioner puts them (librdkafka's default here; Spark's Java producer
uses murmur2 — lesson 01 shows the difference).

Every task uses its own **idempotent producer** (``enable.idempotence``,
KIP-98: a broker drops a retried batch it already has) and ``flush()``es
before it reports success, so a micro-batch is committed in the checkpoint
only after Kafka acknowledged all its records. That is Spark's guarantee:
**at least once** — a task or query that fails after writing and is run
again writes those rows again (the idempotent producer only removes
duplicates of *its own* retries, not of a re-run task).
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from .options import WRITE_OPTIONS, KafkaOptionError, _get, client_config


class KafkaWriteError(RuntimeError):
    """Kafka did not acknowledge every record of a task."""


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    records: int


def check_write_schema(schema: StructType, options) -> None:
    """Refuse a DataFrame the sink cannot write, naming the column and the fix (as Spark's KafkaWriter)."""
    for key in options:
        if not key.lower().startswith("kafka.") and key.lower() not in WRITE_OPTIONS:
            raise KafkaOptionError(f"unknown option '{key}' for the Kafka sink (known: topic, kafka.*)")
    client_config(options)
    fields = {f.name: f.dataType for f in schema.fields}
    if "value" not in fields:
        raise KafkaOptionError(f"the DataFrame written to Kafka needs a 'value' column (string or binary); it has "
                               f"{list(fields)}: select or alias one, e.g. to_json(struct(*)).alias('value')")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], (StringType, BinaryType)):
            raise KafkaOptionError(f"column '{name}' must be string or binary, not {fields[name].simpleString()}: "
                                   f"cast it, e.g. col('{name}').cast('string')")
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise KafkaOptionError("column 'topic' must be a string")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise KafkaOptionError("column 'partition' must be an int: cast it, col('partition').cast('int')")
    if "headers" in fields:
        h = fields["headers"]
        if not (isinstance(h, ArrayType) and isinstance(h.elementType, StructType)
                and [f.name for f in h.elementType.fields] == ["key", "value"]):
            raise KafkaOptionError("column 'headers' must be array<struct<key: string, value: binary>>")
    if "topic" not in fields and not _get(options, "topic"):
        raise KafkaOptionError("no topic to write to: set the option 'topic', or give the DataFrame a 'topic' column")


def write_batches(options, batches) -> KafkaCommitMessage:
    """Produce every row of ``batches`` (pyarrow RecordBatches); return once Kafka acknowledged all of them."""
    from confluent_kafka import KafkaException, Producer

    config = {"enable.idempotence": True, "linger.ms": 5, "log_level": 0, "error_cb": lambda err: None}
    config.update(client_config(options))
    topic_option = _get(options, "topic")
    errors = []

    def on_delivery(err, msg):
        if err is not None and len(errors) < 5:
            errors.append(f"{msg.topic()}-{msg.partition()}: {err.str()}")

    producer = Producer(config)
    count = 0
    try:
        for batch in batches:
            columns = {name: batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)}
            n = batch.num_rows
            values = columns["value"]
            keys = columns.get("key", [None] * n)
            topics = [topic_option] * n if topic_option else columns["topic"]
            partitions = columns.get("partition", [None] * n)
            headers = columns.get("headers", [None] * n)
            for i in range(n):
                if topics[i] is None:
                    raise KafkaWriteError("a row has a null 'topic' and no 'topic' option is set")
                args = {"key": keys[i], "value": values[i], "on_delivery": on_delivery}
                if partitions[i] is not None:
                    args["partition"] = partitions[i]
                if headers[i]:
                    args["headers"] = [(h["key"], h["value"]) for h in headers[i]]
                while True:
                    try:
                        producer.produce(topics[i], **args)
                        break
                    except BufferError:   # the client's queue is full: let it send, then retry
                        producer.poll(0.1)
                count += 1
            producer.poll(0)
        left = producer.flush(120)
        if left:
            raise KafkaWriteError(f"{left} record(s) were not acknowledged by Kafka within 120 s")
    except KafkaException as exc:
        raise KafkaWriteError(f"producing to Kafka failed: {exc.args[0].str()}") from None
    if errors:
        raise KafkaWriteError(f"Kafka refused records: {'; '.join(errors)}")
    return KafkaCommitMessage(records=count)


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options):
        self.options = options

    def write(self, iterator):
        return write_batches(self.options, iterator)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Each micro-batch's rows go to Kafka; commit() has nothing to do (Kafka has them once flushed)."""

    def __init__(self, options):
        self.options = options

    def write(self, iterator):
        return write_batches(self.options, iterator)

    def commit(self, messages, batchId):
        pass

    def abort(self, messages, batchId):
        pass
