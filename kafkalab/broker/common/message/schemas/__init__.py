"""JSON schemas of the messages kafka-python has no codec for: the ZooKeeper-era inter-broker messages
(see ``zk_messages.py``) and KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe. Each is written
for the mini broker, in the format of Kafka's message definitions, from the protocol guide and the KIPs.

kafka-python's ``load_json`` reads ``<MessageName>.json`` from the package of
the module it is given, so ``zk_messages`` passes this package.
"""
