"""Who stops consuming, and for how long, when a group changes: classic eager, classic cooperative-sticky and
KIP-848's consumer protocol, measured in one run.

Usage (from the repository root)::

    python -m benchmarks.rebalance_protocols --json benchmarks/results/rebalance_protocols.json
    python -m benchmarks.rebalance_protocols --kafka 4      # also on Apache Kafka 4.x (KRaft, one broker)

The scenario is :mod:`kafkalab.tools.rebalance_scenario`'s (lesson 05 runs it too): three members ``a``,
``b``, ``k`` join a group on a 6-partition topic one by one, ``b`` leaves (``close()``), ``k`` (a process
of its own) is SIGKILLed. The three protocols run at the same time, one group each, with confluent-kafka;
a session timeout of ``--session-ms`` for all (client ``session.timeout.ms`` for the classic groups, the
broker's ``group.consumer.session.timeout.ms`` for the consumer group) and heartbeats every 500 ms.
Measured per step from the members' rebalance callbacks (wall clock):

``a idle s``
    how long member ``a`` — in the group throughout — owned no partition at all (could consume nothing);
``a revoked``
    how many partitions ``a`` had to give up (eager: all it had; cooperative and consumer: those that move);
``unowned s``
    the longest time one partition had no owner (nobody could read it): for ``b leaves`` the handover of
    ``b``'s partitions, for ``k killed`` the session timeout.

``--repeat`` rounds, each on fresh groups; medians are reported. A mini broker is started in this process
(``kafkalab.mini()``); with ``--kafka 4`` the same rounds also run on Apache Kafka 4 (``kafkalab.cluster``
with the KRaft backend, ``group.consumer.min.session.timeout.ms`` and ``...min.heartbeat.interval.ms``
lowered so the short session and heartbeat are allowed).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time


from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import kafkalab  # noqa: E402
from kafkalab.tools.rebalance_scenario import STEPS, run_protocols, summary  # noqa: E402

PARTITIONS = 6


def rounds(name: str, bootstrap: str, repeat: int, session_ms: int) -> list[dict]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = "rebalance-bench"
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    rows = []
    for i in range(repeat):
        t0 = time.time()
        runs = run_protocols(bootstrap, topic, PARTITIONS, session_ms, f"bench-{i}", admin=admin)
        for row in summary(runs, PARTITIONS):
            rows.append({"broker": name, "round": i, **row})
        print(f"{name}: round {i + 1}/{repeat} in {time.time() - t0:.1f} s", flush=True)
    return rows


def medians(rows: list[dict]) -> list[dict]:
    out = []
    for broker in dict.fromkeys(r["broker"] for r in rows):
        for protocol in dict.fromkeys(r["protocol"] for r in rows):
            mine = [r for r in rows if r["broker"] == broker and r["protocol"] == protocol]
            if not mine:
                continue
            keys = [k for k in mine[0] if k not in ("broker", "round", "protocol")]
            out.append({"broker": broker, "protocol": protocol,
                        **{k: round(statistics.median(r[k] for r in mine), 2) for k in keys}})
    return out


def table(rows: list[dict]) -> str:
    cols = ["broker", "protocol"] + [f"{s}: {m}" for s in STEPS for m in ("a idle s", "a revoked", "unowned s")]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--session-ms", type=int, default=6000)
    ap.add_argument("--kafka", help="also run on Apache Kafka of this version (e.g. 4), KRaft, one broker")
    ap.add_argument("--json", help="write every round and the medians here")
    args = ap.parse_args()
    group_configs = {"group.consumer.session.timeout.ms": args.session_ms, "group.consumer.heartbeat.interval.ms": 500}
    rows = []
    with kafkalab.mini(**group_configs) as broker:
        rows += rounds("mini broker", broker.bootstrap_servers, args.repeat, args.session_ms)
    if args.kafka:
        from kafkalab.cluster.distribution import fetch_kafka
        from kafkalab.cluster.kraft_config import KRaftBackend
        home = fetch_kafka(args.kafka)
        with tempfile.TemporaryDirectory() as d, kafkalab.cluster(
                brokers=1, dir=os.path.join(d, "cluster"), backend=KRaftBackend(str(home)), mode="kraft",
                **group_configs, **{"group.consumer.min.session.timeout.ms": args.session_ms,
                                    "group.consumer.min.heartbeat.interval.ms": 500}) as c:
            rows += rounds(f"Kafka {os.path.basename(str(home))}", c.bootstrap_servers, args.repeat, args.session_ms)
    result = medians(rows)
    print(table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                   "platform": platform.platform()},
                       "parameters": vars(args), "medians": result, "rounds": rows}, f, indent=1)


if __name__ == "__main__":
    main()
