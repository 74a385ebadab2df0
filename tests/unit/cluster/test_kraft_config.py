"""mode="kraft": each node's properties, the storage format command, the lab defaults, the refusals, and
DescribeQuorum / DescribeCluster decoding (responses encoded with kafka-python's protocol classes, as Kafka
sends them). tests/integration/test_kafka_kraft.py runs real Kafka 4.4 in KRaft mode."""
from __future__ import annotations

import pytest

import kafkalab
from kafkalab.broker.common.message.codec import build
from kafkalab.cluster.kafka_backend import KafkaBackend, KafkaDistributionError
from kafkalab.cluster.kraft_config import (KRAFT_LAB_DEFAULTS, KRaftBackend, kraft_lab_configs, new_cluster_id,
                                           voters_string)
from kafkalab.cluster.quorum import QuorumError, quorum_answer, quorum_rows, quorum_table


def fake_home(root, version):
    home = root / f"kafka_2.13-{version}"
    (home / "libs").mkdir(parents=True)
    (home / "config").mkdir()
    (home / "libs" / f"kafka_2.13-{version}.jar").write_bytes(b"")
    return home


@pytest.fixture
def backend(tmp_path):
    return KRaftBackend(str(fake_home(tmp_path, "4.4.0")))


VOTERS = voters_string({3001: ("127.0.0.1", 9301), 3002: ("127.0.0.1", 9302), 3003: ("127.0.0.1", 9303)})


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_voters_string_is_id_at_host_port_by_id():
    assert VOTERS == "3001@127.0.0.1:9301,3002@127.0.0.1:9302,3003@127.0.0.1:9303"


def test_a_controller_has_only_the_controller_listener(backend):
    p = props(backend.server_properties(3001, "controller", "127.0.0.1", None, 9301, "/d/node-3001", VOTERS,
                                        {"group.initial.rebalance.delay.ms": "0"}))
    assert p["process.roles"] == "controller" and p["node.id"] == "3001"
    assert p["listeners"] == "CONTROLLER://127.0.0.1:9301" and "advertised.listeners" not in p
    assert p["controller.quorum.voters"] == VOTERS and p["controller.listener.names"] == "CONTROLLER"
    assert p["log.dirs"] == "/d/node-3001" and p["group.initial.rebalance.delay.ms"] == "0"
    assert "zookeeper.connect" not in p and "broker.id" not in p


