"""kafkalab's Kafka data source for Spark, a Python data source (pyspark 4): ``kafkalab-kafka``.

Spark's own Kafka source and sink (format ``kafka``) live in the
``spark-sql-kafka-0-10`` connector, a Maven package that is not part of
pyspark. This source reads and writes with the same options and the same
schema, so ``spark.readStream.format(kafka_format(spark))`` runs the same code
with either (see :func:`kafkalab.spark.kafka_format`). Spark reserves the
name ``kafka``, so this one is registered as ``kafkalab-kafka``.

Columns read (Spark's Kafka source schema): ``key`` and ``value`` (binary),
``topic``, ``partition``, ``offset``, ``timestamp``, ``timestampType`` (0
CreateTime, 1 LogAppendTime) and, with ``includeHeaders=true``, ``headers``
(array<struct<key: string, value: binary>>; null for a record without headers, as in Spark's source).
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType,
                               TimestampType)

from .options import ReadOptions, _get
from .reader import KafkaBatchReader, KafkaStreamReader
from .writer import KafkaBatchWriter, KafkaStreamWriter, check_write_schema

NAME = "kafkalab-kafka"

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def kafka_schema(include_headers: bool = False) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS))
    return StructType(fields)


class KafkaDataSource(DataSource):
    """Batch and streaming reads and writes of Kafka topics, with Spark's Kafka options."""

    @classmethod
    def name(cls):
        return NAME

    def schema(self):
        return kafka_schema(str(_get(self.options, "includeHeaders") or "false").lower() == "true")

    def reader(self, schema):
        return KafkaBatchReader(ReadOptions(self.options, streaming=False), schema)

    def streamReader(self, schema):
        return KafkaStreamReader(ReadOptions(self.options, streaming=True), schema)

    def writer(self, schema, overwrite):
        check_write_schema(schema, self.options)
        return KafkaBatchWriter(dict(self.options))

    def streamWriter(self, schema, overwrite):
        check_write_schema(schema, self.options)
        return KafkaStreamWriter(dict(self.options))
