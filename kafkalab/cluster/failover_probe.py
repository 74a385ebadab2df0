"""The same failure in two architectures: SIGKILL a node, and time what the cluster's metadata says after.

:func:`kill_and_watch` kills one broker of a ZooKeeper-mode :class:`~kafkalab.cluster.Cluster` or one node of
a KRaft :class:`~kafkalab.cluster.kraft.KRaftCluster` and returns when the cluster has (1) noticed the death,
(2) a controller that is not the dead node, (3) a new leader for a partition the dead node led. Each moment is
read from where the cluster keeps its metadata, with the metadata store's own timestamps:

==========================  ==============================================  ===========================================
event                       ZooKeeper mode                                  KRaft mode
==========================  ==============================================  ===========================================
the death noticed           ``/brokers/ids/<id>`` gone: the broker's        ``BrokerRegistrationChangeRecord`` with
                            ZooKeeper session expired after                 ``fenced: 1`` (or ``FenceBrokerRecord``):
                            ``zookeeper.session.timeout.ms`` (polled        no heartbeat for
                            every 50 ms: a deleted znode keeps no time)     ``broker.session.timeout.ms``
a controller again          ``/controller``'s ``ctime`` (a broker won the   the ``LeaderChange`` control record a new
                            election once the znode was gone)               Raft leader writes first in its epoch
the partition led again     the partition's ``.../state`` znode ``mtime``   ``PartitionChangeRecord`` with a new
                                                                            ``leader``
==========================  ==============================================  ===========================================

Times are seconds after the SIGKILL (the host's wall clock; ZooKeeper and the controllers run on it too).
KRaft records are read from a surviving node's copy of ``__cluster_metadata`` with
:func:`kafkalab.tools.metadata_log_df`.
"""
from __future__ import annotations

import json
import time

from ..tools.metadata_log import metadata_log_df


def _zk_json(cluster, path):
    try:
        data, stat = cluster.zk.get(path)
    except Exception:   # noqa: BLE001 - NoNodeError while there is none
        return None, None
    return json.loads(data), stat


def _led_partitions(cluster, topic: str, victim: int) -> list[int]:
    """The partitions ``victim`` leads, those it is the preferred replica of first (the controller's automatic
    leader rebalancing, ``auto.leader.rebalance.enable``, could move the others away during the watch)."""
    d = cluster.describe(topic)
    led = d[d["leader"] == victim]
    return [int(p) for p, replicas in sorted(zip(led["partition"], led["replicas"]),
                                             key=lambda pr: (list(pr[1])[:1] != [victim], pr[0]))]


def preferred_leader(cluster, topic: str) -> int:
    """A broker that leads a partition of ``topic`` as its preferred replica and is not the controller: the one to
    kill to time a broker failure alone."""
    d = cluster.describe(topic)
    controller = cluster.controller
    return min(int(r.leader) for r in d.itertuples()
               if r.leader not in (controller, -1, None) and list(r.replicas)[:1] == [r.leader])


def kill_and_watch(cluster, victim: int, topic: str, timeout_s: float = 90.0) -> dict:
    """SIGKILL ``victim`` and wait for the failover; the moments of each event (see the module docstring).

    ``topic`` must have a partition that ``victim`` leads, unless ``victim`` is a controller and no broker (KRaft
    with separate controllers: then only the election is timed, the other moments are None). Returns ``{"mode",
    "victim", "was_controller", "partition", "killed_at" (epoch seconds), "detected_s", "new_controller_s" (None
    if the victim was not the controller), "new_controller", "new_leader_s", "new_leader"}``. TimeoutError if it
    does not happen."""
    led = _led_partitions(cluster, topic, victim) if victim in getattr(cluster, "broker_ids", [victim]) else []
    was_controller = cluster.controller == victim
    if not led and not was_controller:
        raise ValueError(f"broker {victim} leads no partition of {topic!r} and is not the controller")
    partition = led[0] if led else None   # None: a KRaft controller that is no broker (only the election to time)
    kraft = getattr(cluster, "mode", "zookeeper") == "kraft"
    out = {"mode": "kraft" if kraft else "zookeeper", "victim": victim, "was_controller": was_controller,
           "partition": partition}
    killed_at = time.time()
    cluster.kill(victim)
    out["killed_at"] = killed_at
    watch = _watch_kraft if kraft else _watch_zookeeper
    out.update(watch(cluster, victim, topic, partition, killed_at, was_controller, killed_at + timeout_s))
    return out


