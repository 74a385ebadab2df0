"""kafkalab.controller: the QuorumController on the mini Raft quorum, three controllers in one event loop over real
sockets.

A broker is played by this test: it sends BrokerRegistration and BrokerHeartbeat as Kafka's BrokerLifecycleManager
would. Checked: the bootstrap FeatureLevelRecords; RegisterBrokerRecord (fenced) and the broker epoch; unfencing
only once the broker has read its own registration; CreateTopics -> TopicRecord, ConfigRecord, PartitionRecords;
fencing after broker.session.timeout.ms without heartbeats, with PartitionChangeRecords moving leadership off the
broker; AlterPartition from a leader; controlled shutdown through heartbeats; every standby's state equal to the active controller's, and a new
active controller continuing from it after the old one is stopped; Kafka's error codes for bad requests; and the
log, dumped by ``kafkalab dump-log --cluster-metadata-decoder``, printing each record as Kafka's tool does.
"""
from __future__ import annotations

import asyncio
import glob
import io
import random
import socket
import struct
import uuid

from kafka.protocol.admin.topics import CreateTopicsRequest, DeleteTopicsRequest

from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.message.zk_messages import AlterPartitionRequest
from kafkalab.broker.network.network_client import NetworkClient
from kafkalab.broker.server.broker_features import registration_features
from kafkalab.controller.feature_control_manager import BOOTSTRAP_FEATURE_LEVELS
from kafkalab.controller.controller_messages import BrokerHeartbeatRequest, BrokerRegistrationRequest
from kafkalab.controller.controller_node import ControllerNode
from kafkalab.raft.kafka_raft_client import RaftConfig
from kafkalab.tools import dump_log

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
SESSION_MS = 600
NOT_CONTROLLER, STALE_BROKER_EPOCH, INCONSISTENT_CLUSTER_ID = 41, 77, 104
TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG, INVALID_UPDATE_VERSION = 36, 38, 40, 95


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_nodes(tmp_path) -> dict[int, ControllerNode]:
    voters = {i: ("127.0.0.1", free_port()) for i in (1, 2, 3)}
    return {i: ControllerNode(RaftConfig(i, voters, election_timeout_ms=300, fetch_timeout_ms=600,
                                         election_backoff_max_ms=200, request_timeout_ms=1000, fetch_max_wait_ms=100,
                                         cluster_id=CLUSTER_ID),
                              str(tmp_path / f"node-{i}"), idle_interval_ms=200, rng=random.Random(i),
                              session_timeout_ms=SESSION_MS, default_replication_factor=3)
            for i in voters}


async def active(nodes, exclude=(), timeout_s: float = 10.0) -> ControllerNode:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        for i, n in nodes.items():
            if i not in exclude and n.controller.is_active and n.controller.features.bootstrapped:
                return n
        await asyncio.sleep(0.02)
    raise AssertionError("no active controller")


async def until(predicate, timeout_s: float = 10.0, what: str = "condition") -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def registration(broker_id: int, incarnation: uuid.UUID, cluster_id: str = CLUSTER_ID):
    return build(BrokerRegistrationRequest, 4, {
        "broker_id": broker_id, "cluster_id": cluster_id, "incarnation_id": incarnation,
        "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9090 + broker_id, "security_protocol": 0}],
        "features": registration_features(),   # what a mini broker registers with
        "rack": None, "is_migrating_zk_broker": False, "log_dirs": [uuid.uuid4()], "previous_broker_epoch": -1})


def heartbeat(broker_id: int, epoch: int, offset: int, want_fence=False, want_shut_down=False):
    return build(BrokerHeartbeatRequest, 1, {"broker_id": broker_id, "broker_epoch": epoch,
                                             "current_metadata_offset": offset, "want_fence": want_fence,
                                             "want_shut_down": want_shut_down, "offline_log_dirs": []})


