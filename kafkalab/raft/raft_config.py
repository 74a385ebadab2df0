"""The quorum's configs as text (Kafka's ``org.apache.kafka.raft.QuorumConfig``).

:func:`parse_voters` reads ``controller.quorum.voters`` (Kafka's ``QuorumConfig.parseVoterConnections``), for
``python -m kafkalab.raft`` / ``python -m kafkalab.controller`` and for a KRaft broker or combined node
(:mod:`kafkalab.kraft`). The configs themselves, once read, are :class:`~kafkalab.raft.kafka_raft_client.RaftConfig`.
"""
from __future__ import annotations


def parse_voters(text: str) -> dict[int, tuple[str, int]]:
    """``controller.quorum.voters``: ``id@host:port,...``."""
    voters = {}
    for item in text.split(","):
        node, _, address = item.strip().partition("@")
        host, _, port = address.rpartition(":")
        if not node.isdigit() or not host or not port.isdigit():
            raise ValueError(f"controller.quorum.voters entry {item!r} is not id@host:port")
        voters[int(node)] = (host, int(port))
    return voters