def _watch_zookeeper(cluster, victim, topic, partition, killed_at, was_controller, deadline) -> dict:
    state_path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    found = {}
    while time.time() < deadline:
        if "detected_s" not in found and cluster.zk.exists(f"/brokers/ids/{victim}") is None:
            found["detected_s"] = time.time() - killed_at
        controller, stat = _zk_json(cluster, "/controller")
        if was_controller and "new_controller_s" not in found and controller and controller["brokerid"] != victim:
            found.update(new_controller_s=stat.ctime / 1000 - killed_at, new_controller=controller["brokerid"])
        state, stat = _zk_json(cluster, state_path)
        if "new_leader_s" not in found and state and state["leader"] not in (victim, -1):
            found.update(new_leader_s=stat.mtime / 1000 - killed_at, new_leader=state["leader"])
        if {"detected_s", "new_leader_s"} <= set(found) and ("new_controller_s" in found or not was_controller):
            found.setdefault("new_controller_s", None)
            found.setdefault("new_controller", cluster.controller)
            return found
        time.sleep(0.05)
    raise TimeoutError(f"ZooKeeper mode: no complete failover of broker {victim} within the timeout: {found}")


def kraft_failover_records(cluster, victim: int, topic: str, partition: int, since: float,
                           node: int | None = None):
    """The ``__cluster_metadata`` records written after ``since`` (epoch seconds) about the failover of ``victim``:
    LeaderChange, its fencing, and the leader changes of ``topic``-``partition`` (read from ``node``'s copy,
    by default the active controller's). A DataFrame (:func:`~kafkalab.tools.metadata_log_df`) with ``t``
    (seconds after ``since``)."""
    node = node if node is not None else cluster.controller
    df = metadata_log_df(cluster.metadata_log_dir(node))
    topic_records = df[df["type"] == "TOPIC_RECORD"]
    named = topic_records[topic_records["data"].map(lambda d: d["name"]) == topic]
    topic_id = named["data"].map(lambda d: d["topicId"])
    topic_id = topic_id.iloc[-1] if len(topic_id) else None

    def relevant(row) -> bool:
        d = row["data"]
        if row["type"] == "LeaderChange":
            return True
        if row["type"] == "BROKER_REGISTRATION_CHANGE_RECORD":
            return d.get("brokerId") == victim and d.get("fenced") == 1
        if row["type"] == "FENCE_BROKER_RECORD":
            return d.get("id") == victim
        if row["type"] == "PARTITION_CHANGE_RECORD":
            return d.get("topicId") == topic_id and d.get("partitionId") == partition and "leader" in d
        return False

    recent = df[df["timestamp"] >= int(since * 1000)]
    picked = recent[recent.apply(relevant, axis=1)] if len(recent) else recent
    return picked.assign(t=(picked["timestamp"] / 1000 - since).round(3))


def _watch_kraft(cluster, victim, topic, partition, killed_at, was_controller, deadline) -> dict:
    while time.time() < deadline:
        try:
            records = kraft_failover_records(cluster, victim, topic, partition, killed_at)
        except Exception:   # noqa: BLE001 - no controller for a moment, or a file being written: look again
            records = None
        if records is not None and len(records):
            fenced = records[records["type"].isin(["BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD"])]
            leaders = records[(records["type"] == "PARTITION_CHANGE_RECORD")
                              & records["data"].map(lambda d: d.get("leader") not in (victim, -1, None))]
            elected = records[(records["type"] == "LeaderChange")
                              & records["data"].map(lambda d: d.get("leaderId") != victim)]
            if partition is None and len(elected):      # a controller only: no broker died, nothing is fenced
                return {"detected_s": None, "new_controller_s": float(elected["t"].iloc[0]),
                        "new_controller": int(elected["data"].iloc[0]["leaderId"]), "new_leader_s": None,
                        "new_leader": None}
            if len(fenced) and len(leaders) and (len(elected) or not was_controller):
                return {"detected_s": float(fenced["t"].iloc[0]),
                        "new_controller_s": float(elected["t"].iloc[0]) if was_controller else None,
                        "new_controller": int(elected["data"].iloc[0]["leaderId"]) if was_controller
                        else cluster.controller,
                        "new_leader_s": float(leaders["t"].iloc[0]),
                        "new_leader": int(leaders["data"].iloc[0]["leader"])}
        time.sleep(0.2)
    raise TimeoutError(f"KRaft mode: no complete failover of node {victim} within the timeout")
