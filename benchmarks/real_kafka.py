"""Apache Kafka 3.9 (ZooKeeper) and 4.x (KRaft) against mini brokers, in one run: start-up time and memory.

Usage (from the repository root; Kafka from ``kafkalab fetch-kafka 3.9``)::

    python -m benchmarks.real_kafka --json benchmarks/results/real-kafka.json
    python -m benchmarks.real_kafka --runs 5 --records 200000

For each run, alternating the clusters (mini, kafka, kraft, kraft-combined, mini, ...) so that all see the
same load. ``mini``: ZooKeeper + 3 mini brokers; ``kafka``: ZooKeeper + 3 Kafka 3.9 brokers; ``kraft``: Kafka
4.x in KRaft mode, 3 controllers + 3 brokers, no ZooKeeper (``mode="kraft"``, from ``kafkalab fetch-kafka 4``);
``kraft-combined``: 3 Kafka 4.x nodes that are broker and controller at once (``combined=True``).
``--clusters mini,kafka`` runs a subset.

``ready_s``
    wall time of ``kafkalab.cluster(brokers=3, backend=...)`` until it returns: ZooKeeper runs, the three
    brokers are registered in ``/brokers/ids`` and a controller is elected (the lab defaults, a fresh
    temporary directory; the real brokers with the lab's heap, ``KafkaBackend.heap_opts``);
``idle_rss_mb``
    resident memory (``psutil``) of ZooKeeper (or the controllers) and each broker 3 s later, idle, no topic;
``busy_rss_mb``
    the same after ``--records`` 100-byte records were written with ``acks=all`` to a 3-partition topic
    of replication factor 3 (confluent-kafka, ``linger.ms=5``) and read back by one consumer;
``produce_s``
    how long that write took (first ``produce()`` to the end of ``flush()``), for scale only;
``failover_s``
    then the controller is SIGKILLed (the broker in ``/controller``; in KRaft the active controller, the
    quorum's leader): the time until another one is controller (``Cluster.controller``, polled every 50 ms;
    in ZooKeeper mode that takes the dead broker's session timeout, ``zookeeper.session.timeout.ms``);
``format_s``
    KRaft only: the part of ``ready_s`` that ``kafka-storage format`` took (one JVM per node, all at once);
``close_s``
    the time ``close()`` takes (controlled shutdowns, then ZooKeeper or the controllers).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid


import kafkalab  # noqa: E402
from benchmarks.cluster import cluster_rss, fmt, load, summary  # noqa: E402  (benchmarks/cluster.py)
from kafkalab.cluster import KafkaBackend  # noqa: E402
from kafkalab.cluster.distribution import fetch_kafka  # noqa: E402
from kafkalab.cluster.kraft_config import KRaftBackend  # noqa: E402
from benchmarks.cluster import rss_mb  # noqa: E402


def write_and_read(c, records: int) -> float:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    topic = f"bench-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})   # kept alive until the answer is in
    admin.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})])[topic].result(30)
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "linger.ms": 5})
    value = os.urandom(100)
    t0 = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(120) == 0
    took = time.perf_counter() - t0
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 120
    while seen < records and time.monotonic() < deadline:
        seen += len(consumer.consume(1000, 0.5))
    consumer.close()
    assert seen == records, (seen, records)
    return took


def kraft_rss(c) -> dict:
    """RSS in MB of each controller and broker of a KRaft cluster (the watchdog apart, not in the total)."""
    out = {}
    for b in c._all_nodes():
        out[f"{'controller' if b.roles == 'controller' else 'broker'}_{b.id}"] = \
            rss_mb(b.pid) if c._state(b) == "running" else None
    out["total"] = round(sum(v for v in out.values() if v), 1)
    out["watchdog_not_counted"] = rss_mb(c._res.watchdog.pid)
    return {k: (round(v, 1) if isinstance(v, float) else v) for k, v in out.items()}


def controller_failover(c, timeout_s: float = 60.0) -> float:
    """SIGKILL the controller; seconds until another is controller."""
    old = c.controller
    t0 = time.perf_counter()
    c.kill(old)
    while time.perf_counter() - t0 < timeout_s:
        now = c.controller
        if now is not None and now != old:
            return time.perf_counter() - t0
        time.sleep(0.05)
    raise TimeoutError(f"no new controller within {timeout_s:.0f} s")


def start(name: str, homes: dict):
    if name == "mini":
        return kafkalab.cluster(brokers=3)
    if name == "kafka":
        return kafkalab.cluster(brokers=3, backend=KafkaBackend(homes["kafka"]))
    return kafkalab.cluster(brokers=3, backend=KRaftBackend(homes["kraft"]), mode="kraft",
                            combined=name == "kraft-combined")


def one_run(backend_name: str, homes: dict, records: int) -> dict:
    before = load()
    t0 = time.perf_counter()
    c = start(backend_name, homes)
    ready = time.perf_counter() - t0
    rss = kraft_rss if backend_name.startswith("kraft") else cluster_rss
    try:
        time.sleep(3.0)
        idle = rss(c)
        produce_s = write_and_read(c, records)
        busy = rss(c)
        failover_s = controller_failover(c)
    finally:
        t1 = time.perf_counter()
        c.close()
        closed = time.perf_counter() - t1
    return {"backend": backend_name, "ready_s": ready, "close_s": closed, "produce_s": produce_s,
            "failover_s": failover_s, "format_s": getattr(c, "format_time_s", None),
            "idle_rss_mb": idle, "busy_rss_mb": busy, "load_before": before, "load_after": load()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs per backend (alternating)")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--kafka", default="3.9", help="the Kafka version (kafkalab fetch-kafka VERSION)")
    ap.add_argument("--kraft", default="4", help="the Kafka version for KRaft mode (kafkalab fetch-kafka VERSION)")
    ap.add_argument("--clusters", default="mini,kafka,kraft,kraft-combined")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    names = args.clusters.split(",")
    kafka_home = str(fetch_kafka(args.kafka))
    homes = {"kafka": kafka_home, "kraft": str(fetch_kafka(args.kraft)) if any(n.startswith("kraft") for n in names)
             else None}
    heap = KafkaBackend(kafka_home).heap_opts
    results = {"machine": {"nproc": os.cpu_count(), "load_at_start": load(), "python": sys.version.split()[0],
                           "uname": " ".join(os.uname())},
               "params": {"runs": args.runs, "records": args.records, "kafka_home": kafka_home, "kafka_heap": heap,
                          "kraft_home": homes["kraft"], "kraft_controller_heap": KRaftBackend(homes["kraft"]).controller_heap_opts
                          if homes["kraft"] else None, "clusters": names},
               "runs": []}
    for i in range(args.runs):
        for name in names:
            r = one_run(name, homes, args.records)
            results["runs"].append(r)
            print(f"run {i + 1} {name:5}: ready {r['ready_s']:.2f} s, idle RSS {r['idle_rss_mb']['total']:.0f} MB, "
                  f"after {args.records} records {r['busy_rss_mb']['total']:.0f} MB (produce {r['produce_s']:.2f} s), "
                  f"controller failover {r['failover_s']:.2f} s, close {r['close_s']:.2f} s, load {r['load_before']}", flush=True)
    for name in names:
        rs = [r for r in results["runs"] if r["backend"] == name]
        results[name] = {"ready_s": summary([r["ready_s"] for r in rs]),
                         "close_s": summary([r["close_s"] for r in rs]),
                         "produce_s": summary([r["produce_s"] for r in rs]),
                         "failover_s": summary([r["failover_s"] for r in rs]),
                         "idle_rss_total_mb": summary([r["idle_rss_mb"]["total"] for r in rs]),
                         "busy_rss_total_mb": summary([r["busy_rss_mb"]["total"] for r in rs]),
                         "busy_rss_broker_mb": summary([r["busy_rss_mb"][f"broker_{i}"] for r in rs for i in (1, 2, 3)])}
        if name in ("mini", "kafka"):
            results[name]["zookeeper_rss_mb"] = summary([r["busy_rss_mb"]["zookeeper"] for r in rs])
        else:
            results[name]["format_s"] = summary([r["format_s"] for r in rs])
        if name == "kraft":
            results[name]["controller_rss_mb"] = summary([r["busy_rss_mb"][f"controller_{i}"] for r in rs
                                                          for i in (3001, 3002, 3003)])
        s = results[name]
        print(f"{name}: ready {fmt(s['ready_s'])}; idle RSS {fmt(s['idle_rss_total_mb'], 'MB', digits=0)}; "
              f"busy RSS {fmt(s['busy_rss_total_mb'], 'MB', digits=0)}; failover {fmt(s['failover_s'])}; "
              f"close {fmt(s['close_s'])}")
    results["machine"]["load_at_end"] = load()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
