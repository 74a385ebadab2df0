"""What clients and brokers share, as Kafka's ``org.apache.kafka.common``.

``records``      record batches, message format v2 (``org.apache.kafka.common.record``)
``errors``       Kafka's error codes (``org.apache.kafka.common.protocol.Errors``)
``topic``        topic-name rules (``org.apache.kafka.common.internals.Topic``)
``admin_utils``  where a new topic's replicas go (``AdminUtils.assignReplicasToBrokers``)
"""
