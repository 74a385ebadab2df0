"""kafka.controller metrics of the ZooKeeper-mode controller (Kafka 3.9's KafkaController and ControllerStats)."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from kafkalab.broker.common.metrics import MetricName, MetricsRegistry
from kafkalab.broker.common.metrics.prometheus import snapshot
from kafkalab.broker.zk.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch
from kafkalab.broker.zk_controller.controller_context import ControllerContext
from kafkalab.broker.zk_controller.controller_event_manager import ControllerEventManager
from kafkalab.broker.zk_controller.controller_metrics import EVENT_TIMERS, ControllerStats, register_controller_gauges


def gauges(registry) -> dict[str, float]:
    return {n.name: v for n, kind, v in snapshot(registry) if n.type == "KafkaController"}


def context() -> ControllerContext:
    ctx = ControllerContext()
    for b in (1, 2, 3):
        ctx.add_live_broker(BrokerInfo(b, "127.0.0.1", 9000 + b), broker_epoch=b)
    ctx.all_topics = {"a", "b", "gone"}
    ctx.assignments = {"a": {0: [1, 2, 3], 1: [2, 3, 1]}, "b": {0: [3, 1, 2]}, "gone": {0: [1, 2, 3]}}
    ctx.leadership = {("a", 0): LeaderIsrAndControllerEpoch(1, 0, [1, 2, 3], 1),   # preferred leader
                      ("a", 1): LeaderIsrAndControllerEpoch(3, 1, [3, 1], 1),      # not preferred
                      ("b", 0): LeaderIsrAndControllerEpoch(-1, 2, [3], 1),        # no leader: offline, and
                                                                                   # not its preferred leader
                      ("gone", 0): LeaderIsrAndControllerEpoch(-1, 1, [], 1)}      # being deleted: not counted
    ctx.topics_to_be_deleted = {"gone"}
    return ctx


def test_the_active_controller_counts_and_the_others_show_zero():
    registry = MetricsRegistry()
    controller = SimpleNamespace(is_active=True, context=context())
    register_controller_gauges(controller, registry)
    assert gauges(registry) == {"ActiveControllerCount": 1, "OfflinePartitionsCount": 1,
                                "PreferredReplicaImbalanceCount": 2, "GlobalTopicCount": 3,
                                "GlobalPartitionCount": 4, "ActiveBrokerCount": 3,
                                "FencedBrokerCount": 0}   # Kafka 3.9: always 0 in the ZK controller
    controller.context.remove_live_broker(3)   # the leader of a-1 is gone: offline too
    assert gauges(registry)["OfflinePartitionsCount"] == 2
    controller.is_active = False
    assert set(gauges(registry).values()) == {0}


def test_event_timers_time_each_event_of_their_state_failed_ones_too():
    registry = MetricsRegistry()
    stats = ControllerStats(registry)
    assert EVENT_TIMERS["BrokerChange"] == "LeaderElectionRateAndTimeMs"
    timer = stats.event_timers["BrokerChange"]
    assert registry.get(MetricName.of("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs")) is timer

    async def run():
        manager = ControllerEventManager(1, on_controller_moved=None, event_timers=stats.event_timers)
        manager.start()

        async def slow():
            await asyncio.sleep(0.02)

        async def failing():
            raise RuntimeError("boom")
        await manager.put("BrokerChange", slow)
        try:
            await manager.put("BrokerChange", failing)
        except RuntimeError:
            pass
        await manager.put("Reconnected", slow)   # a mini-only event: no timer
        await manager.close()
    asyncio.run(run())
    assert timer.count == 2 and timer.max >= 20
    assert sum(t.count for t in set(stats.event_timers.values())) == 2
    assert stats.unclean_leader_election_rate.count == 0
