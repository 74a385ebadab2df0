"""The records of KRaft's metadata log, ``__cluster_metadata`` (Kafka's ``metadata`` module:
``org.apache.kafka.metadata``, ``org.apache.kafka.common.metadata``, ``ApiMessageAndVersion``).

What the Raft layer (:mod:`kafkalab.raft`), the controller (:mod:`kafkalab.controller`), the KRaft broker
(:mod:`kafkalab.kraft`), the snapshots (:mod:`kafkalab.raft.snapshot`) and the dump tool (:mod:`kafkalab.tools`)
share; it imports none of them.

==============================  ===========================================================================
``schemas/``                    the record schemas (``TopicRecord.json``, ...; the control records'
                                ``LeaderChangeMessage.json``, ``SnapshotHeaderRecord.json``, ...)
``metadata_records.py``         reading a record: its frame, type and version, its fields (``MetadataRecord``),
                                Kafka's JSON form of it (what ``kafka-dump-log.sh --cluster-metadata-decoder``
                                prints)
``metadata_record_serde.py``    writing one (Kafka's ``MetadataRecordSerde``; ``ControlRecordUtils``'
                                LeaderChange)
``api_message_and_version.py``  ``ApiMessageAndVersion``: a record to append, as the control managers make
                                them; reading the committed records of the log
==============================  ===========================================================================

The image a KRaft broker builds from these records (Kafka's ``org.apache.kafka.image``) is
:mod:`kafkalab.kraft.metadata_image`: it replays them with the controller's own control managers, so it
stays beside the broker rather than here (this package would otherwise import the controller).
"""
