"""JSON schemas of the KIP-848 consumer group records the coordinator writes to ``__consumer_offsets``
(record types 3 to 8), in the format of Kafka's message definitions, read by kafka-python's ``ApiData``
(see :mod:`..consumer_group_records`)."""
