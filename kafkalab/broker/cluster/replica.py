"""``Replica``: the leader's view of one follower (Kafka's ``kafka.cluster.Replica`` and its ``ReplicaState``).

A leader keeps one per follower (``Partition.remote_replicas``, Kafka's
``remoteReplicasMap``); every Fetch from that follower updates it
(``updateFetchStateOrThrow``):

* the follower's log end offset (LEO) is the offset it fetches from: it has
  everything below;
* its *last caught-up time* is the latest time at which it had fetched up to
  the leader's LEO, exactly, or up to the leader's LEO at its previous fetch.

``is_caught_up`` (Kafka's ``isCaughtUp``) compares that time with
``replica.lag.time.max.ms``: the partition's ISR maintenance (:mod:`.isr`)
shrinks the ISR of followers that are not, and the high watermark waits for
caught-up followers about to join the ISR. A new leader epoch resets the states
(``resetReplicaState``): an ISR member counts as caught up from then on.

Simplified: no broker epoch (KRaft), no log end offset *metadata* (an offset is enough here).
"""
from __future__ import annotations

UNKNOWN_OFFSET = -1


class Replica:
    """The leader's view of one follower (Kafka's ``Replica`` and its ``ReplicaState``)."""

    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.log_start_offset = UNKNOWN_OFFSET
        self.log_end_offset = UNKNOWN_OFFSET
        #: the leader's LEO when this follower last fetched (decides whether it was caught up)
        self.last_fetch_leader_log_end_offset = 0
        self.last_fetch_time_ms = 0
        #: the latest time the follower had everything the leader had
        self.last_caught_up_time_ms = 0

    def update_fetch_state(self, fetch_offset: int, start_offset: int, fetch_time_ms: int,
                           leader_end_offset: int) -> None:
        """A Fetch from this follower at ``fetch_offset`` (Kafka's ``updateFetchStateOrThrow``)."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            # it now has what the leader had at its previous fetch: it was caught up then
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_start_offset = start_offset
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = max(leader_end_offset, self.last_fetch_leader_log_end_offset)
        self.last_fetch_time_ms = fetch_time_ms

    def reset(self, current_time_ms: int, leader_end_offset: int, is_new_leader: bool, in_sync: bool) -> None:
        """A new leader epoch (Kafka's ``resetReplicaState``): an ISR member counts as caught up now."""
        self.last_caught_up_time_ms = current_time_ms if in_sync else 0
        if is_new_leader:
            self.log_start_offset = UNKNOWN_OFFSET
            self.log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_time_ms = 0
        else:
            self.last_fetch_leader_log_end_offset = leader_end_offset
            self.last_fetch_time_ms = current_time_ms if in_sync else 0

    def is_caught_up(self, leader_end_offset: int, current_time_ms: int, max_lag_ms: int) -> bool:
        return (leader_end_offset == self.log_end_offset
                or current_time_ms - self.last_caught_up_time_ms <= max_lag_ms)

    def __repr__(self) -> str:
        return (f"Replica({self.broker_id}, log_end_offset={self.log_end_offset}, "
                f"last_caught_up_time_ms={self.last_caught_up_time_ms})")
