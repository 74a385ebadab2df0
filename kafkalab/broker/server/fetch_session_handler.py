"""``FetchSessionHandler``: a fetcher's side of an incremental fetch session (KIP-227), as Kafka's client class
``org.apache.kafka.clients.FetchSessionHandler``, which its consumer and its follower (``ReplicaFetcherThread``)
both use. :mod:`kafkalab.broker.server.fetch_session` is the broker's side.

The handler remembers the partitions the leader's session holds and what was last sent for each. :meth:`build`
turns the partitions to fetch now into a request:

* while no session exists (``next_metadata`` INITIAL: id 0, epoch 0) or after an error (the session's id with epoch 0:
  close it and start over), a **full** request names every partition;
* in a session, an **incremental** request names the partitions added or changed (fetch offset, log start offset,
  leader epoch, last fetched epoch, max bytes: Kafka's ``PartitionData.equals``), added first, and forgets the ones
  not fetched now (a partition backing off is dropped from the session, and sent again when it is ready).

:meth:`handle_response` moves ``next_metadata`` on as Kafka's ``handleResponse``: a full response with a session id
starts incremental fetching at epoch 1; each incremental response increments the epoch; FETCH_SESSION_ID_NOT_FOUND
starts over with a new session, any other error (INVALID_FETCH_SESSION_EPOCH, ...) closes the session and starts
over; a response naming a partition that was not asked for is an error too. It returns False when the response's
partitions must not be used. :meth:`handle_error` (the connection failed): the next request is full.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ..common.errors import ErrorCode
from .fetch_session import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch

log = logging.getLogger(__name__)

#: a partition, as Kafka's TopicPartition: (topic, partition)
Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FetchMetadata:
    """The session id and epoch a request carries (Kafka's ``FetchMetadata``)."""
    session_id: int
    epoch: int

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def next_close_existing(self) -> "FetchMetadata":
        return FetchMetadata(self.session_id, INITIAL_EPOCH)

    def next_incremental(self) -> "FetchMetadata":
        return FetchMetadata(self.session_id, next_epoch(self.epoch))


INITIAL = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)


@dataclass
class FetchRequestData:
    """What :meth:`FetchSessionHandler.build` decided: the partitions to name (key -> their data), those to forget,
    the metadata, and every partition the session holds once the request is served."""
    to_send: dict[Key, tuple]
    to_forget: list[Key]
    metadata: FetchMetadata
    session_partitions: dict[Key, tuple] = field(default_factory=dict)


class FetchSessionHandler:
    """One fetcher's session with one broker (``node``: its id, for the log)."""

    def __init__(self, log_prefix: str, node: int):
        self.log_prefix = log_prefix
        self.node = node
        self.next_metadata = INITIAL
        #: the partitions of the session as last sent: key -> (fetch offset, log start offset, leader epoch,
        #: last fetched epoch, max bytes)
        self.session_partitions: dict[Key, tuple] = {}

    def build(self, next_partitions: dict[Key, tuple]) -> FetchRequestData:
        """The request for ``next_partitions`` (key -> data tuple, in the order to fetch them)."""
        metadata = self.next_metadata
        if metadata.is_full:
            self.session_partitions = dict(next_partitions)
            return FetchRequestData(dict(next_partitions), [], metadata, self.session_partitions)
        added, altered, removed = {}, {}, []
        session = self.session_partitions
        for key in list(session):
            data = next_partitions.get(key)
            if data is None:
                del session[key]
                removed.append(key)
            elif data != session[key]:
                session[key] = data
                altered[key] = data
        for key, data in next_partitions.items():
            if key not in session:
                session[key] = data
                added[key] = data
        return FetchRequestData({**added, **altered}, removed, metadata, session)

    def handle_response(self, error_code: int, session_id: int, response_keys: list[Key],
                        throttle_ms: int = 0) -> bool:
        """Whether the response's partitions may be used; ``next_metadata`` moves on (see the module)."""
        metadata = self.next_metadata
        if error_code != ErrorCode.NONE:
            log.info("%s: node %d was unable to process the fetch request with %s: %s", self.log_prefix, self.node,
                     metadata, ErrorCode(error_code).name)
            self.next_metadata = INITIAL if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND \
                else metadata.next_close_existing()
            return False
        extra = [k for k in response_keys if k not in self.session_partitions]
        if metadata.is_full:
            if not response_keys and throttle_ms > 0:   # KIP-219: a throttled full fetch is answered empty
                return False
            if extra:
                log.info("%s: node %d sent an invalid full fetch response with extra partitions %s", self.log_prefix,
                         self.node, extra)
                self.next_metadata = INITIAL
                return False
            self.next_metadata = INITIAL if session_id == INVALID_SESSION_ID else \
                FetchMetadata(session_id, next_epoch(INITIAL_EPOCH))
            return True
        if extra:
            log.info("%s: node %d sent an invalid incremental fetch response with extra partitions %s",
                     self.log_prefix, self.node, extra)
            self.next_metadata = metadata.next_close_existing()
            return False
        # the broker closed the session (none left), or it goes on at the next epoch
        self.next_metadata = INITIAL if session_id == INVALID_SESSION_ID else metadata.next_incremental()
        return True

    def handle_error(self, exc: BaseException) -> None:
        """The request failed (no response): close the session with the next request and start a new one."""
        log.info("%s: error sending the fetch request to node %d: %s", self.log_prefix, self.node, exc)
        self.next_metadata = self.next_metadata.next_close_existing()
