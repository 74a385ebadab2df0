"""The broker itself, as Kafka's ``kafka.server``.

``kafka_broker``             KafkaBroker: what the broker's parts may use of the broker object (the
                             brokers themselves, which import the layers above, are one level up:
                             kafkalab.broker.base_broker, kafka_server; kafkalab.kraft.broker_server)
``metadata_mode``            MetadataMode: standalone, ZooKeeper or KRaft (part of the contract)
``config``                   BrokerConfig (Kafka's KafkaConfig): the broker configs under Kafka's names and
                             defaults (LogConfig: kafkalab.broker.log.log_config)
``replica_manager``          ReplicaManager: appends (append_to_local_log) and reads (fetch_messages,
                             read_from_local_log), LeaderAndIsr, the purgatories
``delayed_fetch``            DelayedFetch: a Fetch waiting for fetch.min.bytes; FetchParams, FetchPartitionData
``delayed_operation``        DelayedOperation, DelayedOperationPurgatory: requests waiting on partitions
``delayed_produce``          DelayedProduce: acks=all waiting for the ISR (the produce purgatory)
``delayed_delete_records``   DelayedDeleteRecords: DeleteRecords waiting for the followers' log start offsets
``replica_fetcher_thread``   ReplicaFetcherManager / ReplicaFetcherThread: followers copying leaders
``alter_partition_manager``  AlterPartitionManager: ISR changes proposed to the controller
``admin_manager``            AdminManager (Kafka's ZkAdminManager): create/delete topics and partitions, configs
``client_quota_manager``     ClientQuotaManager: produce, fetch and request quotas
``metadata_cache``           MetadataCache: the topics and brokers this broker knows
``faults``                   FaultInjector: kafkalab's own fault injection (Kafka has nothing like it)
``share``                    KIP-932 on the partition leader: SharePartition, SharePartitionManager, SharePersister
"""
