"""The auto leader rebalance of the active KRaft controller (Kafka's ``QuorumController``
``maybeScheduleNextBalancePartitionLeaders`` and ``ReplicationControlManager.maybeBalancePartitionLeaders``).

A partition's first replica is its *preferred leader*: replica placement spreads first replicas evenly,
so leadership is balanced when every partition is led by its preferred replica. A broker that was
fenced (killed, restarted) lost its leaderships to other replicas; once it is back in the ISR it may
have them again. With ``auto.leader.rebalance.enable`` (default true) the active controller, whenever
some partition's leader is not its preferred replica, schedules a preferred-replica election for every
such partition ``leader.imbalance.check.interval.seconds`` later (300 s in Kafka, 10 s as a lab
default); one round writes at most 1000 records, and runs again at once if it hit that bound.

As in Kafka's KRaft controller, ``leader.imbalance.per.broker.percentage`` is accepted but not used:
any imbalanced partition is considered (the ZooKeeper-mode controller waits until a broker's share of
non-preferred leaders exceeds that percentage).
"""
from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)
#: Kafka's small delay for a round rescheduled at once
IMMEDIATE_S = 0.01


class LeaderBalancer:
    def __init__(self, controller, enabled: bool = True, check_interval_s: float = 300,
                 per_broker_percentage: int = 10):
        self.controller = controller
        self.enabled = bool(enabled)
        self.check_interval_s = check_interval_s
        self.per_broker_percentage = per_broker_percentage   # kept for describe(); KRaft does not use it
        self.deadline: float | None = None                   # when the scheduled round runs; None: none scheduled
        self.immediately = False
        self.rounds: list[tuple[float, int]] = []            # (time.time(), records written), for notebooks

    def maybe_schedule(self, now: float) -> None:
        replication = self.controller.replication
        if self.deadline is None and replication.are_partition_leaders_imbalanced():
            self.deadline = now + (IMMEDIATE_S if self.immediately else self.check_interval_s)

    async def maybe_run(self) -> None:
        """Called by the active controller's timer: schedule a round, run it when due."""
        if not self.enabled or not self.controller.is_active:
            self.deadline = None
            return
        now = time.monotonic()
        self.maybe_schedule(now)
        if self.deadline is None or now < self.deadline:
            return
        more = await self.controller.write(self._balance)
        self.deadline = None
        self.immediately = bool(more)
        self.maybe_schedule(time.monotonic())

    def _balance(self):
        records, more = self.controller.replication.maybe_balance_partition_leaders()
        log.info("node %d: maybeBalancePartitionLeaders: generated %d records.%s", self.controller.raft.node_id,
                 len(records), " Rescheduling immediately." if more else "")
        self.rounds.append((time.time(), len(records)))
        return records, more
