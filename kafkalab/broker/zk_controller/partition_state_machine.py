"""The partition state machine (Kafka's ``kafka.controller.PartitionStateMachine``).

In Kafka every partition is, in the controller's eyes, in one of four states:

* **NewPartition**: its assignment is known (the topic znode) but it has no
  state znode (``/brokers/topics/<t>/partitions/<p>/state``) yet;
* **OnlinePartition**: it has a leader that is alive;
* **OfflinePartition**: its leader died (or a new partition had no live replica);
* **NonExistentPartition**: deleted, or never created.

Moving a partition to OnlinePartition is where leaders are chosen:

* New -> Online: leader = the first live assigned replica, ISR = the live
  replicas; the state znode is *created*; LeaderAndIsr ``is_new`` to the replicas.
* Offline/Online -> Online: a *leader election* under a strategy (Kafka's
  ``PartitionLeaderElectionStrategy``, algorithms in :mod:`.election`):
  ``OFFLINE`` (the leader died: first live ISR member, or an unclean choice
  when ``unclean.leader.election.enable``), ``PREFERRED`` (back to the first
  assigned replica) or ``CONTROLLED_SHUTDOWN`` (away from a stopping broker).
  The new state (leader epoch + 1) is written to the state znode *conditionally*
  on its version and on the controller epoch's znode version, so a deposed
  controller's write fails; then LeaderAndIsr to the replicas.

Every state the controller writes goes through :meth:`PartitionStateMachine.write_states`,
which also keeps the :class:`ControllerContext` and the state-change log up to date.

Where kafkalab simplifies: the four states are not stored; a partition's state is
read off the context (no state znode -> New; a leader not alive -> Offline).
No reassignment strategy. Elections asked for by an admin (ElectLeaders) use the
``UNCLEAN`` strategy name for Kafka's ``OfflinePartitionLeaderElectionStrategy(allowUnclean = true)``.
"""
from __future__ import annotations

import logging
from dataclasses import replace

from ..common.errors import ErrorCode
from ..zk.kafka_zk_client import NodeExistsError
from ..zk.zk_data import LeaderIsrAndControllerEpoch
from . import election
from .controller_context import ControllerComponent

log = logging.getLogger(__name__)
#: Kafka's state-change logger (``state.change.logger``): one name across modules, not the module's
state_change_log = logging.getLogger("kafkalab.state.change")

# PartitionLeaderElectionStrategy
OFFLINE = "OfflinePartitionLeaderElectionStrategy"
UNCLEAN = "OfflinePartitionLeaderElectionStrategy(allowUnclean=true)"
PREFERRED = "PreferredReplicaPartitionLeaderElectionStrategy"
CONTROLLED_SHUTDOWN = "ControlledShutdownPartitionLeaderElectionStrategy"


