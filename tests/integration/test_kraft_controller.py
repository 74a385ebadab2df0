"""Three KRaft controllers as processes (``python -m kafkalab.controller``): the QuorumController's records survive a
SIGKILLed active controller, and Kafka 4.4's own ``kafka-dump-log.sh --cluster-metadata-decoder`` prints the log
exactly as ``kafkalab dump-log`` does.

A broker is played by the test (BrokerRegistration, BrokerHeartbeat over the controller listener).
"""
from __future__ import annotations

import asyncio
import glob
import io
import subprocess
import time
import uuid

import pytest
from kafka.protocol.admin.topics import CreateTopicsRequest

from kafkalab.broker.common.message.codec import build
from kafkalab.broker.network.network_client import NetworkClient
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.kraft_config import KRaftBackend
from kafkalab.cluster.raft_quorum import RaftQuorum
from kafkalab.broker.server.broker_features import registration_features
from kafkalab.controller.controller_messages import BrokerHeartbeatRequest, BrokerRegistrationRequest
from kafkalab.tools import dump_log

NOT_CONTROLLER = 41
pytestmark = pytest.mark.cluster   # Kafka 4.4's own dump tool runs (Java)


async def ask_active(q: RaftQuorum, request, timeout_s: float = 15.0, exclude=()):
    """Send ``request`` to each live controller until one answers without NOT_CONTROLLER (as a broker's
    controller channel does); returns (controller id, answer)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for i in q.ids:
            if i in exclude or not q.alive(i):
                continue
            conn = NetworkClient(*q.voters[i], timeout_s=3)
            try:
                answer = await conn.send(request)
            except (OSError, asyncio.TimeoutError, EOFError, asyncio.IncompleteReadError):
                continue
            finally:
                await conn.close()
            error = answer.error_code if hasattr(answer, "error_code") else answer.topics[0].error_code
            if error != NOT_CONTROLLER:
                return i, answer
        await asyncio.sleep(0.05)
    raise AssertionError(f"no active controller answered {type(request).__name__} in {timeout_s} s")


def test_controllers_as_processes_keep_their_records_across_a_killed_active_controller(tmp_path):
    with RaftQuorum(3, base_dir=str(tmp_path), module="kafkalab.controller",
                    configs={"broker.session.timeout.ms": 3000, "default.replication.factor": 3}) as q:
        async def scenario():
            epochs = {}
            for b in (1, 2, 3):
                _, answer = await ask_active(q, build(BrokerRegistrationRequest, 4, {
                    "broker_id": b, "cluster_id": q.cluster_id, "incarnation_id": uuid.uuid4(),
                    "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9000 + b,
                                   "security_protocol": 0}],
                    "features": registration_features(), "rack": None, "log_dirs": [uuid.uuid4()]}))
                assert answer.error_code == 0, answer
                epochs[b] = answer.broker_epoch

            async def beat(b, offset=10_000):
                return await ask_active(q, build(BrokerHeartbeatRequest, 1, {
                    "broker_id": b, "broker_epoch": epochs[b], "current_metadata_offset": offset,
                    "want_fence": False, "want_shut_down": False}))
            for b in (1, 2, 3):
                _, answer = await beat(b)
                assert (answer.error_code, answer.is_fenced) == (0, False)
            first, answer = await ask_active(q, build(CreateTopicsRequest, 7, {"topics": [
                {"name": "orders", "num_partitions": 3, "replication_factor": -1, "assignments": [], "configs": []}],
                "timeout_ms": 5000, "validate_only": False}))
            assert answer.topics[0].error_code == 0 and answer.topics[0].replication_factor == 3

            # the active controller SIGKILLed: another becomes active with the same state, and knows the topic
            q.kill(first)
            second, answer = await ask_active(q, build(CreateTopicsRequest, 7, {"topics": [
                {"name": "orders", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
                "timeout_ms": 5000, "validate_only": False}), exclude={first})
            assert second != first and answer.topics[0].error_code == 36   # TOPIC_ALREADY_EXISTS
            # its heartbeat state for the brokers is fresh: they stay unfenced while they heartbeat
            for b in (1, 2, 3):
                _, answer = await beat(b)
                assert (answer.error_code, answer.is_fenced) == (0, False)
            return second

        survivor = asyncio.run(scenario())
        time.sleep(0.5)
    segment = sorted(glob.glob(str(tmp_path / f"node-{survivor}" / "__cluster_metadata-0" / "*.log")))[0]
    out, err = io.StringIO(), io.StringIO()
    dump_log(segment, cluster_metadata_decoder=True, file=out, err=err)
    text = out.getvalue()
    for kind in ("FEATURE_LEVEL_RECORD", "REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD",
                 "TOPIC_RECORD", "PARTITION_RECORD", "LeaderChange:"):
        assert kind in text, kind
    assert "Error at" not in text

    # -- Kafka 4.4's own kafka-dump-log.sh prints the very same lines
    backend = KRaftBackend(str(fetch_kafka("4")))
    kafka = subprocess.run(backend.dump_log_command([segment], "--cluster-metadata-decoder"),
                           capture_output=True, text=True, timeout=120)
    assert kafka.returncode == 0, kafka.stderr
    assert text.splitlines() == kafka.stdout.splitlines()
