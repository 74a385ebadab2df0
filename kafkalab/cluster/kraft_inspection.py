"""What a KRaft cluster (:class:`~kafkalab.cluster.kraft.KRaftCluster`) shows of its nodes: the ``nodes``,
``brokers`` and ``controllers`` tables (from DescribeCluster and DescribeQuorum) and ``metrics()`` (each mini
node's Kafka metrics, scraped from its ``metrics_url``: a controller's raft-metrics and KafkaController metrics, a
broker's ReplicaManager, BrokerTopicMetrics, RequestMetrics, ...)."""
from __future__ import annotations

from typing import Any, Callable

from .listeners import ListenerSpec, broker_listeners, cluster_listeners
from .quorum import quorum_table
from .resources import _Broker


class KRaftInspection:
    """Mixed into KRaftCluster, which has what is declared here."""
    _res: Any
    _all_nodes: Callable[[], list[_Broker]]
    _state: Callable[[_Broker], str]
    _registrations: Callable[[], dict | None]
    _quorum_answer: Callable[..., dict | None]
    listener_spec: ListenerSpec | None

    def _rows(self, nodes: list[_Broker]) -> list[dict]:
        with self._res.lock:
            registered = self._registrations() if any("broker" in b.roles for b in nodes) else None
            answer = self._quorum_answer()
            status = {}
            if answer is not None:
                status = {r["node_id"]: r["status"] for r in quorum_table(answer).to_dict("records")}
            rows = []
            for b in nodes:
                reg = None if registered is None or "broker" not in b.roles else registered.get(b.id)
                rows.append({"id": b.id, "roles": b.roles, "host": b.host, "port": b.port or None,
                             "controller_port": b.controller_port, "pid": b.pid, "alive": self._state(b),
                             "registered": None if registered is None or "broker" not in b.roles else reg is not None,
                             "fenced": None if reg is None else reg["fenced"],
                             "quorum": status.get(b.id), "is_controller": answer is not None and
                             b.id == answer["leader_id"], "log_dir": b.log_dir, "log": b.log_path,
                             "metrics_url": b.metrics_url,
                             "listeners": broker_listeners(self.listener_spec, b) if "broker" in b.roles else None})
        return rows

    def _table(self, rows: list[dict]):
        try:
            import pandas as pd
        except ImportError:
            return rows
        df = pd.DataFrame(rows)
        for column in ("port", "controller_port", "pid"):
            if column in df:
                df[column] = df[column].astype("Int64")
        return df

    @property
    def nodes(self):
        """Every process, controllers first: id, roles, host, port (PLAINTEXT), controller_port, pid, alive,
        registered and fenced (brokers, from DescribeCluster v2), quorum (Leader / Follower / Observer, from
        DescribeQuorum), is_controller (the active controller), log_dir, log, metrics_url (where the node serves
        its Kafka metrics as Prometheus text: a mini node itself, Kafka's through the JMX exporter's agent,
        :mod:`~kafkalab.cluster.jmx_agent`; None without it), listeners (a broker's: name -> host:port,
        :attr:`listeners`). A pandas DataFrame."""
        return self._table(self._rows(self._all_nodes()))

    def metrics(self, names=None):
        """The Kafka metrics of every running node (controllers first), scraped from its ``metrics_url``: a pandas
        DataFrame with the columns of :func:`~kafkalab.cluster.metrics.metrics_frame` (``broker``: the node id)
        and ``roles``; ``names`` keeps the samples whose name is one of them or starts with one of them."""
        from .metrics import metrics_frame
        with self._res.lock:
            nodes = [b for b in self._all_nodes() if b.metrics_url and self._state(b) == "running"]
        frame = metrics_frame([(b.id, b.metrics_url) for b in nodes], names)
        frame.insert(1, "roles", frame["broker"].map({b.id: b.roles for b in nodes}))
        return frame

    @property
    def listeners(self) -> dict[str, str]:
        """Each brokers' listener's name -> its bootstrap servers (every broker's host:port on it): the lab's
        PLAINTEXT listener (``bootstrap_servers``) and those a lesson added with ``listeners``."""
        return cluster_listeners(self.listener_spec, sorted(self._res.brokers.values(), key=lambda b: b.id))

    @property
    def brokers(self):
        """:attr:`nodes`, the brokers only."""
        return self._table(self._rows(sorted(self._res.brokers.values(), key=lambda b: b.id)))

    @property
    def controllers(self):
        """:attr:`nodes`, the voters only (the controllers; in combined mode every node)."""
        return self._table(self._rows([b for b in self._all_nodes() if "controller" in b.roles]))
