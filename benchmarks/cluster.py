"""How fast is ``kafkalab.cluster(brokers=3)``: start, failover, memory, replicated throughput, latency.

Usage (from the repository root)::

    python -m benchmarks.cluster --json benchmarks/results/cluster.json        # everything
    python -m benchmarks.cluster --only startup failover                       # some parts
    python -m benchmarks.cluster --only throughput --records 1000000 --repeat 3

Five measurements, each repeated and reported as every run plus the median
(the machine is shared: the load average is recorded with every run):

``startup``
    Wall time of ``kafkalab.cluster(brokers=3)`` (lab defaults, a fresh
    temporary directory) from the call until it returns, i.e. until
    ZooKeeper runs, the three brokers listen, are registered in
    ``/brokers/ids`` and a controller is elected; then the resident memory
    (RSS) of ZooKeeper and of each broker 3 s later (idle, no topic yet), and
    the time ``close()`` takes.
``throughput``
    On one lab cluster: a fresh 1-partition topic per run, created with the
    replication factor asked for (RF 3 topics with ``min.insync.replicas=2``);
    ``benchmarks/throughput.py``'s producer (confluent-kafka, 100-byte random
    values, ``linger.ms=5``, no compression, not idempotent) sends
    ``--records`` records and flushes; the clock runs from the first
    ``produce()`` to the end of ``flush()``; the watermarks are checked; the
    CPU seconds (user+system) of each broker process during the phase are
    recorded, and how long after the flush every replica's log end offset
    reaches the end (replication lag; 0 for ``acks=all``). Configurations
    alternate run by run: ``acks=all`` RF 3, ``acks=1`` RF 3, ``acks=1`` RF 1,
    ``acks=all`` RF 1. Each topic is deleted after its run.
``memory``
    RSS (``psutil``) of the ZooKeeper JVM and of the three broker processes
    of the throughput cluster, idle before the first run, after every run, and
    at the end (the watchdog process is listed apart, not counted).
``latency``
    End-to-end latency with ``acks=all`` on RF 3 (``min.insync.replicas=2``):
    a producer in this process stamps each 100-byte record with
    ``time.monotonic_ns()`` just before ``produce()`` at ``--latency-rate``
    records/s (``linger.ms=0``); a consumer in a separate process
    (``multiprocessing``, same machine, same monotonic clock) computes
    receive time minus stamp for every record. A warm-up until the consumer
    has seen a first record is not counted. Also the produce-to-ack latency
    (delivery report) of the same records, and the same with ``acks=1`` on RF 1
    for reference.
``failover``
    On the same kind of cluster: a 3-partition RF 3 topic with
    ``min.insync.replicas=2``; a producer (``acks=all``, ``linger.ms=0``)
    writes one record every 5 ms to one partition; after 2 s of steady writes
    the partition's leader is killed (``Cluster.kill``: SIGKILL) or stopped
    (``Cluster.stop``: a controlled shutdown). Measured from the signal:
    the first acknowledged write through the new leader (a delivery report
    carrying a higher leader epoch), the first acknowledged write of a record
    sent after the signal, the longest gap between two acknowledgements, and
    the broker side from ZooKeeper watches: when the broker's
    ``/brokers/ids/<id>`` disappeared (its session expired) and when the
    partition's state znode named a new leader. Kinds: the leader is not the
    controller (the partition is chosen so), the leader is also the
    controller, and a controlled shutdown of the leader. The broker is
    restarted and back in the ISR before the next run. The session timeout
    is the lab default (``zookeeper.session.timeout.ms``, printed) unless
    ``--broker-config`` sets it.
"""
from __future__ import annotations

import argparse
import functools
import json
import multiprocessing as mp
import os
import random
import statistics
import struct
import sys
import threading
import time
import uuid


