"""Looking at a cluster: ZooKeeper's znodes and the brokers' own answers (:class:`ClusterInspection`).

What a student reads while breaking things — ``brokers`` (a table: alive,
registered, is_controller), ``controller`` (the id in ``/controller``),
``describe(topic)`` (leader, replicas, ISR, leader epoch, high watermark, each
replica's log end offset), ``zk`` (a kazoo client for their own reads) — is
mixed into :class:`~kafkalab.cluster.Cluster` from here.

Every ZooKeeper read goes through :func:`timed_zk_read`: kazoo would wait
forever for a ZooKeeper that is down, and a dashboard must not hang. The
ExternalCluster (:mod:`kafkalab.cluster.external`) reads its ZooKeeper the same way.
"""
from __future__ import annotations

from ..broker.zk import zk_data
from .listeners import broker_listeners, cluster_listeners
from .offsets import describe_rows, zookeeper_partition_rows
from .zookeeper import ZooKeeperServer, tail


class ZooKeeperUnavailable(RuntimeError):
    """The cluster's ZooKeeper cannot be reached (it was stopped, or does not answer)."""


def timed_zk_read(client, connect_string: str, method: str, path: str, timeout_s: float):
    """``client.<method>(path)`` (a kazoo client: "get", "get_children", "exists"), but never waiting longer
    than ``timeout_s``: kazoo would wait forever for a ZooKeeper that is down. Raises ZooKeeperUnavailable
    (not connected, or no answer in time), or kazoo's NoNodeError."""
    if client is None or not client.connected:
        raise ZooKeeperUnavailable(f"not connected to ZooKeeper at {connect_string}")
    try:
        return getattr(client, method + "_async")(path).get(timeout=timeout_s)
    except client.handler.timeout_exception:
        raise ZooKeeperUnavailable(f"ZooKeeper at {connect_string} did not answer within {timeout_s:.0f} s") from None


