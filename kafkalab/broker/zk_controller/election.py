"""How the controller picks a partition leader (Kafka's ``PartitionLeaderElectionAlgorithms``).

Every algorithm walks the *assignment* in order (so the preferred replica,
the first one, wins when it can) and returns the new leader, or None:

* **offline partition** (the leader died, or a new partition): the first
  assigned replica that is live *and in the ISR*. If none is, and
  ``unclean.leader.election.enable`` is true for the topic, the first live
  replica at all: an *unclean* election, which may lose acknowledged records.
* **preferred replica**: the first assigned replica, if it is live and in the ISR.
* **controlled shutdown**: the first live ISR member that is not shutting down.

The ``elect_*`` helpers build the partition's next state: leader epoch + 1,
and the ISR the new leader starts with (after an unclean election, just the
leader, with ``leader_recovery_state`` RECOVERING, as in KIP-704).
"""
from __future__ import annotations

from dataclasses import replace

from ..zk.zk_data import LeaderIsrAndControllerEpoch

RECOVERED, RECOVERING = 0, 1


def offline_partition_leader_election(assignment, isr, live_replicas, unclean_enabled: bool
                                      ) -> tuple[int | None, bool]:
    """(leader or None, whether the election was unclean)."""
    for replica in assignment:
        if replica in live_replicas and replica in isr:
            return replica, False
    if unclean_enabled:
        for replica in assignment:
            if replica in live_replicas:
                return replica, True
    return None, False


def preferred_replica_partition_leader_election(assignment, isr, live_replicas) -> int | None:
    if assignment and assignment[0] in live_replicas and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(assignment, isr, live_replicas, shutting_down) -> int | None:
    for replica in assignment:
        if replica in live_replicas and replica in isr and replica not in shutting_down:
            return replica
    return None


def elect_offline(state: LeaderIsrAndControllerEpoch, assignment, live_replicas, unclean_enabled: bool,
                  controller_epoch: int) -> tuple[LeaderIsrAndControllerEpoch | None, bool]:
    leader, unclean = offline_partition_leader_election(assignment, state.isr, live_replicas, unclean_enabled)
    if leader is None:
        return None, False
    if unclean:
        isr, recovery = [leader], RECOVERING
    else:
        isr, recovery = [r for r in state.isr if r in live_replicas], state.leader_recovery_state
    return replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, isr=isr,
                   controller_epoch=controller_epoch, leader_recovery_state=recovery), unclean


def elect_preferred(state: LeaderIsrAndControllerEpoch, assignment, live_replicas,
                    controller_epoch: int) -> LeaderIsrAndControllerEpoch | None:
    leader = preferred_replica_partition_leader_election(assignment, state.isr, live_replicas)
    if leader is None:
        return None
    return replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, controller_epoch=controller_epoch)


def elect_for_controlled_shutdown(state: LeaderIsrAndControllerEpoch, assignment, live_or_shutting_down,
                                  shutting_down, controller_epoch: int) -> LeaderIsrAndControllerEpoch | None:
    leader = controlled_shutdown_partition_leader_election(assignment, state.isr, live_or_shutting_down,
                                                          shutting_down)
    if leader is None:
        return None
    isr = [r for r in state.isr if r not in shutting_down]
    return replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, isr=isr,
                   controller_epoch=controller_epoch)


def remove_replica_from_isr(state: LeaderIsrAndControllerEpoch, replica: int,
                            controller_epoch: int) -> LeaderIsrAndControllerEpoch | None:
    """The state once ``replica`` went offline (Kafka's ``removeReplicasFromIsr``), or None if unchanged.

    A leader leaving makes the partition leaderless (-1). The last ISR member
    stays in the ISR, as in Kafka: the ISR never becomes empty, so when that
    broker comes back it can lead again without an unclean election.
    """
    if replica not in state.isr:
        return None
    leader = -1 if state.leader == replica else state.leader
    isr = state.isr if len(state.isr) == 1 else [r for r in state.isr if r != replica]
    if leader == state.leader and isr == state.isr:
        return None
    return replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, isr=isr,
                   controller_epoch=controller_epoch)
