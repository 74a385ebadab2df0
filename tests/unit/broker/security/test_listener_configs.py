"""listeners, advertised.listeners, listener.security.protocol.map, the inter-broker listener and listener-prefixed
configs (ssl.*, and the SASL ones per listener and mechanism), parsed and checked as Kafka 3.9's KafkaConfig does,
with its messages."""
from __future__ import annotations

import pytest

from kafkalab.broker.common.endpoint import DEFAULT_PROTOCOL_MAP, Endpoint
from kafkalab.broker.common.security.authenticator.sasl_server_config import sasl_server_config
from kafkalab.broker.server.config import BROKER_CONFIGS, BrokerConfig


def configs(**kw) -> BrokerConfig:
    return BrokerConfig({k.replace("_", "."): v for k, v in kw.items()})


def fails(overrides: dict) -> str:
    with pytest.raises(ValueError) as info:
        BrokerConfig(overrides)
    return str(info.value)


def test_kafka_defaults():
    assert BROKER_CONFIGS["listener.security.protocol.map"].default == DEFAULT_PROTOCOL_MAP == (
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT")
    assert BROKER_CONFIGS["security.inter.broker.protocol"].default == "PLAINTEXT"
    assert BROKER_CONFIGS["inter.broker.listener.name"].default is None
    assert BROKER_CONFIGS["ssl.client.auth"].default == "none"
    assert BROKER_CONFIGS["ssl.enabled.protocols"].default == "TLSv1.2,TLSv1.3"
    assert BROKER_CONFIGS["ssl.protocol"].default == "TLSv1.3"
    assert BROKER_CONFIGS["ssl.keystore.type"].default == BROKER_CONFIGS["ssl.truststore.type"].default == "JKS"
    assert BROKER_CONFIGS["ssl.principal.mapping.rules"].default == "DEFAULT"
    assert BROKER_CONFIGS["ssl.endpoint.identification.algorithm"].default == "https"
    assert BROKER_CONFIGS["ssl.keystore.key"].type_id == 9   # PASSWORD: hidden in DescribeConfigs


def test_several_listeners_with_names_and_protocols():
    c = BrokerConfig({"listeners": "plaintext://127.0.0.1:0, CLIENT://localhost:9094,REPLICATION://[::1]:9095",
                      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:SSL,REPLICATION:SASL_SSL"})
    assert c.listener_configs.listeners == [Endpoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 0),
                                            Endpoint("CLIENT", "SSL", "localhost", 9094),
                                            Endpoint("REPLICATION", "SASL_SSL", "::1", 9095)]
    assert c.listener_configs.endpoint("REPLICATION").connection_string == "REPLICATION://[::1]:9095"
    assert c.listener_configs.advertised_listeners == c.listener_configs.listeners   # default: the listeners
    assert c.listener_configs.inter_broker_listener_name == "PLAINTEXT"


def test_wildcard_host_is_none_and_advertised_listeners_may_share_ports():
    c = BrokerConfig({"listeners": "PLAINTEXT://:9092,SSL://0.0.0.0:9093",
                      "advertised.listeners": "PLAINTEXT://lb:9000,SSL://lb:9000"})
    assert c.listener_configs.listeners[0].host is None
    assert [e.port for e in c.listener_configs.advertised_listeners] == [9000, 9000]


def test_a_listener_name_not_in_the_map():
    assert fails({"listeners": "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0"}) == (
        "Error creating broker listeners from 'PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0': "
        "No security protocol defined for listener CLIENT")


def test_unparsable_listener_and_unknown_protocol():
    assert fails({"listeners": "PLAINTEXT//x:1"}) == (
        "Error creating broker listeners from 'PLAINTEXT//x:1': Unable to parse PLAINTEXT//x:1 to a broker endpoint")
    assert fails({"listener.security.protocol.map": "CLIENT:TLS"}) == (
        "Invalid security protocol `TLS` defined in listener.security.protocol.map")
    assert fails({"security.inter.broker.protocol": "ssl"}).startswith("Invalid value 'ssl' for configuration "
                                                                       "security.inter.broker.protocol")


def test_duplicate_names_and_ports():
    assert fails({"listeners": "PLAINTEXT://a:9092,plaintext://b:9093"}) == (
        "requirement failed: Each listener must have a different name, listeners: PLAINTEXT://a:9092,"
        "plaintext://b:9093")
    assert fails({"listeners": "PLAINTEXT://a:9092,SSL://b:9092"}) == (
        "requirement failed: Each listener must have a different port, listeners: PLAINTEXT://a:9092,SSL://b:9092")
    assert fails({"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.2:9092"}) == (
        "requirement failed: If you have two listeners on the same port then one needs to be IPv4 and the other "
        "IPv6, listeners: PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.2:9092, port: 9092")
    # one IPv4 and one IPv6 address may share a port; port 0 is never a duplicate
    BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092"})
    BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"})


def test_inter_broker_listener():
    assert fails({"listeners": "SSL://127.0.0.1:0"}) == (
        "requirement failed: inter.broker.listener.name must be a listener name defined in advertised.listeners. "
        "The valid options based on currently configured listeners are SSL")
    c = BrokerConfig({"listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL"})
    assert c.listener_configs.inter_broker_listener_name == "SSL"
    c = BrokerConfig({"listeners": "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                      "listener.security.protocol.map": "CLIENT:SSL,INTERNAL:PLAINTEXT",
                      "inter.broker.listener.name": "internal"})
    assert (c.listener_configs.inter_broker_listener_name, c.listener_configs.inter_broker_security_protocol) == (
        "INTERNAL", "PLAINTEXT")
    assert fails({"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}) == (
        "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
    assert fails({"inter.broker.listener.name": "REPLICATION"}) == (
        "Listener with name REPLICATION defined in inter.broker.listener.name not found in "
        "listener.security.protocol.map.")


def test_advertised_listeners_checks():
    assert fails({"advertised.listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093"}) == (
        "requirement failed: advertised.listeners listener names must be equal to or a subset of the ones defined in "
        "listeners. Found PLAINTEXT,SSL. The valid options based on the current configuration are PLAINTEXT")
    assert fails({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}) == (
        "requirement failed: advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable "
        "IP address.")


def test_kraft_controller_listeners_default_to_plaintext():
    c = BrokerConfig({"process.roles": "broker,controller", "controller.listener.names": "CONTROLLER",
                      "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0"})
    assert c.listener_configs.protocol_map["CONTROLLER"] == "PLAINTEXT"
    assert [e.listener_name for e in c.listener_configs.advertised_listeners] == ["PLAINTEXT"]


def test_listener_prefixed_configs_override_the_generic_one():
    c = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,CLIENT://127.0.0.1:0",
                      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CLIENT:SSL",
                      "ssl.client.auth": "requested", "listener.name.client.ssl.client.auth": "required",
                      "listener.name.client.ssl.keystore.location": "/client.pem"})
    lc = c.listener_configs
    assert lc.listener_value("CLIENT", "ssl.client.auth") == "required"
    assert lc.listener_value("SSL", "ssl.client.auth") == "requested"
    assert lc.ssl_configs("CLIENT")["ssl.keystore.location"] == "/client.pem"
    assert lc.ssl_configs("SSL")["ssl.keystore.location"] is None


def test_listener_prefixed_configs_are_checked_by_their_full_name():
    assert fails({"listener.name.client.ssl.client.auth": "always"}) == (
        "Invalid value 'always' for configuration listener.name.client.ssl.client.auth: must be one of required, "
        "requested, none")
    assert fails({"listener.name.client.ssl.no.such.config": "x"}) == (
        "Unknown broker configuration 'listener.name.client.ssl.no.such.config'")


def test_listener_and_mechanism_prefixed_sasl_configs_are_taken():
    config = BrokerConfig({
        "listener.name.client.sasl.enabled.mechanisms": " PLAIN , SCRAM-SHA-512 ",
        "listener.name.client.plain.sasl.jaas.config": "x.Y required;",
        "listener.name.client.scram-sha-512.connections.max.reauth.ms": "60000"})
    assert config.get("listener.name.client.sasl.enabled.mechanisms") == "PLAIN,SCRAM-SHA-512"
    assert config.get("listener.name.client.scram-sha-512.connections.max.reauth.ms") == 60000
    assert config.get("listener.name.client.plain.sasl.jaas.config") == "x.Y required;"
    assert config.get("listener.name.other.plain.sasl.jaas.config") is None
    assert config["sasl.enabled.mechanisms"] == "GSSAPI"          # Kafka's default
    assert config["connection.failed.authentication.delay.ms"] == 100
    assert BROKER_CONFIGS["sasl.jaas.config"].type_id == 9        # PASSWORD, as Kafka's
    for bad in ("listener.name.client.plain.sasl.jaas.configs", "listener.name.client.num.partitions",
                "listener.name.client", "listener.name.client.plain.ssl.client.auth"):
        with pytest.raises(ValueError, match="Unknown broker configuration"):
            BrokerConfig({bad: "1"})
    with pytest.raises(ValueError, match="connections.max.reauth.ms"):
        BrokerConfig({"listener.name.client.plain.connections.max.reauth.ms": "soon"})


def test_each_sasl_listener_has_its_own_mechanisms_and_jaas_entries():
    c = BrokerConfig({
        "listeners": "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.client.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.client.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";',
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "listener.name.sasl_ssl.connections.max.reauth.ms": "60000"})
    client = sasl_server_config("CLIENT", c.get)
    external = sasl_server_config("SASL_SSL", c.get)
    assert client.enabled_mechanisms == ("PLAIN",) and client.plain_users() == {"user_alice": "alice-secret"}
    assert client.connections_max_reauth_ms == {"PLAIN": 0}
    assert external.enabled_mechanisms == ("SCRAM-SHA-512",)
    assert external.connections_max_reauth_ms == {"SCRAM-SHA-512": 60000}
    with pytest.raises(ValueError, match="Could not find a 'KafkaServer' or 'sasl_ssl.KafkaServer' entry"):
        sasl_server_config("SASL_SSL", BrokerConfig({"sasl.enabled.mechanisms": "SCRAM-SHA-512"}).get)
