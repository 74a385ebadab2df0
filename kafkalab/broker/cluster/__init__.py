"""Partitions and their replicas on one broker, as Kafka's ``kafka.cluster``.

``partition``        Partition: leader epoch, ISR, high watermark, the local UnifiedLog
``partition_state``  what the controller tells a broker about a partition (LeaderAndIsr)

(Not to be confused with :mod:`kafkalab.cluster`, which *launches* clusters of brokers.)
"""