import psutil  # noqa: E402
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.helpers import cluster_helpers  # noqa: E402  (tests/helpers/cluster_helpers.py: wait_until)
import kafkalab  # noqa: E402
from benchmarks import throughput  # noqa: E402  (benchmarks/throughput.py: its producer, offsets check, parse_kv)

PARTS = ("startup", "throughput", "memory", "latency", "failover")


# -- small helpers ---------------------------------------------------------------------

def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def summary(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": statistics.median(values), "min": min(values), "max": max(values)}


def fmt(s: dict, unit: str = "s", scale: float = 1.0, digits: int = 2) -> str:
    if not s.get("n"):
        return "-"
    return (f"median {s['median'] * scale:.{digits}f} {unit} (min {s['min'] * scale:.{digits}f}, "
            f"max {s['max'] * scale:.{digits}f}, n={s['n']})")


def rss_mb(pid: int | None) -> float | None:
    try:
        return psutil.Process(pid).memory_info().rss / 1e6 if pid else None
    except psutil.Error:
        return None


def cluster_rss(c) -> dict:
    """RSS in MB of ZooKeeper and each running broker (the watchdog apart, not in the total)."""
    out = {"zookeeper": rss_mb(c.zookeeper.pid)}
    for b in c._res.brokers.values():
        out[f"broker_{b.id}"] = rss_mb(b.pid) if c._state(b) == "running" else None
    out["total"] = round(sum(v for v in out.values() if v), 1)
    wd = c._res.watchdog
    out["watchdog_not_counted"] = rss_mb(wd.pid) if wd is not None else None
    return {k: (round(v, 1) if isinstance(v, float) else v) for k, v in out.items()}


def broker_cpu(c) -> dict[int, float]:
    out = {}
    for b in c._res.brokers.values():
        try:
            out[b.id] = sum(psutil.Process(b.pid).cpu_times()[:2])
        except psutil.Error:
            out[b.id] = 0.0
    return out


# tests/helpers/cluster_helpers.py; it raises WaitTimedOut, a TimeoutError
wait_until = functools.partial(cluster_helpers.wait_until, timeout=60.0, interval=0.05)


def isr_full(c, topic: str, rf: int) -> bool:
    df = c.describe(topic)
    return len(df) > 0 and all(len(isr) == rf for isr in df["isr"]) and df["leader"].notna().all()


def create_topic(c, prefix: str, partitions: int, rf: int, configs: dict | None = None) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    fut = admin.create_topics([NewTopic(name, partitions, rf, config={k: str(v) for k, v in (configs or {}).items()})],
                              operation_timeout=30)[name]
    fut.result(60)
    wait_until(lambda: isr_full(c, name, rf), f"{name}: every partition led, with a full ISR")
    # every broker must know the topic before the clients ask (Metadata comes from UpdateMetadata)
    admins = [AdminClient({"bootstrap.servers": f"{b.host}:{b.port}"}) for b in c._res.brokers.values()]

    def known_everywhere():
        for a in admins:
            t = a.list_topics(name, timeout=5).topics.get(name)
            if t is None or t.error is not None or len(t.partitions) != partitions:
                return False
        return True
    wait_until(known_everywhere, f"{name} in every broker's metadata", timeout=30, interval=0.1)
    return name


def delete_topic(c, topic: str) -> None:
    try:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        admin.delete_topics([topic], operation_timeout=30)[topic].result(60)
    except Exception as exc:  # noqa: BLE001
        print(f"  (could not delete {topic}: {exc})", flush=True)


def leos(c, topic: str) -> dict:
    row = c.describe(topic).iloc[0].to_dict()
    return {k: v for k, v in row.items() if k.startswith("leo_")}


# -- 1. start-up -------------------------------------------------------------------------

def bench_startup(args) -> dict:
    print(f"== startup: kafkalab.cluster(brokers=3), {args.startup_runs} runs", flush=True)
    runs = []
    for i in range(args.startup_runs):
        before = load()
        t0 = time.perf_counter()
        c = kafkalab.cluster(brokers=3, **args.broker_configs)
        ready = time.perf_counter() - t0
        try:
            time.sleep(3.0)
            rss = cluster_rss(c)
        finally:
            t1 = time.perf_counter()
            c.close()
            closed = time.perf_counter() - t1
        runs.append({"ready_s": ready, "cluster_start_time_s": c.start_time_s, "close_s": closed,
                     "idle_rss_mb": rss, "load_before": before, "load_after": load()})
        print(f"  run {i + 1}: ready in {ready:.2f} s, close {closed:.2f} s, idle RSS {rss['total']:.0f} MB "
              f"(ZooKeeper {rss['zookeeper']:.0f}), load {before}", flush=True)
        time.sleep(1.0)
    out = {"runs": runs, "ready_s": summary([r["ready_s"] for r in runs]),
           "close_s": summary([r["close_s"] for r in runs]),
           "idle_rss_total_mb": summary([r["idle_rss_mb"]["total"] for r in runs]),
           "goal": "ready <= 5 s"}
    print(f"  ready: {fmt(out['ready_s'])}", flush=True)
    return out


# -- 2. throughput (and memory) ------------------------------------------------------------

THROUGHPUT_CONFIGS = [("acks=all RF3", "all", 3), ("acks=1 RF3", "1", 3), ("acks=1 RF1", "1", 1),
                      ("acks=all RF1", "all", 1)]


def bench_throughput(c, args, results: dict) -> None:
    print(f"== throughput: {args.records:,} records x 100 B, 1 partition, {args.repeat} runs per config", flush=True)
    memory = {"idle_before": cluster_rss(c), "after_runs": []}
    print(f"  idle RSS: {memory['idle_before']}", flush=True)
    runs = {name: [] for name, _, _ in THROUGHPUT_CONFIGS}
    pargs = argparse.Namespace(acks="1", linger_ms=args.linger_ms, compression="none", idempotence=False,
                               records=args.records, value_size=100)
    for i in range(args.repeat):
        for name, acks, rf in THROUGHPUT_CONFIGS:
            topic = create_topic(c, "tput", 1, rf, {"min.insync.replicas": 2} if rf == 3 else {})
            pargs.acks = acks
            before = load()
            cpu0 = broker_cpu(c)
            r = throughput.produce(c.bootstrap_servers, topic, pargs, {})
            cpu1 = broker_cpu(c)
            t_flush = time.monotonic()
            try:
                replicated = wait_until(lambda: all(v == args.records for v in leos(c, topic).values()),
                                        "every replica at the end", timeout=60, interval=0.02) and \
                    time.monotonic() - t_flush
            except TimeoutError:
                replicated = None
            throughput.check_offsets(c.bootstrap_servers, topic, 1, args.records)
            leader = int(c.describe(topic).iloc[0]["leader"])
            cpu = {b: round(cpu1[b] - cpu0[b], 3) for b in cpu0}
            rss = cluster_rss(c)
            memory["after_runs"].append({"config": name, "run": i + 1, "rss_mb": rss})
            runs[name].append({"records_per_s": r.records_per_s, "mb_per_s": r.mb_per_s, "seconds": r.seconds,
                               "broker_cpu_s": cpu, "broker_cpu_total_s": round(sum(cpu.values()), 3),
                               "leader": leader, "replicated_after_flush_s": replicated,
                               "load_before": before, "load_after": load()})
            print(f"  run {i + 1} {name:>13}: {r.records_per_s:>9,.0f} rec/s ({r.seconds:.2f} s), broker CPU "
                  f"{ {b: f'{v:.2f}' for b, v in cpu.items()} } (leader {leader}), all replicas at the end "
                  f"{'-' if replicated is None else f'{replicated:.2f} s'} after the flush, RSS {rss['total']:.0f} MB,"
                  f" load {before}", flush=True)
            delete_topic(c, topic)
    memory["end"] = cluster_rss(c)
    memory["max_total_after_runs_mb"] = max(m["rss_mb"]["total"] for m in memory["after_runs"])
    out = {"params": {"records": args.records, "value_size": 100, "linger_ms": args.linger_ms, "partitions": 1,
                      "compression": "none", "idempotence": False},
           "configs": {}}
    for name, acks, rf in THROUGHPUT_CONFIGS:
        rs = runs[name]
        out["configs"][name] = {"acks": acks, "replication_factor": rf, "runs": rs,
                                "records_per_s": summary([r["records_per_s"] for r in rs]),
                                "broker_cpu_total_s": summary([r["broker_cpu_total_s"] for r in rs]),
                                "leader_cpu_s": summary([r["broker_cpu_s"][r["leader"]] for r in rs])}
        print(f"  {name}: {fmt(out['configs'][name]['records_per_s'], 'rec/s', digits=0)}", flush=True)
    out["goal"] = "acks=all RF 3 >= 150,000 records/s of 100 bytes"
    results["throughput"] = out
    results["memory"] = memory
    print(f"  RSS at the end: {memory['end']}; max total after a run {memory['max_total_after_runs_mb']} MB",
          flush=True)


# -- 3. end-to-end latency ------------------------------------------------------------------

STAMP = struct.Struct(">qq")   # monotonic_ns at send, sequence (-1: warm-up)


def _latency_consumer(bootstrap: str, topic: str, expected: int, ready, done, q) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lat-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "enable.partition.eof": False})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    delays, seen = [], 0
    deadline = time.monotonic() + 300
    try:
        while seen < expected and time.monotonic() < deadline and not done.is_set():
            m = c.poll(0.1)   # returns as soon as a record is there (consume(n) would wait for n)
            now = time.monotonic_ns()
            if m is not None and m.error() is None:
                stamp, seq = STAMP.unpack_from(m.value())
                if seq < 0:
                    ready.set()
                else:
                    delays.append(now - stamp)
                    seen += 1
    finally:
        c.close()
        q.put(delays)


