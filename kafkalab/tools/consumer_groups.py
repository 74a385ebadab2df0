"""A consumer group's lag as ``kafka-consumer-groups.sh --bootstrap-server B --describe --group G`` shows it.

Kafka 3.9's ``ConsumerGroupCommand`` (``tools/.../consumer/group/ConsumerGroupCommand.java``,
``collectGroupsOffsets``) asks, with the admin client:

* DescribeGroups (``describeConsumerGroups``): the group's state and members, each member's assignment;
* OffsetFetch for every partition (``listConsumerGroupOffsets``): the committed offsets;
* ListOffsets ``OffsetSpec.latest()`` with a default ``ListOffsetsOptions``, i.e. isolation level
  ``READ_UNCOMMITTED``: the column is called LOG-END-OFFSET, but a broker answers a consumer's LATEST
  read_uncommitted with the partition's **high watermark** (not the leader's log end offset, which can be ahead
  of it while followers catch up);

and prints one row per partition: first those of the members with a non-empty assignment (the largest
assignment first, each member's partitions by partition number), then the partitions the group committed to that
no member has (CONSUMER-ID, HOST and CLIENT-ID ``-``; all rows of an empty group). ``LAG`` is LOG-END-OFFSET minus
CURRENT-OFFSET, not capped at 0, and ``-`` (here: ``<NA>``) when nothing is committed or the end offset is unknown
(the partition's leader did not answer). A group with no members says "has no active members" on stderr; here
``df.attrs["state"]`` holds the state.

:func:`describe_group_lag` returns that table as a DataFrame (:data:`COLUMNS`), :func:`format_describe` prints it
as the tool does. The dashboard's snapshot (:mod:`kafkalab.viz.cluster_state`) uses the same requests
(:func:`committed_offsets`, :func:`end_offsets`). Needs only confluent-kafka and pandas (no ipywidgets).
"""
from __future__ import annotations

import pandas as pd

COLUMNS = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
           "CLIENT-ID"]
MISSING = "-"   # ConsumerGroupCommand.MISSING_COLUMN_VALUE

TopicPartitionKey = tuple[str, int]


def _bootstrap(kafka) -> str:
    if isinstance(kafka, str):
        return kafka
    cluster = getattr(kafka, "cluster", None)
    return (cluster if cluster is not None else kafka).bootstrap_servers


def admin_client(kafka, timeout_s: float = 10.0, client_id: str = "kafkalab-consumer-groups"):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": _bootstrap(kafka), "log_level": 2, "client.id": client_id,
                        "socket.timeout.ms": int(timeout_s * 1000)})


