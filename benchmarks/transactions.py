"""What transactions cost: idempotent writes against transactions of 1, 10, 100 and 1,000 records.

Usage (from the repository root)::

    python benchmarks/transactions.py --json benchmarks/results/transactions.json

A mini broker is started as a process of its own (or ``--bootstrap-servers`` names any broker,
e.g. Apache Kafka). confluent-kafka writes ``--records`` records of 100 random bytes with
``enable.idempotence=true`` (acks=all), then the same with a ``transactional.id``, committing every
N records (N = ``--sizes``); for a transaction size N the record count is capped at
``--max-transactions`` x N, so size 1 stays quick. Runs alternate (idempotent, then each size) and
repeat ``--repeat`` times; records/s, the median per mode, and the median time of
``commit_transaction()`` are reported. The issue's bar (#19): 100-record transactions at least 0.5x
the idempotent producer's records/s in the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_broker(log_dir: str) -> tuple[subprocess.Popen, str]:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab.broker", "--port", str(port), "--log-dir", log_dir],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    line = proc.stdout.readline()
    if "ready" not in line:
        proc.kill()
        raise RuntimeError(f"broker did not start: {line!r}")
    return proc, f"127.0.0.1:{port}"


def new_topic(bootstrap: str) -> str:
    name = f"bench-txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})   # kept until the topic exists
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def run(bootstrap: str, records: int, txn_size: int | None, value: bytes) -> dict:
    """records/s of one run; txn_size None: idempotent, no transactions."""
    topic = new_topic(bootstrap)
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
    if txn_size is not None:
        conf["transactional.id"] = f"bench-{uuid.uuid4().hex[:8]}"
    p = Producer(conf)
    commits = []
    if txn_size is not None:
        p.init_transactions(30)
    start = time.perf_counter()
    if txn_size is None:
        for _ in range(records):
            p.produce(topic, value)
            p.poll(0)
        p.flush(60)
    else:
        for first in range(0, records, txn_size):
            p.begin_transaction()
            for _ in range(min(txn_size, records - first)):
                p.produce(topic, value)
                p.poll(0)
            t = time.perf_counter()
            p.commit_transaction(60)
            commits.append(time.perf_counter() - t)
    seconds = time.perf_counter() - start
    return {"mode": "idempotent" if txn_size is None else f"txn-{txn_size}", "records": records,
            "seconds": seconds, "records_per_s": records / seconds,
            "commit_median_ms": statistics.median(commits) * 1000 if commits else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-servers")
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--sizes", default="1,10,100,1000")
    ap.add_argument("--max-transactions", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    value = os.urandom(100)
    proc, tmp = None, None
    bootstrap = args.bootstrap_servers
    if bootstrap is None:
        tmp = tempfile.mkdtemp(prefix="kafkalab-bench-txn-")
        proc, bootstrap = start_broker(tmp)
    runs = []
    try:
        for _ in range(args.repeat):
            runs.append(run(bootstrap, args.records, None, value))
            for size in sizes:
                runs.append(run(bootstrap, min(args.records, size * args.max_transactions), size, value))
            for r in runs[-1 - len(sizes):]:
                print(f"{r['mode']:>11}: {r['records']:>6} records in {r['seconds']:6.2f} s = "
                      f"{r['records_per_s']:>8.0f} records/s"
                      + (f", commit median {r['commit_median_ms']:.1f} ms" if r["commit_median_ms"] else ""),
                      flush=True)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(20)
            shutil.rmtree(tmp, ignore_errors=True)
    medians = {}
    for mode in ["idempotent"] + [f"txn-{s}" for s in sizes]:
        rs = [r for r in runs if r["mode"] == mode]
        medians[mode] = {"records_per_s": statistics.median(r["records_per_s"] for r in rs),
                         "commit_median_ms": (statistics.median(r["commit_median_ms"] for r in rs)
                                              if rs[0]["commit_median_ms"] is not None else None)}
    ratio = medians["txn-100"]["records_per_s"] / medians["idempotent"]["records_per_s"] if "txn-100" in medians \
        else None
    print("medians:", json.dumps(medians, indent=1))
    if ratio is not None:
        print(f"100-record transactions / idempotent: {ratio:.2f} (the bar: >= 0.5)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"params": vars(args), "runs": runs, "medians": medians, "txn100_over_idempotent": ratio},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
