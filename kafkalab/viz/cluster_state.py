"""A snapshot of what Kafka keeps about a cluster: brokers, partitions (leader, ISR, offsets), consumer groups.

Used by the notebook dashboard (:func:`kafkalab.viz.dashboard`) and by
``kafkalab status``. :func:`collect` reads it from wherever it lives:

* a local cluster (``kafkalab.connect(brokers=3)``, ``kafkalab.cluster()``, or
  one ``kafkalab up`` started): the brokers' processes from the
  :class:`~kafkalab.cluster.Cluster`, and the partitions' leader, replicas and
  ISR from ZooKeeper (``Cluster.describe``) — as Kafka's controller sees them,
  also while brokers are down;
* an embedded broker or an external cluster: the brokers, the controller and
  each partition's leader, replicas and ISR from a Metadata request, as any
  client sees them (a broker that is down is simply missing from them).

Either way each partition's **high watermark** is asked of its leader and each
replica's **log end offset** of that replica (ListOffsets, see
:mod:`kafkalab.cluster.offsets`), and consumer groups come from the admin API:
ListGroups, DescribeGroups and OffsetFetch; a group's **lag** on a partition
is the partition's end offset minus the group's committed offset, as
``kafka-consumer-groups.sh --describe`` computes it (the requests and the arithmetic are
:mod:`kafkalab.tools.consumer_groups`'s, which also gives the tool's table).

The snapshot is plain data (dataclasses), so that what the dashboard shows can
be tested without a cluster: see :mod:`kafkalab.viz.dashboard_model`.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

EMBEDDED, CLUSTER, EXTERNAL = "embedded", "cluster", "external"


@dataclass
class BrokerInfo:
    id: int
    host: str
    port: int
    pid: int | None = None
    state: str = "running"          # running, paused, stopped, killed, exited, starting; "up" = in metadata
    registered: bool | None = None  # its /brokers/ids znode exists (cluster only)
    is_controller: bool = False
    roles: str | None = None        # KRaft: process.roles (broker, controller, broker,controller)
    fenced: bool | None = None      # KRaft: a registered broker the controller fenced


@dataclass
class PartitionInfo:
    topic: str
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]
    high_watermark: int | None = None
    leo: dict[int, int | None] = field(default_factory=dict)   # replica id -> log end offset (None: no answer)
    leader_epoch: int | None = None

    @property
    def offline(self) -> bool:
        """No leader: nobody can produce to or consume from it."""
        return self.leader is None

    @property
    def under_replicated(self) -> bool:
        """Fewer replicas in sync than assigned (kafka-topics.sh --under-replicated-partitions)."""
        return len(self.isr) < len(self.replicas)


@dataclass
class MemberInfo:
    member_id: str
    client_id: str
    host: str
    assignment: list[tuple[str, int]]


@dataclass
class GroupOffset:
    topic: str
    partition: int
    committed: int | None
    end: int | None

    @property
    def lag(self) -> int | None:
        """end - committed, not capped at 0; None if either is missing (``consumer_groups.lag_of``)."""
        from ..tools.consumer_groups import lag_of
        return lag_of(self.committed, self.end)


@dataclass
class GroupInfo:
    group_id: str
    state: str
    members: list[MemberInfo] = field(default_factory=list)
    offsets: list[GroupOffset] = field(default_factory=list)

    @property
    def total_lag(self) -> int | None:
        lags = [o.lag for o in self.offsets if o.lag is not None]
        return sum(lags) if lags else None


@dataclass
class Snapshot:
    kind: str                          # embedded, cluster, external
    bootstrap_servers: str
    brokers: list[BrokerInfo] = field(default_factory=list)
    controller: int | None = None
    topics: list[str] = field(default_factory=list)         # every topic (internal ones too)
    partitions: list[PartitionInfo] = field(default_factory=list)   # of the topics asked for
    groups: list[GroupInfo] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)         # what could not be read this time
    backend: str = ""
    metrics: dict[str, float] = field(default_factory=dict)  # HEADLINE_METRICS summed over the brokers serving them
    taken_at: float = field(default_factory=time.time)


#: Kafka's metrics the dashboard's header shows (the JMX exporter's names), each over the brokers: every broker
#: counts the partitions it leads that are under-replicated (summed); ActiveControllerCount is 1 on the active
#: controller only (summed: 1 in a healthy cluster, 0 with no controller); OfflinePartitionsCount is counted by
#: the active ZooKeeper-mode controller only, but by every KRaft controller from the metadata it replayed
#: (Kafka 4's ControllerMetadataMetrics), so the cluster's count is the largest, not the sum (HEADLINE_LARGEST).
HEADLINE_METRICS = {
    "kafka_server_replicamanager_underreplicatedpartitions": "UnderReplicatedPartitions",
    "kafka_server_replicamanager_underminisrpartitioncount": "UnderMinIsrPartitionCount",
    "kafka_controller_kafkacontroller_offlinepartitionscount": "OfflinePartitionsCount",
    "kafka_controller_kafkacontroller_activecontrollercount": "ActiveControllerCount",
}
HEADLINE_LARGEST = {"kafka_controller_kafkacontroller_offlinepartitionscount"}


def headline_metrics(frame) -> dict[str, float]:
    """HEADLINE_METRICS of a ``metrics()`` frame, each the cluster's: summed over the nodes, or the largest."""
    frame = frame[frame["metric"].isin(HEADLINE_METRICS)]   # exact names only (no prefix matches)
    by = frame.groupby("metric")["value"]
    sums, largest = by.sum(), by.max()
    return {label: float((largest if m in HEADLINE_LARGEST else sums)[m])
            for m, label in HEADLINE_METRICS.items() if m in sums.index}


