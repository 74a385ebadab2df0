"""KIP-932's share coordinator (Kafka's ``org.apache.kafka.coordinator.share``): ``share_coordinator``'s
``ShareCoordinator`` keeps share-partition state as ShareSnapshot records in ``__share_group_state``."""
