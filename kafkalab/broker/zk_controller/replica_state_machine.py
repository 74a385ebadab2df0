"""The replica state machine (Kafka's ``kafka.controller.ReplicaStateMachine``).

A *replica* is one partition on one broker. Kafka's controller tracks each
replica's state: NewReplica, **OnlineReplica** (its broker is alive: it gets
the partition's LeaderAndIsr), **OfflineReplica** (its broker died or is
shutting down: it leaves the ISR), and the three deletion states
(ReplicaDeletionStarted/Successful/Ineligible, driven by the topic deletion manager).

The transitions kafkalab performs:

* -> **OnlineReplica**: queue a LeaderAndIsr with the partition's current
  state for that broker (a broker that starts, or every live replica when a
  controller takes over, so that they all learn the new controller epoch).
* -> **OfflineReplica**: take the replica out of the ISR (leader epoch + 1;
  if it led, the partition is leaderless, -1) with a conditional write of the
  state znode, retried after a re-read when the version moved, and queue
  LeaderAndIsr to the partition's other live replicas. As in Kafka the ISR
  never becomes empty: the last member stays, so it can lead again cleanly.

Where kafkalab simplifies: replica states are not stored but read off the
:class:`ControllerContext` (a replica is online exactly when its broker is
live); no NewReplica (no reassignment). The StopReplica (delete = false) that
Kafka's OfflineReplica transition sends matters only to a broker still alive,
i.e. one doing a controlled shutdown: ``KafkaController`` sends it there.
Deletion states are kept by :mod:`.topic_deletion_manager`.
"""
from __future__ import annotations

import logging

from . import election
from .controller_context import ControllerComponent

log = logging.getLogger(__name__)

MAX_STATE_WRITE_ATTEMPTS = 3


class ReplicaStateMachine(ControllerComponent):
    def startup(self, excluded_topics=frozenset()) -> None:
        """On failover: every online replica -> OnlineReplica, every offline one -> OfflineReplica; send.

        Brokers that died together with the previous controller are only seen here.
        ``excluded_topics``: topics queued for deletion (the deletion manager handles them).
        """
        ctx = self.context
        for tp in ctx.leadership:
            if tp[0] not in excluded_topics:   # (UpdateMetadata carries the partition even with no live replica)
                self.controller.batch.add_leader_and_isr(ctx.online_replicas(tp, include_shutting_down=True), tp)
        self.controller.send()
        self.handle_offline_replicas([(tp, b) for tp in sorted(ctx.leadership) if tp[0] not in excluded_topics
                                      for b in ctx.offline_replicas(tp)])
        self.controller.send()

    def handle_online_replicas(self, replicas) -> None:
        """(partition, broker) pairs -> OnlineReplica: queue the partition's LeaderAndIsr for each broker."""
        for tp, b in replicas:
            if tp in self.context.leadership:
                self.controller.batch.add_leader_and_isr([b], tp)

    def handle_offline_replicas(self, replicas) -> None:
        """(partition, broker) pairs -> OfflineReplica: remove each from the ISR (Kafka's ``removeReplicasFromIsr``).

        Each changed state is written (conditionally, up to three attempts with the
        context re-read after a version conflict) and LeaderAndIsr is queued to the
        partition's remaining live replicas. Nothing is sent: the caller sends.
        """
        ctx = self.context
        psm = self.controller.partition_state_machine
        remaining = list(replicas)
        for _ in range(MAX_STATE_WRITE_ATTEMPTS):
            new_states = {}
            for tp, b in remaining:
                base = new_states.get(tp, ctx.leadership.get(tp))
                if base is None:
                    continue
                changed = election.remove_replica_from_isr(base, b, ctx.epoch)
                if changed is not None:
                    new_states[tp] = changed
            if not new_states:
                return
            written = psm.write_states(new_states)
            for tp in written:
                gone = {b for t, b in replicas if t == tp}
                self.controller.batch.add_leader_and_isr([r for r in ctx.online_replicas(tp, True) if r not in gone],
                                                         tp)
            remaining = [(tp, b) for tp, b in remaining if tp in new_states and tp not in written]
            if not remaining:
                return
