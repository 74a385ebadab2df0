"""Pre-vote (KIP-996) in the mini Raft quorum, three ``python -m kafkalab.raft`` processes.

The case the KIP is about: a follower controller is paused (SIGSTOP) for much longer than its fetch and
election timeouts, then resumed. Its timers have all expired; before Kafka 4.0 it stood at once in a
higher epoch and every voter it asked moved to that epoch, unseating a healthy leader. With pre-vote it
first asks in its current epoch; the leader and the follower that fetches from it refuse; it goes back
to following the same leader in the same epoch. Timing bounds here are generous deadlines, not measurements.
"""
from __future__ import annotations

import time

from kafkalab.cluster.raft_quorum import LAB_RAFT_CONFIGS, RaftQuorum


def _node_log(q: RaftQuorum, node_id: int) -> str:
    with open(f"{q.base_dir}/node-{node_id}.log", errors="replace") as f:
        return f.read()


def wait_for_hw(q: RaftQuorum, at_least: int, timeout_s: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout_s
    answer = None
    while time.monotonic() < deadline:
        answer = q.describe()
        if answer is not None and answer["high_watermark"] >= at_least:
            return answer
        time.sleep(0.05)
    raise AssertionError(f"the high watermark did not reach {at_least} in {timeout_s} s: last answer {answer}")


def test_a_paused_follower_resumes_without_raising_the_epoch(tmp_path):
    fetch_timeout_s = LAB_RAFT_CONFIGS["controller.quorum.fetch.timeout.ms"] / 1000
    election_timeout_s = LAB_RAFT_CONFIGS["controller.quorum.election.timeout.ms"] / 1000
    with RaftQuorum(3, base_dir=str(tmp_path)) as q:
        answer = wait_for_hw(q, 3)
        leader, epoch = answer["leader_id"], answer["leader_epoch"]
        paused = next(i for i in q.ids if i != leader)
        assert q.quorum_state(paused)["leaderEpoch"] == epoch
        q.pause(paused)
        time.sleep(fetch_timeout_s + 4 * election_timeout_s)      # every timer of the paused node expires
        committed = wait_for_hw(q, answer["high_watermark"] + 1)["high_watermark"]
        before = len(_node_log(q, paused))
        q.resume(paused)
        # several election timeouts pass: the resumed node asks for pre-votes, is refused, follows again
        deadline, seen = time.monotonic() + 6 * election_timeout_s + fetch_timeout_s, []
        while time.monotonic() < deadline:
            now = q.describe()
            assert now is not None, "no leader answered DescribeQuorum"
            seen.append((now["leader_id"], now["leader_epoch"]))
            time.sleep(0.05)
        assert set(seen) == {(leader, epoch)}, f"the leader or the epoch changed: {sorted(set(seen))}"
        answer = wait_for_hw(q, committed + 3)
        assert (answer["leader_id"], answer["leader_epoch"]) == (leader, epoch)
        assert {q.quorum_state(i)["leaderEpoch"] for i in q.ids} == {epoch}
        assert q.quorum_state(paused)["leaderId"] == leader
        # the resumed follower caught up with the leader (it follows it again)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            answer = q.describe()
            mine = next(v for v in answer["voters"] if v["node_id"] == paused)
            if mine["log_end_offset"] >= committed:
                break
            time.sleep(0.05)
        assert mine["log_end_offset"] >= committed, answer
        log = _node_log(q, paused)[before:]
        # it did ask (its fetch timed out while paused) and lost in its own epoch, never a candidate
        assert f"node {paused}: prospective in epoch {epoch}" in log, log[-3000:]
        assert f"node {paused}: pre-vote in epoch {epoch} lost" in log, log[-3000:]
        assert f"node {paused}: candidate" not in log, log[-3000:]
