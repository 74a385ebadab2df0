"""Producers for the lessons to measure: one that keeps writing, one that sends a trickle.

* :class:`Writer` (lesson 03, "Kill the leader") is a producer in a background thread: numbered
  records (``000000``, ``000001``, ...) to one partition, about one every 10 ms, for as long as it
  runs, recording each delivery report.
* :func:`trickle` (lesson 02, "A trickle: what ``linger.ms`` costs") sends one record at a time,
  each after the previous one's delivery report and a pause: a producer that never fills a batch.
* :func:`trickle_to_consumer` (lesson 05, "The long poll") sends records a fixed gap apart into a
  partition that a caught-up consumer reads, and times each from ``produce()`` to the consumer's
  ``poll()``: what ``fetch.min.bytes`` and ``fetch.wait.max.ms`` cost a consumer.

The configs being taught (``acks``, idempotence, ``linger.ms``) are the lesson's and come in as
arguments; the threads, the callbacks and the bookkeeping are here.
"""
from __future__ import annotations

import threading
import time

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

from .reading import client_config


class Writer:
    """A producer thread: numbered records to one partition, and what came back for each.

    ``acked``: ``(time.time(), offset, value)`` of every record the cluster acknowledged, in the order
    of the delivery reports; ``failed``: ``(value, error name)`` of every record it gave up on.
    ``config``: the producer's configs (``acks="all"``, ``enable_idempotence=True``, ...), Python or
    Kafka names. ``logger``: where librdkafka's log lines go (brokers die in the lesson on purpose).
    """

    def __init__(self, kafka, topic: str, partition: int = 0, logger=None, **config):
        self.topic, self.partition = topic, partition
        producer_config = client_config(kafka, **config)
        self.producer = Producer(producer_config, logger=logger) if logger is not None else Producer(producer_config)
        self.acked: list[tuple[float, int, str]] = []
        self.failed: list[tuple[str, str]] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"writer-{topic}")

    def _delivered(self, err, msg):
        if err is None:
            self.acked.append((time.time(), msg.offset(), msg.value().decode()))
        else:
            self.failed.append((msg.value().decode(), err.name()))

    def _run(self):
        while not self._stop.is_set():
            try:
                self.producer.produce(self.topic, value=f"{self.sent:06d}", partition=self.partition,
                                      on_delivery=self._delivered)
                self.sent += 1
            except BufferError:     # the client's queue is full (while no leader answers): wait
                pass
            self.producer.poll(0.005)
            time.sleep(0.005)

    def start(self) -> "Writer":
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 60) -> int:
        """Stop writing, wait up to ``timeout_s`` for the reports; return how many records are still unanswered."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.producer.flush(timeout_s)

    def close(self) -> None:
        if self._thread.is_alive():
            self.stop()
        self.producer.close()

    def ack_times(self):
        """The acknowledgements' ``time.time()`` instants, as a pandas Series."""
        import pandas as pd

        return pd.Series([t for t, _, _ in self.acked], dtype=float)


def trickle(kafka, topic: str, n: int, gap_s: float, partition: int = 0, logger=None, **config):
    """Latencies (ms, a pandas Series) of ``n`` records sent one at a time, ``gap_s`` apart.

    Each record is sent only after the previous one's delivery report and a pause of ``gap_s``: a
    producer with nothing else to send, whose record waits ``linger.ms`` alone. Latency: from
    ``produce()`` to the delivery report. ``poll()``, not ``flush()``: librdkafka's ``flush()`` sends
    at once, whatever ``linger.ms`` says. A record that is not acknowledged raises ``AssertionError``.
    """
    import pandas as pd

    producer_config = client_config(kafka, **config)
    producer = Producer(producer_config, logger=logger) if logger is not None else Producer(producer_config)
    latencies = []
    for i in range(n):
        done = []
        start = time.perf_counter()
        producer.produce(topic, f"trickle-{i}".encode(), partition=partition,
                         on_delivery=lambda err, msg: done.append(err))
        while not done:
            producer.poll(0.001)
        assert done == [None], f"trickle-{i} was not acknowledged: {done[0]}"
        latencies.append((time.perf_counter() - start) * 1000)
        time.sleep(gap_s)
    producer.flush(10)
    return pd.Series(latencies)


def trickle_to_consumer(kafka, topic: str, producer: Producer, n: int = 25, gap_s: float = 0.06,
                        value_size: int = 1000, group_id: str = "kafkalab-lesson-trickle", **fetch_config):
    """``(latencies, got)``: ms from ``produce()`` to ``poll()`` of ``n`` records sent ``gap_s`` apart, and
    arrival times.

    A consumer with ``fetch_config`` (``fetch_min_bytes=...``, ``fetch_wait_max_ms=...``) is assigned
    partition 0 of ``topic`` at its end and polls for a second first, so that from then on each of
    its Fetch requests finds nothing new and waits in the broker. Then ``producer`` (the lesson's, with
    ``linger.ms=0``) sends record ``i`` (key ``str(i)``, ``value_size`` zero bytes) every ``gap_s``
    while the consumer polls. ``latencies``: one per record received, in key order; ``got``: key ->
    ``time.monotonic()`` of its arrival (records that arrived in one Fetch share an instant).
    """
    reader = Consumer(client_config(kafka, group_id=group_id, **fetch_config))
    try:
        reader.assign([TopicPartition(topic, 0, OFFSET_END)])
        caught_up = time.monotonic() + 1.0
        while time.monotonic() < caught_up:   # from now on each Fetch finds nothing new, and waits
            reader.poll(0.05)
        sent, got, i = {}, {}, 0
        next_send, deadline = time.monotonic(), time.monotonic() + n * gap_s + 5
        while len(got) < n and time.monotonic() < deadline:
            if i < n and time.monotonic() >= next_send:
                producer.produce(topic, key=str(i), value=bytes(value_size))
                producer.poll(0)
                sent[i], i, next_send = time.monotonic(), i + 1, next_send + gap_s
            msg = reader.poll(0.005)
            if msg is not None and msg.error() is None:
                got[int(msg.key())] = time.monotonic()
    finally:
        reader.close()
    return [1000 * (got[k] - sent[k]) for k in sorted(got)], got
