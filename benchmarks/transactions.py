"""What transactions cost: a transactional producer against the idempotent one, in one run.

Usage (from the repository root)::

    python -m benchmarks.transactions --json benchmarks/results/transactions.json
    python -m benchmarks.transactions --bootstrap-servers localhost:9092     # any broker, e.g. Apache Kafka

A mini broker is started as a separate process (as ``throughput.py`` does) unless ``--bootstrap-servers``
names one. For each transaction size in ``--sizes`` (records per transaction), and for the idempotent
producer (``enable.idempotence=true``, no transactions: the baseline), ``--records`` records of
``--value-size`` random bytes go to a fresh 1-partition topic with confluent-kafka
(``acks=all``, ``linger.ms=5``). A transactional run is ``begin_transaction()``, ``size`` x ``produce()``,
``commit_transaction()``, repeated; the idempotent run is the same ``produce()`` calls and one ``flush()``.
Before the clock starts each producer writes one record (one transaction of one record), so the
producer id, the topic's metadata and the leader connection are not counted. Measured per run:

``records_per_s``
    records over the wall time from the first ``produce()`` to the last commit (or the flush);
``commit_ms_p50`` / ``commit_ms_p99``
    how long ``commit_transaction()`` took (it flushes the transaction's records, then EndTxn: the
    coordinator writes PrepareCommit and answers, as Kafka's; the COMMIT markers and CompleteCommit
    follow, and the next transaction's AddPartitionsToTxn is CONCURRENT_TRANSACTIONS until they are done);
``lso_gap``
    for the transactional runs: high watermark minus the records written, i.e. the control batches
    (one COMMIT marker per transaction per partition takes one offset).

The runs alternate (idempotent, 1, 10, 100, 1000, idempotent, ...) for ``--repeat`` rounds; medians are
reported. The #19 goal: transactions of 100 records reach at least half the idempotent producer's
throughput on the same broker in the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid


from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from benchmarks.throughput import broker_process, create_topic, external  # noqa: E402  (benchmarks/throughput.py)


def run_once(bootstrap: str, size: int | None, records: int, value: bytes) -> dict:
    topic = f"bench-txn-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1, {})
    conf = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True}
    if size is not None:
        conf["transactional.id"] = f"bench-{uuid.uuid4().hex[:8]}"
    p = Producer(conf)
    deadline = time.monotonic() + 30   # Kafka creates a topic asynchronously: wait until it has a leader
    while time.monotonic() < deadline:
        meta = p.list_topics(topic, timeout=10).topics.get(topic)
        if meta is not None and meta.error is None and meta.partitions and meta.partitions[0].leader >= 0:
            break
        time.sleep(0.1)
    commits = []
    # warm up outside the clock: the producer id, the topic's metadata and the connection to its leader
    if size is not None:
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(topic, value)
        p.commit_transaction(60)
    else:
        p.produce(topic, value)
        assert p.flush(60) == 0
    start = time.perf_counter()
    if size is None:
        for _ in range(records):
            p.produce(topic, value)
            p.poll(0)
        assert p.flush(60) == 0
    else:
        for first in range(0, records, size):
            p.begin_transaction()
            for _ in range(min(size, records - first)):
                p.produce(topic, value)
                p.poll(0)
            t = time.perf_counter()
            p.commit_transaction(60)
            commits.append((time.perf_counter() - t) * 1000)
    seconds = time.perf_counter() - start
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:6]}"})
    low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    c.close()
    result = {"size": size, "records": records, "seconds": seconds, "records_per_s": records / seconds,
              "high_watermark": high, "lso_gap": high - records - 1 - (size is not None)}
    if commits:
        commits.sort()
        result["commit_ms_p50"] = commits[len(commits) // 2]
        result["commit_ms_p99"] = commits[min(len(commits) - 1, int(len(commits) * 0.99))]
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap-servers")
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--sizes", default="1,10,100,1000", help="records per transaction, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="write every run and the medians here")
    args = ap.parse_args(argv)
    sizes = [None] + [int(s) for s in args.sizes.split(",")]
    value = os.urandom(args.value_size)
    runs: list[dict] = []
    starter = external(args.bootstrap_servers) if args.bootstrap_servers else broker_process({})
    with starter as started:
        bootstrap = started[0]
        for round_ in range(args.repeat):
            for size in sizes:
                # 1-record transactions are slow: fewer of them, so a round stays short
                n = min(args.records, 2_000) if size == 1 else args.records
                r = run_once(bootstrap, size, n, value)
                r["round"] = round_
                runs.append(r)
                label = "idempotent" if size is None else f"txn of {size}"
                extra = "" if size is None else f", commit p50 {r['commit_ms_p50']:.1f} ms"
                print(f"round {round_} {label:>12}: {r['records_per_s']:>9,.0f} records/s{extra}", flush=True)
    medians = {}
    for size in sizes:
        mine = [r for r in runs if r["size"] == size]
        key = "idempotent" if size is None else str(size)
        medians[key] = {"records_per_s": statistics.median(r["records_per_s"] for r in mine)}
        if size is not None:
            medians[key]["commit_ms_p50"] = statistics.median(r["commit_ms_p50"] for r in mine)
            medians[key]["lso_gap"] = mine[0]["lso_gap"]
    base = medians["idempotent"]["records_per_s"]
    print("\nmedians:")
    for key, m in medians.items():
        print(f"  {key:>10}: {m['records_per_s']:>9,.0f} records/s ({m['records_per_s'] / base:.2f}x idempotent)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "machine": {"system": " ".join(os.uname()), "cpus": os.cpu_count()},
                       "runs": runs, "medians": medians}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
