"""The fuzz corpus: request frames that real clients sent to a mini broker.

``python -m tests.helpers.fuzz_corpus`` (from the repository root) starts a ``kafkalab.mini()`` broker in
this process, records every request frame its ``KafkaApis`` receives while confluent-kafka and kafka-python clients do
ordinary work (produce with each compression, an idempotent producer, consume in a group with
commits, admin: create/alter/describe/delete), and writes ``tests/data/fuzz_corpus.bin``:
a few frames per (API, version), each as a 4-byte length and the frame without its size prefix.
``load()`` reads it back. The corpus is small and checked in, so the fuzz test does not depend on
the clients' exact traffic of the day.
"""
from __future__ import annotations

import collections
import os
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/
CORPUS = os.path.join(HERE, "data", "fuzz_corpus.bin")
PER_API_VERSION = 3        # frames kept per (api key, version[, compression of a Produce])
MAX_FRAME = 32 * 1024      # larger frames are left out (the corpus stays small)
TOPICS = ["corpus-none", "corpus-gzip", "corpus-snappy", "corpus-lz4", "corpus-zstd", "corpus-idem",
          "corpus-kp"]


def load(path: str = CORPUS) -> list[bytes]:
    frames, data, pos = [], open(path, "rb").read(), 0
    while pos < len(data):
        (n,) = struct.unpack_from(">I", data, pos)
        frames.append(data[pos + 4:pos + 4 + n])
        pos += 4 + n
    return frames


def capture(path: str = CORPUS) -> dict:
    sys.path.insert(0, os.path.dirname(HERE))
    import kafkalab
    from kafkalab.broker.kafka_apis import KafkaApis

    kept: dict[tuple[int, int], list[bytes]] = collections.defaultdict(list)
    original = KafkaApis.handle

    async def recording(self, request):
        frame = request.frame
        api_key, version = struct.unpack_from(">hh", frame)
        frames = kept[(api_key, version, _codec(frame, version) if api_key == 0 else -1)]
        if len(frames) < PER_API_VERSION and len(frame) <= MAX_FRAME and bytes(frame) not in frames:
            frames.append(bytes(frame))
        return await original(self, request)

    KafkaApis.handle = recording
    try:
        with kafkalab.mini(log_dir=tempfile.mkdtemp(prefix="fuzz-corpus-")) as broker:
            _traffic(broker.bootstrap_servers)
    finally:
        KafkaApis.handle = original
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        for key in sorted(kept):
            for frame in kept[key]:
                f.write(struct.pack(">I", len(frame)) + frame)
    return {k: len(v) for k, v in sorted(kept.items())}


def _codec(frame: bytes, version: int) -> int:
    """The compression of a Produce frame's first batch (so that each codec is in the corpus)."""
    from kafka.protocol.producer.produce import ProduceRequest
    try:
        request = ProduceRequest.decode(frame, version=version, header=True)
        records = request.topic_data[0].partition_data[0].records
        return struct.unpack_from(">h", records, 21)[0] & 0x07
    except Exception:  # noqa: BLE001
        return -1


def _traffic(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic as KNewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, 2, 1) for t in TOPICS] +
                                 [NewTopic("corpus-compact", 1, 1, config={"cleanup.policy": "compact"})]).values():
        f.result(30)
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 20})
        for i in range(30):
            p.produce(f"corpus-{codec}", key=b"k%d" % (i % 5), value=b"value %d " % i * 3,
                      headers=[("h", b"x")] if i % 3 == 0 else None)
        p.flush(30)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for i in range(20):
        p.produce("corpus-idem", key=b"k", value=b"idempotent %d" % i)
    p.produce("corpus-compact", key=b"k", value=b"v")
    p.flush(30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "corpus-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["corpus-none", "corpus-gzip"])
    got, deadline = 0, time.time() + 30
    while got < 60 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
            if got % 10 == 0:
                c.commit(m, asynchronous=False)
    c.committed([TopicPartition("corpus-none", 0)], timeout=10)
    c.close()
    list(admin.describe_configs([ConfigResource("topic", "corpus-none"), ConfigResource("broker", "0")]).values())[0].result(30)
    for f in admin.incremental_alter_configs([ConfigResource("topic", "corpus-lz4", incremental_configs=[
            __import__("confluent_kafka.admin", fromlist=["ConfigEntry"]).ConfigEntry(
                "retention.ms", "86400000", incremental_operation=__import__(
                    "confluent_kafka.admin", fromlist=["AlterConfigOpType"]).AlterConfigOpType.SET)])]).values():
        f.result(30)
    for f in admin.create_partitions([NewPartitions("corpus-snappy", 3)]).values():
        f.result(30)
    admin.list_consumer_groups().result(30)
    for f in admin.describe_consumer_groups(["corpus-group"]).values():
        f.result(30)
    from confluent_kafka import TopicPartition as TP
    for f in admin.delete_records([TP("corpus-zstd", 0, 1)]).values():
        f.result(30)

    kp = KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip", linger_ms=20)
    for i in range(20):
        kp.send("corpus-kp", key=b"k", value=b"kafka-python %d" % i, headers=[("h", b"y")])
    kp.flush(30)
    kp.close(10)
    kc = KafkaConsumer("corpus-kp", bootstrap_servers=bootstrap, group_id="corpus-kp-group",
                       auto_offset_reset="earliest", consumer_timeout_ms=3000)
    for i, _ in enumerate(kc):
        if i == 10:
            kc.commit()
    kc.close()
    ka = KafkaAdminClient(bootstrap_servers=bootstrap)
    ka.create_topics([KNewTopic("corpus-tmp", 1, 1)])
    ka.describe_configs([__import__("kafka.admin", fromlist=["ConfigResource"]).ConfigResource("TOPIC", "corpus-kp")])
    ka.list_groups() if hasattr(ka, "list_groups") else None
    ka.delete_topics(["corpus-tmp"])
    ka.close()


if __name__ == "__main__":
    for (key, version, codec), n in capture().items():
        print(f"api {key:3d} v{version:<2d} {'codec %d ' % codec if codec >= 0 else ''}{n} frame(s)")
    print(CORPUS, os.path.getsize(CORPUS), "bytes")
