"""Kafka's raft-metrics (KafkaRaftMetrics) and kafka.controller:type=KafkaController (QuorumControllerMetrics,
ControllerMetadataMetrics) of three controllers in one event loop: their values against the quorum's own state."""
from __future__ import annotations

import asyncio
import random
import socket
import uuid

from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.metrics import MetricsRegistry
from kafkalab.broker.common.metrics.prometheus import prometheus_name, snapshot
from kafkalab.broker.server.broker_features import registration_features
from kafkalab.controller.controller_messages import BrokerRegistrationRequest
from kafkalab.controller.controller_node import ControllerNode
from kafkalab.raft.kafka_raft_client import RaftConfig

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def values(registry: MetricsRegistry) -> dict:
    return {prometheus_name(n) + ("_info" if kind == "info" else ""): v for n, kind, v in snapshot(registry)}


async def until(predicate, timeout_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_raft_and_controller_metrics_follow_the_quorum(tmp_path):
    voters = {i: ("127.0.0.1", free_port()) for i in (1, 2, 3)}
    registries = {i: MetricsRegistry() for i in voters}
    nodes = {i: ControllerNode(RaftConfig(i, voters, election_timeout_ms=300, fetch_timeout_ms=600,
                                          election_backoff_max_ms=200, request_timeout_ms=1000,
                                          fetch_max_wait_ms=100, cluster_id=CLUSTER_ID),
                               str(tmp_path / f"node-{i}"), idle_interval_ms=100, rng=random.Random(i),
                               session_timeout_ms=600, metrics=registries[i]) for i in voters}

    async def scenario():
        for n in nodes.values():
            await n.start()
        try:
            await until(lambda: any(n.controller.is_active and n.controller.features.bootstrapped
                                    for n in nodes.values()))
            leader = next(i for i, n in nodes.items() if n.controller.is_active)
            epoch = nodes[leader].client.quorum.epoch
            await until(lambda: all(values(r)["kafka_server_raft_metrics_current_leader"] == leader
                                    for r in registries.values()))
            for i, r in registries.items():
                v = values(r)
                assert v["kafka_controller_kafkacontroller_activecontrollercount"] == (1 if i == leader else 0)
                assert v["kafka_server_raft_metrics_current_epoch"] == epoch
                assert v["kafka_server_raft_metrics_current_state_info"] == ("leader" if i == leader else "follower")
                assert v["kafka_server_raft_metrics_log_end_offset"] == nodes[i].client.log.end_offset
                assert v["kafka_server_raft_metrics_log_end_epoch"] == epoch
            lv = values(registries[leader])
            assert lv["kafka_server_raft_metrics_current_vote"] == leader   # a leader voted for itself
            latency_avg, latency_max = (lv[f"kafka_server_raft_metrics_commit_latency_{s}"] for s in ("avg", "max"))
            assert latency_max >= latency_avg >= 0
            hw = lv["kafka_server_raft_metrics_high_watermark"]
            assert hw == nodes[leader].client.high_watermark > 0
            await until(lambda: values(registries[leader])["kafka_server_raft_metrics_high_watermark"] > hw)   # NoOps
            assert values(registries[leader])["kafka_server_raft_metrics_append_records_rate"] > 0
            # a broker registers: fenced until it heartbeats
            active = nodes[leader].controller
            await active.register_broker(build(BrokerRegistrationRequest, 4, {
                "broker_id": 1, "cluster_id": CLUSTER_ID, "incarnation_id": uuid.uuid4(),
                "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9091, "security_protocol": 0}],
                "features": registration_features(),   # what a mini broker registers with
                "rack": None, "is_migrating_zk_broker": False, "log_dirs": [uuid.uuid4()],
                "previous_broker_epoch": -1}))
            await until(lambda: all(values(r)["kafka_controller_kafkacontroller_fencedbrokercount"] == 1
                                    for r in registries.values()))
            for i, r in registries.items():
                v = values(r)
                assert v["kafka_controller_kafkacontroller_activebrokercount"] == 0
                assert v["kafka_controller_kafkacontroller_globaltopiccount"] == 0
                assert v["kafka_controller_kafkacontroller_lastappliedrecordoffset"] == \
                    nodes[i].controller.applied_offset - 1
            # the active controller stops: another is elected in a later epoch, and its metrics say so
            await nodes[leader].stop()
            rest = {i: n for i, n in nodes.items() if i != leader}
            await until(lambda: any(n.controller.is_active for n in rest.values()))
            new = next(i for i, n in rest.items() if n.controller.is_active)
            await until(lambda: all(values(registries[i])["kafka_server_raft_metrics_current_leader"] == new
                                    for i in rest))
            nv = values(registries[new])
            assert nv["kafka_controller_kafkacontroller_activecontrollercount"] == 1
            assert nv["kafka_server_raft_metrics_current_epoch"] > epoch
            assert nv["kafka_server_raft_metrics_election_latency_max"] >= 0
            other = next(i for i in rest if i != new)
            assert values(registries[other])["kafka_controller_kafkacontroller_activecontrollercount"] == 0
        finally:
            for n in nodes.values():
                await n.stop(resign=False)

    asyncio.run(scenario())