def _cluster_of(kafka):
    """The Cluster behind ``kafka`` (a LabKafka, a Cluster), or None."""
    from ..cluster.cluster import Cluster
    from ..cluster.kraft import KRaftCluster
    if isinstance(kafka, (Cluster, KRaftCluster)):
        return kafka
    return getattr(kafka, "cluster", None)


def kind_of(kafka) -> str:
    if _cluster_of(kafka) is not None:
        return CLUSTER
    if getattr(kafka, "broker", None) is not None or type(kafka).__name__ == "MiniBroker":
        return EMBEDDED
    return EXTERNAL


class Collector:
    """Takes snapshots of one cluster, reusing its admin client between them (see the module docstring)."""

    def __init__(self, kafka, timeout_s: float = 2.0):
        self.kafka = kafka
        self.cluster = _cluster_of(kafka)
        self.kind = kind_of(kafka)
        self.timeout_s = timeout_s
        self._admin = None

    @property
    def bootstrap_servers(self) -> str:
        if self.cluster is not None:
            return self.cluster.bootstrap_servers
        return self.kafka.bootstrap_servers

    def admin(self):
        if self._admin is None:
            from confluent_kafka.admin import AdminClient
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 2,
                                       "socket.timeout.ms": int(self.timeout_s * 1000),
                                       "client.id": "kafkalab-dashboard"})
        return self._admin

    def close(self) -> None:
        self._admin = None

    def snapshot(self, topics=None, internal: bool = False, groups: bool = True) -> Snapshot:
        """``topics``: the topics whose partitions to show (default: every topic, internal ones only with
        ``internal=True``)."""
        snap = Snapshot(self.kind, self.bootstrap_servers)
        if self.cluster is not None:
            self._cluster_part(snap, topics, internal)
        else:
            self._metadata_part(snap, topics, internal)
        if self.kind != EXTERNAL:
            self._metrics_part(snap)
        if groups:
            try:
                self._groups_part(snap)
            except Exception as exc:   # noqa: BLE001 -- a coordinator may be down: say so, show the rest
                snap.errors.append(f"consumer groups: {exc}")
        return snap

    # -- a local cluster: processes from the Cluster, partitions from ZooKeeper ------------------------------

    def _cluster_part(self, snap: Snapshot, topics, internal: bool) -> None:
        from ..broker.zk import zk_data
        c = self.cluster
        snap.backend = getattr(c.backend, "name", "")
        kraft = getattr(c, "mode", "zookeeper") == "kraft"   # KRaft: the controllers are rows too, no ZooKeeper
        rows = c.nodes if kraft else c.brokers
        rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
        for r in rows:
            pid = r.get("pid")
            port = _int(r.get("port")) or _int(r.get("controller_port"))
            snap.brokers.append(BrokerInfo(int(r["id"]), r["host"], port,
                                           int(pid) if pid is not None and pid == pid else None,
                                           r["alive"], r.get("registered"), bool(r.get("is_controller")),
                                           r.get("roles"), r.get("fenced")))
            if r.get("is_controller"):
                snap.controller = int(r["id"])
        if kraft and snap.controller is None:   # no active controller: say why (who is down, what the others say)
            try:
                c.quorum(timeout_s=min(1.0, self.timeout_s))
            except Exception as exc:   # noqa: BLE001 -- QuorumUnavailableError: the quorum has no leader
                snap.errors.append(f"KRaft quorum: {exc}")
        try:
            snap.topics = sorted(c.metadata()["topics"] if kraft else c._zk_read("get_children", zk_data.BROKER_TOPICS))
        except Exception as exc:   # noqa: BLE001
            snap.errors.append(f"{'Metadata' if kraft else 'ZooKeeper'}: {exc}")
            return
        for topic in self._chosen(snap.topics, topics, internal):
            try:
                df = c.describe(topic, timeout_s=min(1.0, self.timeout_s))
            except KeyError:
                continue
            except Exception as exc:   # noqa: BLE001
                snap.errors.append(f"{topic}: {exc}")
                continue
            for r in (df.to_dict("records") if hasattr(df, "to_dict") else df):
                leo = {int(k[4:]): _int(v) for k, v in r.items() if k.startswith("leo_")}
                snap.partitions.append(PartitionInfo(topic, int(r["partition"]), _int(r["leader"]),
                                                     list(r["replicas"]), list(r["isr"]),
                                                     _int(r["high_watermark"]), leo, _int(r["leader_epoch"])))

    @staticmethod
    def _chosen(all_topics: list[str], topics, internal: bool) -> list[str]:
        if topics is None:
            return [t for t in all_topics if internal or not t.startswith("__")]
        if isinstance(topics, str):
            topics = [topics]
        return [t for t in topics if t in all_topics]

    # -- embedded or external: what a client sees ---------------------------------------------------------

    def _metadata_part(self, snap: Snapshot, topics, internal: bool) -> None:
        from ..cluster.offsets import CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID, list_offsets
        try:
            md = self.admin().list_topics(timeout=self.timeout_s * 2)
        except Exception as exc:   # noqa: BLE001
            snap.errors.append(f"metadata: {exc}")
            return
        snap.controller = md.controller_id if md.controller_id is not None and md.controller_id >= 0 else None
        embedded = self.kind == EMBEDDED
        for b in sorted(md.brokers.values(), key=lambda b: b.id):
            snap.brokers.append(BrokerInfo(b.id, b.host, b.port, os.getpid() if embedded else None,
                                           "running" if embedded else "up", None, b.id == snap.controller))
        snap.topics = sorted(md.topics)
        where = {b.id: (b.host, b.port) for b in md.brokers.values()}
        chosen = self._chosen(snap.topics, topics, internal)
        for topic in chosen:
            tm = md.topics[topic]
            for p in sorted(tm.partitions.values(), key=lambda p: p.id):
                snap.partitions.append(PartitionInfo(topic, p.id, p.leader if p.leader >= 0 else None,
                                                     list(p.replicas), list(p.isrs),
                                                     leo={r: None for r in p.replicas}))
        asks = []
        for broker_id in where:
            for topic in chosen:
                mine = [p for p in snap.partitions if p.topic == topic]
                led = [p.partition for p in mine if p.leader == broker_id]
                hosted = [p.partition for p in mine if broker_id in p.replicas]
                if led:
                    asks.append((broker_id, topic, CONSUMER_REPLICA_ID, led))
                if hosted:
                    asks.append((broker_id, topic, DEBUGGING_REPLICA_ID, hosted))

        def ask(item):
            broker_id, topic, replica_id, partitions = item
            host, port = where[broker_id]
            try:
                return item, list_offsets(host, port, topic, partitions, replica_id, timeout_s=self.timeout_s)
            except (OSError, ValueError, EOFError):
                return item, {}
        if asks:
            with ThreadPoolExecutor(max_workers=min(8, len(asks))) as pool:
                answers = list(pool.map(ask, asks))
            index = {(p.topic, p.partition): p for p in snap.partitions}
            for (broker_id, topic, replica_id, _), offsets in answers:
                for partition, offset in offsets.items():
                    p = index[(topic, partition)]
                    if replica_id == CONSUMER_REPLICA_ID:
                        p.high_watermark = offset
                    else:
                        p.leo[broker_id] = offset

    def _metrics_part(self, snap: Snapshot) -> None:
        """HEADLINE_METRICS from the brokers' metrics endpoints (none: real Kafka without the JMX exporter's agent)."""
        source = self.cluster if self.cluster is not None else getattr(self.kafka, "broker", self.kafka)
        if not hasattr(source, "metrics") or getattr(source, "metrics_url", True) is None:
            return   # a cluster kafkalab only watches (its metrics are where its operators serve them), or none served
        try:
            frame = source.metrics(list(HEADLINE_METRICS))
        except Exception as exc:   # noqa: BLE001 -- a broker serving no metrics, or one that died mid-scrape
            snap.errors.append(f"metrics: {exc}")
            return
        snap.metrics = headline_metrics(frame)   # a combined KRaft node serves both sides at one URL

    # -- consumer groups -------------------------------------------------------------------------------------

    def _groups_part(self, snap: Snapshot) -> None:
        from ..tools.consumer_groups import committed_offsets, end_offsets
        admin = self.admin()
        t = self.timeout_s
        listed = admin.list_consumer_groups(request_timeout=t).result(t * 2)
        for err in listed.errors:   # a broker that did not answer ListGroups: its groups are missing
            snap.errors.append(f"consumer groups: {err}")
        ids = sorted(g.group_id for g in listed.valid if not g.group_id.startswith("kafkalab-check-"))
        if not ids:
            return
        described = admin.describe_consumer_groups(ids, request_timeout=t)
        end_known = {(p.topic, p.partition): p.high_watermark for p in snap.partitions}
        for gid in ids:
            try:
                d = described[gid].result(t * 2)
            except Exception as exc:   # noqa: BLE001
                snap.errors.append(f"group {gid}: {exc}")
                continue
            state = getattr(d.state, "name", str(d.state)).lower()
            members = [MemberInfo(m.member_id, m.client_id, m.host,
                                  sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions
                                                                             if m.assignment else [])))
                       for m in d.members]
            group = GroupInfo(gid, state, members)
            try:
                committed = committed_offsets(admin, gid, t)
            except Exception as exc:   # noqa: BLE001
                snap.errors.append(f"group {gid} offsets: {exc}")
                committed = {}
            keys = sorted(set(committed) | {tp for m in members for tp in m.assignment})
            missing = [k for k in keys if end_known.get(k) is None]
            ends = dict(end_known)
            if missing:
                try:
                    ends.update({k: v for k, v in end_offsets(admin, missing, t).items() if v is not None})
                except Exception as exc:   # noqa: BLE001
                    snap.errors.append(f"group {gid} end offsets: {exc}")
            group.offsets = [GroupOffset(tp, p, committed.get((tp, p)), ends.get((tp, p))) for tp, p in keys]
            snap.groups.append(group)


def _int(value) -> int | None:
    try:
        if value is None or value != value:   # None, NaN
            return None
        return int(value)
    except (TypeError, ValueError):
        return None   # pandas' <NA>


def collect(kafka, topics=None, internal: bool = False, groups: bool = True, timeout_s: float = 2.0) -> Snapshot:
    """One snapshot of ``kafka`` (whatever ``kafkalab.connect()`` returned, or a Cluster)."""
    return Collector(kafka, timeout_s).snapshot(topics, internal, groups)
