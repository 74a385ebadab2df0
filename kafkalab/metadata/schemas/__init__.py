"""Schemas of the records in KRaft's metadata log, ``__cluster_metadata``, for kafka-python's codec.

One ``<Name>.json`` file per record, written for kafkalab in the format of
Kafka's message definitions (the format kafka-python's ``ApiData`` reads, as in
``kafkalab/broker/common/message/schemas``): the metadata records of Kafka 4.4
(``TopicRecord``, ``PartitionRecord``, ``RegisterBrokerRecord``, ...; ``apiKey``
is the record's type id) and the values of KRaft's control records
(``LeaderChangeMessage``, ``SnapshotHeaderRecord``, ``SnapshotFooterRecord``,
``KRaftVersionRecord``, ``VotersRecord``). Every record is a flexible version:
compact strings and arrays, tagged fields. :mod:`kafkalab.metadata.metadata_records`
decodes with them.
"""
