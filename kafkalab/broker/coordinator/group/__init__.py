"""The classic consumer group coordinator, as Kafka's ``kafka.coordinator.group``.

``group_coordinator``       GroupCoordinator: JoinGroup/SyncGroup/Heartbeat/LeaveGroup, offsets
``group_metadata``          GroupMetadata: one group's members, generation and state machine
``group_metadata_manager``  GroupMetadataManager: groups and offsets in ``__consumer_offsets``
``offsets_topic``           the key and value formats of ``__consumer_offsets`` records
"""
