"""Client quotas in cluster mode: kept in ZooKeeper, spread by change notifications, enforced by every broker."""
from __future__ import annotations

import functools
import json

import pytest

from tests.helpers import cluster_helpers
import kafkalab
from kafkalab.tools.client_quotas import alter_client_quotas, describe_client_quotas

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kafkalab.cluster(brokers=2, dir=str(tmp_path_factory.mktemp("quotas")),
                          **{"zookeeper.session.timeout.ms": 4000}) as c:
        yield c


def bootstrap_of(cluster, broker_id) -> str:
    row = next(r for r in cluster.brokers.to_dict("records") if r["id"] == broker_id)
    return f"{row['host']}:{row['port']}"


# an exception raised while polling fails the test at once (retry_on=())
wait_until = functools.partial(cluster_helpers.wait_until, timeout=15, retry_on=())


def test_quota_written_to_zookeeper_reaches_every_broker(cluster):
    alter_client_quotas(bootstrap_of(cluster, 1), {"client-id": "app"}, {"producer_byte_rate": 4096})
    alter_client_quotas(bootstrap_of(cluster, 1), {"user": None, "client-id": None}, {"request_percentage": 150})
    data, _ = cluster.zk.get("/config/clients/app")
    assert json.loads(data)["config"] == {"producer_byte_rate": "4096"}
    data, _ = cluster.zk.get("/config/users/<default>/clients/<default>")
    assert json.loads(data)["config"] == {"request_percentage": "150.0"}
    changes = [json.loads(cluster.zk.get(f"/config/changes/{c}")[0])["entity_path"]
               for c in cluster.zk.get_children("/config/changes")]
    assert {"clients/app", "users/<default>/clients/<default>"} <= set(changes)
    expected = {(("client-id", "app"),): {"producer_byte_rate": 4096.0},
                (("client-id", None), ("user", None)): {"request_percentage": 150.0}}
    wait_until(lambda: describe_client_quotas(bootstrap_of(cluster, 2)) == expected, "broker 2 to follow")
    alter_client_quotas(bootstrap_of(cluster, 2), {"client-id": "app"}, {"producer_byte_rate": None})
    wait_until(lambda: (("client-id", "app"),) not in describe_client_quotas(bootstrap_of(cluster, 1)),
               "broker 1 to follow the removal")


def test_restarted_broker_reads_quotas_from_zookeeper(cluster):
    alter_client_quotas(bootstrap_of(cluster, 1), {"client-id": "kept"}, {"consumer_byte_rate": 1000})
    cluster.restart(2)
    assert describe_client_quotas(bootstrap_of(cluster, 2), [("client-id", 0, "kept")]) == {
        (("client-id", "kept"),): {"consumer_byte_rate": 1000.0}}
