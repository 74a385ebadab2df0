"""The mini KRaft quorum's controller failover: how long from a leader's death to a new one.

Three ``python -m kafkalab.raft`` controllers (kafkalab.cluster.raft_quorum.RaftQuorum) with the KRaft lab defaults
(``controller.quorum.fetch.timeout.ms`` 1000, ``controller.quorum.election.timeout.ms`` 500,
``controller.quorum.election.backoff.max.ms`` 500, ``metadata.max.idle.interval.ms`` 500). Each trial stops the
current leader — SIGKILL (the followers notice by the fetch timeout) or SIGTERM (it resigns: EndQuorumEpoch) —
then measures

* **elected**: the new leader's LeaderChange record (its batch timestamp, read from its ``__cluster_metadata-0``
  segment) minus the moment of the signal;
* **committing**: the first DescribeQuorum (polled every 20 ms) in which a new leader reports a high watermark,
  i.e. a majority holds its epoch's first record.

The stopped node is restarted before the next trial. Run from the repository root::

    python -m benchmarks.raft_failover --trials 10 --json benchmarks/results/raft-failover.json
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import time


from kafkalab.broker.common.records import iter_batches  # noqa: E402
from kafkalab.cluster.raft_quorum import RaftQuorum  # noqa: E402


def leader_change_ms(q: RaftQuorum, node_id: int, epoch: int) -> int | None:
    """The timestamp of the LeaderChange batch of ``epoch`` in the node's log (read-only, raw segments)."""
    for path in sorted(glob.glob(os.path.join(q.node_dir(node_id), "__cluster_metadata-0", "*.log"))):
        with open(path, "rb") as f:
            data = f.read()
        for _, header in iter_batches(data, strict=False):
            if header.is_control and header.partition_leader_epoch == epoch:
                return header.max_timestamp
    return None


def trial(q: RaftQuorum, how: str) -> dict:
    before = q.wait_for_leader(timeout_s=30)
    time.sleep(0.7)                                  # a few NoOps committed in the epoch first
    before = q.wait_for_leader(timeout_s=30)
    old, epoch = before["leader_id"], before["leader_epoch"]
    t0_wall, t0 = time.time(), time.monotonic()
    if how == "SIGKILL":
        q.kill(old)
    else:
        q.stop(old)
    after = q.wait_for_leader(timeout_s=30, exclude={old}, min_epoch=epoch + 1)
    committing_s = time.monotonic() - t0
    stamp = leader_change_ms(q, after["leader_id"], after["leader_epoch"])
    q.restart(old)
    return {"how": how, "old_leader": old, "old_epoch": epoch, "new_leader": after["leader_id"],
            "new_epoch": after["leader_epoch"], "elected_s": None if stamp is None else stamp / 1000 - t0_wall,
            "committing_s": committing_s}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    results = []
    started = time.monotonic()
    with RaftQuorum(3) as q:
        first = q.wait_for_leader(timeout_s=30)
        ready_s = time.monotonic() - started
        for how in ("SIGKILL", "SIGTERM"):
            for i in range(args.trials):
                r = trial(q, how)
                results.append(r)
                print(f"{how} #{i + 1}: leader {r['old_leader']} (epoch {r['old_epoch']}) -> {r['new_leader']} "
                      f"(epoch {r['new_epoch']}): elected {r['elected_s']:.3f} s, committing {r['committing_s']:.3f} s",
                      flush=True)
    summary = {"ready_s": ready_s, "first_epoch": first["leader_epoch"], "load_average": os.getloadavg()}
    for how in ("SIGKILL", "SIGTERM"):
        rows = [r for r in results if r["how"] == how]
        for key in ("elected_s", "committing_s"):
            values = [r[key] for r in rows if r[key] is not None]
            summary[f"{how}_{key}"] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    print(json.dumps(summary, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "trials": results, "args": vars(args)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
