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
``forwarding_manager.py``          ``ForwardingManager``: clients' admin requests to the active controller
                                   in Envelopes (KIP-590)
``config_admin_manager.py``        ``ConfigAdminManager``: the broker's own checks of AlterConfigs and
                                   IncrementalAlterConfigs before forwarding
``forwarding.py``                  what the broker itself asks of the controller: the topics it creates
                                   (internal topics, auto-creation), producer id blocks
                                   (``RPCProducerIdManager``)
``storage_tool.py``                ``python -m kafkalab.kraft.storage_tool format``: ``meta.properties``
``kafka_raft_server.py``           ``KafkaRaftServer``: a combined node (``process.roles=broker,controller``)
``__main__.py``                    ``python -m kafkalab.kraft``: one KRaft broker process, or a combined node
=================================  ===============================================================

The controllers are :mod:`kafkalab.controller` (``python -m kafkalab.controller``).
"""
