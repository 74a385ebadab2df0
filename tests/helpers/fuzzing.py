"""A mutation fuzzer for the mini broker, used by ``tests/integration/test_fuzz.py`` (a short
seeded run) and ``benchmarks/fuzz.py`` (a long one).

Frames from the captured corpus (``tests/helpers/fuzz_corpus.py``) are mutated with a fixed seed and sent
over many connections at once, while a well-behaved idempotent ``acks=all`` producer and a
consumer work on their own topic. Mutations: bit flips, truncation, length prefixes that lie,
array counts that lie, nulls (-1 lengths), record areas overwritten with and without a CRC that
matches, codec bits swapped, compressed bombs, huge partition counts. ``run()`` returns what was
sent and what the broker did, and what the well-behaved clients saw.
"""
from __future__ import annotations

import random
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

import crc32c
import psutil

from tests.helpers import fuzz_corpus
from tests.helpers import kafka_wire as wire

HEADER_SIZE = 61


def _crc(batch: bytearray) -> None:
    struct.pack_into(">I", batch, 17, crc32c.crc32c(memoryview(batch)[21:]))


def _find_batch(frame: bytes) -> int:
    """Where a Produce frame's (first) record batch starts in the frame, or -1."""
    from kafka.protocol.producer.produce import ProduceRequest
    try:
        version = struct.unpack_from(">h", frame, 2)[0]
        request = ProduceRequest.decode(frame, version=version, header=True)
        records = bytes(request.topic_data[0].partition_data[0].records)
    except Exception:  # noqa: BLE001
        return -1
    return frame.rfind(records) if len(records) >= HEADER_SIZE else -1


def _bomb(inflated: int = 256 * 1024 * 1024) -> bytes:
    """A record batch whose one record's value is ``inflated`` zero bytes, zstd (concatenated frames)."""
    import cramjam
    from kafka.record.util import encode_varint
    head = bytearray(b"\x00\x00\x00\x02k")
    encode_varint(inflated, head.append)
    prefix = bytearray()
    encode_varint(len(head) + inflated + 1, prefix.append)
    chunk = 64 * 1024 * 1024
    payload = (bytes(cramjam.zstd.compress(bytes(prefix + head)))
               + bytes(cramjam.zstd.compress(b"\x00" * chunk)) * (inflated // chunk)
               + bytes(cramjam.zstd.compress(b"\x00")))
    batch = bytearray(struct.pack(">qiibIhiqqqhii", 0, HEADER_SIZE - 12 + len(payload), 0, 2, 0, 4, 0,
                                  int(time.time() * 1000), int(time.time() * 1000), -1, -1, -1, 1) + payload)
    _crc(batch)
    return bytes(batch)


class Mutator:
    def __init__(self, corpus: list[bytes], seed: int):
        self.corpus = corpus
        self.rng = random.Random(seed)
        self.produce = [f for f in corpus if struct.unpack_from(">h", f)[0] == 0 and _find_batch(f) >= 0]
        self.bomb = None
        self.counts = {}

    def next(self) -> tuple[str, bytes]:
        """(kind, whole frame with its size prefix)."""
        rng = self.rng
        kinds = ["bitflip", "bitflip", "truncate", "length_lie", "count_lie", "null", "records",
                 "records_crc", "codec_swap", "bomb", "partitions", "plain"]
        kind = rng.choice(kinds)
        self.counts[kind] = self.counts.get(kind, 0) + 1
        body = bytearray(rng.choice(self.corpus))
        if kind in ("records", "records_crc", "codec_swap", "bomb") and self.produce:
            body = bytearray(rng.choice(self.produce))
            pos = _find_batch(bytes(body))
            batch = body[pos:pos + 12 + struct.unpack_from('>i', body, pos + 8)[0]]
            if kind == "bomb":
                if self.bomb is None:
                    self.bomb = _bomb()
                bomb = self.bomb
                # the bomb replaces the batch; the records field's length in front of it is fixed up below
                body = self._replace_records(body, pos, bomb)
            elif kind == "codec_swap":
                struct.pack_into(">h", batch, 21, (struct.unpack_from(">h", batch, 21)[0] & ~7) | rng.randrange(5))
                _crc(batch)
                body[pos:pos + len(batch)] = batch
            else:
                for _ in range(rng.randrange(1, 6)):
                    i = rng.randrange(HEADER_SIZE, len(batch))
                    batch[i] = rng.choice([0x00, 0xFF, 0x7F, 0x80, rng.randrange(256)])
                if kind == "records_crc":
                    _crc(batch)
                body[pos:pos + len(batch)] = batch
        elif kind == "bitflip":
            for _ in range(rng.randrange(1, 9)):
                i = rng.randrange(len(body))
                body[i] ^= 1 << rng.randrange(8)
        elif kind == "truncate":
            body = body[:rng.randrange(0, len(body))]
        elif kind == "count_lie" and len(body) > 14:
            i = rng.randrange(10, len(body) - 3)
            struct.pack_into(">i", body, i, rng.choice([2**31 - 1, 0x10000, 1000, -2, 2**20]))
        elif kind == "null" and len(body) > 12:
            i = rng.randrange(10, len(body) - 1)
            if rng.random() < 0.5:
                struct.pack_into(">h", body, i, -1)
            elif i + 4 <= len(body):
                struct.pack_into(">i", body, i, -1)
        elif kind == "partitions":
            body = bytearray(self._partitions_request(rng))
        size = len(body)
        if kind == "length_lie":
            size = rng.choice([size + rng.randrange(1, 64), max(0, size - rng.randrange(1, 8)), 2**31 - 1, -1])
        return kind, struct.pack(">i", size) + bytes(body)

    @staticmethod
    def _replace_records(body: bytearray, pos: int, batch: bytes) -> bytearray:
        (api_key, version) = struct.unpack_from(">hh", body)
        from kafka.protocol.producer.produce import ProduceRequest
        request = ProduceRequest.decode(bytes(body), version=version, header=True)
        request.topic_data[0].partition_data[0].records = batch
        return bytearray(wire.encode(request, version, request.header.correlation_id, request.header.client_id)[4:])

    @staticmethod
    def _partitions_request(rng) -> bytes:
        from kafka.protocol.admin import CreatePartitionsRequest, CreateTopicsRequest
        if rng.random() < 0.5:
            req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name=f"fz-{rng.randrange(10**6)}", num_partitions=rng.choice([100_000, 3000, 2**31 - 1, 5, 40]),
                replication_factor=1, assignments=[], configs=[])], timeout_ms=30000, validate_only=False)
            return wire.encode(req, 4)[4:]
        req = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name=rng.choice(fuzz_corpus.TOPICS), count=rng.choice([3000, 100_000, 2**31 - 1, 6]),
            assignments=None)], timeout_ms=30000, validate_only=False)
        return wire.encode(req, 1)[4:]