def committed_offsets(admin, group: str, timeout_s: float = 10.0) -> dict[TopicPartitionKey, int | None]:
    """OffsetFetch of every partition (``listConsumerGroupOffsets`` with no partitions): what ``group`` committed."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                request_timeout=timeout_s)[group].result(timeout_s * 2)
    return {(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None) for tp in fetched.topic_partitions}


def end_offsets(admin, partitions, timeout_s: float = 10.0) -> dict[TopicPartitionKey, int | None]:
    """ListOffsets LATEST, read_uncommitted (the tool's ``getLogEndOffsets``): each partition's high watermark;
    None where its leader did not answer (the tool's ``Unknown``)."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec
    partitions = sorted(set(partitions))
    out: dict[TopicPartitionKey, int | None] = dict.fromkeys(partitions)
    if not partitions:
        return out
    futures = admin.list_offsets({TopicPartition(t, p): OffsetSpec.latest() for t, p in partitions},
                                 isolation_level=IsolationLevel.READ_UNCOMMITTED, request_timeout=timeout_s)
    for tp, fut in futures.items():
        try:
            offset = fut.result(timeout_s * 2).offset
        except Exception:   # noqa: BLE001 -- its leader is down: no end offset
            continue
        out[(tp.topic, tp.partition)] = offset if offset >= 0 else None
    return out


def lag_of(committed: int | None, end: int | None) -> int | None:
    """The tool's ``getLag``: end - committed, None (``-``) if either is missing."""
    if committed is None or end is None:
        return None
    return end - committed


def rows(group: str, members, committed: dict, ends: dict) -> list[dict]:
    """The tool's rows (see the module docstring). ``members``: confluent-kafka ``MemberDescription``s (or objects
    with ``member_id``, ``host``, ``client_id`` and ``assignment.topic_partitions``)."""
    def assignment(m) -> list[TopicPartitionKey]:
        a = getattr(m, "assignment", None)
        return [(tp.topic, tp.partition) for tp in (a.topic_partitions if a else [])]

    out = []
    assigned: set[TopicPartitionKey] = set()
    with_partitions = [m for m in members if assignment(m)]
    for m in sorted(with_partitions, key=lambda m: -len(assignment(m))):   # stable, as Java's sort
        mine = sorted(assignment(m), key=lambda k: k[1])
        assigned.update(mine)
        out += [_row(group, k, committed, ends, m.member_id, m.host, m.client_id) for k in mine]
    rest = [k for k in committed if k not in assigned]
    out += [_row(group, k, committed, ends, MISSING, MISSING, MISSING) for k in sorted(rest, key=lambda k: k[1])]
    return out


def _row(group, key, committed, ends, consumer_id, host, client_id) -> dict:
    offset, end = committed.get(key), ends.get(key)
    return dict(zip(COLUMNS, [group, key[0], key[1], offset, end, lag_of(offset, end), consumer_id, host,
                              client_id]))


def describe_group_lag(kafka, group: str, timeout_s: float = 10.0, admin=None) -> pd.DataFrame:
    """``kafka-consumer-groups.sh --describe --group group`` as a DataFrame (:data:`COLUMNS`; offsets and LAG as
    nullable integers, ``<NA>`` where the tool prints ``-``); ``df.attrs["state"]``: the group's state (e.g.
    ``STABLE``, ``EMPTY``, ``DEAD`` for a group that does not exist). ``kafka``: bootstrap servers, or anything
    with ``.bootstrap_servers`` (``kafkalab.connect()``, ``kafkalab.mini()``, a Cluster)."""
    admin = admin if admin is not None else admin_client(kafka, timeout_s)
    described = admin.describe_consumer_groups([group], request_timeout=timeout_s)[group].result(timeout_s * 2)
    state = getattr(described.state, "name", str(described.state))
    committed = committed_offsets(admin, group, timeout_s)
    members = list(described.members)
    wanted = set(committed) | {(tp.topic, tp.partition) for m in members
                               for tp in (m.assignment.topic_partitions if m.assignment else [])}
    ends = end_offsets(admin, wanted, timeout_s)
    df = pd.DataFrame(rows(group, members, committed, ends), columns=COLUMNS)
    for column in ("PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"):
        df[column] = df[column].astype("Int64")
    df.attrs["state"] = state
    return df


def format_describe(df: pd.DataFrame) -> str:
    """The table as the tool prints it (``printOffsets``: columns at least 15 wide, ``-`` for what is missing)."""
    def text(v) -> str:
        return MISSING if v is None or v is pd.NA or (isinstance(v, float) and v != v) else str(v)
    records = [[text(v) for v in r] for r in df[COLUMNS].itertuples(index=False)]
    width = {c: max([15] + [len(r[i]) for r in records]) for i, c in enumerate(COLUMNS) if c in
             ("GROUP", "TOPIC", "CONSUMER-ID", "HOST")}
    fmt = (f"%-{width['GROUP']}s %-{width['TOPIC']}s %-10s %-15s %-15s %-15s %-{width['CONSUMER-ID']}s "
           f"%-{width['HOST']}s %s")
    return "\n".join([fmt % tuple(COLUMNS)] + [fmt % tuple(r) for r in records])
