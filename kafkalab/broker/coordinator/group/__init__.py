"""The group coordinator: classic groups (Kafka's ``kafka.coordinator.group``) and KIP-848 consumer groups.

``group_coordinator``       GroupCoordinator: the facade the API handlers call; lifecycle, which groups it serves
``join_sync``               JoinSyncHandlers: JoinGroup/SyncGroup/LeaveGroup handling, static membership, shared
                            response bodies (it and the next three are parts of GroupCoordinator, mixins)
``rebalance``               Rebalancing: prepareRebalance, onCompleteJoin; Kafka's DelayedJoin, InitialDelayedJoin
                            and DelayedSync as loop.call_later timers on the group (join_timer, sync_timer)
``heartbeats``              MemberSessions: Heartbeat, member sessions and pending member ids (Kafka's
                            DelayedHeartbeat: a loop.call_later handle per member)
``group_offsets``           GroupOffsets: OffsetCommit/OffsetFetch/DeleteGroups, offset expiry
                            (offsets.retention.minutes)
``group_metadata``          GroupMetadata: one group's members, generation and state machine
``group_metadata_manager``  GroupMetadataManager: groups and offsets in ``__consumer_offsets``
``offsets_topic``           the key and value formats of ``__consumer_offsets`` records
``group_coordinator_metrics`` the coordinator's metrics: Kafka 3.9's GroupMetadataManager gauges and Kafka 4's
                            GroupCoordinatorMetrics (kafka.server:type=group-coordinator-metrics, KRaft brokers only)
``consumer_group``          KIP-848: ConsumerGroup, ConsumerGroupMember, MemberState, the group epochs
``consumer_group_heartbeat`` KIP-848: ConsumerGroupHeartbeats, ConsumerGroupHeartbeat/ConsumerGroupDescribe, session
                            and rebalance timeouts
``consumer_group_regex``    KIP-848: ConsumerGroupRegexes, regex subscriptions resolved in the background
``consumer_group_migration`` KIP-848: ConsumerGroupMigration, classic members in a consumer group and back
``current_assignment_builder`` KIP-848: ``build`` (Kafka's CurrentAssignmentBuilder), a member's reconciliation
                            (revoke before assign)
``assignors``               KIP-848's server-side assignors, ``uniform`` and ``range_`` (``range``)
``consumer_group_records``  KIP-848's records in ``__consumer_offsets`` (types 3-8), written and replayed;
                            their schemas in ``schemas/``
``share_group``             KIP-932: ShareGroup, ShareGroupMember, the ``simple`` assignor
``share_group_heartbeat``   KIP-932: ShareGroupHeartbeats, ShareGroupHeartbeat/ShareGroupDescribe
"""
