"""Three mini KRaft controllers as processes (``python -m kafkalab.raft``): elections, SIGKILL, SIGSTOP, a lost
majority (a lonely leader whose appends are never committed, which resigns by check-quorum, and whose uncommitted
tail the next leader truncates), and
nothing committed lost. Kafka 4.4's own tools read the quorum and its log.

Committed means below the high watermark a leader reported in DescribeQuorum. Timing bounds here are
generous deadlines for something to happen, never measurements (those are in benchmarks/raft_failover.py).
"""
from __future__ import annotations

import glob
import io
import re
import subprocess
import time

from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.kraft_config import KRaftBackend
from kafkalab.cluster.quorum import quorum_table
from kafkalab.cluster.raft_quorum import RaftQuorum
from kafkalab.raft.kafka_metadata_log import KafkaMetadataLog
from kafkalab.tools import dump_log


def wait_for_hw(q: RaftQuorum, at_least: int, timeout_s: float = 15.0, exclude=None) -> dict:
    deadline = time.monotonic() + timeout_s
    answer = None
    while time.monotonic() < deadline:
        answer = q.describe()
        if answer is not None and answer["high_watermark"] >= at_least and answer["leader_id"] not in (exclude or ()):
            return answer
        time.sleep(0.05)
    raise AssertionError(f"the high watermark did not reach {at_least} in {timeout_s} s: last answer {answer}")


def _node_log(q: RaftQuorum, node_id: int) -> str:
    with open(f"{q.base_dir}/node-{node_id}.log", errors="replace") as f:
        return f.read()


def _log_end(q: RaftQuorum, node_id: int) -> int:
    """A node's ``__cluster_metadata-0`` log end offset, read from its segment files (read only)."""
    from kafkalab.tools.dump_log import dump_log_df
    ends = [int(df["lastOffset"].max()) + 1 for seg in sorted(glob.glob(f"{q.node_dir(node_id)}/__cluster_metadata-0/*.log"))
            if len(df := dump_log_df(seg, level="batch"))]
    return max(ends, default=0)


