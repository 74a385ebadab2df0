"""Does a cluster's cost grow with its idle partitions? ``acks=all`` latency, idle CPU, restart and recovery.

Usage (from the repository root)::

    python -m benchmarks.idle_partitions --json benchmarks/results/idle_partitions.json
    python -m benchmarks.idle_partitions --kinds mini-zk mini-kraft --sizes 0 600

For each kind of 3-broker cluster (``mini-zk``: the mini brokers with ZooKeeper, the default ``kafkalab.cluster``;
``mini-kraft``: mini nodes in KRaft mode, ``mode="kraft"``; ``kafka-3.9``: Apache Kafka 3.9 brokers with ZooKeeper;
``kafka-4``: Apache Kafka 4.x in KRaft mode, from ``kafkalab fetch-kafka``, its brokers with a 1 GB heap, Kafka's
default: the lab's 256 MB runs out of memory at 3,000 partitions) and each number of idle partitions
(``--sizes``, RF 3, in topics of 100 partitions, created before measuring, on a fresh cluster each time):

``latency``
    a 1-partition RF-3 topic ``hot`` (``min.insync.replicas`` 2); one confluent-kafka producer, ``acks=all``,
    ``linger.ms=0``, sends one 100-byte record and flushes, ``--records`` times after a warm-up of 50; the median
    and p99 of produce-to-acknowledgement.
``idle_cpu``
    then, with nothing produced, each broker process's CPU (``psutil``, % of one core) over ``--idle-s`` seconds
    (KRaft controllers listed apart).
``restart``
    then the leader of ``hot`` is SIGKILLed (``Cluster.kill``) and restarted (``Cluster.restart``): the seconds
    until ``restart`` returns (the broker listens and is registered) and until every partition's ISR holds all
    three replicas again (Metadata, every 0.2 s).

The machine is shared and noisy: numbers are one run each, with the load average recorded.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import psutil

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kafkalab  # noqa: E402
from kafkalab.cluster import KafkaBackend  # noqa: E402
from kafkalab.cluster.distribution import fetch_kafka  # noqa: E402
from kafkalab.cluster.kraft_config import KRaftBackend  # noqa: E402

KINDS = ("mini-zk", "mini-kraft", "kafka-3.9", "kafka-4")


#: Kafka's own default heap is 1 GB (KAFKA_HEAP_OPTS); the lab's 256 MB runs out at 3,000 partitions
KAFKA_HEAP = "-Xms256m -Xmx1g"


def open_cluster(kind: str, directory: str):
    if kind == "mini-zk":
        return kafkalab.cluster(brokers=3, dir=directory)
    if kind == "mini-kraft":
        return kafkalab.cluster(brokers=3, mode="kraft", dir=directory)
    if kind == "kafka-3.9":
        return kafkalab.cluster(brokers=3, backend=KafkaBackend(str(fetch_kafka("3.9")), heap_opts=KAFKA_HEAP),
                                dir=directory)
    return kafkalab.cluster(brokers=3, backend=KRaftBackend(str(fetch_kafka("4")), heap_opts=KAFKA_HEAP), mode="kraft",
                            dir=directory)


def create_idle(c, partitions: int) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    topics = [NewTopic("hot", 1, 3, config={"min.insync.replicas": "2"})]
    topics += [NewTopic(f"idle-{i}", 100, 3) for i in range(partitions // 100)]
    started = time.monotonic()
    for i in range(0, len(topics), 5):   # under max.partitions.per.request
        for f in admin.create_topics(topics[i:i + 5]).values():
            f.result(300)
    wait_whole_isr(c, 300)
    return time.monotonic() - started


def isr_whole(c) -> bool:
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": c.bootstrap_servers}).list_topics(timeout=10)
    return all(len(p.isrs) == len(p.replicas) and p.leader >= 0
               for t in md.topics.values() for p in t.partitions.values())


def wait_whole_isr(c, timeout_s: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            if isr_whole(c):
                return time.monotonic() - started
        except Exception:   # noqa: BLE001 -- a broker restarting
            pass
        time.sleep(0.2)
    raise TimeoutError("ISRs not whole")


def latency(c, records: int) -> dict:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "linger.ms": 0})
    value = b"x" * 100
    times = []
    for i in range(50 + records):
        t = time.perf_counter()
        p.produce("hot", value)
        p.flush(30)
        if i >= 50:
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"median_ms": round(statistics.median(times), 2), "p99_ms": round(times[int(len(times) * 0.99)], 2)}


def idle_cpu(c, seconds: float) -> dict:
    procs = {f"broker_{b}": psutil.Process(pid) for b, pid in zip(c.brokers["id"], c.brokers["pid"])}
    for cid in getattr(c, "controller_ids", []):
        if cid not in c.broker_ids:   # a separate controller process
            procs[f"controller_{cid}"] = psutil.Process(c._broker(cid).pid)
    for p in procs.values():
        p.cpu_percent(None)
    time.sleep(seconds)
    return {name: round(p.cpu_percent(None), 1) for name, p in procs.items()}


def restart(c) -> dict:
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": c.bootstrap_servers}).list_topics("hot", timeout=10)
    leader = md.topics["hot"].partitions[0].leader
    c.kill(leader)
    started = time.monotonic()
    c.restart(leader)
    up = time.monotonic() - started
    return {"broker": int(leader), "restart_s": round(up, 2), "whole_isr_s": round(up + wait_whole_isr(c, 600), 2)}


def run(kind: str, size: int, records: int, idle_s: float) -> dict:
    out: dict = {"kind": kind, "idle_partitions": size, "load": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as d, open_cluster(kind, os.path.join(d, "c")) as c:
        try:
            out["create_s"] = round(create_idle(c, size), 1)
            time.sleep(3)
            out.update(latency(c, records))
            out["idle_cpu"] = idle_cpu(c, idle_s)
            out.update(restart(c))
        except Exception as exc:   # noqa: BLE001 -- recorded: which step failed, and each broker's last words
            out["error"] = f"{type(exc).__name__}: {exc}"
            out["broker_logs"] = {int(b): c.broker_log(int(b), 5) for b in c.broker_ids}
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--sizes", nargs="+", type=int, default=[0, 600, 3000])
    ap.add_argument("--records", type=int, default=500)
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    results = []
    for kind in args.kinds:
        for size in args.sizes:
            r = run(kind, size, args.records, args.idle_s)
            print(json.dumps(r), flush=True)
            results.append(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": os.uname().nodename, "cpus": os.cpu_count(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
