"""``StripedReplicaPlacer``: where a KRaft controller puts the replicas of new partitions (Kafka's
``org.apache.kafka.metadata.placement.StripedReplicaPlacer``), for CreateTopics and CreatePartitions.

The candidates are the *usable* brokers: every registered broker not in controlled shutdown, fenced ones
included. They are grouped by rack (no rack is a rack of its own), and within a rack split into
unfenced and fenced lists, each sorted and given a random starting offset. Each partition then:

* takes its **first replica** (the preferred leader) from the next rack in turn that still has an
  unfenced broker not yet used in this round: a leader is never placed on a fenced broker;
* takes each **further replica** from the following racks in turn, one per rack, unfenced brokers of a
  rack before its fenced ones (fenced brokers last), skipping the rack of the first replica until every
  rack has been visited once;
* moves the rack offset on by one; a *round* ends when as many partitions as there are unfenced brokers
  have been placed: then the racks and the brokers within them are shuffled, so that successive rounds
  do not repeat the same pattern, while within a round each unfenced broker leads one partition.

Errors, as Kafka's: INVALID_REPLICATION_FACTOR for a factor below 1, a factor above the number of
usable brokers ("The target replication factor of 3 cannot be reached because only 2 broker(s) are
registered."), or no unfenced broker at all ("All brokers are currently fenced.").

Written for kafkalab from the description of Kafka's algorithm; ``random`` is a ``random.Random``
(seed it to repeat a placement).
"""
from __future__ import annotations

import random as _random
from dataclasses import dataclass, field

from ..broker.common.errors import ErrorCode, KafkaError


@dataclass
class UsableBroker:
    id: int
    rack: str | None = None
    fenced: bool = False


@dataclass
class _BrokerList:
    """One rack's unfenced (or fenced) brokers, handed out from a rotating offset, once each per round."""

    brokers: list[int] = field(default_factory=list)
    index: int = 0
    offset: int = 0
    round: int = 0

    def initialize(self, rnd: _random.Random) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = rnd.randrange(len(self.brokers))

    def next(self, round_: int) -> int:
        if not self.brokers:
            return -1
        if round_ != self.round:        # a new partition: start again, one further along
            self.round, self.index = round_, 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return -1
        broker = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return broker


@dataclass
class _Rack:
    unfenced: _BrokerList = field(default_factory=_BrokerList)
    fenced: _BrokerList = field(default_factory=_BrokerList)

    def next(self, round_: int) -> int:
        broker = self.unfenced.next(round_)
        return broker if broker >= 0 else self.fenced.next(round_)


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, message)


class _RackList:
    def __init__(self, rnd: _random.Random, brokers: list[UsableBroker]):
        self.random = rnd
        self.racks: dict[str | None, _Rack] = {}
        for b in brokers:
            rack = self.racks.setdefault(b.rack, _Rack())
            (rack.fenced if b.fenced else rack.unfenced).brokers.append(b.id)
        for rack in self.racks.values():
            rack.unfenced.initialize(rnd)
            rack.fenced.initialize(rnd)
        # no rack sorts first, as Kafka's Optional comparator does
        self.names = sorted(self.racks, key=lambda r: (r is not None, r or ""))
        self.total = len(brokers)
        self.unfenced = sum(1 for b in brokers if not b.fenced)
        self.round = 0
        self.offset = rnd.randrange(len(self.names)) if self.names else 0

    def check(self, replication_factor: int) -> None:
        if replication_factor <= 0:
            raise _invalid(f"Invalid replication factor {replication_factor}: the replication factor must be "
                           "positive.")
        if self.unfenced == 0:
            raise _invalid("All brokers are currently fenced.")
        if replication_factor > self.total:
            raise _invalid(f"The target replication factor of {replication_factor} cannot be reached because only "
                           f"{self.total} broker(s) are registered.")

    def _shuffle(self) -> None:
        self.random.shuffle(self.names)
        for rack in self.racks.values():
            self.random.shuffle(rack.unfenced.brokers)
            self.random.shuffle(rack.fenced.brokers)

    def place(self, replication_factor: int) -> list[int]:
        if self.round == self.unfenced and self.unfenced > 1:
            self._shuffle()
            self.round = 0
        if self.offset == len(self.names):
            self.offset = 0
        n = len(self.names)
        first_rack = self.offset
        while True:                       # the leader: an unfenced broker, from the next rack that has one
            leader = self.racks[self.names[first_rack]].unfenced.next(self.round)
            if leader >= 0:
                break
            first_rack = (first_rack + 1) % n
        replicas = [leader]
        rack_index = self.offset
        for _ in range(1, replication_factor):
            broker = -1
            while broker < 0:
                if rack_index == first_rack:
                    first_rack = -1       # skip the leader's rack once
                else:
                    broker = self.racks[self.names[rack_index]].next(self.round)
                rack_index = (rack_index + 1) % n
            replicas.append(broker)
        self.round += 1
        self.offset += 1
        return replicas


class StripedReplicaPlacer:
    def __init__(self, rnd: _random.Random | None = None):
        self.random = rnd or _random.Random()

    def place(self, num_partitions: int, replication_factor: int, brokers: list[UsableBroker]) -> list[list[int]]:
        """The replicas of ``num_partitions`` new partitions (the first of each is its preferred leader)."""
        racks = _RackList(self.random, brokers)
        racks.check(replication_factor)
        return [racks.place(replication_factor) for _ in range(num_partitions)]
