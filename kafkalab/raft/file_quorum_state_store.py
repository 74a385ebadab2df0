"""``FileQuorumStateStore``: the ``quorum-state`` file in the metadata log directory.

A Raft voter must remember, across a crash, the epoch it is in and whom it voted for in that
epoch: otherwise it could vote twice in one epoch, and two leaders could be elected. Kafka keeps
that in ``<metadata.log.dir>/__cluster_metadata-0/quorum-state``, a one-line JSON document
written to ``quorum-state.tmp``, fsynced and renamed over the old file. With a static quorum
(``controller.quorum.voters``) Kafka 3.9 and 4.4 write its version 0, e.g. (read from a Kafka
4.4 controller of the lab's KRaft cluster)::

    {"clusterId":"","leaderId":3002,"leaderEpoch":2,"votedId":3002,"appliedOffset":0,
     "currentVoters":[{"voterId":3001},{"voterId":3002},{"voterId":3003}],"data_version":0}

(``appliedOffset`` is always 0; version 1, for KIP-853's dynamic quorum, drops it and the voters
and adds ``votedDirectoryId``.) This module writes and reads that layout, keys in Kafka's order.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

FILE_NAME = "quorum-state"
DATA_VERSION = 0


@dataclass
class ElectionState:
    """Kafka's ``ElectionState``: what the file holds. -1 means none."""

    epoch: int = 0
    leader_id: int = -1
    voted_id: int = -1
    voters: list[int] = field(default_factory=list)

    def to_json(self) -> str:
        doc = {"clusterId": "", "leaderId": self.leader_id, "leaderEpoch": self.epoch, "votedId": self.voted_id,
               "appliedOffset": 0, "currentVoters": [{"voterId": v} for v in sorted(self.voters)],
               "data_version": DATA_VERSION}
        return json.dumps(doc, separators=(",", ":"))


class QuorumStateError(ValueError):
    """The quorum-state file cannot be read (Kafka refuses to start on it too)."""


class FileQuorumStateStore:
    def __init__(self, directory: str):
        self.path = os.path.join(directory, FILE_NAME)

    def read(self) -> ElectionState | None:
        """The state last written, or None when there is no file (a node's first start)."""
        try:
            with open(self.path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return None
        try:
            doc = json.loads(text)
            version = doc["data_version"]
            if version != DATA_VERSION:
                raise QuorumStateError(f"{self.path}: data_version {version} is not supported (only 0)")
            return ElectionState(int(doc["leaderEpoch"]), int(doc["leaderId"]), int(doc["votedId"]),
                                 [int(v["voterId"]) for v in doc.get("currentVoters") or ()])
        except (ValueError, KeyError, TypeError) as exc:
            if isinstance(exc, QuorumStateError):
                raise
            raise QuorumStateError(f"{self.path} cannot be read: {exc!r}") from None

    def write(self, state: ElectionState) -> None:
        """Write through a temporary file, fsynced, then renamed (atomic on POSIX), as Kafka does."""
        tmp = self.path + ".tmp"
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(state.to_json())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(os.path.dirname(self.path) or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
