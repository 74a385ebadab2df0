"""What clients and brokers share, as Kafka's ``org.apache.kafka.common``.

``records``      record batches, message format v2 (``org.apache.kafka.common.record``)
``errors``       ``ErrorCode`` and ``KafkaError``: Kafka's error codes (``org.apache.kafka.common.protocol.Errors``)
``topic``        topic-name rules (``org.apache.kafka.common.internals.Topic``)
``admin_utils``  where a new topic's replicas go (``AdminUtils.assignReplicasToBrokers``)
``message/``     the messages (``org.apache.kafka.common.message``): ``codec`` (``build``, ``null_violation``), the ones
                 kafka-python lacks (``zk_messages``, ``share_group_state``) and their JSON schemas (``schemas/``)
"""
