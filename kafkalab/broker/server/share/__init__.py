"""KIP-932 share groups on the partition leader: ``SharePartition`` (the delivery state of one partition for one
share group) and ``SharePartitionManager`` (share sessions, ShareFetch and ShareAcknowledge), as Kafka's
``kafka.server.share`` package; ``persister``'s ``SharePersister`` (Kafka's ``DefaultStatePersister``) reads and
writes their state through the share coordinator."""
