"""The listener-prefixed broker configs a SASL listener reads, and the one listener's security protocol."""
from __future__ import annotations

import pytest

from kafkalab.broker.base_broker import _listener_security_protocol
from kafkalab.broker.server.config import BrokerConfig


def test_listener_and_mechanism_prefixed_configs_are_taken():
    config = BrokerConfig({
        "listener.name.client.sasl.enabled.mechanisms": " PLAIN , SCRAM-SHA-512 ",
        "listener.name.client.plain.sasl.jaas.config": "x.Y required;",
        "listener.name.client.scram-sha-512.connections.max.reauth.ms": "60000"})
    assert config.get("listener.name.client.sasl.enabled.mechanisms") == "PLAIN,SCRAM-SHA-512"
    assert config.get("listener.name.client.scram-sha-512.connections.max.reauth.ms") == 60000
    assert config.get("listener.name.other.plain.sasl.jaas.config") is None
    assert config["sasl.enabled.mechanisms"] == "GSSAPI"          # Kafka's default
    assert config["connection.failed.authentication.delay.ms"] == 100
    for bad in ("listener.name.client.plain.sasl.jaas.configs", "listener.name.client.num.partitions",
                "listener.name.client"):
        with pytest.raises(ValueError, match="Unknown broker configuration"):
            BrokerConfig({bad: "1"})
    with pytest.raises(ValueError, match="connections.max.reauth.ms"):
        BrokerConfig({"listener.name.client.plain.connections.max.reauth.ms": "soon"})


@pytest.mark.parametrize("configs, expected", [
    ({}, ("PLAINTEXT", "PLAINTEXT")),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}, ("SASL_PLAINTEXT", "SASL_PLAINTEXT")),
    ({"listeners": "client://127.0.0.1:0,OTHER://:1",
      "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT, OTHER:PLAINTEXT"}, ("CLIENT", "SASL_PLAINTEXT")),
])
def test_the_first_listener_and_its_protocol(configs, expected):
    assert _listener_security_protocol(BrokerConfig(configs)) == expected


def test_a_listener_the_map_does_not_name_is_refused():
    with pytest.raises(ValueError, match="No security protocol defined for listener CLIENT"):
        _listener_security_protocol(BrokerConfig({"listeners": "CLIENT://127.0.0.1:0"}))
    with pytest.raises(ValueError, match="a security protocol is one of"):
        _listener_security_protocol(BrokerConfig({"listeners": "CLIENT://127.0.0.1:0",
                                                  "listener.security.protocol.map": "CLIENT:TLS"}))
