"""The ZooKeeper-mode controller's metrics, as Kafka 3.9's ``KafkaController`` and ``ControllerStats`` register them:

* ``kafka.controller:type=KafkaController``: ``ActiveControllerCount`` (1 on the active controller, 0 on every
  other broker: summed over the cluster, 1), and, on the active controller only (0 elsewhere, as Kafka's
  ``updateMetrics``), ``OfflinePartitionsCount`` (partitions with a leadership but no live leader, topics being
  deleted left out), ``PreferredReplicaImbalanceCount`` (partitions whose leader is not their first replica, topics
  being deleted left out), ``GlobalTopicCount`` and ``GlobalPartitionCount`` (partitions with a leadership), and
  ``ActiveBrokerCount`` (live and shutting-down brokers); ``FencedBrokerCount`` is always 0 (Kafka 3.9: no fencing
  in ZooKeeper mode). Kafka recomputes them after each controller event; here
  they are computed from the controller's context when read;
* ``kafka.controller:type=ControllerStats``: ``UncleanLeaderElectionsPerSec`` (a leader elected from outside the
  ISR) and one timer per controller state, timing the events of that state (Kafka's ``ControllerState``'s
  ``rateAndTimeMetricName``): ``LeaderElectionRateAndTimeMs`` is the ``BrokerChange`` events' (a broker came or
  went: its partitions' leaders are elected), ``ControllerChangeRateAndTimeMs`` the failovers' and so on.
"""
from __future__ import annotations

from ..common.metrics import KafkaMetricsGroup, MetricsRegistry, Timer

#: the controller's event names -> the timer of their ControllerState (Kafka's ``ControllerEvent.state``)
EVENT_TIMERS = {
    "ControllerChange": "ControllerChangeRateAndTimeMs", "Reelect": "ControllerChangeRateAndTimeMs",
    "Expire": "ControllerChangeRateAndTimeMs", "Startup": "ControllerChangeRateAndTimeMs",
    "BrokerChange": "LeaderElectionRateAndTimeMs",
    "TopicChange": "TopicChangeRateAndTimeMs", "PartitionModifications": "TopicChangeRateAndTimeMs",
    "TopicDeletion": "TopicDeletionRateAndTimeMs",
    "TopicDeletionStopReplicaResponseReceived": "TopicDeletionRateAndTimeMs",
    "AutoPreferredReplicaLeaderElection": "AutoLeaderBalanceRateAndTimeMs",
    "ReplicaLeaderElection": "ManualLeaderBalanceRateAndTimeMs",
    "PreferredReplicaElection": "ManualLeaderBalanceRateAndTimeMs",
    "ControlledShutdown": "ControlledShutdownRateAndTimeMs",
    "AlterPartitionReceived": "IsrChangeRateAndTimeMs",
}


class ControllerStats:
    """Kafka's ``ControllerStats``: the unclean elections meter and the event timers."""

    def __init__(self, registry: MetricsRegistry):
        group = KafkaMetricsGroup(registry, "kafka.controller", "ControllerStats")
        self.unclean_leader_election_rate = group.new_meter("UncleanLeaderElectionsPerSec")
        timers = {name: group.new_timer(name) for name in sorted(set(EVENT_TIMERS.values()))}
        #: event name -> its timer (what the ControllerEventManager updates)
        self.event_timers: dict[str, Timer] = {event: timers[name] for event, name in EVENT_TIMERS.items()}


def register_controller_gauges(controller, registry: MetricsRegistry) -> None:
    """``controller``: the ``KafkaController`` (its ``is_active`` and ``context``)."""
    group = KafkaMetricsGroup(registry, "kafka.controller", "KafkaController")

    def if_active(count):
        return lambda: count(controller.context) if controller.is_active else 0

    def offline(ctx) -> int:
        return sum(1 for tp in list(ctx.leadership) if tp[0] not in ctx.topics_to_be_deleted
                   and not ctx.has_live_leader(tp))

    def imbalanced(ctx) -> int:
        return sum(1 for tp, state in list(ctx.leadership.items()) if tp[0] not in ctx.topics_to_be_deleted
                   and ctx.replicas(tp)[:1] != [state.leader])

    group.new_gauge("ActiveControllerCount", lambda: 1 if controller.is_active else 0)
    group.new_gauge("OfflinePartitionsCount", if_active(offline))
    group.new_gauge("PreferredReplicaImbalanceCount", if_active(imbalanced))
    group.new_gauge("GlobalTopicCount", if_active(lambda ctx: len(ctx.all_topics)))
    group.new_gauge("GlobalPartitionCount", if_active(lambda ctx: len(ctx.leadership)))
    group.new_gauge("ActiveBrokerCount", if_active(lambda ctx: len(ctx.live_or_shutting_down_broker_ids)))
    group.new_gauge("FencedBrokerCount", lambda: 0)   # Kafka 3.9: "always 0 in the ZK controller" (no fencing)
