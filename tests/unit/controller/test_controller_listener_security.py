"""The KRaft controller listener secured: what a controller, a broker and the lab make of
``CONTROLLER:SASL_SSL`` and its configs, what they refuse at start, and a mini controller's SASL_PLAINTEXT
listener letting only ApiVersions, SaslHandshake and SaslAuthenticate through before authentication."""
from __future__ import annotations

import asyncio
import random
import socket

import pytest
from kafka.protocol.admin import DescribeQuorumRequest
from kafka.protocol.metadata import ApiVersionsRequest

from kafkalab.broker.common.message.codec import build
from kafkalab.broker.network.client_security import AuthenticationError, ClientSecurity
from kafkalab.broker.network.network_client import NetworkClient
from kafkalab.broker.server.config import BROKER_CONFIGS, BrokerConfig
from kafkalab.cluster.listeners import controller_client_security, listener_spec
from kafkalab.controller.__main__ import main as controller_main
from kafkalab.controller.controller_node import ControllerNode, controller_listener_security
from kafkalab.raft.kafka_raft_client import RaftConfig
from kafkalab.security import CertificateAuthority

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret";')
SASL = {"listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT", "controller.listener.names": "CONTROLLER",
        "sasl.mechanism.controller.protocol": "PLAIN", "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": JAAS}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker(**overrides) -> BrokerConfig:
    return BrokerConfig({"process.roles": "broker", "broker.id": 1, "controller.quorum.voters": "3001@127.0.0.1:1",
                         "controller.listener.names": "CONTROLLER", "listeners": "PLAINTEXT://127.0.0.1:0",
                         **overrides})


def test_the_config_is_kafkas():
    d = BROKER_CONFIGS["sasl.mechanism.controller.protocol"]
    assert (d.type, d.default) == ("string", "GSSAPI")


