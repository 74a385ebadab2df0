"""Producer ids and transactions, as Kafka's ``kafka.coordinator.transaction``.

``producer_id_manager``                  ProducerIdManager: ids for idempotent and transactional producers
``transaction_metadata``                 TransactionMetadata and its state machine (TransactionState)
``transaction_state_manager``            TransactionStateManager: transactional id -> metadata, in
                                         ``__transaction_state``
``transaction_log``                      the key and value formats of ``__transaction_state`` records
``transaction_coordinator``              TransactionCoordinator: InitProducerId, AddPartitionsToTxn,
                                         AddOffsetsToTxn, EndTxn, DescribeTransactions,
                                         ListTransactions, timeouts, expiry
``transaction_marker_channel_manager``   TransactionMarkerChannelManager: the COMMIT/ABORT markers, to the
                                         partitions' leaders (WriteTxnMarkers)
"""
