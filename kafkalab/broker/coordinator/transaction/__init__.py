"""Producer ids and (to come) transactions, as Kafka's ``kafka.coordinator.transaction``.

``producer_id_manager``  ProducerIdManager: ids for idempotent producers (InitProducerId)
"""