class ClusterInspection:
    """What a student looks at, mixed into :class:`~kafkalab.cluster.Cluster`. It reads the cluster's
    ``_res`` (ZooKeeper, the brokers, the kazoo client) and uses the broker lifecycle's ``_broker`` and
    ``_state`` (:class:`~kafkalab.cluster.lifecycle.BrokerLifecycle`)."""

    # -- ZooKeeper ---------------------------------------------------------------------

    def _zk_read(self, method: str, path: str, timeout_s: float = 3.0):
        """``zk.<method>(path)``, but never waiting longer than ``timeout_s`` (kazoo would wait forever for
        a ZooKeeper that is down). Raises ZooKeeperUnavailable, or kazoo's NoNodeError."""
        return timed_zk_read(self._res.zk_client, self.zookeeper_connect, method, path, timeout_s)

    def _connect_zk(self) -> None:
        from kazoo.client import KazooClient
        client = KazooClient(hosts=self.zookeeper_connect, timeout=10.0)
        client.start(timeout=self.timeout_s)
        self._res.zk_client = client

    # -- what a student looks at ------------------------------------------------------

    @property
    def zk(self):
        """A started kazoo client on the cluster's ZooKeeper (``c.zk.get("/controller")``)."""
        return self._res.zk_client

    @property
    def zookeeper_connect(self) -> str:
        """The ``zookeeper.connect`` string of every broker."""
        zk = self._res.zookeeper
        return zk.connect_string if zk is not None else self._zookeeper_connect

    @property
    def zookeeper(self) -> ZooKeeperServer | None:
        return self._res.zookeeper

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's host:port, comma-separated (clients find the live ones)."""
        return ",".join(f"{b.host}:{b.port}" for b in self._res.brokers.values())

    @property
    def listeners(self) -> dict[str, str]:
        """Each listener's name -> its bootstrap servers (every broker's host:port on it): the lab's PLAINTEXT
        listener (``bootstrap_servers``) and those a lesson added with ``listeners``."""
        return cluster_listeners(getattr(self, "listener_spec", None),
                                 sorted(self._res.brokers.values(), key=lambda b: b.id))

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._res.brokers)

    @property
    def controller(self) -> int | None:
        """The id in ``/controller`` (the broker that won the election), or None while there is none."""
        try:
            data, _ = self._zk_read("get", zk_data.CONTROLLER)
        except Exception:   # noqa: BLE001 - NoNodeError (no controller right now), or ZooKeeper is unreachable
            return None
        try:
            return zk_data.decode_controller(data)
        except (ValueError, KeyError):
            return None

    @property
    def brokers(self):
        """One row per broker: id, host, port, pid, alive (running / paused / stopped / killed / exited /
        starting), registered (its /brokers/ids znode exists; None while ZooKeeper cannot be reached),
        is_controller, log_dir, log, metrics_url (where the broker serves its Kafka metrics as Prometheus text: a
        mini broker itself, Kafka's own through the JMX exporter's agent, None without it), listeners (listener
        name -> host:port: :attr:`listeners`). A pandas DataFrame (a list of dicts without pandas)."""
        with self._res.lock:
            try:
                registered = {int(i) for i in self._zk_read("get_children", zk_data.BROKER_IDS)}
            except Exception:   # noqa: BLE001 - ZooKeeper unreachable: unknown
                registered = None
            controller = self.controller
            rows = [{"id": b.id, "host": b.host, "port": b.port, "pid": b.pid, "alive": self._state(b),
                     "registered": None if registered is None else b.id in registered,
                     "is_controller": b.id == controller,
                     "log_dir": b.log_dir, "log": b.log_path, "metrics_url": b.metrics_url,
                     "listeners": broker_listeners(getattr(self, "listener_spec", None), b)}
                    for b in sorted(self._res.brokers.values(), key=lambda b: b.id)]
        try:
            import pandas as pd
        except ImportError:
            return rows
        return pd.DataFrame(rows)

    def metrics(self, names=None):
        """The Kafka metrics of every running broker, scraped from its ``metrics_url``: a pandas DataFrame with the
        columns broker, metric (the Prometheus name, as the JMX exporter's example Kafka configuration names it,
        e.g. ``kafka_server_replicamanager_underreplicatedpartitions``), labels (a dict), value, time. ``names``: a
        metric name or prefix, or a list of them, to keep only those. A broker that is down, paused or serves no
        metrics (Kafka's own brokers without the JMX exporter's agent: ``kafkalab fetch-jmx-exporter``) has no
        rows."""
        from .metrics import metrics_frame, name_filter
        name_filter(names)   # bad names fail before any scrape
        with self._res.lock:
            urls = {b.id: b.metrics_url for b in sorted(self._res.brokers.values(), key=lambda b: b.id)
                    if b.metrics_url and self._state(b) == "running"}
        return metrics_frame(urls, names)

    def broker_log(self, broker_id: int, lines: int = 30) -> str:
        """The last ``lines`` lines of a broker's output (``broker-<id>.log``)."""
        return tail(self._broker(broker_id).log_path, lines)

    def describe(self, topic: str, timeout_s: float = 1.0):
        """One row per partition of ``topic``: partition, leader, replicas, isr, leader_epoch (from the
        znodes ``/brokers/topics/<t>`` and ``.../partitions/<p>/state``), high_watermark (ListOffsets to
        the leader, as a consumer asks), and ``leo_<id>``: each replica's log end offset (ListOffsets
        with Kafka's DEBUGGING_REPLICA_ID -2, answered by any replica). A replica that cannot answer
        (down, paused) shows a missing value."""
        rows = zookeeper_partition_rows(self._zk_read, topic)

        def address_of(broker_id):
            b = self._res.brokers.get(broker_id)
            return (b.host, b.port) if b is not None and self._state(b) in ("running", "paused") else None

        return describe_rows(rows, address_of, topic, timeout_s)
