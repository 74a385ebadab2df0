"""JSON schemas of the KRaft quorum's RPCs that kafka-python's codec does not ship: Vote (52),
BeginQuorumEpoch (53) and EndQuorumEpoch (54), version 0 (a static quorum, ``controller.quorum.voters``; Vote
versions 0-2, v2 carrying KIP-996's PreVote flag),
and FetchSnapshot (59) version 0 (KIP-630).
Written for kafkalab in the format of Kafka's message definitions (KIP-595); kafka-python's ``load_json``
reads ``<MessageName>.json`` from this package. Fetch and DescribeQuorum are kafka-python's own.
"""
