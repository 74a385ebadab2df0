"""Kafka's messages, as Kafka's ``org.apache.kafka.common.message``: the request and response classes every layer
of the broker builds and reads.

Most come from kafka-python's ``kafka.protocol`` (generated from Kafka's message JSON). Those it does not ship are
loaded here from kafkalab's own copies of Kafka's JSON definitions (``schemas/``, the versions the mini broker
serves): the ZooKeeper-era inter-broker messages (``zk_messages``), KIP-932's share-state messages
(``share_group_state``), and, defined beside their handlers in :mod:`kafkalab.broker.apis`, KIP-848's and KIP-932's
client-facing ones.

``codec``: :func:`~kafkalab.broker.common.message.codec.build` (a message from plain dicts) and
:func:`~kafkalab.broker.common.message.codec.null_violation` (a null where the schema forbids one).
"""
