"""The broker itself, as Kafka's ``kafka.server``.

``kafka_broker``             KafkaBroker: what the broker's parts may use of the broker object (the
                             brokers themselves, which import the layers above, are one level up:
                             kafkalab.broker.base_broker, kafka_server; kafkalab.kraft.broker_server)
``metadata_mode``            MetadataMode: standalone, ZooKeeper or KRaft (part of the contract)
``config``                   KafkaConfig under Kafka's names and defaults (LogConfig: kafkalab.broker.log.log_config)
``replica_manager``          ReplicaManager: appends and reads, the fetch purgatory
``delayed_operation``        DelayedOperation, DelayedOperationPurgatory: requests waiting on partitions
``delayed_produce``          DelayedProduce: acks=all waiting for the ISR (the produce purgatory)
``replica_fetcher_thread``   ReplicaFetcherManager / ReplicaFetcherThread: followers copying leaders
``alter_partition_manager``  AlterPartitionManager: ISR changes proposed to the controller
``admin_manager``            ZkAdminManager: create/delete topics and partitions, configs
``client_quota_manager``     ClientQuotaManager: produce, fetch and request quotas
``metadata_cache``           MetadataCache: the topics and brokers this broker knows
``faults``                   kafkalab's own fault injection (Kafka has nothing like it)
"""
