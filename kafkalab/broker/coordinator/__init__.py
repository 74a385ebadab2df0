"""Coordinators: consumer groups (``group.GroupCoordinator``), producer ids and transactions
(``transaction.ProducerIdManager`` / ``ZkProducerIdManager``, ``transaction.TransactionCoordinator``),
and KIP-932's share groups' state (``share.ShareCoordinator``).

A coordinator is given the broker (:class:`kafkalab.broker.server.kafka_broker.KafkaBroker`) and uses
only what that contract names. The broker wires them at start (``BaseBroker._start_coordinators``,
:mod:`kafkalab.broker.base_broker`); the producer-id manager is the broker mode's
(``KafkaBroker.make_producer_id_manager``: ``ProducerIdManager`` standalone, ``ZkProducerIdManager`` in
ZooKeeper mode, the KRaft broker's ``RPCProducerIdManager``).
"""
