"""The ``KafkaBroker`` contract (kafkalab.broker.server.kafka_broker): every broker kind has every member,
before it starts, and says which metadata mode it is in. (Whether the members' types match is mypy's job:
``mypy --follow-imports=silent`` on a module assigning each broker to a ``KafkaBroker``.)"""
from __future__ import annotations

import pytest

from kafkalab.broker.base_broker import BaseBroker
from kafkalab.broker.kafka_server import KafkaServer
from kafkalab.broker.server.config import BrokerConfig
from kafkalab.broker.server.kafka_broker import KafkaBroker, MetadataMode
from kafkalab.kraft.broker_server import BrokerServer


def contract_members() -> set[str]:
    names = set(getattr(KafkaBroker, "__annotations__", {}))
    names |= {n for n, v in vars(KafkaBroker).items() if not n.startswith("_") and (callable(v) or
                                                                                   isinstance(v, property))}
    return names


def brokers(tmp_path):
    standalone = KafkaServer(BrokerConfig({"log.dirs": str(tmp_path / "s")}))
    zk = KafkaServer(BrokerConfig({"log.dirs": str(tmp_path / "z"), "zookeeper.connect": "127.0.0.1:1"}))
    kraft = BrokerServer(BrokerConfig({"broker.id": 1, "log.dirs": str(tmp_path / "k"), "process.roles": "broker",
                                       "controller.quorum.voters": "3000@127.0.0.1:1",
                                       "controller.listener.names": "CONTROLLER"}))
    return {MetadataMode.STANDALONE: standalone, MetadataMode.ZOOKEEPER: zk, MetadataMode.KRAFT: kraft}


def test_the_contract_names_what_the_parts_use():
    assert {"metadata_mode", "in_cluster", "zk_client", "kafka_controller", "forwarding_manager",
            "fenced_broker_nodes", "share_partition_manager", "metadata_cache", "broker_epoch",
            "make_producer_id_manager"} <= contract_members()


def test_every_broker_has_every_member_before_it_starts(tmp_path):
    made = brokers(tmp_path)
    try:
        for mode, broker in made.items():
            assert isinstance(broker, BaseBroker)
            missing = sorted(n for n in contract_members() if not hasattr(broker, n))
            assert not missing, f"{type(broker).__name__} ({mode.name}) lacks {missing}"
            assert broker.metadata_mode is mode
            assert broker.in_cluster == (mode is not MetadataMode.STANDALONE)
            assert broker.broker_epoch == -1 and broker.zk_client is None and broker.kafka_controller is None
            assert (broker.forwarding_manager is not None) == (mode is MetadataMode.KRAFT)
    finally:
        for broker in made.values():
            broker.log_manager.release_lock()


def test_kraft_is_not_a_kind_of_zookeeper_broker():
    assert not issubclass(BrokerServer, KafkaServer)
    assert "_start_zookeeper" not in dir(BrokerServer)


@pytest.mark.parametrize("mode, manager", [(MetadataMode.STANDALONE, "ProducerIdManager"),
                                           (MetadataMode.ZOOKEEPER, "ZkProducerIdManager"),
                                           (MetadataMode.KRAFT, "RPCProducerIdManager")])
def test_each_mode_has_its_producer_id_manager(tmp_path, mode, manager):
    made = brokers(tmp_path)
    try:
        assert type(made[mode].make_producer_id_manager()).__name__ == manager
    finally:
        for broker in made.values():
            broker.log_manager.release_lock()