class StateChangeFailed(Exception):
    """An election that did not happen (Kafka's ``StateChangeFailedException`` and friends)."""

    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class PartitionStateMachine(ControllerComponent):
    # -- New/Offline -> Online ------------------------------------------------------------------

    def trigger_online_partition_state_change(self, partitions=None, allow_unclean: bool | None = None) -> dict:
        """Elect leaders for new partitions (no state znode) and offline ones (no live leader), then send.

        ``partitions`` None = every partition. Topics queued for deletion are left alone.
        Returns (topic, partition) -> new state, or None when no leader could be elected.
        """
        ctx = self.context
        candidates = partitions if partitions is not None else ctx.all_partitions()
        new = [tp for tp in candidates if tp not in ctx.leadership and tp[0] not in ctx.topics_to_be_deleted]
        offline = [tp for tp in candidates if tp in ctx.leadership and not ctx.has_live_leader(tp)
                   and tp[0] not in ctx.topics_to_be_deleted]
        results = {}
        if new:
            results.update(self.initialize_leader_and_isr_for_partitions(new))
        if offline:
            elected = self.elect_leader_for_partitions(offline, OFFLINE, allow_unclean)
            results.update({tp: (None if isinstance(r, StateChangeFailed) else r) for tp, r in elected.items()})
        self.controller.send()
        return results

    def initialize_leader_and_isr_for_partitions(self, partitions) -> dict:
        """New -> Online: create the state znodes (leader = first live replica, ISR = live replicas)."""
        ctx = self.context
        to_create, results = {}, {}
        for tp in partitions:
            live = ctx.online_replicas(tp)
            if not live:
                log.error("controller %d: cannot elect a leader for new partition %s-%d: no live replica of %s",
                          self.controller_id, tp[0], tp[1], ctx.replicas(tp))
                results[tp] = None
                continue
            to_create[tp] = LeaderIsrAndControllerEpoch(live[0], 0, list(live), ctx.epoch, 0)
        for tp, outcome in self.zk_client.create_partition_states(to_create, ctx.epoch_zk_version).items():
            if isinstance(outcome, Exception):
                log.warning("controller %d: state znode of %s-%d not created (%s)", self.controller_id, tp[0], tp[1],
                            type(outcome).__name__)
                existing = self.zk_client.get_partition_state(*tp) if isinstance(outcome, NodeExistsError) else None
                if existing is not None:
                    ctx.leadership[tp] = existing
                results[tp] = existing
                continue
            state = replace(to_create[tp], zk_version=outcome)
            ctx.leadership[tp] = state
            results[tp] = state
            state_change_log.info("controller %d epoch %d: new partition %s-%d -> leader %d, isr %s",
                                  self.controller_id, ctx.epoch, tp[0], tp[1], state.leader, state.isr)
            self.controller.batch.add_leader_and_isr(ctx.online_replicas(tp), tp, is_new=True)
        return results

    # -- leader elections ------------------------------------------------------------------------

    def elect_leader_for_partitions(self, partitions, strategy: str, allow_unclean: bool | None = None) -> dict:
        """Elect a leader for each partition under ``strategy``; write the states; queue LeaderAndIsr.

        Returns (topic, partition) -> the new state, or a :class:`StateChangeFailed`.
        Nothing is sent: the caller sends the batch. ``allow_unclean`` (OFFLINE only)
        None means the topic's ``unclean.leader.election.enable``.
        """
        ctx = self.context
        new_states, results, unclean_ones = {}, {}, set()
        for tp in partitions:
            state = ctx.leadership[tp]
            if strategy == CONTROLLED_SHUTDOWN:
                new = election.elect_for_controlled_shutdown(state, ctx.replicas(tp),
                                                             set(ctx.online_replicas(tp, include_shutting_down=True)),
                                                             ctx.shutting_down_broker_ids, ctx.epoch)
                if new is None:
                    results[tp] = StateChangeFailed(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                                    f"No live ISR member of {tp[0]}-{tp[1]} outside the brokers "
                                                    f"shutting down")
                    continue
            elif strategy == PREFERRED:
                new = election.elect_preferred(state, ctx.replicas(tp), set(ctx.online_replicas(tp)), ctx.epoch)
                if new is None:
                    results[tp] = StateChangeFailed(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                                    f"Failed to elect leader for partition {tp[0]}-{tp[1]} under "
                                                    f"strategy PreferredReplicaPartitionLeaderElectionStrategy")
                    continue
            else:
                live = set(ctx.online_replicas(tp))
                if strategy == UNCLEAN:
                    new, was_unclean = election.elect_offline(state, ctx.replicas(tp), live, True, ctx.epoch)
                else:
                    new, was_unclean = election.elect_offline(state, ctx.replicas(tp), live, False, ctx.epoch)
                    if new is None:
                        unclean = self.unclean_enabled(tp[0]) if allow_unclean is None else allow_unclean
                        new, was_unclean = election.elect_offline(state, ctx.replicas(tp), live, unclean, ctx.epoch)
                if new is None:
                    if strategy == OFFLINE:
                        log.error("controller %d: no leader for %s-%d: no live replica in the ISR %s (live replicas "
                                  "%s, unclean.leader.election.enable is false)", self.controller_id, tp[0], tp[1],
                                  state.isr, sorted(live))
                    results[tp] = StateChangeFailed(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                                    f"Failed to elect leader for partition {tp[0]}-{tp[1]}: no live "
                                                    f"replica")
                    continue
                if was_unclean:
                    unclean_ones.add(tp)
            new_states[tp] = new
        written = self.write_states(new_states) if new_states else {}
        for tp in new_states:
            if tp not in written:
                results[tp] = StateChangeFailed(ErrorCode.UNKNOWN_SERVER_ERROR, "The partition state changed meanwhile")
                continue
            results[tp] = written[tp]
            if tp in unclean_ones:
                stats = self.controller.stats
                if stats is not None:   # ControllerStats UncleanLeaderElectionsPerSec
                    stats.unclean_leader_election_rate.mark()
                log.warning("controller %d: UNCLEAN leader election for %s-%d: broker %d, not in the ISR, "
                            "is the leader now; records it did not have are lost", self.controller_id, tp[0], tp[1],
                            written[tp].leader)
            # automatic elections tell the live replicas; the others also a replica that is shutting down
            recipients = ctx.online_replicas(tp, include_shutting_down=strategy != OFFLINE)
            self.controller.batch.add_leader_and_isr(recipients, tp)
        return results

    # -- state znode writes ------------------------------------------------------------------------

    def write_states(self, new_states: dict) -> dict:
        """Write states conditionally on their zk_version; update the context; return what was written.

        A bad version (someone wrote the znode since the controller read it) makes
        the controller re-read that partition; the caller's decision is then not
        applied (it will be remade on the next event about that partition). A
        newer controller epoch raises ``ControllerMovedError``: this controller resigns.
        """
        ctx = self.context
        ok, failed = self.zk_client.update_partition_states(new_states, ctx.epoch_zk_version)
        written = {}
        for tp, version in ok.items():
            state = replace(new_states[tp], zk_version=version)
            ctx.leadership[tp] = state
            written[tp] = state
            state_change_log.info("controller %d epoch %d: %s-%d -> leader %d, leader epoch %d, isr %s, "
                                  "partition epoch %d", self.controller_id, ctx.epoch, tp[0], tp[1],
                                  state.leader, state.leader_epoch, state.isr, version)
        for tp, exc in failed.items():
            log.warning("controller %d: could not write the state of %s-%d (%s); re-reading it",
                        self.controller_id, tp[0], tp[1], type(exc).__name__)
            fresh = self.zk_client.get_partition_state(*tp)
            if fresh is not None:
                ctx.leadership[tp] = fresh
        return written

    def unclean_enabled(self, topic: str) -> bool:
        """The topic's ``unclean.leader.election.enable`` (its override in ZooKeeper, else the broker's)."""
        override = self.zk_client.get_topic_config(topic).get("unclean.leader.election.enable")
        if override is not None:
            return str(override).strip().lower() == "true"
        return bool(self.controller.config["unclean.leader.election.enable"])