def latency_run(c, args, acks: str, rf: int) -> dict:
    topic = create_topic(c, "latency", 1, rf, {"min.insync.replicas": 2} if rf == 3 else {})
    n = int(args.latency_rate * args.latency_seconds)
    ctx = mp.get_context("spawn")
    ready, done, q = ctx.Event(), ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=_latency_consumer, args=(c.bootstrap_servers, topic, n, ready, done, q), daemon=True)
    proc.start()
    acked: list[int] = []
    errors: list[str] = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
            return
        stamp, seq = STAMP.unpack_from(msg.value())
        if seq >= 0:
            acked.append(time.monotonic_ns() - stamp)

    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": acks, "linger.ms": 0})
    pad = os.urandom(100 - STAMP.size)
    try:
        deadline = time.monotonic() + 60
        while not ready.is_set():   # warm-up: until the consumer sees a first record
            if time.monotonic() > deadline:
                raise TimeoutError("the latency consumer saw nothing within 60 s")
            p.produce(topic, STAMP.pack(time.monotonic_ns(), -1) + pad, partition=0)
            p.poll(0.1)
        p.flush(30)
        time.sleep(0.5)
        before = load()
        interval = 1.0 / args.latency_rate
        start = time.monotonic()
        for seq in range(n):
            due = start + seq * interval
            while True:
                wait = due - time.monotonic()
                if wait <= 0:
                    break
                p.poll(wait)
            p.produce(topic, STAMP.pack(time.monotonic_ns(), seq) + pad, partition=0, on_delivery=on_delivery)
            p.poll(0)
        p.flush(60)
        sent_s = time.monotonic() - start
        delays = q.get(timeout=120)
    finally:
        done.set()
        proc.join(10)
        if proc.is_alive():
            proc.kill()
        delete_topic(c, topic)
    delays_ms = sorted(d / 1e6 for d in delays)
    acked_ms = sorted(d / 1e6 for d in acked)

    def pct(xs, q_):
        return round(xs[min(len(xs) - 1, int(q_ * len(xs)))], 3) if xs else None
    out = {"acks": acks, "replication_factor": rf, "rate_per_s": args.latency_rate, "records": n,
           "received": len(delays_ms), "send_seconds": round(sent_s, 2), "errors": errors[:5],
           "e2e_ms": {"p50": pct(delays_ms, 0.5), "p90": pct(delays_ms, 0.9), "p99": pct(delays_ms, 0.99),
                      "p99.9": pct(delays_ms, 0.999), "max": delays_ms[-1] if delays_ms else None},
           "ack_ms": {"p50": pct(acked_ms, 0.5), "p99": pct(acked_ms, 0.99),
                      "max": acked_ms[-1] if acked_ms else None},
           "load_before": before, "load_after": load()}
    return out


