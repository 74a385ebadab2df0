"""What producer-state ``.snapshot`` files save at start-up: a partition log of N idempotent batches,
closed cleanly, loaded again (a) with its snapshots and (b) with them deleted, so the whole log is
replayed; and (c) after a crash with the recovery point in the last segment. Prints the batches read
for producer state and the load times (median of ``--repeat`` loads), and writes ``--json``.

    python -m benchmarks.producer_snapshots --batches 100000 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

from tests.helpers.kafka_spec import batch  # noqa: E402

from kafkalab.broker.log.log_manager import LogManager  # noqa: E402
from kafkalab.broker.log.producer_snapshot import list_snapshots  # noqa: E402
from kafkalab.broker.server.config import BrokerConfig, LogConfig  # noqa: E402

T0 = 1_700_000_000_000
CONFIG = {"segment.bytes": 1 << 20}


def open_log(directory):
    broker = BrokerConfig({"log.dirs": directory})
    manager = LogManager(directory, broker)
    return manager, manager.get_or_create_log("t", 0, LogConfig(broker, CONFIG))


def fill(directory, n):
    manager, log = open_log(directory)
    for i in range(n):
        log.append_as_leader(batch(0, [(T0 + i, b"k", b"v" * 100)], producer_id=1000 + i % 10, producer_epoch=0,
                                   base_sequence=i // 10))
    log.flush_rolled_segments()
    manager.checkpoint()
    manager.close()


def timed_load(directory):
    start = time.perf_counter()
    manager, log = open_log(directory)
    seconds = time.perf_counter() - start
    replayed, segments = log.producer_state_replayed_batches, len(log.segments)
    manager.close()
    return seconds, replayed, segments


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kafkalab-pstate-")
    try:
        base = os.path.join(root, "base")
        fill(base, args.batches)
        results = {}
        for case in ("clean, with snapshots", "clean, no snapshots", "crash, with snapshots"):
            times, replayed = [], None
            for _ in range(args.repeat):
                d = os.path.join(root, "run")
                shutil.rmtree(d, ignore_errors=True)
                shutil.copytree(base, d)
                part = os.path.join(d, "t-0")
                if case == "clean, no snapshots":
                    for path in list_snapshots(part).values():
                        os.remove(path)
                if case.startswith("crash"):
                    os.remove(os.path.join(d, ".kafka_cleanshutdown"))
                seconds, replayed, segments = timed_load(d)
                times.append(seconds)
            results[case] = {"load_seconds_median": round(statistics.median(times), 3),
                             "batches_replayed": replayed, "segments": segments}
            print(f"{case:24s} load {statistics.median(times):7.3f} s   batches replayed for producer state: "
                  f"{replayed:>7d} of {args.batches} ({segments} segments)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"batches": args.batches, "repeat": args.repeat, "results": results}, f, indent=1)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
