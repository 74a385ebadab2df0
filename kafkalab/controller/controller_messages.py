"""The controller's broker-facing RPCs as kafka-python message classes (KIP-631).

=====================  ====  ======  ==================================================
message                key   served  who sends it
=====================  ====  ======  ==================================================
BrokerRegistration      62   v0-v4   a broker, when it starts -> the active controller
BrokerHeartbeat         63   v0-v1   a registered broker, every
                                     ``broker.heartbeat.interval.ms`` -> the active controller
AllocateProducerIds     67   v0      a broker needing producer ids (KIP-730) -> the active controller
Envelope                58   v0      a broker forwarding a client's admin request (KIP-590) -> the active
                                     controller
=====================  ====  ======  ==================================================

Their schemas are kafkalab's (``schemas/``): kafka-python's codec does not ship them.
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from . import schemas


class BrokerRegistrationRequest(ApiMessage, load_json=schemas): pass
class BrokerRegistrationResponse(ApiMessage, load_json=schemas): pass

class BrokerHeartbeatRequest(ApiMessage, load_json=schemas): pass
class BrokerHeartbeatResponse(ApiMessage, load_json=schemas): pass

class AllocateProducerIdsRequest(ApiMessage, load_json=schemas): pass
class AllocateProducerIdsResponse(ApiMessage, load_json=schemas): pass

class EnvelopeRequest(ApiMessage, load_json=schemas): pass
class EnvelopeResponse(ApiMessage, load_json=schemas): pass