def bench_latency(c, args) -> dict:
    print(f"== latency: {args.latency_rate}/s for {args.latency_seconds} s, linger.ms=0, "
          f"{args.latency_runs} runs", flush=True)
    runs = []
    for i in range(args.latency_runs):
        for acks, rf in (("all", 3), ("1", 1)):
            r = latency_run(c, args, acks, rf)
            r["run"] = i + 1
            runs.append(r)
            print(f"  run {i + 1} acks={acks} RF{rf}: e2e p50 {r['e2e_ms']['p50']} ms, p99 {r['e2e_ms']['p99']} ms, "
                  f"max {r['e2e_ms']['max']:.1f} ms; ack p50 {r['ack_ms']['p50']} ms p99 {r['ack_ms']['p99']} ms "
                  f"({r['received']}/{r['records']} received, load {r['load_before']})", flush=True)
    out = {"runs": runs, "method": "producer stamps monotonic_ns before produce(), consumer process computes "
                                   "receive - stamp; linger.ms=0"}
    for acks, rf in (("all", 3), ("1", 1)):
        rs = [r for r in runs if r["acks"] == acks and r["replication_factor"] == rf]
        out[f"acks={acks} RF{rf}"] = {"e2e_p50_ms": summary([r["e2e_ms"]["p50"] for r in rs]),
                                       "e2e_p99_ms": summary([r["e2e_ms"]["p99"] for r in rs]),
                                       "ack_p50_ms": summary([r["ack_ms"]["p50"] for r in rs]),
                                       "ack_p99_ms": summary([r["ack_ms"]["p99"] for r in rs])}
    return out


