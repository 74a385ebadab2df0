"""``KafkaStore``: the registry's state as records of a compacted Kafka topic (``_schemas``), as Confluent keeps it.

Confluent Schema Registry keeps nothing on its own disk. Every change is a record of a one-partition topic with
``cleanup.policy=compact`` (``kafkastore.topic``, default ``_schemas``); the key says what changed, the value is
the new state (``null``, a tombstone, removes it), and compaction keeps the latest value of every key. Every
instance reads the topic from offset 0 into memory, so a restart or a second instance knows every subject,
version and id. Keys and values are JSON, in Confluent's formats::

    {"keytype":"SCHEMA","subject":"users-value","version":1,"magic":1}
        -> {"subject":"users-value","version":1,"id":1,"schema":"{...}","deleted":false}
    {"keytype":"CONFIG","subject":null,"magic":0}            -> {"compatibilityLevel":"FULL"}
    {"keytype":"DELETE_SUBJECT","subject":"users-value","magic":0} -> {"subject":"users-value","version":3}
    {"keytype":"NOOP","magic":0}                             -> null

A write (:meth:`KafkaStore.write`) is acknowledged by every in-sync replica (``acks=all``) and returns only once
this instance's reader has read it back and applied it, as Confluent's ``KafkaStore.put`` waits: what a request
wrote, the next request sees. At start the store writes a NOOP record and reads up to it (Confluent's
``waitUntilKafkaReaderReachesLastOffset``), so it starts with everything written before it.

**One writer at a time.** Two instances that both picked "the next id" would give two schemas the same id.
Confluent elects a leader among its instances (a Kafka group protocol of its own) and the others forward their
writes to it. kafkalab uses Kafka's transactions instead: every instance writes with the same
``transactional.id``, so the producer that called ``init_transactions`` last fences the others (the zombie
fencing of lesson 07). A fenced instance that has a write to do takes the role back -- fencing the other --,
reads the topic to its end and checks its write again (:class:`WriterFenced`, in
:mod:`kafkalab.registry.kafka_schema_registry`). Readers use ``isolation.level=read_committed``, so a write cut
short by fencing is never seen. (Confluent's own registry writes without transactions; its records have the
same keys and values.)
"""
from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from typing import Callable

from . import errors

log = logging.getLogger(__name__)
#: librdkafka's own log lines (connection refused, "fenced by a newer instance" -- expected when another
#: instance takes over the writes --, ...) go here instead of the notebook's stderr, silenced: what matters
#: reaches the caller as an error. ``client_log.setLevel(logging.DEBUG)`` (and a handler) shows them.
client_log = logging.getLogger(__name__ + ".librdkafka")
client_log.setLevel(logging.CRITICAL + 1)

#: Confluent's ``kafkastore.topic`` default
DEFAULT_TOPIC = "_schemas"

Apply = Callable[[dict, "dict | None", int], None]


def encode(document: dict | None) -> bytes | None:
    return None if document is None else json.dumps(document, separators=(",", ":")).encode()


class WriterFenced(Exception):
    """This instance must become the writer again before it writes: another instance's producer fenced this
    one's, or this one's last transaction failed half-way."""


