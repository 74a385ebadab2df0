"""The ZooKeeper-mode controller against a real ZooKeeper, with stand-in brokers.

Each "broker" here is a small TCP server that registers in ``/brokers/ids``
like a real one, answers LeaderAndIsr / UpdateMetadata / StopReplica with
success and records what it got. The controller under test runs in-process,
as it does inside a broker.
"""
from __future__ import annotations

import asyncio
import struct
import uuid

import pytest


from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.metrics import MetricsRegistry
from kafkalab.broker.common.message.zk_messages import (LeaderAndIsrRequest, LeaderAndIsrResponse, StopReplicaRequest,
                                              StopReplicaResponse, UpdateMetadataRequest, UpdateMetadataResponse)
from kafkalab.broker.server.config import BrokerConfig
from kafkalab.broker.zk_controller import KafkaController
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.zk import zk_data as zd
from kafkalab.broker.zk.kafka_zk_client import KafkaZkClient
from kafkalab.broker.zk.zk_data import BrokerInfo, TopicAssignment
from kafkalab.cluster.zookeeper import ZooKeeperServer

REQUESTS = {4: (LeaderAndIsrRequest, LeaderAndIsrResponse), 5: (StopReplicaRequest, StopReplicaResponse),
            6: (UpdateMetadataRequest, UpdateMetadataResponse)}


