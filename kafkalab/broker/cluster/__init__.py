"""Partitions and their replicas on one broker, as Kafka's ``kafka.cluster``.

``partition``        Partition: leader epoch, LeaderAndIsr, high watermark, the local UnifiedLog
``isr``              the ISR's states (KIP-497) and the leader's ISR expansion / shrink (AlterPartition)
``replica``          Replica: the leader's view of one follower (log end offset, last caught-up time)
``partition_state``  what the controller tells a broker about a partition (LeaderAndIsr)

(Not to be confused with :mod:`kafkalab.cluster`, which *launches* clusters of brokers.)
"""
