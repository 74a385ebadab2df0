"""JSON schemas of the KRaft controller's broker-facing RPCs that kafka-python's codec does not ship:
BrokerRegistration (62), BrokerHeartbeat (63), AllocateProducerIds (67) and Envelope (58). Written for kafkalab
in the format of Kafka's message definitions (KIP-631); kafka-python's ``load_json`` reads ``<MessageName>.json``
from this package.
"""
