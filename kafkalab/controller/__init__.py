"""The KRaft controller of the mini cluster (Kafka's ``org.apache.kafka.controller``).

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
``replication_control_manager.py`` ``ReplicationControlManager``: topics, partitions, leaders, ISRs,
                                  ElectLeaders
``partition_change_builder.py``   ``PartitionChangeBuilder``: every leader / ISR / ELR change and election
``create_partitions.py``          ``create_partitions``: Kafka's ``ReplicationControlManager.createPartitions``
``striped_replica_placer.py``     ``StripedReplicaPlacer``: replicas of new topics and partitions
``leader_balancer.py``            ``LeaderBalancer``: the auto leader rebalance (preferred-replica elections on a timer)
``configuration_control_manager.py`` ``ConfigurationControlManager``: ConfigRecords (AlterConfigs,
                                  IncrementalAlterConfigs)
``envelope_utils.py``             requests forwarded by brokers (Envelope), as Kafka's ``EnvelopeUtils``
``producer_id_control_manager.py`` ``ProducerIdControlManager``: producer id blocks
``scram_control_manager.py``      ``ScramControlManager``: UserScramCredentialRecords
``acl_control_manager.py``        ``AclControlManager``: AccessControlEntryRecords (CreateAcls, DeleteAcls)
``acl_apis.py``                   Kafka's ``AclApis`` on the controller, and ``ControllerApis``' checks
``controller_request_context.py`` ``ControllerRequestContext``: the principal and host the controller authorizes
``snapshot_generator.py``         ``SnapshotGenerator``: when to snapshot the replayed state;
                                  ``snapshot_records``, ``load_snapshot``: what (Kafka's ``SnapshotEmitter``)
                                  and loading one
``controller_apis.py``            CreateTopics, DeleteTopics, CreateAcls, DeleteAcls, CreatePartitions,
                                  AlterConfigs, IncrementalAlterConfigs, ElectLeaders, AlterPartition,
                                  BrokerRegistration, BrokerHeartbeat, AllocateProducerIds, Envelope
                                  on the listener
``controller_messages.py``,       BrokerRegistration, BrokerHeartbeat, AllocateProducerIds and Envelope
                                  codecs
``schemas/``
``controller_node.py``,           one controller process (``python -m kafkalab.controller``)
``__main__.py``
================================  ==================================================================

The records themselves (schemas, encoding, ``ApiMessageAndVersion``) are :mod:`kafkalab.metadata`'s; the brokers
that fetch them as observers are :mod:`kafkalab.kraft`. Not implemented: UnregisterBroker, UpdateFeatures, the
RegisterControllerRecord (KIP-919), quotas and delegation tokens; writes are one at a time, each
waiting for its commit (docs/differences.md says what else is simplified).
"""
