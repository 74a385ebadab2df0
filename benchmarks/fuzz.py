"""The long run of the mutation fuzzer: ``tests/helpers/fuzzing.py`` against a broker process.

Usage (from the repository root)::

    python -m benchmarks.fuzz --frames 50000 --seeds 1 2 3 --json benchmarks/results/fuzz.json

Per seed: a fresh mini broker process (``max.broker.partitions`` 400, so that fuzzed CreateTopics
stay within the open-file limit), the corpus topics and ``fuzz-good`` created, then ``--frames``
mutated frames on ``--threads`` connections at a time while an idempotent ``acks=all`` producer
writes ``--good-records`` records to ``fuzz-good`` and a consumer reads them back. Printed: the
mutations sent, connections the broker closed or answered, the slowest ping, RSS and descriptors
before / peak / after, acknowledged vs consumed good records (duplicates, missing), tracebacks in
the broker's log. The CI test (``tests/integration/test_fuzz.py``) is the same with 2,500 frames.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time


from tests.helpers import fuzz_corpus  # noqa: E402
from tests.helpers import fuzzing  # noqa: E402
from tests.conftest import BrokerProcess  # noqa: E402
from tests.integration.test_fuzz import BROKER_PARTITIONS, create_topics  # noqa: E402

MB = 1024 * 1024


def one_run(frames: int, seed: int, threads: int, good: int) -> dict:
    bp = BrokerProcess(tempfile.mkdtemp(prefix="fuzz-run-"),
                       configs={"max.broker.partitions": BROKER_PARTITIONS, "num.partitions": 1})
    bp.start()
    try:
        create_topics(bp.bootstrap_servers, fuzz_corpus.TOPICS + ["fuzz-good"])
        report = fuzzing.run(bp.bootstrap_servers, bp.proc.pid, frames=frames, seed=seed, threads=threads,
                             good_records=good)
        alive = bp.proc.poll() is None
        log = bp.stderr_text()
    finally:
        bp.stop()
    out = dataclasses.asdict(report)
    out.update(seed=seed, alive=alive, tracebacks=log.count("Traceback"),
               warnings=sum(1 for line in log.splitlines() if " WARNING " in line))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frames", type=int, default=20000)
    p.add_argument("--seeds", type=int, nargs="+", default=[1])
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--good-records", type=int, default=20000)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args()
    runs = []
    for seed in args.seeds:
        r = one_run(args.frames, seed, args.threads, args.good_records)
        runs.append(r)
        print(f"seed {seed}: {r['frames']} frames in {r['seconds']:.1f} s ({r['frames'] / r['seconds']:.0f}/s), "
              f"connections closed {r['closed']} / answered {r['answered']}; slowest ping "
              f"{r['max_ping_s'] * 1000:.0f} ms of {r['pings']} ({r['failed_pings']} failed); RSS "
              f"{r['rss_before'] / MB:.0f} -> peak {r['rss_peak'] / MB:.0f} -> {r['rss_after'] / MB:.0f} MB; "
              f"fds {r['fds_before']} -> {r['fds_after']} (partitions {r['partitions_before']} -> "
              f"{r['partitions_after']}); good records acked {r['acked']}, consumed {r['consumed']}, "
              f"duplicates {r['duplicates']}, missing {r['missing']}; tracebacks {r['tracebacks']}, "
              f"warnings {r['warnings']}; alive {r['alive']}")
        print("   mutations:", ", ".join(f"{k} {v}" for k, v in sorted(r["kinds"].items())))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"params": vars(args), "runs": runs, "when": time.strftime("%Y-%m-%d %H:%M")}, f, indent=1)


if __name__ == "__main__":
    main()