class KafkaStore:
    """The ``_schemas`` topic: a reader thread applying every record to ``apply``, and a writer."""

    def __init__(self, bootstrap_servers: str, apply: Apply, topic: str = DEFAULT_TOPIC, timeout: float = 30.0,
                 client_config: dict | None = None):
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.timeout = timeout
        self._apply = apply
        self._client_config = {"bootstrap.servers": bootstrap_servers, "logger": client_log, **(client_config or {})}
        self._applied = -1                      # the offset of the last record applied
        self._applied_changed = threading.Condition()
        self._stop = threading.Event()
        self._reader: threading.Thread | None = None
        self._reader_error: BaseException | None = None
        self._producer = None
        self._broken = False                    # the last transaction failed half-way: start a new producer
        #: one ``transactional.id`` for every registry on this topic: the newest producer fences the older ones
        self.transactional_id = f"kafkalab-schema-registry-{topic}"

    # ---- lifecycle ---------------------------------------------------------------------------------------
    def start(self) -> None:
        """Create the topic if needed, read it up to its end, and be ready to write."""
        self._ensure_topic()
        self._reader = threading.Thread(target=self._read_forever, name=f"KafkaStore-reader[{self.topic}]",
                                        daemon=True)
        self._reader.start()
        try:
            self.take_over()      # the newest instance writes; NOOP: read up to everything written before us
        except BaseException:
            self.close()          # no reader thread left behind by a start that failed
            raise

    def close(self) -> None:
        self._stop.set()
        if self._reader is not None:
            self._reader.join(timeout=10)
        self._producer = None      # no transaction is left open: each write commits before it returns

    # ---- the topic ---------------------------------------------------------------------------------------
    def _ensure_topic(self) -> None:
        """A one-partition compacted topic, replicated to min(3, brokers) as Confluent's default asks for 3."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

        admin = AdminClient(self._client_config)
        try:
            try:
                metadata = admin.list_topics(timeout=self.timeout)
            except KafkaException as e:
                raise RuntimeError(f"no Kafka answered at {self.bootstrap_servers} within {self.timeout:g} s "
                                   f"({e.args[0].str()})") from None
            if self.topic not in metadata.topics or metadata.topics[self.topic].error is not None:
                replication = min(3, len(metadata.brokers))
                futures = admin.create_topics([NewTopic(self.topic, 1, replication,
                                                        config={"cleanup.policy": "compact"})],
                                              operation_timeout=self.timeout, request_timeout=self.timeout)
                try:
                    futures[self.topic].result(self.timeout)
                except KafkaException as e:
                    if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:   # another instance was quicker
                        raise
            deadline = time.monotonic() + self.timeout
            while True:
                topic = admin.list_topics(self.topic, timeout=self.timeout).topics.get(self.topic)
                if topic is not None and topic.error is None and topic.partitions and all(
                        p.leader >= 0 for p in topic.partitions.values()):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"topic {self.topic!r} has no leader after {self.timeout:.0f} s")
                time.sleep(0.05)
            if len(topic.partitions) != 1:
                raise RuntimeError(f"the schemas topic {self.topic!r} has {len(topic.partitions)} partitions; "
                                   "the registry needs exactly 1 (the order of its records is its history)")
            resource = ConfigResource(ConfigResource.Type.TOPIC, self.topic)
            configs = admin.describe_configs([resource])[resource].result(self.timeout)
            policy = configs["cleanup.policy"].value if "cleanup.policy" in configs else "delete"
            if "compact" not in policy or "delete" in policy:
                raise RuntimeError(f"the schemas topic {self.topic!r} has cleanup.policy={policy}; it must be "
                                   "'compact' (with 'delete', retention would drop registered schemas)")
        finally:
            del admin

    # ---- reading -----------------------------------------------------------------------------------------
    def _read_forever(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer({**self._client_config, "group.id": f"kafkalab-schema-registry-{uuid.uuid4().hex}",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                             "isolation.level": "read_committed"})
        try:
            consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])   # no group: every instance reads all
            while not self._stop.is_set():
                message = consumer.poll(0.1)
                if message is None:
                    continue
                if message.error() is not None:
                    if message.error().fatal():
                        raise RuntimeError(f"reading {self.topic}: {message.error()}")
                    # transient (a broker down, a leader moving): librdkafka retries; the notebook stays quiet
                    log.debug("schemas topic %s: %s", self.topic, message.error())
                    continue
                self._apply_record(message.key(), message.value(), message.offset())
        except BaseException as e:      # noqa: BLE001 - whatever stopped the reader fails the writers waiting on it
            self._reader_error = e
            log.exception("the reader of %s stopped", self.topic)
        finally:
            consumer.close()
            with self._applied_changed:
                self._applied_changed.notify_all()

    def _apply_record(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        try:
            key_doc = json.loads(key) if key else None
            value_doc = json.loads(value) if value is not None else None
        except ValueError:
            key_doc = None
        if isinstance(key_doc, dict) and "keytype" in key_doc:
            try:
                self._apply(key_doc, value_doc, offset)
            except Exception:   # noqa: BLE001 - one bad record must not stop the registry
                log.exception("could not apply the record at offset %d of %s", offset, self.topic)
        else:
            log.warning("skipping the record at offset %d of %s: its key is not a registry key", offset, self.topic)
        with self._applied_changed:
            self._applied = offset
            self._applied_changed.notify_all()

    # ---- writing -----------------------------------------------------------------------------------------
    def _new_producer(self):
        """A transactional producer; ``init_transactions`` fences every older producer of the same
        ``transactional.id`` (KIP-98's zombie fencing) and aborts what it left open."""
        from confluent_kafka import Producer

        from confluent_kafka import KafkaException

        producer = Producer({**self._client_config, "transactional.id": self.transactional_id, "acks": "all",
                             "linger.ms": 0, "transaction.timeout.ms": int(self.timeout * 1000)})
        try:
            producer.init_transactions(self.timeout)
        except KafkaException as e:
            raise errors.store_error(f"cannot become the writer of {self.topic}: {e.args[0].str()}") from None
        return producer

    def take_over(self, attempts: int = 3) -> None:
        """Become the writer (fencing the one before) and read up to everything it wrote."""
        for _ in range(attempts):
            self._producer = self._new_producer()
            self._broken = False
            try:
                self.put({"keytype": "NOOP", "magic": 0}, None)
                return
            except WriterFenced:     # another instance took over in between: again
                continue
        raise errors.store_error(f"other instances keep taking over the writes to {self.topic}")

    def put(self, key: dict, value: dict | None) -> int:
        """Write ``key`` -> ``value`` (``None``: a tombstone), wait until it is read back; its offset."""
        return self.write([(key, value)])

    def write(self, records: list[tuple[dict, dict | None]]) -> int:
        """Write ``records`` in one transaction and wait until this instance has read them back; the last
        offset. :class:`WriterFenced` if another instance has become the writer since this one last wrote."""
        from confluent_kafka import KafkaError, KafkaException

        if self._producer is None:
            raise errors.store_error("the store is closed")
        if self._broken:
            # the last transaction failed half-way (Kafka gone, a timeout): its outcome is unknown, and the
            # producer may be stuck in it. A new producer (init_transactions) settles it -- the coordinator
            # completes or aborts it -- then the caller reads to the end and checks its write again.
            raise WriterFenced("the last write failed; the writer starts again")
        offsets: list = []

        def delivered(err, message):
            offsets.append(err if err is not None else message.offset())

        producer = self._producer
        try:
            producer.begin_transaction()
            for key, value in records:
                producer.produce(self.topic, key=encode(key), value=encode(value), partition=0,
                                 on_delivery=delivered)
            producer.commit_transaction(self.timeout)
        except KafkaException as e:
            error = e.args[0]
            if error.fatal() or error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                                 KafkaError.INVALID_PRODUCER_EPOCH):
                raise WriterFenced(str(error)) from None
            self._broken = True
            raise errors.store_error(f"writing to {self.topic}: {error}") from None
        except BufferError as e:
            self._broken = True
            raise errors.store_error(str(e)) from None
        if len(offsets) != len(records) or not all(isinstance(o, int) for o in offsets):
            self._broken = True
            raise errors.store_error(f"writing to {self.topic}: {offsets}")
        offset = max(offsets)
        deadline = time.monotonic() + self.timeout
        with self._applied_changed:
            # the reader passes the commit marker too (offset + 1) before the LSO lets it see the records
            while self._applied < offset:
                if self._reader_error is not None or (self._reader is not None and not self._reader.is_alive()):
                    raise errors.store_error(f"the reader of {self.topic} stopped: {self._reader_error}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise errors.operation_timeout(f"offset {offset} of {self.topic} was written but not read back "
                                                   f"in {self.timeout:.0f} s")
                self._applied_changed.wait(min(left, 0.5))
        return offset
