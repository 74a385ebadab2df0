"""Kafka's Java producer with a full buffer: lesson 02's ``buffer.memory`` and ``max.block.ms`` step.

librdkafka (confluent-kafka) never blocks in ``produce()``: with its queue full it raises ``BufferError`` at
once. kafka-python 3.x has no ``buffer_memory`` at all. The client that *blocks* on a full buffer is Kafka's
own Java producer, so the lesson runs it: ``BufferFullProducer.java`` beside this module, compiled against
the jars :func:`kafkalab.streams.jvm.fetch_streams` fetches (they include ``kafka-clients``), as lesson 06's
word count is.

:class:`BufferFullRun` starts it as a child process, which connects and sends one record; ``fill()`` tells it
to send records until a ``send()`` fails (the lesson pauses the partition's leader first, so nothing is
acknowledged and the buffer fills); ``finish()`` lets it flush what it buffered (the leader resumed) and
stops it. The child's lines are parsed into a dict; its stderr is kept (``stderr``) and never printed.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("BufferFullProducer.java")
JVM_OPTIONS = ["-Xmx128m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error"]


class BufferFullRun:
    """``BufferFullProducer`` against ``bootstrap_servers``: ``buffer.memory`` bytes, ``max.block.ms``, records of
    ``record_bytes`` to partition 0 of ``topic``, ``acks=1``, ``linger.ms=0``."""

    def __init__(self, bootstrap_servers: str, topic: str, buffer_memory: int, max_block_ms: int,
                 record_bytes: int = 1000, timeout_s: float = 120):
        from ..streams.jvm import fetch_streams, java_command

        self.timeout_s = timeout_s
        command = java_command(fetch_streams(), [bootstrap_servers, topic, str(buffer_memory), str(max_block_ms),
                                                 str(record_bytes)], JVM_OPTIONS, source=SOURCE)
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, bufsize=1)
        self.stderr = ""
        self._expect("READY")

    def _line(self) -> str:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(self.timeout_s)
            self.stderr = self.process.stderr.read()
            raise RuntimeError(f"BufferFullProducer exited with {self.process.returncode}: {self.stderr[-2000:]}")
        return line.rstrip("\n")

    def _expect(self, word: str) -> str:
        line = self._line()
        if not line.startswith(word):
            raise RuntimeError(f"BufferFullProducer said {line!r}, not {word}")
        return line

    def fill(self) -> dict:
        """Send records until one ``send()`` fails: how many it accepted, its longest ``send()`` before (ms), and
        the failing ``send()``'s duration (ms), exception class, whether it is a ``TimeoutException``, message."""
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        _, accepted, longest = self._expect("ACCEPTED").split(" ", 2)
        _, ms, exception, is_timeout, message = self._expect("FAILED").split(" ", 4)
        return {"records accepted": int(accepted), "longest accepted send() ms": float(longest),
                "failed send() ms": float(ms), "exception": exception, "is a TimeoutException": is_timeout == "true",
                "message": message}

    def finish(self) -> int:
        """Flush what is buffered and stop: the records acknowledged after the failure."""
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        delivered = int(self._expect("DELIVERED").split()[1])
        self.close()
        return delivered

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(self.timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr = self.process.stderr.read()
        self.process.stdout.close()
        self.process.stderr.close()
