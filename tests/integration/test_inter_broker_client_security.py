"""A broker as the client of another broker's secured listener: the NetworkClient its replica fetchers, controller
channel, AlterPartition, controlled shutdown, transaction markers and share persister use, secured as Kafka's
client channel builder secures them, against a live mini broker's SSL and SASL_SSL listeners.

What must hold: TLS with the other broker's certificate checked (an untrusted CA and a certificate for another
host are refused at the handshake, the host name check off only with ``ssl.endpoint.identification.algorithm=``);
SASL/PLAIN and SASL/SCRAM-SHA-512 logins with the JAAS entry's username and password, a wrong one refused with the
broker's message; KIP-368 re-authentication on the same connection before the session ends; and the configs Kafka
refuses refused at the broker's start with Kafka's message."""
from __future__ import annotations

import asyncio
import time

import pytest
from kafka.protocol.admin.users import AlterUserScramCredentialsRequest
from kafka.protocol.metadata import MetadataRequest

import kafkalab
from kafkalab.broker.base_broker import StartupError
from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.security.scram.scram_formatter import ScramFormatter
from kafkalab.broker.common.security.scram.scram_mechanism import SCRAM_SHA_512
from kafkalab.broker.kafka_server import KafkaServer
from kafkalab.broker.network.client_security import AuthenticationError
from kafkalab.broker.network.network_client import NetworkClient
from kafkalab.broker.server.config import BrokerConfig
from kafkalab.security import CertificateAuthority

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" '
              'password="{password}" user_broker="broker-secret";')
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" '
              'password="{password}";')


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    with CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca"))) as authority:
        yield authority


def sasl_ssl_configs(ca, user="broker", password="broker-secret", **extra) -> dict:
    """A broker's configs with a SASL_SSL listener serving PLAIN and SCRAM-SHA-512 (and the lab's PLAINTEXT)."""
    return {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS.format(user=user, password=password),
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS.format(user=user, password=password),
            **ca.broker_configs(listener="SASL_SSL"), **extra}


def client_security(configs: dict, mechanism="PLAIN", listener="SASL_SSL"):
    """How a cluster broker with these configs and ``listener`` as its inter-broker listener connects to others."""
    config = BrokerConfig({**configs, "log.dirs": "/nonexistent", "inter.broker.listener.name": listener,
                           "sasl.mechanism.inter.broker.protocol": mechanism})
    return config.listener_configs.inter_broker_client_security()


async def metadata(client: NetworkClient):
    return await client.send(build(MetadataRequest, 1, {"topics": []}))


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def broker(ca):
    with kafkalab.mini(**sasl_ssl_configs(ca)) as b:
        yield b


def address(broker, listener="SASL_SSL"):
    host, _, port = broker.listeners[listener].rpartition(":")
    return host, int(port)


def test_plain_over_tls_logs_in_with_the_jaas_entry(broker, ca):
    security = client_security(sasl_ssl_configs(ca))
    assert (security.security_protocol, security.sasl_mechanism, security.sasl_username) == ("SASL_SSL", "PLAIN",
                                                                                             "broker")
    assert security.ssl_context.check_hostname      # Kafka's default ssl.endpoint.identification.algorithm=https

    async def main():
        client = NetworkClient(*address(broker), security=security)
        try:
            response = await metadata(client)
            assert [b.node_id for b in response.brokers] == [broker.server.broker_id]
            assert client._writer.get_extra_info("ssl_object").version().startswith("TLSv1.")
        finally:
            await client.close()
    run(main())

    wrong = client_security(sasl_ssl_configs(ca, password="not-it"))

    async def refused():
        client = NetworkClient(*address(broker), security=wrong)
        with pytest.raises(AuthenticationError, match=r"SASL/PLAIN authentication with 127\.0\.0\.1:\d+ \(SASL_SSL\) "
                                                      r"failed: Authentication failed: Invalid username or password"):
            await metadata(client)
        assert not client.connected
    run(refused())
    assert run(_metadata_ok(broker, security))   # the broker serves on


async def _metadata_ok(broker, security) -> bool:
    client = NetworkClient(*address(broker), security=security)
    try:
        return bool((await metadata(client)).brokers)
    finally:
        await client.close()


def test_scram_sha_512_with_a_credential_made_over_the_admin_api(broker, ca):
    async def create_user():   # AlterUserScramCredentials on the PLAINTEXT listener (no authorizer: allowed)
        client = NetworkClient(*address(broker, "PLAINTEXT"))
        salt = b"inter-broker-salt"
        salted = ScramFormatter(SCRAM_SHA_512).salted_password("scram-secret", salt, 4096)
        try:
            response = await client.send(build(AlterUserScramCredentialsRequest, 0, {"deletions": [], "upsertions": [
                {"name": "replicator", "mechanism": 2, "iterations": 4096, "salt": salt,
                 "salted_password": salted}]}))
            assert [(r.user, r.error_code) for r in response.results] == [("replicator", 0)]
        finally:
            await client.close()
    run(create_user())
    security = client_security(sasl_ssl_configs(ca, "replicator", "scram-secret"), "SCRAM-SHA-512")
    assert run(_metadata_ok(broker, security))
    wrong = client_security(sasl_ssl_configs(ca, "replicator", "guess"), "SCRAM-SHA-512")
    with pytest.raises(AuthenticationError, match="Authentication failed during authentication due to invalid "
                                                  "credentials with SASL mechanism SCRAM-SHA-512"):
        run(_metadata_ok(broker, wrong))


