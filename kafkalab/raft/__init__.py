"""KRaft's Raft layer for the mini quorum (Kafka's ``org.apache.kafka.raft``, KIP-595).

In KRaft mode a few *controllers* keep the cluster's metadata in one replicated log,
``__cluster_metadata-0``, and agree on it with Raft: one leader per epoch, elected by a majority of
the voters (``controller.quorum.voters``); a record is committed once a majority has it, and the
leader's *high watermark* says how far that is. Modules, named as Kafka's classes:

=============================  ===========================================================================
``quorum_state.py``            ``QuorumState``: the states and the legal moves between them, persisted
``epoch_state.py``             ``UnattachedState``, ``VotedState``, ``CandidateState``, ``FollowerState``,
                               ``ResignedState``; each one's ``canGrantVote``; the randomised election timeout
``prospective_state.py``       ``ProspectiveState``: pre-vote (KIP-996) before standing, in memory only
``leader_state.py``            ``LeaderState``: the replicas' end offsets, the high watermark
``file_quorum_state_store.py`` ``FileQuorumStateStore``: the ``quorum-state`` file, Kafka's JSON layout
``kafka_metadata_log.py``      ``KafkaMetadataLog``: ``__cluster_metadata-0`` over the mini broker's
                               ``UnifiedLog`` (Kafka's segment format, leader epochs, truncation)
``metadata_log_snapshots.py``  the log's snapshots: create, clean (``maybeClean``), check a fetch, install
``fetch_snapshot.py``          FetchSnapshot (KIP-630): the leader's answer, a follower's fetch and install
``snapshot/``                  the snapshot files: writer, reader, names (``org.apache.kafka.snapshot``)
``kafka_raft_client.py``       ``KafkaRaftClient``: timers, pre-votes, elections, fetching, resigning
``raft_apis.py``               the requests answered: Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
                               DescribeQuorum, DescribeCluster (for ``kafka-metadata-quorum.sh``)
``raft_messages.py``, ``schemas/``  their codecs
``raft_server.py``             ``RaftServer``: the controller listener
``raft_config.py``             ``controller.quorum.voters`` read (``QuorumConfig.parseVoterConnections``)
``raft_node.py``, ``__main__``  one controller (``python -m kafkalab.raft``)
=============================  ===========================================================================

The records it writes (NoOpRecord, the LeaderChange control record) are encoded by
:mod:`kafkalab.metadata.metadata_record_serde`. The QuorumController that writes the cluster's metadata records
through this layer is :mod:`kafkalab.controller` (``python -m kafkalab.controller``). Snapshot files are
:mod:`kafkalab.raft.snapshot`'s (Kafka's ``org.apache.kafka.snapshot``, in its raft module too).
Implemented: KIP-996's pre-vote, and check-quorum (a leader without fetches from a
majority for 1.5 × ``controller.quorum.fetch.timeout.ms`` resigns). Not implemented: KIP-853's dynamic quorum (the
voters are fixed by ``controller.quorum.voters``; no AddRaftVoter / RemoveRaftVoter, no KRaftVersion or VotersRecord
written, though the dump tool decodes them). Brokers fetch the log as observers (:mod:`kafkalab.kraft`).
"""
