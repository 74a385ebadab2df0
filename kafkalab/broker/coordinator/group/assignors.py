"""The server-side assignors of KIP-848: ``uniform`` (the default) and ``range``.

Kafka 4.x's ``org.apache.kafka.coordinator.group.assignor.UniformAssignor`` and
``RangeAssignor`` (``group.consumer.assignors``, default ``uniform,range``; a
member picks one with ``group.remote.assignor``, Kafka's ServerAssignor field).
Both are given each member's subscribed topics and its current target
assignment, and return a new target assignment: every subscribed partition
to exactly one member subscribed to its topic.

* ``uniform``: balanced (member counts differ by at most one among members with
  the same subscription) and sticky (a member keeps what it had as far as balance
  allows). kafkalab's version is a simpler greedy algorithm than Kafka's
  optimized/general builders: keep what is still valid, hand out free partitions
  to the least-loaded eligible member, then move partitions from the most to the
  least loaded while the gap is more than one. The counts, not the exact
  partitions, match Kafka's.
* ``range``: per topic, members subscribed to it sorted by member id, each gets a
  contiguous range, the first ones one more when the count does not divide
  (Kafka 4's RangeAssignor is also sticky across epochs: kafkalab's is not).
"""
from __future__ import annotations

from typing import Any

Assignment = dict[Any, set[int]]


def uniform(members: dict[str, set[str]], topics: dict[str, tuple[Any, int]],
            current: dict[str, Assignment]) -> dict[str, Assignment]:
    """``members``: member id -> subscribed topic names; ``topics``: name -> (topic id, partitions);
    ``current``: member id -> its previous target assignment. Returns member id -> assignment."""
    eligible: dict[tuple[Any, int], list[str]] = {}
    for name, (topic_id, n) in topics.items():
        subs = sorted(m for m, s in members.items() if name in s)
        if subs:
            for p in range(n):
                eligible[(topic_id, p)] = subs
    owned: dict[str, set[tuple[Any, int]]] = {m: set() for m in members}
    owner: dict[tuple[Any, int], str] = {}
    for m in sorted(members):
        for topic_id, parts in current.get(m, {}).items():
            for p in parts:
                tp = (topic_id, p)
                if tp in eligible and m in eligible[tp] and tp not in owner:
                    owned[m].add(tp)
                    owner[tp] = m
    for tp in sorted(eligible, key=lambda tp: (str(tp[0]), tp[1])):
        if tp not in owner:
            m = min(eligible[tp], key=lambda c: (len(owned[c]), c))
            owned[m].add(tp)
            owner[tp] = m
    _balance(owned, owner, eligible)
    return {m: _to_assignment(tps) for m, tps in owned.items()}


def _balance(owned, owner, eligible) -> None:
    """Move partitions from the most to the least loaded eligible member while that narrows a gap > 1."""
    moved = True
    while moved:
        moved = False
        for tp in sorted(owner, key=lambda tp: (str(tp[0]), tp[1])):
            src = owner[tp]
            dst = min(eligible[tp], key=lambda c: (len(owned[c]), c))
            if len(owned[src]) - len(owned[dst]) > 1:
                owned[src].discard(tp)
                owned[dst].add(tp)
                owner[tp] = dst
                moved = True


def range_(members: dict[str, set[str]], topics: dict[str, tuple[Any, int]],
           current: dict[str, Assignment]) -> dict[str, Assignment]:
    out: dict[str, Assignment] = {m: {} for m in members}
    for name, (topic_id, n) in sorted(topics.items()):
        subs = sorted(m for m, s in members.items() if name in s)
        if not subs:
            continue
        quota, extra = divmod(n, len(subs))
        start = 0
        for i, m in enumerate(subs):
            count = quota + (1 if i < extra else 0)
            if count:
                out[m][topic_id] = set(range(start, start + count))
            start += count
    return out


def _to_assignment(tps) -> Assignment:
    out: Assignment = {}
    for topic_id, p in tps:
        out.setdefault(topic_id, set()).add(p)
    return out


#: Kafka's assignor names -> the function
ASSIGNORS = {"uniform": uniform, "range": range_}