def test_a_broker_refuses_an_explicit_protocol_map_without_the_controller_listener_with_kafkas_message():
    with pytest.raises(ValueError, match=r"^Controller listener with name CONTROLLER defined in "
                                         r"controller.listener.names not found in listener.security.protocol.map  "
                                         r"\(an explicit security mapping"):
        broker(**{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"})
    # without a map of its own (and no security in use) the controller listener is PLAINTEXT, as in Kafka
    assert broker().listener_configs.controller_client_security().security_protocol == "PLAINTEXT"


def test_a_broker_logs_in_to_the_controllers_with_the_controller_mechanism_and_the_jaas_entry():
    security = broker(**{**SASL, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"}
                      ).listener_configs.controller_client_security()
    assert (security.listener_name, security.security_protocol, security.sasl_mechanism, security.sasl_username,
            security.sasl_password) == ("CONTROLLER", "SASL_PLAINTEXT", "PLAIN", "admin", "admin-secret")


@pytest.mark.parametrize("change, message", [
    ({"sasl.mechanism.controller.protocol": None}, "sasl.mechanism.controller.protocol=GSSAPI: the mini broker "
                                                   "logs in to the controllers' CONTROLLER listener with PLAIN"),
    ({"listener.name.controller.plain.sasl.jaas.config": JAAS.replace('username="admin" ', "")},
     "listener.name.controller.plain.sasl.jaas.config: the node connects to the controllers' CONTROLLER listener "
     "with SASL/PLAIN"),
])
def test_what_could_not_log_in_to_the_controllers_is_refused_at_start(change, message):
    given = {**SASL, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT", **change}
    given = {k: v for k, v in given.items() if v is not None}
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        broker(**given).listener_configs.controller_client_security()


def test_a_broker_does_not_need_the_controller_mechanism_enabled_on_its_own_listeners():
    # Kafka checks sasl.mechanism.inter.broker.protocol against sasl.enabled.mechanisms, not the controller's
    given = {k: v for k, v in SASL.items() if "enabled.mechanisms" not in k}
    security = broker(**{**given, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"}
                      ).listener_configs.controller_client_security()
    assert security.sasl_mechanism == "PLAIN"


def test_a_controller_serves_and_connects_with_its_listeners_configs(tmp_path):
    ca = CertificateAuthority(directory=str(tmp_path / "ca"))
    server, client = controller_listener_security(
        {**SASL, "listener.security.protocol.map": "CONTROLLER:SASL_SSL", **ca.broker_configs(listener="CONTROLLER")},
        "127.0.0.1", 1234)
    assert (server.listener_name, server.security_protocol) == ("CONTROLLER", "SASL_SSL")
    assert server.ssl_context is not None and server.sasl_config.enabled_mechanisms == ("PLAIN",)
    assert (client.security_protocol, client.sasl_username) == ("SASL_SSL", "admin")
    assert client.ssl_context is not None


def test_a_controller_refuses_what_it_cannot_serve(tmp_path):
    with pytest.raises(ValueError, match="Could not find a 'KafkaServer' or 'controller.KafkaServer' entry"):
        controller_listener_security({**SASL, "listener.name.controller.plain.sasl.jaas.config": ""}, "127.0.0.1", 1)
    scram = {**SASL, "listener.name.controller.sasl.enabled.mechanisms": "SCRAM-SHA-256",
             "listener.name.controller.scram-sha-256.sasl.jaas.config":
                 "org.apache.kafka.common.security.scram.ScramLoginModule required;"}
    config = RaftConfig(1, {1: ("127.0.0.1", free_port())})
    with pytest.raises(ValueError, match="the mini controller authenticates PLAIN only"):
        ControllerNode(config, str(tmp_path / "c"), security_configs=scram)


def test_python_m_kafkalab_controller_refuses_a_bad_controller_listener_at_start(tmp_path, capsys):
    port = free_port()
    code = controller_main(["--node-id", "1", "--voters", f"1@127.0.0.1:{port}", "--metadata-log-dir",
                            str(tmp_path / "c"), "--config", "listener.security.protocol.map=CONTROLLER:SASL_SSL",
                            "--config", "controller.listener.names=CONTROLLER"])
    assert code == 2
    assert "listener CONTROLLER" in capsys.readouterr().err   # no key store for its TLS


def test_the_lab_reads_the_controller_protocol_from_the_map_and_refuses_what_could_not_log_in():
    given = {"listeners": "PLAINTEXT://:0", **SASL,
             "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"}
    spec = listener_spec(given, "127.0.0.1")
    assert (spec.names, spec.controller) == (("PLAINTEXT",), "SASL_PLAINTEXT")
    assert controller_client_security(given, spec).sasl_username == "admin"
    assert listener_spec({"listeners": "PLAINTEXT://:0"}, "127.0.0.1").controller == "PLAINTEXT"
    with pytest.raises(ValueError, match="sasl.mechanism.controller.protocol=GSSAPI"):
        controller_client_security({k: v for k, v in given.items() if k != "sasl.mechanism.controller.protocol"},
                                   spec)


def test_a_sasl_controller_listener_answers_only_the_authentication_apis_before_authentication(tmp_path):
    async def scenario():
        port = free_port()
        node = ControllerNode(RaftConfig(1, {1: ("127.0.0.1", port)}), str(tmp_path / "c"), rng=random.Random(1),
                              security_configs=SASL)
        await node.start()
        try:
            assert node.server.socket_server.listener_name == "CONTROLLER"
            # before authentication: DescribeQuorum closes the connection (no answer)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            request = build(DescribeQuorumRequest, 0, {"topics": []})
            request.with_header(correlation_id=1, client_id="t")
            writer.write(request.encode(header=True, framed=True))
            await writer.drain()
            assert await reader.read(4) == b""
            writer.close()
            # ApiVersions is answered, and lists the SASL APIs
            plain = NetworkClient("127.0.0.1", port, timeout_s=5)
            answer = await plain.send(build(ApiVersionsRequest, 3, {"client_software_name": "t",
                                                                     "client_software_version": "1"}))
            assert {17, 36} <= {k.api_key for k in answer.api_keys}
            await plain.close()
            # logged in, DescribeQuorum is answered
            security = ClientSecurity("CONTROLLER", "SASL_PLAINTEXT", None, "PLAIN", "admin", "admin-secret")
            client = NetworkClient("127.0.0.1", port, timeout_s=5, security=security)
            for _ in range(50):
                answer = await client.send(build(DescribeQuorumRequest, 0, {"topics": [
                    {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}))
                if answer.topics[0].partitions[0].leader_id == 1:
                    break
                await asyncio.sleep(0.1)
            assert answer.topics[0].partitions[0].leader_id == 1
            await client.close()
            # a wrong password: refused, counted as failed
            wrong = NetworkClient("127.0.0.1", port, timeout_s=5, security=ClientSecurity(
                "CONTROLLER", "SASL_PLAINTEXT", None, "PLAIN", "admin", "wrong"))
            with pytest.raises(AuthenticationError):
                await wrong.send(build(ApiVersionsRequest, 3, {"client_software_name": "t",
                                                                "client_software_version": "1"}))
            counts = node.server.socket_server.metrics.counts
            assert counts["successful-authentication-total"] == 1 and counts["failed-authentication-total"] >= 1
        finally:
            await node.stop()

    asyncio.run(scenario())



def test_an_ssl_controller_listener_answers_over_tls_and_refuses_plaintext(tmp_path):
    ca = CertificateAuthority(directory=str(tmp_path / "ca"))
    given = {"listener.security.protocol.map": "CONTROLLER:SSL", **ca.broker_configs(listener="CONTROLLER")}

    async def scenario():
        port = free_port()
        node = ControllerNode(RaftConfig(1, {1: ("127.0.0.1", port)}), str(tmp_path / "c"), rng=random.Random(1),
                              security_configs=given)
        assert node.config.security.security_protocol == "SSL"   # its own connections to the others: TLS
        await node.start()
        try:
            request = {"client_software_name": "t", "client_software_version": "1"}
            client = NetworkClient("127.0.0.1", port, timeout_s=5, security=node.config.security)
            assert (await client.send(build(ApiVersionsRequest, 3, request))).error_code == 0
            await client.close()
            plain = NetworkClient("127.0.0.1", port, timeout_s=2)
            with pytest.raises((OSError, asyncio.TimeoutError, asyncio.IncompleteReadError)):
                await plain.send(build(ApiVersionsRequest, 3, request))
            await plain.close()
            counts = node.server.socket_server.metrics.counts
            assert counts["successful-authentication-total"] == 1
        finally:
            await node.stop()

    asyncio.run(scenario())
