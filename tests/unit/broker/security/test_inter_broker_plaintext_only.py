"""A broker in a cluster whose inter-broker listener is not PLAINTEXT is refused at once, saying why (its own
connections to brokers and controllers speak PLAINTEXT only); a standalone broker has no such connections."""
from __future__ import annotations

import pytest

from kafkalab.broker.base_broker import StartupError
from kafkalab.broker.kafka_server import KafkaServer
from kafkalab.broker.server.config import BrokerConfig
from kafkalab.security import CertificateAuthority


def test_a_cluster_broker_with_an_ssl_inter_broker_listener_is_refused(tmp_path):
    ca = CertificateAuthority(directory=str(tmp_path / "ca"))
    config = BrokerConfig({"log.dirs": str(tmp_path / "b"), "zookeeper.connect": "127.0.0.1:1",
                           "listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL",
                           **ca.broker_configs()})
    with pytest.raises(StartupError, match="the inter-broker listener SSL is SSL"):
        KafkaServer(config)
    standalone = BrokerConfig({"log.dirs": str(tmp_path / "s"), "listeners": "SSL://127.0.0.1:0",
                               "security.inter.broker.protocol": "SSL", **ca.broker_configs()})
    server = KafkaServer(standalone)
    assert list(server.socket_servers) == ["SSL"] and server.socket_server.ssl_context is not None
    server.log_manager.release_lock()


def test_a_bad_principal_mapping_rule_fails_the_start_and_leaves_the_directory_free(tmp_path):
    bad = BrokerConfig({"log.dirs": str(tmp_path / "b"), "ssl.principal.mapping.rules": "RULE:a/b/Lx"})
    with pytest.raises(StartupError, match="listener PLAINTEXT: Invalid rule: `RULE:a/b/Lx`, unmatched substring"):
        KafkaServer(bad)
    server = KafkaServer(BrokerConfig({"log.dirs": str(tmp_path / "b")}))   # the directory is not locked
    server.log_manager.release_lock()
