"""What TLS and SASL cost: PLAINTEXT, SSL and SASL_SSL throughput on the mini broker and on Kafka, in one run.

Usage (from the repository root; Kafka from ``kafkalab fetch-kafka 4``)::

    python -m benchmarks.security --json benchmarks/results/security.json
    python -m benchmarks.security --records 100000 --repeat 5 --targets mini

Each target is one KRaft node that is broker and controller at once (``kafkalab.cluster(brokers=1, mode="kraft",
combined=True)``): ``mini``, the mini broker's Python node, and ``kafka``, Apache Kafka 4.x's (``KRaftBackend``),
with the same three client listeners, made with Kafka's configs: PLAINTEXT, SSL (a certificate of
``kafkalab.security.CertificateAuthority``, ``ssl.client.auth=none``) and SASL_SSL (SASL/PLAIN, a user of the JAAS
config). For every repetition, the listeners are run in turn (PLAINTEXT, SSL, SASL_SSL, then again), so that each
sees the same machine load: a confluent-kafka producer writes ``--records`` records of ``--value-size`` random
bytes to a new 1-partition topic (``acks=1``, ``linger.ms=5``, waits for ``flush()``), then a consumer assigned to
the partition reads them all from the beginning (``fetch.queue.backoff.ms=10``, as ``throughput.py``; the clock
starts at ``assign()``, so the first fetch's round trips count). MB/s counts value bytes. The report gives each
phase's median MB/s per listener and the ratios to PLAINTEXT of the same target, which are what compares across
machines: the absolute numbers are this machine's at that moment.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from kafkalab.security import CertificateAuthority

LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL")
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


def broker_configs(ca: CertificateAuthority) -> dict:
    return {"listeners": "PLAINTEXT://:0,SSL://:0,SASL_SSL://:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
            **ca.broker_configs(listener="SSL"), **ca.broker_configs(listener="SASL_SSL"),
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS}


def client_configs(ca: CertificateAuthority, listener: str) -> dict:
    if listener == "PLAINTEXT":
        return {}
    out = ca.client_configs()
    if listener == "SASL_SSL":
        out.update({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
                    "sasl.password": "alice-secret"})
    return out


def start(target: str, ca: CertificateAuthority, directory: str):
    if target == "mini":
        return kafkalab.cluster(brokers=1, mode="kraft", combined=True, dir=directory, **broker_configs(ca))
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.kraft_config import KRaftBackend
    return kafkalab.cluster(brokers=1, mode="kraft", combined=True, dir=directory,
                            backend=KRaftBackend(str(fetch_kafka("4"))), **broker_configs(ca))


def one_run(cluster, ca, listener: str, records: int, value_size: int) -> dict:
    """Produce then consume ``records`` on ``listener``: the MB/s of each phase."""
    topic = f"security-{listener.lower()}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})   # the lab's PLAINTEXT listener
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
    conf = {"bootstrap.servers": cluster.listeners[listener], **client_configs(ca, listener)}
    value = os.urandom(value_size)
    producer = Producer({**conf, "acks": "1", "linger.ms": 5, "queue.buffering.max.messages": 200_000})
    start_s = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.005)
    assert producer.flush(300) == 0, "records left undelivered"
    produce_s = time.perf_counter() - start_s
    # fetch.queue.backoff.ms=10: librdkafka's default 1000 ms naps would measure the nap (see throughput.py)
    consumer = Consumer({**conf, "group.id": topic, "enable.auto.commit": False, "fetch.queue.backoff.ms": "10"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen, start_s, deadline = 0, time.perf_counter(), time.monotonic() + 300
    while seen < records and time.monotonic() < deadline:
        seen += sum(1 for m in consumer.consume(10_000, 0.5) if m.error() is None)
    consume_s = time.perf_counter() - start_s
    consumer.close()
    assert seen == records, f"read {seen} of {records}"
    mb = records * value_size / 1e6
    return {"listener": listener, "produce_mb_s": mb / produce_s, "consume_mb_s": mb / consume_s}


def summarize(runs: list[dict]) -> dict:
    out: dict = {}
    for listener in LISTENERS:
        mine = [r for r in runs if r["listener"] == listener]
        out[listener] = {phase: statistics.median(r[f"{phase}_mb_s"] for r in mine) for phase in ("produce", "consume")}
    for listener in LISTENERS[1:]:
        for phase in ("produce", "consume"):
            out[listener][f"{phase}_vs_plaintext"] = out[listener][phase] / out["PLAINTEXT"][phase]
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--value-size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--targets", default="mini,kafka")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    report = {"records": args.records, "value_size": args.value_size, "repeat": args.repeat, "targets": {}}
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-security-") as tmp:
        ca = CertificateAuthority(directory=os.path.join(tmp, "ca"))
        for target in args.targets.split(","):
            with start(target, ca, os.path.join(tmp, target)) as cluster:
                runs = [one_run(cluster, ca, listener, args.records, args.value_size)
                        for _ in range(args.repeat) for listener in LISTENERS]
            report["targets"][target] = {"runs": runs, "median": summarize(runs)}
            print(f"\n{target}: median MB/s of {args.repeat} runs ({args.records} x {args.value_size} B)")
            for listener, m in report["targets"][target]["median"].items():
                ratios = (f"  ({m['produce_vs_plaintext']:.2f}x / {m['consume_vs_plaintext']:.2f}x PLAINTEXT)"
                          if listener != "PLAINTEXT" else "")
                print(f"  {listener:<10} produce {m['produce']:7.1f}  consume {m['consume']:7.1f}{ratios}")
        ca.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
