"""SCRAM credentials in ZooKeeper mode: AlterUserScramCredentials writes them where Kafka 3.x does
(``/config/users/<user>``, ``SCRAM-SHA-256=salt=...,stored_key=...,server_key=...,iterations=...``, next to the
user's quotas), a change notification brings them to every broker, a restarted broker reads them back."""
from __future__ import annotations

import functools
import json

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion,
                                   UserScramCredentialUpsertion)

import kafkalab
from kafkalab.broker.common.security.scram.scram_credential import credential_from_string
from kafkalab.tools.client_quotas import alter_client_quotas, describe_client_quotas
from tests.helpers import cluster_helpers

pytestmark = pytest.mark.cluster
wait_until = functools.partial(cluster_helpers.wait_until, timeout=15, retry_on=())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kafkalab.cluster(brokers=2, dir=str(tmp_path_factory.mktemp("scram")),
                          **{"zookeeper.session.timeout.ms": 4000}) as c:
        yield c


def bootstrap_of(cluster, broker_id) -> str:
    row = next(r for r in cluster.brokers.to_dict("records") if r["id"] == broker_id)
    return f"{row['host']}:{row['port']}"


def described(bootstrap, user):
    client = AdminClient({"bootstrap.servers": bootstrap})
    try:
        infos = client.describe_user_scram_credentials([user])[user].result(30).scram_credential_infos
    except KafkaException:
        return None
    return sorted((i.mechanism, i.iterations) for i in infos)


def test_credentials_live_in_the_users_znode_and_reach_every_broker(cluster):
    alter_client_quotas(bootstrap_of(cluster, 1), {"user": "alice"}, {"producer_byte_rate": 4096})
    client = AdminClient({"bootstrap.servers": bootstrap_of(cluster, 1)})
    for f in client.alter_user_scram_credentials([
            UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"pw"),
            UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"pw"),
    ]).values():
        f.result(30)
    config = json.loads(cluster.zk.get("/config/users/alice")[0])["config"]
    assert config["producer_byte_rate"] == "4096"                       # the quota is kept beside them
    assert credential_from_string(config["SCRAM-SHA-256"]).iterations == 8192
    assert config["SCRAM-SHA-512"].startswith("salt=") and ",stored_key=" in config["SCRAM-SHA-512"]
    expected = [(ScramMechanism.SCRAM_SHA_256, 8192), (ScramMechanism.SCRAM_SHA_512, 4096)]
    wait_until(lambda: described(bootstrap_of(cluster, 2), "alice") == expected, "broker 2 to follow")
    alter_client_quotas(bootstrap_of(cluster, 2), {"user": "alice"}, {"consumer_byte_rate": 2048})
    config = json.loads(cluster.zk.get("/config/users/alice")[0])["config"]
    assert "SCRAM-SHA-256" in config and config["consumer_byte_rate"] == "2048"   # a quota change keeps them
    assert describe_client_quotas(bootstrap_of(cluster, 2))[(("user", "alice"),)]["producer_byte_rate"] == 4096.0
    for f in client.alter_user_scram_credentials([
            UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_512)]).values():
        f.result(30)
    wait_until(lambda: described(bootstrap_of(cluster, 2), "alice") == expected[:1], "broker 2 to follow the delete")
    cluster.restart(2)
    assert described(bootstrap_of(cluster, 2), "alice") == expected[:1]