def create_topics(*topics, validate_only=False):
    return build(CreateTopicsRequest, 7, {"topics": [
        {"name": name, "num_partitions": n, "replication_factor": rf, "assignments": [],
         "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]} for name, n, rf, configs in topics],
        "timeout_ms": 5000, "validate_only": validate_only})


def image(node: ControllerNode) -> dict:
    """What a controller's replayed state says, comparable between controllers."""
    c = node.controller
    return {"features": dict(c.features.finalized),
            "brokers": {b: (r.epoch, r.fenced, r.in_controlled_shutdown) for b, r in c.cluster.registrations.items()},
            "topics": {t.name: {p: (part.replicas, part.isr, part.leader, part.leader_epoch, part.partition_epoch)
                                for p, part in t.partitions.items()} for t in c.replication.topics.values()}}


def test_quorum_controller_registers_unfences_creates_fences_and_fails_over(tmp_path):
    async def scenario():
        nodes = make_nodes(tmp_path)
        for n in nodes.values():
            await n.start()
        conns: list[NetworkClient] = []

        def conn(node):
            c = NetworkClient(node.server.host, node.server.port, timeout_s=5)
            conns.append(c)
            return c
        try:
            leader = await active(nodes)
            # -- bootstrap: the first records are the feature levels the mini cluster implements, metadata.version
            # first (Kafka 4.4's defaults less transaction.version 2, streams.version 1 and share.version 2)
            assert dict(leader.controller.features.finalized) == dict(BOOTSTRAP_FEATURE_LEVELS) == {
                "metadata.version": 33, "eligible.leader.replicas.version": 1, "group.version": 1, "share.version": 1}
            first = [name for _, name in leader.controller.replayed]
            assert first == ["FeatureLevelRecord"] * 4, first     # nothing else yet

            # -- a standby refuses: NOT_CONTROLLER
            standby = next(n for i, n in nodes.items() if n is not leader)
            answer = await conn(standby).send(registration(1, uuid.uuid4()))
            assert answer.error_code == NOT_CONTROLLER and answer.broker_epoch == -1
            # -- a wrong cluster id: INCONSISTENT_CLUSTER_ID
            answer = await conn(leader).send(registration(1, uuid.uuid4(), cluster_id="AAAAAAAAAAAAAAAAAAAAAA"))
            assert answer.error_code == INCONSISTENT_CLUSTER_ID

            # -- three brokers register: fenced, the broker epoch is the offset of the RegisterBrokerRecord
            to_leader = conn(leader)
            epochs = {}
            for b in (1, 2, 3):
                answer = await to_leader.send(registration(b, uuid.uuid4()))
                assert answer.error_code == 0, answer
                epochs[b] = answer.broker_epoch
                reg = leader.controller.cluster.registrations[b]
                assert reg.fenced and reg.epoch == answer.broker_epoch == reg.register_offset
            # a heartbeat from a broker that has not read its registration yet: still fenced, not caught up
            answer = await to_leader.send(heartbeat(1, epochs[1], epochs[1] - 1))
            assert (answer.error_code, answer.is_caught_up, answer.is_fenced) == (0, False, True)
            # a stale broker epoch
            answer = await to_leader.send(heartbeat(1, epochs[1] + 1000, epochs[1]))
            assert answer.error_code == STALE_BROKER_EPOCH
            # caught up: unfenced
            for b in (1, 2, 3):
                answer = await to_leader.send(heartbeat(b, epochs[b], leader.controller.applied_offset))
                assert (answer.error_code, answer.is_caught_up, answer.is_fenced) == (0, True, False), answer
            assert leader.controller.cluster.unfenced() == [1, 2, 3]

            async def beat(brokers, seconds):
                end = asyncio.get_running_loop().time() + seconds
                while asyncio.get_running_loop().time() < end:
                    for b in brokers:
                        node = await active(nodes)
                        await conn(node).send(heartbeat(b, epochs[b], node.controller.applied_offset))
                    await asyncio.sleep(0.1)

            # -- CreateTopics: records, and Kafka's errors
            answer = await to_leader.send(create_topics(("orders", 3, 3, {"retention.ms": "60000"}),
                                                        ("wide", 1, 4, None), ("bad", 1, 1, {"no.such.config": "1"})))
            by_name = {t.name: t for t in answer.topics}
            assert by_name["orders"].error_code == 0 and by_name["orders"].num_partitions == 3
            assert by_name["wide"].error_code == INVALID_REPLICATION_FACTOR
            assert by_name["bad"].error_code == INVALID_CONFIG
            answer = await to_leader.send(create_topics(("orders", 1, 1, None)))
            assert answer.topics[0].error_code == TOPIC_ALREADY_EXISTS
            topic = leader.controller.replication.topics[by_name["orders"].topic_id]
            assert topic.configs == {"retention.ms": "60000"}
            for p, part in topic.partitions.items():
                assert sorted(part.replicas) == [1, 2, 3] and part.isr == part.replicas
                assert part.leader == part.replicas[0] and (part.leader_epoch, part.partition_epoch) == (0, 0)
            names = [name for _, name in leader.controller.replayed]
            at = names.index("TopicRecord")
            assert names[at:at + 5] == ["TopicRecord", "ConfigRecord"] + ["PartitionRecord"] * 3

            # -- every standby replays to the same state
            await until(lambda: all(image(n) == image(leader) for n in nodes.values()), what="standbys to catch up")

            # -- broker 1's heartbeats stop: fenced after the session timeout, leadership moved off it
            led_by_1 = [p for p, part in topic.partitions.items() if part.leader == 1]
            assert led_by_1
            await beat([2, 3], SESSION_MS / 1000 * 2.5)
            reg1 = leader.controller.cluster.registrations[1]
            assert reg1.fenced
            for p, part in topic.partitions.items():
                assert 1 not in part.isr and part.leader in (2, 3)
                if p in led_by_1:
                    assert part.leader_epoch == 1
            names = [name for _, name in leader.controller.replayed]
            assert "PartitionChangeRecord" in names and "BrokerRegistrationChangeRecord" in names
            # brokers 2 and 3 stayed unfenced
            assert leader.controller.cluster.unfenced() == [2, 3]

            # -- broker 1 comes back (a new incarnation): fenced until caught up, then unfenced
            answer = await to_leader.send(registration(1, uuid.uuid4()))
            assert answer.error_code == 0 and answer.broker_epoch > epochs[1]
            epochs[1] = answer.broker_epoch
            answer = await to_leader.send(heartbeat(1, epochs[1], leader.controller.applied_offset))
            assert answer.is_fenced is False

            # -- DeleteTopics: a RemoveTopicRecord; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION
            answer = await to_leader.send(create_topics(("doomed", 1, 1, None)))
            assert answer.topics[0].error_code == 0
            answer = await to_leader.send(build(DeleteTopicsRequest, 6, {"topics": [
                {"name": "doomed", "topic_id": uuid.UUID(int=0)}, {"name": "never-was", "topic_id": uuid.UUID(int=0)}],
                "timeout_ms": 5000}))
            assert [(r.name, r.error_code) for r in answer.responses] == [("doomed", 0), ("never-was", 3)]
            assert "doomed" not in leader.controller.replication.topics_by_name

            # -- AlterPartition: a leader takes broker 1 back into its ISR; a stale partition epoch is refused
            p0 = topic.partitions[0]
            request = build(AlterPartitionRequest, 1, {"broker_id": p0.leader, "broker_epoch": epochs[p0.leader],
                                                       "topics": [{"topic_name": "orders", "partitions": [
                                                           {"partition_index": 0, "leader_epoch": p0.leader_epoch,
                                                            "new_isr": sorted(p0.isr + [1]),
                                                            "leader_recovery_state": 0,
                                                            "partition_epoch": p0.partition_epoch}]}]})
            old_partition_epoch = p0.partition_epoch
            answer = await to_leader.send(request)
            part = answer.topics[0].partitions[0]
            assert (answer.error_code, part.error_code) == (0, 0)
            assert sorted(part.isr) == [1, 2, 3] and part.partition_epoch == old_partition_epoch + 1
            assert sorted(topic.partitions[0].isr) == [1, 2, 3]
            answer = await to_leader.send(request)     # the same request again: its partition epoch is stale now
            assert answer.topics[0].partitions[0].error_code == INVALID_UPDATE_VERSION

            # -- controlled shutdown of broker 2: leaders moved, then ShouldShutDown
            led_by_2 = [p for p, part in topic.partitions.items() if part.leader == 2]
            answer = await to_leader.send(heartbeat(2, epochs[2], leader.controller.applied_offset,
                                                    want_shut_down=True))
            assert answer.error_code == 0
            if led_by_2:
                assert (answer.is_fenced, answer.should_shut_down) == (False, False)
                assert leader.controller.cluster.registrations[2].in_controlled_shutdown
                assert all(part.leader != 2 for part in topic.partitions.values())
                answer = await to_leader.send(heartbeat(2, epochs[2], leader.controller.applied_offset,
                                                        want_shut_down=True))
            assert (answer.is_fenced, answer.should_shut_down) == (True, True)
            assert leader.controller.cluster.registrations[2].fenced

            # -- the active controller stops (resigns): another continues from the same state. Brokers 1 and 3
            # heartbeat on throughout, to whichever controller is active, as a broker's lifecycle manager does:
            # with the test's 600 ms sessions a pause of the test's own loop would otherwise fence them
            old = next(i for i, n in nodes.items() if n is leader)
            stopped = set()

            async def keep_beating(brokers):
                to = {}
                while True:
                    try:
                        node = await active(nodes, exclude=stopped)
                        c = to.get(id(node)) or to.setdefault(id(node), conn(node))
                        for b in brokers:
                            await c.send(heartbeat(b, epochs[b], node.controller.applied_offset))
                    except (AssertionError, OSError, asyncio.TimeoutError):
                        pass   # between two active controllers
                    await asyncio.sleep(0.1)
            beating = asyncio.ensure_future(keep_beating([1, 3]))
            try:
                await until(lambda: all(image(n) == image(leader) for n in nodes.values()),
                            what="standbys to catch up")
                before = image(leader)
                stopped.add(old)
                await leader.stop()
                new = await active(nodes, exclude={old})
                assert image(new) == before
                answer = await conn(new).send(create_topics(("after-failover", 1, 1, None)))
                assert answer.topics[0].error_code == 0
                assert "after-failover" in new.controller.replication.topics_by_name
            finally:
                beating.cancel()
            nodes.pop(old)
            return new
        finally:
            for c in conns:
                await c.close()
            for n in nodes.values():
                await n.stop(resign=False)

    asyncio.run(scenario())

    # -- the log, as kafka-dump-log.sh --cluster-metadata-decoder prints it
    segment = sorted(glob.glob(str(tmp_path / "node-1" / "__cluster_metadata-0" / "*.log")))[0]
    out, err = io.StringIO(), io.StringIO()
    dump_log(segment, cluster_metadata_decoder=True, file=out, err=err)
    text = out.getvalue()
    assert '"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":33}' in text
    assert '"type":"REGISTER_BROKER_RECORD","version":3' in text and '"fenced":true' in text
    assert '"type":"TOPIC_RECORD","version":0,"data":{"name":"orders"' in text
    assert '"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"orders",' \
           '"name":"retention.ms","value":"60000"}' in text
    assert '"type":"PARTITION_RECORD","version":2' in text
    assert '"type":"PARTITION_CHANGE_RECORD","version":2' in text
    assert '"type":"REMOVE_TOPIC_RECORD","version":0' in text
    assert '"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":1' in text
    assert '"fenced":1' in text and '"fenced":-1' in text
    assert "Error at" not in text


def test_a_broken_request_closes_only_its_connection_and_the_controller_keeps_serving(tmp_path):
    """Bad input on the controller listener: a BrokerRegistration whose body cannot be parsed, and an API the
    controller does not serve, close that one connection; the next broker registers as usual."""
    async def scenario():
        voters = {1: ("127.0.0.1", free_port())}
        node = ControllerNode(RaftConfig(1, voters, election_timeout_ms=200, fetch_timeout_ms=400,
                                         cluster_id=CLUSTER_ID), str(tmp_path / "single"), idle_interval_ms=200,
                              session_timeout_ms=SESSION_MS)
        await node.start()
        try:
            await active({1: node})
            for frame in (struct.pack(">hhi", 62, 4, 7) + b"\x00\x03abc" + b"\xff" * 5,   # a cut-off BrokerRegistration
                          struct.pack(">hhi", 0, 9, 8) + b"\x00\x03abc"):                 # Produce: not a controller's
                reader, writer = await asyncio.open_connection(*voters[1])
                writer.write(struct.pack(">i", len(frame)) + frame)
                await writer.drain()
                assert await asyncio.wait_for(reader.read(), 5) == b""    # closed, no answer
                writer.close()
            conn = NetworkClient(*voters[1], timeout_s=5)
            try:
                answer = await conn.send(registration(7, uuid.uuid4()))
                assert answer.error_code == 0 and answer.broker_epoch > 0
            finally:
                await conn.close()
        finally:
            await node.stop(resign=False)

    asyncio.run(scenario())
