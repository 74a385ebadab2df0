"""How long Kafka Connect takes in the lab: two workers' start, a connector's start, a killed worker's task moving.

Usage (from the repository root)::

    python -m benchmarks.connect --repeat 3 --json benchmarks/results/connect.json

Each run starts a mini broker as a lesson gets it (``kafkalab.mini()`` with the broker's defaults, so
``group.initial.rebalance.delay.ms`` is 3000 as in Kafka) and on it ``kafkalab.connect_cluster(workers=2)``
with the lab's worker defaults, then measures (wall time, ``time.monotonic``):

``start``     ``connect_cluster()`` until both workers answer ``GET /health`` with 200
``connector`` ``create_connector()`` of a FileStreamSource until it and its task are RUNNING
``move``      SIGKILL of the worker running the task until the task is RUNNING on the other worker
``restart``   ``restart(i)`` of the killed worker until it answers ``GET /health``
``rss_mb``    each worker JVM's resident memory, idle, after ``connector``

The machine is shared: the load average is recorded with every run; medians are printed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time


import psutil  # noqa: E402

import kafkalab  # noqa: E402


def one_run(work: str) -> dict:
    path = os.path.join(work, "in.txt")
    with open(path, "w") as f:
        f.write("".join(f"line {i}\n" for i in range(100)))
    broker = kafkalab.mini(log_dir=os.path.join(work, "broker"))
    try:
        t = time.monotonic()
        with kafkalab.connect_cluster(broker, workers=2) as connect:
            start = time.monotonic() - t
            t = time.monotonic()
            connect.create_connector("bench-source", {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "file": path, "topic": "bench-lines"})
            connector = time.monotonic() - t
            rss = [round(psutil.Process(w.pid).memory_info().rss / 2**20) for w in connect.workers]
            victim = next(i for i, tasks in connect.tasks_per_worker().items() if tasks)
            t = time.monotonic()
            connect.kill(victim)
            connect.wait_until_running("bench-source", timeout=120)
            move = time.monotonic() - t
            t = time.monotonic()
            connect.restart(victim)
            restart = time.monotonic() - t
    finally:
        broker.close()
    return {"start": round(start, 2), "connector": round(connector, 2), "move": round(move, 2),
            "restart": round(restart, 2), "rss_mb": rss, "load": round(os.getloadavg()[0], 2)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", help="write every run and the medians here")
    args = p.parse_args(argv)
    runs = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="kafkalab-bench-connect-") as work:
            runs.append(one_run(work))
        print(f"run {i + 1}: {runs[-1]}", flush=True)
    medians = {k: round(statistics.median(r[k] for r in runs), 2) for k in ("start", "connector", "move", "restart")}
    print("medians (s):", medians)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": runs, "medians": medians}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