@dataclass
class Report:
    frames: int = 0
    kinds: dict = field(default_factory=dict)
    closed: int = 0
    answered: int = 0
    max_ping_s: float = 0.0
    pings: int = 0
    failed_pings: int = 0
    rss_before: int = 0
    rss_peak: int = 0
    rss_after: int = 0
    fds_before: int = 0
    fds_after: int = 0
    partitions_before: int = 0
    partitions_after: int = 0
    acked: int = 0
    consumed: int = 0
    duplicates: int = 0
    missing: int = 0
    seconds: float = 0.0


def _send(bootstrap: str, frames: list[bytes]) -> str:
    """Send frames on one connection; 'closed' if the broker closed it, else 'answered'."""
    with wire.connect(bootstrap, timeout=5) as sock:
        try:
            for f in frames:
                sock.sendall(f)
        except OSError:
            return "closed"
        sock.settimeout(0.3)
        try:
            while True:
                if not sock.recv(65536):
                    return "closed"
        except socket.timeout:
            return "answered"
        except OSError:
            return "closed"


def total_partitions(bootstrap: str) -> int:
    from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
    resp = wire.call(bootstrap, MetadataRequest(topics=None), MetadataResponse, 12)
    return sum(len(t.partitions) for t in resp.topics)


def run(bootstrap: str, pid: int, frames: int, seed: int, threads: int = 8, good_records: int = 2000,
        corpus: list[bytes] | None = None) -> Report:
    from confluent_kafka import Consumer, Producer, TopicPartition

    corpus = corpus if corpus is not None else fuzz_corpus.load()
    ps = psutil.Process(pid)
    report = Report(rss_before=ps.memory_info().rss, fds_before=ps.num_fds(),
                    partitions_before=total_partitions(bootstrap))
    mutator = Mutator(corpus, seed)
    work = []
    for _ in range(frames):
        work.append(mutator.next())
    report.kinds = dict(mutator.counts)
    lock = threading.Lock()
    stop = threading.Event()
    start = time.monotonic()

    def fuzz_worker(items):
        for i in range(0, len(items), 3):   # up to three frames per connection
            outcome = _send(bootstrap, [f for _, f in items[i:i + 3]])
            with lock:
                report.frames += len(items[i:i + 3])
                if outcome == "closed":
                    report.closed += 1
                else:
                    report.answered += 1

    def pinger():
        from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
        while not stop.is_set():
            t = time.monotonic()
            try:
                with wire.connect(bootstrap, timeout=5) as sock:
                    wire.roundtrip(sock, ApiVersionsRequest(), ApiVersionsResponse, 3)
                report.max_ping_s = max(report.max_ping_s, time.monotonic() - t)
            except OSError:
                report.failed_pings += 1
            report.pings += 1
            report.rss_peak = max(report.rss_peak, ps.memory_info().rss)
            stop.wait(0.2)

    acked, errors = [], []

    def on_delivery(err, msg):
        if err is None:
            acked.append(msg.value())
        else:
            errors.append(err)

    def good_producer():
        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                      "linger.ms": 5, "message.timeout.ms": 60000})
        for i in range(good_records):
            p.produce("fuzz-good", key=b"k%d" % (i % 7), value=b"good-%d" % i, on_delivery=on_delivery)
            p.poll(0)
            if i % 50 == 0:
                time.sleep(0.01)
        p.flush(60)

    ping = threading.Thread(target=pinger, daemon=True)
    ping.start()
    producer = threading.Thread(target=good_producer, daemon=True)
    producer.start()
    workers = [threading.Thread(target=fuzz_worker, args=(work[i::threads],), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(600)
    producer.join(120)
    # the consumer reads the good topic from the beginning: every acknowledged record exactly once
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "fuzz-good-reader", "enable.auto.commit": False})
    seen: dict[bytes, int] = {}
    try:
        c.assign([TopicPartition("fuzz-good", 0, 0)])
        deadline = time.time() + 60
        while time.time() < deadline and sum(seen.values()) < len(acked):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                seen[m.value()] = seen.get(m.value(), 0) + 1
    finally:
        c.close()
    stop.set()
    ping.join(5)
    report.seconds = time.monotonic() - start
    report.acked = len(acked)
    report.consumed = sum(seen.values())
    report.duplicates = sum(n - 1 for n in seen.values() if n > 1)
    report.missing = len(set(acked) - set(seen))
    time.sleep(0.5)
    report.rss_after = ps.memory_info().rss
    report.fds_after = ps.num_fds()
    report.partitions_after = total_partitions(bootstrap)
    return report