# -- 4. failover ---------------------------------------------------------------------------

def batch_epochs(c, topic: str, partition: int, end: int) -> dict[int, int]:
    """offset -> leader epoch of its batch, for offsets [0, end) of the partition (read as a consumer)."""
    cons = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": f"epochs-{uuid.uuid4().hex[:6]}",
                     "enable.auto.commit": False, "enable.partition.eof": False})
    out: dict[int, int] = {}
    try:
        cons.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 60
        while len(out) < end and time.monotonic() < deadline:
            for m in cons.consume(num_messages=10000, timeout=0.5):
                if m.error() is None:
                    out[m.offset()] = m.leader_epoch()
    finally:
        cons.close()
    return out


class Timeline:
    """ZooKeeper watches: when /brokers/ids changes and when a partition's state names a leader."""

    def __init__(self, c, topic: str, partition: int):
        from kafkalab.broker.zk import zk_data
        self.registered: list[tuple[float, set[int]]] = []
        self.states: list[tuple[float, int, int]] = []   # (time, leader, leader_epoch)
        self._stop = False

        def on_ids(children):
            self.registered.append((time.monotonic(), {int(x) for x in children}))
            return not self._stop

        def on_state(data, stat):
            if data is not None:
                s = zk_data.decode_partition_state(data, stat.version)
                self.states.append((time.monotonic(), s.leader, s.leader_epoch))
            return not self._stop

        c.zk.ChildrenWatch(zk_data.BROKER_IDS, on_ids)
        c.zk.DataWatch(zk_data.partition_state_path(topic, partition), on_state)

    def stop(self):
        self._stop = True