def test_a_broker_advertises_plaintext_and_knows_the_voters(backend):
    p = props(backend.server_properties(2, "broker", "127.0.0.1", 9092, None, "/d/node-2", VOTERS, {}))
    assert p["process.roles"] == "broker" and p["node.id"] == "2"
    assert p["listeners"] == p["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert p["inter.broker.listener.name"] == "PLAINTEXT" and p["controller.quorum.voters"] == VOTERS
    assert p["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"


def test_a_combined_node_listens_twice_and_advertises_only_plaintext(backend):
    p = props(backend.server_properties(1, "broker,controller", "127.0.0.1", 9092, 9093, "/d/node-1",
                                        "1@127.0.0.1:9093", {}))
    assert p["process.roles"] == "broker,controller"
    assert p["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert p["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092"


def test_configs_the_cluster_sets_cannot_be_given(backend):
    for name in ("node.id", "process.roles", "controller.quorum.voters", "zookeeper.connect"):
        with pytest.raises(ValueError, match=name):
            backend.server_properties(1, "broker", "h", 1, None, "/d", VOTERS, {name: "x"})


def test_format_is_kafkas_storage_tool_with_one_cluster_id_and_a_static_quorum(backend):
    cmd = backend.format_command("/d/node-1.properties", "MkU3OEVBNTcwNTJENDM2Qg")
    at = cmd.index("kafka.tools.StorageTool")
    assert cmd[at:] == ["kafka.tools.StorageTool", "format", "--cluster-id", "MkU3OEVBNTcwNTJENDM2Qg",
                        "--config", "/d/node-1.properties", "--ignore-formatted"]
    assert cmd[cmd.index("-cp") + 1].endswith("/libs/*")


def test_start_command_is_kafka_kafka_with_log4j2_and_a_small_heap(backend):
    cmd = backend.command("/d/node-1.properties", "broker")
    assert cmd[-2:] == ["kafka.Kafka", "/d/node-1.properties"] and "-Xmx256m" in cmd
    assert any(a.startswith("-Dlog4j2.configurationFile=") for a in cmd)
    assert "-Xmx192m" in backend.command("/d/node-3001.properties", "controller")


def test_cluster_ids_look_like_kafka_storage_random_uuid():
    ids = {new_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") and set(i) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for i in ids)


def test_lab_defaults_drop_zookeeper_configs_and_shorten_the_quorum_timeouts():
    configs = kraft_lab_configs(3)
    assert "zookeeper.session.timeout.ms" not in configs
    assert configs["broker.session.timeout.ms"] == 3000 and KRAFT_LAB_DEFAULTS["broker.session.timeout.ms"].kafka_default == 9000
    assert configs["controller.quorum.fetch.timeout.ms"] < KRAFT_LAB_DEFAULTS["controller.quorum.fetch.timeout.ms"].kafka_default
    assert configs["broker.heartbeat.interval.ms"] < configs["broker.session.timeout.ms"]
    assert kraft_lab_configs(1)["offsets.topic.replication.factor"] == 1
    assert kraft_lab_configs(1)["transaction.state.log.min.isr"] == 1


def test_kraft_needs_kafka_4_and_says_so(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    with pytest.raises(KafkaDistributionError, match="needs Kafka 4.x"):
        KRaftBackend(str(fake_home(tmp_path, "3.9.2")))
    home39 = str(fake_home(tmp_path / "b", "3.9.2"))
    with pytest.raises(KafkaDistributionError, match="needs Kafka 4.x"):
        kafkalab.cluster(brokers=1, backend=KafkaBackend(home39, use_script=False), mode="kraft")
    monkeypatch.setenv("KAFKALAB_DIST", str(tmp_path / "empty-cache"))
    with pytest.raises(KafkaDistributionError, match="fetch-kafka 4"):
        KRaftBackend()


def test_an_unknown_mode_fails_at_once():
    # mini combined nodes (combined=True on the mini backend): tests/unit/kraft/test_kafka_raft_server.py and
    # tests/integration/test_mini_kraft_combined.py
    with pytest.raises(ValueError, match="'zookeeper' or 'kraft'"):
        kafkalab.cluster(brokers=3, mode="raft")


# -- DescribeQuorum ---------------------------------------------------------------------------------------------

def quorum_response(version=2, error=0, partition_error=0, leader=3002):
    from kafka.protocol.admin import DescribeQuorumResponse
    voter = lambda i, leo, fetch: {"replica_id": i, "replica_directory_id": None, "log_end_offset": leo,  # noqa: E731
                                   "last_fetch_timestamp": fetch, "last_caught_up_timestamp": fetch}
    data = {"error_code": error, "error_message": None, "topics": [{"topic_name": "__cluster_metadata", "partitions": [
        {"partition_index": 0, "error_code": partition_error, "error_message": None, "leader_id": leader,
         "leader_epoch": 7, "high_watermark": 120,
         "current_voters": [voter(3001, 118, 1_000_000 - 300), voter(3002, 121, 1_000_000), voter(3003, -1, -1)],
         "observers": [voter(1, 120, 1_000_000 - 100)]}]}],
        "nodes": [{"node_id": 3002, "listeners": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9302}]}]}
    encoded = build(DescribeQuorumResponse, version, data).encode(version=version)
    return DescribeQuorumResponse.decode(encoded, version=version)


def test_describe_quorum_decodes_leader_epoch_and_each_replica():
    answer = quorum_answer(quorum_response())
    assert (answer["leader_id"], answer["leader_epoch"], answer["high_watermark"]) == (3002, 7, 120)
    assert [v["node_id"] for v in answer["voters"]] == [3001, 3002, 3003]
    assert answer["observers"][0] == {"node_id": 1, "log_end_offset": 120, "last_fetch_timestamp": 999_900,
                                      "last_caught_up_timestamp": 999_900}
    assert answer["nodes"] == {3002: [("CONTROLLER", "127.0.0.1", 9302)]}


def test_quorum_rows_are_kafka_metadata_quorums_replication_table():
    rows = quorum_rows(quorum_answer(quorum_response()), now_ms=1_000_000)
    assert [(r["node_id"], r["status"], r["log_end_offset"], r["lag"]) for r in rows] == [
        (3002, "Leader", 121, 0), (3001, "Follower", 118, 3), (3003, "Follower", None, None), (1, "Observer", 120, 1)]
    assert rows[1]["last_fetch_ms_ago"] == 300 and rows[2]["last_fetch_timestamp"] is None
    df = quorum_table(quorum_answer(quorum_response()), now_ms=1_000_000)
    assert df.attrs == {"leader_id": 3002, "leader_epoch": 7, "high_watermark": 120, "max_follower_lag": 3}
    assert str(df["lag"].dtype) == "Int64" and df["lag"].isna().sum() == 1


def test_version_1_has_timestamps_but_no_nodes():
    answer = quorum_answer(quorum_response(version=1))
    assert answer["nodes"] == {} and answer["voters"][0]["last_fetch_timestamp"] == 999_700


def test_a_controller_that_is_not_the_leader_answers_not_leader_or_follower():
    with pytest.raises(QuorumError) as e:
        quorum_answer(quorum_response(error=6))
    assert e.value.error_code == 6
    with pytest.raises(QuorumError) as e:
        quorum_answer(quorum_response(partition_error=6))
    assert e.value.error_code == 6


def test_no_leader_is_none():
    answer = quorum_answer(quorum_response(leader=-1))
    assert answer["leader_id"] is None
    assert {r["status"] for r in quorum_rows(answer)} == {"Follower", "Observer"}