def test_an_untrusted_ca_and_a_certificate_for_another_host_are_refused_at_the_handshake(broker, ca, tmp_path):
    with CertificateAuthority(name="someone else's CA", directory=str(tmp_path / "other")) as other:
        untrusted = {**sasl_ssl_configs(ca), **other.broker_configs(listener="SASL_SSL")}
        with pytest.raises(AuthenticationError, match=r"SSL handshake with 127\.0\.0\.1:\d+ \(SASL_SSL\) failed: "
                                                      r".*certificate verify failed"):
            run(_metadata_ok(broker, client_security(untrusted)))
    elsewhere = ca.issue("CN=elsewhere,OU=broker,O=kafkalab", ("elsewhere.example",), name="elsewhere")
    with kafkalab.mini(**{**sasl_ssl_configs(ca), **ca.broker_configs(elsewhere, listener="SASL_SSL")}) as b:
        with pytest.raises(AuthenticationError, match="IP address mismatch"):
            run(_metadata_ok(b, client_security(sasl_ssl_configs(ca))))
        unchecked = client_security({**sasl_ssl_configs(ca),
                                     "listener.name.sasl_ssl.ssl.endpoint.identification.algorithm": ""})
        assert not unchecked.ssl_context.check_hostname
        assert run(_metadata_ok(b, unchecked))


def test_the_session_is_renewed_on_the_same_connection_before_it_ends(ca):
    configs = sasl_ssl_configs(ca, **{"connections.max.reauth.ms": 1500})
    with kafkalab.mini(**configs) as b:
        security = client_security(configs)

        async def main():
            client = NetworkClient(*address(b), security=security)
            try:
                await metadata(client)
                writer, authenticator = client._writer, client._authenticator
                assert authenticator.session_lifetime_ms == 1500
                first_deadline = authenticator.reauthenticate_at
                deadline = time.monotonic() + 4.0   # well past the session's end: the broker closes an expired one
                answered = 0
                while time.monotonic() < deadline:
                    answered += bool((await metadata(client)).brokers)
                    await asyncio.sleep(0.2)
                assert client._writer is writer, "the client reconnected instead of re-authenticating"
                assert authenticator.reauthenticate_at > first_deadline + 1.0
                return answered
            finally:
                await client.close()
        assert run(main()) >= 10


@pytest.mark.parametrize("extra, message", [
    ({"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"},
     "requirement failed: sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when "
     "SASL is used for inter-broker communication"),
    ({"listener.name.sasl_ssl.plain.sasl.jaas.config":
      'org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="broker-secret";'},
     r"listener.name.sasl_ssl.plain.sasl.jaas.config: the broker connects to the other brokers' SASL_SSL listener "
     r"with SASL/PLAIN \(sasl.mechanism.inter.broker.protocol\) and logs in with its JAAS entry's username and "
     r"password"),
])
def test_a_cluster_broker_that_could_not_log_in_to_the_others_is_refused_at_start(ca, tmp_path, extra, message):
    configs = {**sasl_ssl_configs(ca), "log.dirs": str(tmp_path / "b"), "zookeeper.connect": "127.0.0.1:1",
               "inter.broker.listener.name": "SASL_SSL", "sasl.mechanism.inter.broker.protocol": "PLAIN", **extra}
    with pytest.raises(StartupError, match=message):
        KafkaServer(BrokerConfig(configs))


def test_a_cluster_broker_with_an_ssl_inter_broker_listener_starts(ca, tmp_path):
    config = BrokerConfig({"log.dirs": str(tmp_path / "b"), "zookeeper.connect": "127.0.0.1:1",
                           "listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL",
                           **ca.broker_configs()})
    server = KafkaServer(config)
    try:
        security = config.listener_configs.inter_broker_client_security()
        assert security.security_protocol == "SSL" and security.ssl_context.check_hostname
    finally:
        server.log_manager.release_lock()


def test_a_bad_principal_mapping_rule_fails_the_start_and_leaves_the_directory_free(tmp_path):
    bad = BrokerConfig({"log.dirs": str(tmp_path / "b"), "ssl.principal.mapping.rules": "RULE:a/b/Lx"})
    with pytest.raises(StartupError, match="listener PLAINTEXT: Invalid rule: `RULE:a/b/Lx`, unmatched substring"):
        KafkaServer(bad)
    server = KafkaServer(BrokerConfig({"log.dirs": str(tmp_path / "b")}))   # the directory is not locked
    server.log_manager.release_lock()