def probe_new_leader(c, topic: str, partition: int, timeline: "Timeline", t_event: float, old_leader: int,
                     out: dict) -> None:
    """Broker-side readiness: as soon as ZooKeeper names a new leader, a *fresh* producer (its first
    Metadata at once, no back-off history) writes one acks=all record; when is it acknowledged?"""
    deadline = time.monotonic() + 60
    while not any(t >= t_event and ldr >= 0 and ldr != old_leader for t, ldr, _ in timeline.states):
        if time.monotonic() > deadline:
            return
        time.sleep(0.002)
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "linger.ms": 0,
                  "retry.backoff.ms": 10, "retry.backoff.max.ms": 50,
                  "topic.metadata.refresh.fast.interval.ms": 10})
    done = {}
    p.produce(topic, b"%012d" % 10**11 + b"probe", partition=partition,
              on_delivery=lambda err, msg: done.setdefault("t", (time.monotonic(), err)))
    p.flush(30)
    if "t" in done and done["t"][1] is None:
        out["fresh_client_first_ack_s"] = round(done["t"][0] - t_event, 3)


def failover_run(c, kind: str, session_ms: int, client_extra: dict | None = None) -> dict:
    topic = create_topic(c, "failover", 3, 3, {"min.insync.replicas": 2})
    df = c.describe(topic)
    controller = c.controller
    want_controller = kind == "kill-controller-leader"
    rows = [r for r in df.to_dict("records") if (int(r["leader"]) == controller) == want_controller]
    if not rows:   # no partition led (or not led) by the controller: elect differently next time
        delete_topic(c, topic)
        return {"kind": kind, "skipped": f"no partition whose leader {'is' if want_controller else 'is not'} "
                                         f"the controller ({controller})"}
    row = rows[0]
    partition, old_leader, old_epoch = int(row["partition"]), int(row["leader"]), int(row["leader_epoch"])
    timeline = Timeline(c, topic, partition)
    acks: list[tuple] = []   # (ack time, seq, send time, unused, offset)
    errors: list[str] = []
    sent: dict[int, float] = {}

    def on_delivery(err, msg):
        now = time.monotonic()
        if err is not None:
            errors.append(str(err))
            return
        seq = int(msg.value()[:12])
        acks.append((now, seq, sent[seq], None, msg.offset()))

    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "linger.ms": 0, **(client_extra or {})})
    t_client = time.monotonic()   # librdkafka's 1 s topic scan timer (rd_kafka_topic_scan_tmr_cb) ticks from here
    stop = threading.Event()
    probe: dict = {}

    def produce():
        seq = 0
        pad = b"x" * 88
        next_t = time.monotonic()
        while not stop.is_set():
            sent[seq] = time.monotonic()
            p.produce(topic, b"%012d" % seq + pad, partition=partition, on_delivery=on_delivery)
            seq += 1
            next_t += 0.005
            while True:
                wait = next_t - time.monotonic()
                if wait <= 0:
                    break
                p.poll(wait)
        p.flush(60)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    before = load()
    try:
        # The kill lands at a random phase of the producer's 1 s timer, which re-asks for a lost
        # leader: a fixed 2 s here would put every kill on a tick and every recovery on the next.
        time.sleep(2.0 + random.random())
        t_event = time.monotonic()
        prober = threading.Thread(target=probe_new_leader, daemon=True,
                                  args=(c, topic, partition, timeline, t_event, old_leader, probe))
        prober.start()
        if kind == "stop-leader":
            c.stop(old_leader)
        else:
            c.kill(old_leader)
        t_signalled = time.monotonic() - t_event

        def acked_after_signal():   # a record sent after the signal can only be acked by the new leader...
            return any(a[2] >= t_event for a in list(acks))   # (...of a killed one; stop: see the epochs)
        try:
            wait_until(acked_after_signal, "an acks=all write after the signal", timeout=60, interval=0.01)
        except TimeoutError:
            pass
        time.sleep(2.0)
    finally:
        stop.set()
        thread.join(90)
        prober.join(30)
        timeline.stop()
    # a delivery report carries no leader epoch: read the partition back, each record's batch has its epoch
    epochs = batch_epochs(c, topic, partition, max((a[4] for a in acks), default=-1) + 1)
    acks_sorted = sorted(acks)
    first_new = next((a for a in acks_sorted if epochs.get(a[4], -1) > old_epoch), None)
    first_after = next((a for a in acks_sorted if a[2] >= t_event), None)
    last_before = max((a[0] for a in acks_sorted if a[0] < t_event), default=None)
    window = [a[0] for a in acks_sorted if a[0] >= t_event - 1.0]
    gaps = [b - a for a, b in zip(window, window[1:])]
    gone = next((t for t, ids in timeline.registered if t >= t_event and old_leader not in ids), None)
    new_leader = next(((t, ldr, ep) for t, ldr, ep in timeline.states
                       if t >= t_event and ldr >= 0 and ldr != old_leader), None)
    rel = lambda t: None if t is None else round(t - t_event, 3)  # noqa: E731
    out = {"kind": kind, "client_extra": client_extra or {}, "topic": topic, "partition": partition, "old_leader": old_leader,
           "was_controller": old_leader == controller, "old_epoch": old_epoch,
           "session_timeout_ms": session_ms,
           "signal_returned_s": round(t_signalled, 3),
           "kill_phase_in_client_second": round((t_event - t_client) % 1.0, 3),
           "first_ack_phase_in_client_second": round((first_new[0] - t_client) % 1.0, 3) if first_new else None,
           "failover_s": rel(first_new[0]) if first_new else None,
           "first_ack_of_record_sent_after_signal_s": rel(first_after[0]) if first_after else None,
           "last_ack_before_signal_s": rel(last_before),
           "longest_ack_gap_s": round(max(gaps), 3) if gaps else None,
           "registration_gone_s": rel(gone),
           "new_leader_in_zk_s": rel(new_leader[0]) if new_leader else None,
           "fresh_client_first_ack_s": probe.get("fresh_client_first_ack_s"),
           "new_leader": new_leader[1] if new_leader else None,
           "new_epoch": new_leader[2] if new_leader else None,
           "acked": len(acks), "errors": errors[:5], "n_errors": len(errors),
           "load_before": before, "load_after": load()}
    # back to three brokers, all in the ISR, before the next run
    c.restart(old_leader)
    wait_until(lambda: isr_full(c, topic, 3), f"broker {old_leader} back in the ISR of {topic}", timeout=90,
               interval=0.2)
    delete_topic(c, topic)
    return out


