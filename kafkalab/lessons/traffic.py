"""Producers that keep writing while a lesson breaks the cluster underneath them.

:class:`Writer` (lesson 03, "Kill the leader") is a producer in a background thread: numbered
records (``000000``, ``000001``, ...) to one partition, about one every 10 ms, for as long as it
runs, recording each delivery report. The configs being taught (``acks``, idempotence, retries)
are the lesson's and come in as arguments; the thread, the callbacks and the bookkeeping are here.
"""
from __future__ import annotations

import threading
import time

from confluent_kafka import Producer

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