def test_three_controllers_elect_fail_over_and_lose_nothing_committed(tmp_path):
    committed = 0
    with RaftQuorum(3, base_dir=str(tmp_path)) as q:
        # -- an election: one leader, every voter in its epoch, the same table as Kafka's quorum gives
        first = q.wait_for_leader()
        leader, epoch = first["leader_id"], first["leader_epoch"]
        answer = wait_for_hw(q, 3)
        committed = answer["high_watermark"]
        table = quorum_table(answer)
        assert sorted(table["status"]) == ["Follower", "Follower", "Leader"]
        assert {q.quorum_state(i)["leaderEpoch"] for i in q.ids} == {answer["leader_epoch"]}

        # -- a paused follower (SIGSTOP): the other two are a majority, commits go on
        paused = next(i for i in q.ids if i != answer["leader_id"])
        q.pause(paused)
        answer = wait_for_hw(q, committed + 3)
        committed = answer["high_watermark"]
        q.resume(paused)
        answer = wait_for_hw(q, committed + 2)
        committed = answer["high_watermark"]

        # -- the leader SIGKILLed: a new one, in a higher epoch
        leader, epoch = answer["leader_id"], answer["leader_epoch"]
        q.kill(leader)
        after = q.wait_for_leader(exclude={leader}, min_epoch=epoch + 1)
        assert after["leader_id"] != leader and after["leader_epoch"] > epoch
        answer = wait_for_hw(q, committed + 2, exclude={leader})
        committed = answer["high_watermark"]

        # -- two of three down: the last one leads a little longer, appending NoOps that are never committed, then
        # resigns by itself (check-quorum: no Fetch from a majority for 1.5 x controller.quorum.fetch.timeout.ms)
        survivor = answer["leader_id"]
        other = next(i for i in q.ids if i not in (leader, survivor))
        q.kill(other)
        lonely_epoch, hw_stalled, deadline = answer["leader_epoch"], answer["high_watermark"], time.monotonic() + 15
        while (stalled := q.describe()) is not None and time.monotonic() < deadline:
            assert stalled["leader_id"] == survivor and stalled["leader_epoch"] == lonely_epoch
            hw_stalled = stalled["high_watermark"]
            time.sleep(0.05)
        assert stalled is None, "the leader alone did not resign"
        resigned = next(line for line in _node_log(q, survivor).splitlines() if "resigning the leadership" in line)
        assert f"epoch {lonely_epoch}" in resigned and "1500 ms" in resigned, resigned
        lonely_end = _log_end(q, survivor)
        assert lonely_end > hw_stalled, "the lonely leader appended nothing it could not commit"
        committed = max(committed, hw_stalled)

        # -- the lonely leader dies with its uncommitted tail; the other two elect a leader of their own ...
        q.kill(survivor)
        q.restart(leader)
        q.restart(other)
        answer = wait_for_hw(q, committed + 3, timeout_s=20, exclude={survivor})
        assert answer["leader_epoch"] > lonely_epoch
        # -- ... and when it comes back, its leader finds its log diverged (the DivergingEpoch of Fetch): truncated
        q.restart(survivor)
        answer = wait_for_hw(q, answer["high_watermark"] + 3, timeout_s=20)
        committed = answer["high_watermark"]
        final_leader = answer["leader_id"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and f"node {survivor}: log diverged" not in _node_log(q, survivor):
            time.sleep(0.05)
        truncation = next(line for line in _node_log(q, survivor).splitlines() if "log diverged" in line)
        before, after = map(int, re.search(r"truncated from (\d+) to (\d+)", truncation).groups())
        # its uncommitted tail goes ...
        assert before >= lonely_end > hw_stalled and after < before, truncation
        # ... but never below what was committed: Raft truncates only what no majority had
        assert after >= hw_stalled, truncation
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:   # the restarted replicas catch up with the leader
            answer = q.describe()
            if answer and all(v["log_end_offset"] >= committed for v in answer["voters"]):
                break
            time.sleep(0.05)
        # -- Kafka 4.4's own kafka-metadata-quorum.sh asks the mini quorum (ApiVersions, DescribeCluster, DescribeQuorum)
        backend = KRaftBackend(str(fetch_kafka("4")))
        boot = ",".join(f"{h}:{p}" for h, p in q.voters.values())
        tool = subprocess.run([*backend._java("-Xms32m -Xmx128m", str(tmp_path)), "org.apache.kafka.tools.MetadataQuorumCommand",
                               "--bootstrap-controller", boot, "describe", "--status"],
                              capture_output=True, text=True, timeout=120)
        assert tool.returncode == 0, tool.stderr[-2000:]
        status = dict(line.split(":", 1) for line in tool.stdout.splitlines() if ":" in line and not line.startswith("["))
        status = {k.strip(): v.strip() for k, v in status.items()}
        assert status["ClusterId"] == q.cluster_id and int(status["LeaderId"]) == final_leader
        assert int(status["LeaderEpoch"]) == answer["leader_epoch"] and int(status["HighWatermark"]) >= committed
        for i in q.ids:
            q.kill(i)

    # -- nothing committed lost: every log holds the same batches below the highest committed offset
    logs = {i: KafkaMetadataLog(str(tmp_path / f"node-{i}")) for i in (1, 2, 3)}
    try:
        prefixes = {i: [(b["base_offset"], b["epoch"], b["control"], b["values"]) for b in lg.batches()
                        if b["last_offset"] < committed] for i, lg in logs.items()}
        assert all(lg.end_offset >= committed for lg in logs.values())
        assert prefixes[1] == prefixes[2] == prefixes[3]
        assert sum(b[2] for b in prefixes[final_leader]) >= 2   # at least two LeaderChange records: two epochs
        assert prefixes[1][-1][0] + len(prefixes[1][-1][3]) == committed
    finally:
        for lg in logs.values():
            lg.close()

    # -- Kafka 4.4's own kafka-dump-log.sh reads the mini quorum's log, as kafkalab's dump-log does
    segment = sorted(glob.glob(str(tmp_path / f"node-{final_leader}" / "__cluster_metadata-0" / "*.log")))[0]
    kafka = subprocess.run(backend.dump_log_command([segment], "--cluster-metadata-decoder"),
                           capture_output=True, text=True, timeout=120)
    assert kafka.returncode == 0, kafka.stderr
    out, err = io.StringIO(), io.StringIO()
    dump_log(segment, cluster_metadata_decoder=True, file=out, err=err)
    assert out.getvalue().splitlines() == kafka.stdout.splitlines()
    assert "LeaderChange:" in kafka.stdout and "NO_OP_RECORD" in kafka.stdout and "Error" not in kafka.stdout
