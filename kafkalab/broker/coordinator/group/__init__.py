"""The group coordinator: classic groups (Kafka's ``kafka.coordinator.group``) and KIP-848 consumer groups.

``group_coordinator``       GroupCoordinator: the facade the API handlers call; lifecycle, which groups it serves
``join_sync``               JoinGroup/SyncGroup/LeaveGroup handling, static membership, shared response bodies
``rebalance``               prepareRebalance, DelayedJoin/InitialDelayedJoin, onCompleteJoin, DelayedSync
``heartbeats``              Heartbeat, DelayedHeartbeat: member sessions and pending member ids
``group_offsets``           OffsetCommit/OffsetFetch/DeleteGroups, offset expiry (offsets.retention.minutes)
``group_metadata``          GroupMetadata: one group's members, generation and state machine
``group_metadata_manager``  GroupMetadataManager: groups and offsets in ``__consumer_offsets``
``offsets_topic``           the key and value formats of ``__consumer_offsets`` records
``consumer_group``          KIP-848: ConsumerGroup, ConsumerGroupMember, MemberState, the group epochs
``consumer_group_heartbeat`` KIP-848: ConsumerGroupHeartbeat/ConsumerGroupDescribe, session and rebalance timeouts
``current_assignment_builder`` KIP-848: CurrentAssignmentBuilder, a member's reconciliation (revoke before assign)
``assignors``               KIP-848's server-side assignors, ``uniform`` and ``range``
"""