FAST_METADATA = {"retry.backoff.max.ms": "100"}   # librdkafka's default 1000: how often it re-asks for a leader


def bench_failover(c, args) -> dict:
    session_ms = int(c.configs["zookeeper.session.timeout.ms"])
    print(f"== failover: zookeeper.session.timeout.ms={session_ms}, "
          f"replica.lag.time.max.ms={c.configs['replica.lag.time.max.ms']}", flush=True)
    plan = ([("kill-leader", "default client", None)] * args.failover_runs +
            [("kill-leader", "retry.backoff.max.ms=100", FAST_METADATA)] * args.fast_client_runs +
            [("kill-controller-leader", "default client", None)] * args.controller_runs +
            [("stop-leader", "default client", None)] * args.stop_runs)
    runs = []
    for kind, label, extra in plan:
        r = failover_run(c, kind, session_ms, extra)
        r["client"] = label
        runs.append(r)
        if "skipped" in r:
            print(f"  {kind}: skipped ({r['skipped']})", flush=True)
            continue
        print(f"  {kind} [{label}] (broker {r['old_leader']}, controller: {r['was_controller']}): first acks=all "
              f"write via the new leader after {r['failover_s']} s; registration gone {r['registration_gone_s']} s, "
              f"new leader {r['new_leader']} in ZooKeeper {r['new_leader_in_zk_s']} s, fresh client acked "
              f"{r['fresh_client_first_ack_s']} s, longest ack gap {r['longest_ack_gap_s']} s, "
              f"errors {r['n_errors']}, load {r['load_before']}", flush=True)
    out = {"session_timeout_ms": session_ms, "goal_s": session_ms / 1000 + 1, "runs": runs}
    for kind, label in dict.fromkeys((kind, label) for kind, label, _ in plan):
        rs = [r for r in runs if r["kind"] == kind and r["client"] == label and "skipped" not in r]
        key = f"{kind} [{label}]"
        out[key] = {k: summary([r[k] for r in rs]) for k in
                    ("failover_s", "first_ack_of_record_sent_after_signal_s", "longest_ack_gap_s",
                     "registration_gone_s", "new_leader_in_zk_s", "fresh_client_first_ack_s",
                     "signal_returned_s")}
        if rs:
            print(f"  {key}: failover {fmt(out[key]['failover_s'])}; fresh client "
                  f"{fmt(out[key]['fresh_client_first_ack_s'])}", flush=True)
    return out