class FakeBroker:
    """A registered broker endpoint that records the controller's requests."""

    def __init__(self, broker_id, connect_string):
        self.broker_id = broker_id
        self.connect_string = connect_string
        self.received: list = []
        self.server = None
        self.zk = None
        self.broker_epoch = -1

    async def start(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.zk = KafkaZkClient(self.connect_string, session_timeout_ms=4000)
        self.zk.start()
        self.zk.create_top_level_paths()
        self.broker_epoch = self.zk.register_broker(BrokerInfo(self.broker_id, "127.0.0.1", port))

    async def _serve(self, reader, writer):
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                key, version = struct.unpack(">hh", frame[:4])
                req_cls, resp_cls = REQUESTS[key]
                request = req_cls.decode(frame, version=version, header=True)
                self.received.append(request)
                if key == 4:
                    body = {"error_code": 0, "topics": [
                        {"topic_id": t.topic_id, "partition_errors": [
                            {"partition_index": p.partition_index, "error_code": 0} for p in t.partition_states]}
                        for t in request.topic_states]}
                elif key == 5:
                    body = {"error_code": 0, "partition_errors": [
                        {"topic_name": t.topic_name, "partition_index": p.partition_index, "error_code": 0}
                        for t in request.topic_states for p in t.partition_states]}
                else:
                    body = {"error_code": 0}
                response = build(resp_cls, version, body)
                response.with_header(correlation_id=request.header.correlation_id)
                writer.write(response.encode(header=True, framed=True))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def of(self, cls):
        return [r for r in self.received if isinstance(r, cls)]

    def partition_states(self, cls=LeaderAndIsrRequest):
        return [(t.topic_name, p) for r in self.of(cls) for t in r.topic_states for p in t.partition_states]

    async def stop(self):
        if self.zk is not None:
            self.zk.close()
            self.zk = None
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None


class Host:
    """What KafkaController needs of KafkaServer."""

    def __init__(self, broker_id, connect_string, **overrides):
        self.broker_id = broker_id
        self.config = BrokerConfig({"broker.id": broker_id, "zookeeper.connect": connect_string,
                                    "zookeeper.session.timeout.ms": 4000, **overrides})
        self.zk_client = KafkaZkClient(connect_string, session_timeout_ms=4000)
        self.zk_client.start()
        self.broker_epoch = -1
        self.tasks = []
        #: the broker's metrics registry, where KafkaController keeps its kafka.controller gauges and ControllerStats
        self.metrics = MetricsRegistry()

    def spawn(self, coro):
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.append(task)
        return task


def active_controller_count(host: Host) -> float:
    """kafka.controller:type=KafkaController,name=ActiveControllerCount in the host broker's registry."""
    return next(float(m.value) for name, m in host.metrics.items()
                if (name.group, name.type, name.name) == ("kafka.controller", "KafkaController", "ActiveControllerCount"))


async def eventually(check, timeout=8.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


@pytest.fixture
def zk_server(tmp_path):
    with ZooKeeperServer(str(tmp_path / "zk")) as server:
        yield server


def run(coro):
    asyncio.run(asyncio.wait_for(coro, 40))


def _create_topic(zk, topic, partitions):
    zk.zk.create(zd.topic_path(topic), zd.encode_topic_assignment(TopicAssignment(uuid.uuid4(), partitions)))


def test_controller_lifecycle(zk_server):
    async def scenario():
        cs = zk_server.connect_string
        brokers = {i: FakeBroker(i, cs) for i in (1, 2, 3)}
        controllers = []
        try:
            for b in brokers.values():
                await b.start()
            host = Host(1, cs, **{"auto.leader.rebalance.enable": False})
            controller = KafkaController(host)
            controllers.append(controller)
            await controller.startup()
            assert controller.is_active and controller.epoch == 1
            assert active_controller_count(host) == 1
            zk = brokers[1].zk
            assert zk.get_controller_id() == 1
            await eventually(lambda: all(b.of(UpdateMetadataRequest) for b in brokers.values()))
            um = brokers[2].of(UpdateMetadataRequest)[0]
            assert um.controller_id == 1 and um.controller_epoch == 1
            assert um.broker_epoch == brokers[2].broker_epoch
            assert sorted(b.id for b in um.live_brokers) == [1, 2, 3]

            # a new topic: state znodes, LeaderAndIsr(is_new) to the replicas
            _create_topic(zk, "t", {0: [1, 2, 3], 1: [2, 3, 1]})
            await eventually(lambda: len(zk.get_partition_states([("t", 0), ("t", 1)])) == 2)
            s0, s1 = zk.get_partition_state("t", 0), zk.get_partition_state("t", 1)
            assert (s0.leader, s0.isr, s0.leader_epoch, s0.controller_epoch) == (1, [1, 2, 3], 0, 1)
            assert (s1.leader, s1.isr) == (2, [2, 3, 1])
            await eventually(lambda: len(brokers[3].partition_states()) >= 2)
            assert all(p.is_new for _, p in brokers[3].partition_states())

            # broker 2 dies: p1 gets leader 3 (epoch + 1), 2 leaves p0's ISR (epoch + 1)
            await brokers[2].stop()
            await eventually(lambda: zk.get_partition_state("t", 1).leader == 3)
            await eventually(lambda: zk.get_partition_state("t", 0).isr == [1, 3])
            s0, s1 = zk.get_partition_state("t", 0), zk.get_partition_state("t", 1)
            assert (s1.leader_epoch, s1.isr) == (1, [3, 1]) and s0.leader == 1 and s0.leader_epoch == 1
            await eventually(lambda: any(p.leader == 3 and p.leader_epoch == 1 for t, p in brokers[1].partition_states()))

            # AlterPartition from the leader of p0
            async def alter(leader_epoch, isr, partition_epoch, broker_epoch=brokers[1].broker_epoch):
                r = await controller.handle_alter_partition(1, broker_epoch, [{"topic_name": "t", "partitions": [
                    {"partition_index": 0, "leader_epoch": leader_epoch, "new_isr": isr,
                     "leader_recovery_state": 0, "partition_epoch": partition_epoch}]}])
                return r
            s0 = zk.get_partition_state("t", 0)
            r = await alter(s0.leader_epoch, [1], s0.zk_version, broker_epoch=12345)
            assert r["error_code"] == ErrorCode.STALE_BROKER_EPOCH
            r = await alter(s0.leader_epoch - 1, [1], s0.zk_version)
            assert r["topics"][0]["partitions"][0]["error_code"] == ErrorCode.FENCED_LEADER_EPOCH
            r = await alter(s0.leader_epoch, [1, 2, 3], s0.zk_version)   # broker 3 is not live
            # Kafka answers AlterPartition v0-v1 with OPERATION_NOT_ATTEMPTED (INELIGIBLE_REPLICA from v2)
            assert r["topics"][0]["partitions"][0]["error_code"] == ErrorCode.OPERATION_NOT_ATTEMPTED
            r = await alter(s0.leader_epoch, [1], s0.zk_version - 1)
            assert r["topics"][0]["partitions"][0]["error_code"] == ErrorCode.INVALID_UPDATE_VERSION
            r = await alter(s0.leader_epoch, [1], s0.zk_version)
            p = r["topics"][0]["partitions"][0]
            assert (p["error_code"], p["isr"], p["partition_epoch"]) == (0, [1], s0.zk_version + 1)
            assert zk.get_partition_state("t", 0).isr == [1]
            r = await alter(s0.leader_epoch, [1, 3], s0.zk_version + 1)
            assert r["topics"][0]["partitions"][0]["error_code"] == 0

            # controlled shutdown of broker 3: p1's leadership moves to 1, 3 leaves p0's ISR
            error, remaining = await controller.handle_controlled_shutdown(3, brokers[3].broker_epoch)
            assert (error, remaining) == (0, [])
            s0, s1 = zk.get_partition_state("t", 0), zk.get_partition_state("t", 1)
            assert (s1.leader, s1.isr) == (1, [1]) and s0.isr == [1]
            await eventually(lambda: brokers[3].of(StopReplicaRequest))

            # a preferred election: p1's preferred replica (2) is dead
            results = await controller.elect_leaders(0, [("t", 0), ("t", 1), ("t", 7)])
            assert results[("t", 0)][0] == ErrorCode.ELECTION_NOT_NEEDED
            assert results[("t", 1)][0] == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            assert results[("t", 7)][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

            # topic deletion: StopReplica(delete) to live replicas; the dead one (2) holds it up until it returns
            zk.zk.create(zd.delete_topic_path("t"))
            await eventually(lambda: any(p.delete_partition for _, p in brokers[1].partition_states(StopReplicaRequest)))
            assert zk.topic_exists("t")
            brokers[2] = FakeBroker(2, cs)
            await brokers[2].start()
            await eventually(lambda: not zk.topic_exists("t"))
            assert zk.get_topic_deletions() == set()
            assert any(p.delete_partition for _, p in brokers[2].partition_states(StopReplicaRequest))
        finally:
            for c in controllers:
                await c.shutdown()
                c.broker.zk_client.close()
            for b in brokers.values():
                await b.stop()
    run(scenario())


def test_failover_unclean_and_session_expiry(zk_server):
    async def scenario():
        cs = zk_server.connect_string
        brokers = {i: FakeBroker(i, cs) for i in (1, 2)}
        hosts, controllers = [], []
        try:
            for b in brokers.values():
                await b.start()
            zk = brokers[1].zk
            for i in (1, 2):
                hosts.append(Host(i, cs, **{"auto.leader.rebalance.enable": False}))
                controllers.append(KafkaController(hosts[-1]))
                await controllers[-1].startup()
            first, second = controllers
            assert first.is_active and not second.is_active
            assert [active_controller_count(h) for h in hosts] == [1, 0]
            _create_topic(zk, "u", {0: [1, 2]})
            await eventually(lambda: zk.get_partition_state("u", 0) is not None)
            # the ISR shrinks to [1]; then broker 1 dies: no ISR member left, no unclean election by default
            s = zk.get_partition_state("u", 0)
            r = await first.handle_alter_partition(1, brokers[1].broker_epoch, [{"topic_name": "u", "partitions": [
                {"partition_index": 0, "leader_epoch": s.leader_epoch, "new_isr": [1], "leader_recovery_state": 0,
                 "partition_epoch": s.zk_version}]}])
            assert r["topics"][0]["partitions"][0]["error_code"] == 0
            await brokers[1].stop()
            await eventually(lambda: brokers[2].zk.get_partition_state("u", 0).leader == -1)
            zk = brokers[2].zk
            assert zk.get_partition_state("u", 0).isr == [1]     # the last ISR member stays
            # the controller's session expires (closed): the other broker takes over with epoch 2
            await first.shutdown()
            hosts[0].zk_client.close()
            await eventually(lambda: second.is_active)
            assert second.epoch == 2 and zk.get_controller_epoch()[0] == 2
            assert [active_controller_count(h) for h in hosts] == [0, 1]
            await eventually(lambda: any(r.controller_epoch == 2 for r in brokers[2].of(UpdateMetadataRequest)))
            # an unclean election on demand makes broker 2 the leader, recovering
            results = await second.elect_leaders(1, [("u", 0)])
            assert results[("u", 0)][0] == 0
            s = zk.get_partition_state("u", 0)
            assert (s.leader, s.isr, s.leader_recovery_state) == (2, [2], 1)
            # a deposed controller is refused: its epoch is stale in ZooKeeper too
            assert not first.is_active
            r = await first.handle_alter_partition(2, brokers[2].broker_epoch, [])
            assert r["error_code"] == ErrorCode.NOT_CONTROLLER
        finally:
            for c in controllers:
                await c.shutdown()
            for h in hosts:
                h.zk_client.close()
            for b in brokers.values():
                await b.stop()
    run(scenario())
