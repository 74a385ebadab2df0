"""How long a separate-mode mini KRaft cluster takes to close after kills and restarts, node by node.

Usage (from the repository root)::

    python -m benchmarks.kraft_close --repeat 10 [--json out.json]

Each round: ``kafkalab.cluster(brokers=3, mode="kraft")``, a topic of 3 partitions (replicas 3), SIGKILL the
active controller and restart it, SIGKILL a broker and restart it, then ``close()``. Reported per round: the
close time, and for every node when it exited after close() began, its exit status (-9: SIGKILLed at the grace
end) and what its log says of its controlled shutdown ("done", "timed out").
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import threading
import time


from tests.helpers import cluster_helpers  # noqa: E402
import kafkalab  # noqa: E402

ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
WAIT_FENCED = False


# tests/helpers/cluster_helpers.py's wait: any exception is "not yet"; WaitTimedOut, a TimeoutError, when time runs out
_wait = functools.partial(cluster_helpers.wait_until, timeout=90.0, interval=0.2)


def _watch_exits(nodes, began: float, exits: dict, done: threading.Event) -> None:
    while not done.is_set():
        for b in nodes:
            if b.id not in exits and b.process is not None and b.process.poll() is not None:
                exits[b.id] = (round(time.monotonic() - began, 2), b.process.returncode)
        time.sleep(0.02)


def one_round(i: int, kill_controller: bool, kill_broker: bool) -> dict:
    c = kafkalab.cluster(brokers=3, mode="kraft")
    try:
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers, "log_level": 3})
        admin.create_topics([NewTopic("t", num_partitions=3, replica_assignment=ASSIGNMENT)])["t"].result(30)
        del admin
        _wait(lambda: (c.describe("t")["leader"] >= 0).all(), "t has leaders")
        if kill_controller:
            victim = c.controller
            c.kill(victim)
            _wait(lambda: c.controller not in (None, victim), "a new controller")
            c.restart(victim)
        if kill_controller and WAIT_FENCED:   # as kraft_vs_zookeeper.py: every ISR full before the broker kill
            _wait(lambda: all(len(isr) == 3 for isr in c.describe("t")["isr"]), "every ISR full again", timeout=60)
        if kill_broker:
            victim = 1 + i % 3
            c.kill(victim)
            if WAIT_FENCED:   # as kraft_vs_zookeeper.py: restart once the controller fenced it
                _wait(lambda: victim not in c.metadata()["brokers"], "the victim fenced", timeout=30)
            c.restart(victim)
            _wait(lambda: all(len(isr) == 3 for isr in c.describe("t")["isr"]), "every ISR full again", timeout=60)
    except BaseException:
        c.close()
        raise
    nodes = [*c._res.brokers.values(), *c._res.controllers.values()]
    exits: dict = {}
    done = threading.Event()
    began = time.monotonic()
    watcher = threading.Thread(target=_watch_exits, args=(nodes, began, exits, done), daemon=True)
    watcher.start()
    logs = {b.id: b.log_path for b in nodes}
    offsets = {b.id: os.path.getsize(b.log_path) for b in nodes}
    keep = c.dir
    c._res.temp_dir = None   # keep the dir to read the logs (removed below)
    c.close()
    close_s = time.monotonic() - began
    done.set()
    watcher.join()
    row = {"round": i, "close_s": round(close_s, 2), "nodes": {}}
    for node_id, path in sorted(logs.items()):
        with open(path, errors="replace") as f:
            f.seek(offsets[node_id])
            tail = f.read()
        shutdown = re.findall(r"controlled shutdown (done|timed out)", tail)
        row["nodes"][node_id] = {"exit_s": exits.get(node_id, (None, None))[0],
                                 "status": exits.get(node_id, (None, None))[1],
                                 "controlled_shutdown": shutdown[-1] if shutdown else None}
    if os.environ.get("KEEP_DIR"):
        row["dir"] = keep
    else:
        import shutil
        shutil.rmtree(keep, ignore_errors=True)
    return row


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--no-kill-controller", action="store_true")
    p.add_argument("--no-kill-broker", action="store_true")
    p.add_argument("--wait-fenced", action="store_true",
                   help="restart a killed broker only once it is fenced (as kraft_vs_zookeeper.py does)")
    p.add_argument("--json")
    args = p.parse_args()
    global WAIT_FENCED
    WAIT_FENCED = args.wait_fenced
    rows = []
    for i in range(args.repeat):
        row = one_round(i, not args.no_kill_controller, not args.no_kill_broker)
        rows.append(row)
        print(json.dumps(row), flush=True)
    times = sorted(r["close_s"] for r in rows)
    print(f"close_s: min {times[0]:.2f} median {statistics.median(times):.2f} max {times[-1]:.2f} "
          f"(n={len(times)}): {times}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
