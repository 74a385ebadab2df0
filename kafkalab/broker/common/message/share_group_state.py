"""KIP-932's inter-broker share-state messages, which kafka-python's codec does not ship: ReadShareGroupState (84)
and WriteShareGroupState (85), loaded from ``schemas/*.json`` (Kafka's message JSON, the versions served here).

A share-partition's leader sends them (:class:`kafkalab.broker.server.share.persister.SharePersister`) to the share
coordinator, whose handlers are :mod:`kafkalab.broker.apis.read_share_group_state` and
:mod:`kafkalab.broker.apis.write_share_group_state`. They live here, below both, as Kafka's generated
``ReadShareGroupStateRequestData`` and friends live in ``org.apache.kafka.common.message``.
"""
from kafka.protocol.api_message import ApiMessage

from . import schemas


class ReadShareGroupStateRequest(ApiMessage, load_json=schemas): pass
class ReadShareGroupStateResponse(ApiMessage, load_json=schemas): pass
class WriteShareGroupStateRequest(ApiMessage, load_json=schemas): pass
class WriteShareGroupStateResponse(ApiMessage, load_json=schemas): pass