# -- driver --------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS))
    ap.add_argument("--startup-runs", type=int, default=5)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="throughput runs per configuration")
    ap.add_argument("--linger-ms", type=float, default=5)
    ap.add_argument("--latency-rate", type=int, default=200, help="records/s for the latency run")
    ap.add_argument("--latency-seconds", type=float, default=20)
    ap.add_argument("--latency-runs", type=int, default=3)
    ap.add_argument("--failover-runs", type=int, default=5, help="kills of a leader that is not the controller")
    ap.add_argument("--fast-client-runs", type=int, default=3,
                    help="kills with a producer re-asking for the leader every 100 ms (retry.backoff.max.ms=100)")
    ap.add_argument("--controller-runs", type=int, default=2, help="kills of a leader that is also the controller")
    ap.add_argument("--stop-runs", type=int, default=3, help="controlled shutdowns (Cluster.stop) of a leader")
    ap.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                    help="config for every broker (Kafka's names), e.g. zookeeper.session.timeout.ms=4000")
    ap.add_argument("--dir", help="state directory of the cluster measured after start-up (kept: brokers' logs)")
    ap.add_argument("--json", metavar="FILE", help="write every run and the medians to FILE")
    args = ap.parse_args(argv)
    args.broker_configs = throughput.parse_kv(args.broker_config)
    results = {"machine": {"nproc": os.cpu_count(), "load_at_start": load(),
                           "python": sys.version.split()[0], "uname": " ".join(os.uname())},
               "params": {k: v for k, v in vars(args).items()}}
    print(f"load average at start: {load()}", flush=True)

    def save():
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2, default=str)

    if "startup" in args.only:
        results["startup"] = bench_startup(args)
        save()
    rest = [p for p in args.only if p != "startup"]
    if rest:
        with kafkalab.cluster(brokers=3, dir=args.dir, **args.broker_configs) as c:
            results["cluster_configs"] = dict(c.configs)
            if "throughput" in rest or "memory" in rest:
                bench_throughput(c, args, results)
                save()
            if "latency" in rest:
                results["latency"] = bench_latency(c, args)
                save()
            if "failover" in rest:
                results["failover"] = bench_failover(c, args)
                save()
    results["machine"]["load_at_end"] = load()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
