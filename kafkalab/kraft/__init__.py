"""Mini brokers in KRaft mode (``process.roles=broker``).

=================================  ===============================================================
``broker_server.py``               ``BrokerServer``: the ZooKeeper-mode ``KafkaServer``'s sibling
                                   (both ``BaseBroker``), the controller quorum in ZooKeeper's place
``metadata_image.py``              ``MetadataImage``, ``MetadataDelta``: the records applied
``broker_metadata_publisher.py``   ``BrokerMetadataPublisher``: UpdateMetadata's and LeaderAndIsr's
                                   work, done from the records
``broker_lifecycle_manager.py``    ``BrokerLifecycleManager``: registration, heartbeats, fencing,
                                   controlled shutdown
``broker_to_controller_channel.py`` ``BrokerToControllerChannelManager``: the active controller
``forwarding.py``                  CreateTopics forwarded, producer id blocks (``RPCProducerIdManager``)
``__main__.py``                    ``python -m kafkalab.kraft``: one KRaft broker process
=================================  ===============================================================

The controllers are :mod:`kafkalab.controller` (``python -m kafkalab.controller``).
"""
