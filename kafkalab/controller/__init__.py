"""The KRaft controller of the mini cluster (Kafka's ``org.apache.kafka.controller``), issue #21.

On the mini Raft quorum (:mod:`kafkalab.raft`), each controller runs a :class:`QuorumController` that
keeps the cluster's metadata as records of ``__cluster_metadata`` — what ZooKeeper's znodes and the
ZooKeeper-mode controller (:mod:`kafkalab.broker.zk_controller`) held. Modules, named as Kafka's classes:

================================  ==================================================================
``quorum_controller.py``          ``QuorumController``: replay of committed records, the active
                                  controller's writes, the session and idle timers
``feature_control_manager.py``    ``FeatureControlManager``: metadata.version and the other features;
                                  the bootstrap records
``cluster_control_manager.py``    ``ClusterControlManager``, ``BrokerHeartbeatManager``: brokers'
                                  registrations, fencing, controlled shutdown
``replication_control_manager.py`` ``ReplicationControlManager``: topics, partitions, leaders, ISRs
``producer_id_control_manager.py`` ``ProducerIdControlManager``: producer id blocks
``snapshot_generator.py``         ``SnapshotGenerator``, ``SnapshotEmitter``: snapshots of the replayed
                                  state, when and what; loading one
``controller_apis.py``            CreateTopics, DeleteTopics, AlterPartition, BrokerRegistration,
                                  BrokerHeartbeat, AllocateProducerIds on the listener
``controller_messages.py``,       BrokerRegistration and BrokerHeartbeat codecs
``schemas/``
``controller_node.py``,           one controller process (``python -m kafkalab.controller``)
``__main__.py``
================================  ==================================================================

The brokers that fetch these records as observers are :mod:`kafkalab.kraft`. Not yet: CreatePartitions,
ElectLeaders, configs changes (IncrementalAlterConfigs). See docs/differences.md.
"""
