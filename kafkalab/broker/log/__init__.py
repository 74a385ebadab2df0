"""The log on disk, as Kafka's ``kafka.log`` and ``org.apache.kafka.storage.internals.log``.

``log``                  UnifiedLog: one partition's log (append_as_leader, append_as_follower, read)
``segment``              LogSegment: one ``.log`` file with its indexes
``index``                OffsetIndex, TimeIndex
``log_manager``          LogManager: every partition's log under ``log.dirs``, their checkpoints and background jobs
``log_config``           LogConfig: the topic configs
``log_cleaner``          LogCleaner: compaction
``retention``            deleting segments by time, size and log start offset
``recovery``             ``load_log`` (Kafka's LogLoader): loading a log, recovering after a crash
``leader_epoch_cache``   LeaderEpochFileCache: ``leader-epoch-checkpoint``
``producer_state``       ProducerStateManager: producer ids, sequences and open transactions
``producer_snapshot``    its ``.snapshot`` files
``log_validator``        ``validate_records`` (Kafka's LogValidator): every record of a produced batch checked
``offset_checkpoint``    the offset checkpoint files (Kafka's OffsetCheckpointFile)
``transaction_index``    TransactionIndex: ``.txnindex``, the aborted transactions
"""
