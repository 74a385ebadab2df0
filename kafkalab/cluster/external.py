"""``ExternalCluster``: the ``Cluster`` controls for a cluster kafkalab did not start (the workshop's compose cluster).

A lesson written against ``kafkalab.connect(brokers=3)`` uses ``kafka.cluster``
to look (``brokers``, ``controller``, ``describe(topic)``, ``zk``) and to
break (``kill``, ``stop``, ``restart``, ``pause``, ``resume``). On the
workshop's ``docker compose up`` cluster the brokers are Apache Kafka in
Docker containers, not child processes of the notebook; this module gives the
same interface there::

    ext = ExternalCluster("kafka-1:19092,kafka-2:19092,kafka-3:19092", zookeeper_connect="zookeeper:2181")
    ext.brokers            # id, host, port, alive, registered, is_controller, container
    ext.describe("orders") # leader, replicas, isr, leader_epoch, high_watermark, leo_<id> ...
    ext.kill(2)            # through the Docker API, or: prints `docker compose kill kafka-2` and waits

``kafkalab.connect()`` makes one when ``$KAFKALAB_BOOTSTRAP_SERVERS`` is set
together with ``$KAFKALAB_ZOOKEEPER_CONNECT`` or ``$KAFKALAB_COMPOSE_PROJECT``
(the compose file sets them for the JupyterLab container): see :func:`from_env`.

**Looking** uses only what Kafka offers any client:

* *Metadata* (v7): the live brokers (a broker is listed while it is registered in
  ZooKeeper, as the controller tells every broker with UpdateMetadata), the
  controller's id, and each partition's leader, replicas, ISR and leader epoch;
* *ListOffsets* (v2): the high watermark from the leader (``replica_id = -1``, a
  consumer's question) and each replica's log end offset (``replica_id = -2``,
  Kafka's ``DEBUGGING_REPLICA_ID``, which ``ReplicaManager.fetchOffset`` answers
  from any replica, leader or follower) — see :mod:`kafkalab.cluster.offsets`;
* *DescribeConfigs* (v1): the brokers' configs, to check the lab defaults;
* ZooKeeper, when its address is given: ``/brokers/ids``, ``/controller`` and
  the partition state znodes, exactly as :class:`~kafkalab.cluster.Cluster` reads
  them, and ``zk`` is a kazoo client for the lessons' own znode reads.

Whether a broker process is up is what nothing in Kafka says (a killed broker
stays registered until its ZooKeeper session expires): the Docker API tells
(the container's state), or else a probe does — a Metadata request on the
broker's own address: an answer is ``running``, a refused connection or an
unknown host is ``down``, silence within ``request_timeout_s`` is ``silent``
(paused, or hung).

**Breaking** goes through the **Docker Engine API**
(:mod:`kafkalab.cluster.docker_api`) when the Docker socket is mounted into
the notebook's container (``docker-compose.docker-socket.yml``): plain HTTP on
a Unix socket (``POST /containers/<id>/kill?signal=SIGKILL``,
``/stop``, ``/start``, ``/pause``, ``/unpause``), the broker's container found by
the compose project's labels and the ``kafkalab.broker.id`` label. Without it
the notebook prints the exact command (``docker compose kill kafka-2``) for
whoever runs the cluster, and waits until the change shows: the broker stops
answering, leaves the cluster's metadata, or is back and registered.

Where it simplifies: Docker's ``pause`` freezes the container's cgroup rather
than sending SIGSTOP, which for a student is the same frozen broker;
DescribeLogDirs is not used (the log end offsets come from ListOffsets, which
the mini broker serves too); the Docker API is spoken without a version
prefix (the engine's current API) and only over a Unix socket or plain TCP.

The requests themselves are in :mod:`kafkalab.cluster.kafka_requests`, the
controls (``kill`` ... ``resume``, through Docker or a person) in
:mod:`kafkalab.cluster.external_controls`.
"""
from __future__ import annotations

import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ..broker.zk import zk_data
from .configs import LAB_DEFAULTS
from .docker_api import PROJECT_ENV, DockerControls, DockerError, PrintedControls, docker_controls
from .external_controls import ExternalBrokerControls
from .inspection import ZooKeeperUnavailable, timed_zk_read
from .kafka_requests import describe_broker_configs, metadata_answer, metadata_request
from .kafka_requests import kafka_request  # noqa: F401 -- importable from here too, as before
from .offsets import describe_rows, zookeeper_partition_rows

BOOTSTRAP_ENV = "KAFKALAB_BOOTSTRAP_SERVERS"
ZOOKEEPER_ENV = "KAFKALAB_ZOOKEEPER_CONNECT"
CONTROL_ENV = "KAFKALAB_DOCKER_CONTROL"
"""``auto`` (default: the Docker API when it answers, else printed commands), ``docker`` or ``print``."""

#: the broker configs whose values the lessons' claims depend on (checked by :meth:`ExternalCluster.lab_defaults`)
WATCHED_CONFIGS = tuple(LAB_DEFAULTS) + ("min.insync.replicas", "transaction.state.log.replication.factor",
                                         "transaction.state.log.min.isr")


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """``"a:9092,b:9093"`` -> ``[("a", 9092), ("b", 9093)]`` (``[::1]:9092`` works too)."""
    out = []
    for item in servers.split(","):
        item = item.strip()
        if not item:
            continue
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"{item!r} is not host:port (in bootstrap servers {servers!r})")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no bootstrap servers given")
    return out


# -- the cluster -------------------------------------------------------------------------------------------

class _Backend:
    name = "external"


class ExternalCluster(ExternalBrokerControls):
    """The :class:`~kafkalab.cluster.Cluster` interface for a running cluster kafkalab did not start.

    ``controls``: ``"auto"`` (the Docker API when it answers and has the project's brokers, else printed
    commands), ``"docker"`` (the Docker API or an error) or ``"print"``; default ``$KAFKALAB_DOCKER_CONTROL``
    or ``auto``. ``compose_project`` (default: the project of the container this runs in, else
    ``$KAFKALAB_COMPOSE_PROJECT``, else ``kafkalab``) and ``service`` (``"kafka-{id}"``) name the brokers'
    containers. ``timeout_s`` bounds every wait for a change (a person running a printed command included);
    ``request_timeout_s`` every request to a broker. Messages go to ``out`` (default: standard output)."""

    external = True

    def __init__(self, bootstrap_servers: str | None = None, zookeeper_connect: str | None = None,
                 controls: str | None = None, compose_project: str | None = None, docker_host: str | None = None,
                 service: str = "kafka-{id}", timeout_s: float = 300.0, request_timeout_s: float = 1.0,
                 out=None):
        bootstrap_servers = bootstrap_servers or os.environ.get(BOOTSTRAP_ENV, "")
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.bootstrap_servers = ",".join(item.strip() for item in bootstrap_servers.split(",") if item.strip())
        self._zookeeper_connect = zookeeper_connect or os.environ.get(ZOOKEEPER_ENV) or None
        self.backend = _Backend()
        self.timeout_s = timeout_s
        self.request_timeout_s = request_timeout_s
        self.out = out
        self.service = service
        self._lock = threading.RLock()
        self._zk_client = None
        self._zk_failed_at: float | None = None   # a ZooKeeper that did not answer is not asked again for 10 s
        self._closed = False
        self._addresses: dict[int, tuple[str, int]] = {}
        self._known_ids: set[int] = set()
        self._preferred: tuple[str, int] | None = None
        self._configs: dict[str, str] | None = None
        mode = (controls or os.environ.get(CONTROL_ENV) or "auto").strip().lower()
        if mode not in ("auto", "docker", "print"):
            raise ValueError(f"controls must be 'auto', 'docker' or 'print', not {mode!r}")
        self.docker: DockerControls | None = None
        why = "controls='print'"
        if mode != "print":
            self.docker, why = docker_controls(compose_project, docker_host, service)
            if self.docker is None and mode == "docker":
                raise DockerError(f"controls='docker', but {why}")
        self.printed = PrintedControls(service, why)

    @classmethod
    def from_env(cls, bootstrap_servers: str | None = None, **kwargs) -> "ExternalCluster | None":
        """An ExternalCluster when the environment says how the cluster is run — ``$KAFKALAB_ZOOKEEPER_CONNECT``
        or ``$KAFKALAB_COMPOSE_PROJECT`` set (the compose file sets both) — else None (any other Kafka: a
        lesson then has no ``kafka.cluster``)."""
        if not (os.environ.get(ZOOKEEPER_ENV, "").strip() or os.environ.get(PROJECT_ENV, "").strip()):
            return None
        return cls(bootstrap_servers, **kwargs)

    # -- what it is ------------------------------------------------------------------------------------------

    @property
    def controls(self) -> str:
        """``"docker"`` (the Docker API) or ``"print"`` (commands for a person to run)."""
        return "docker" if self.docker is not None else "print"

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this ExternalCluster is closed")

    # -- Kafka's view ------------------------------------------------------------------------------------------

    def _candidates(self) -> list[tuple[str, int]]:
        seen, out = set(), []
        for address in [self._preferred, *self.bootstrap, *self._addresses.values()]:
            if address is not None and address not in seen:
                seen.add(address)
                out.append(address)
        return out

    def metadata(self, topics: list[str] | None = None, exclude: int | None = None) -> dict:
        """A Metadata answer from the first broker that gives one (not ``exclude``):
        ``{"answered_by", "brokers": {id: (host, port)}, "controller", "topics": {name: {"error", "partitions"}}}``.
        ``topics=None``: every topic. Raises ConnectionError when no broker answers."""
        topics = None if topics is None else list(topics)   # asked of one broker after another
        errors = []
        for host, port in self._candidates():
            if exclude is not None and self._addresses.get(exclude) == (host, port):
                continue
            try:
                response = metadata_request(host, port, topics, self.request_timeout_s)
            except (OSError, ValueError, EOFError) as exc:
                errors.append(f"{host}:{port}: {exc or type(exc).__name__}")
                continue
            self._preferred = (host, port)
            answer = metadata_answer(response)
            brokers = answer["brokers"]
            self._addresses.update(brokers)
            self._known_ids.update(brokers)
            answered_by = next((i for i, a in brokers.items() if a == (host, port)), None)
            return {"answered_by": answered_by, **answer}
        raise ConnectionError("no broker answered a Metadata request: " + "; ".join(errors))

    def probe(self, broker_id: int) -> str:
        """Is the broker's process answering? ``running`` (it answered a request), ``down`` (connection
        refused, host unknown: nothing there), ``silent`` (connected, no answer in time: paused or hung),
        ``unknown`` (its address was never seen)."""
        address = self._addresses.get(broker_id)
        if address is None:
            try:
                self.metadata([])
            except ConnectionError:
                pass
            address = self._addresses.get(broker_id)
            if address is None:
                return "unknown"
        try:
            metadata_request(*address, [], self.request_timeout_s)
            return "running"
        except socket.timeout:
            return "silent"
        except (OSError, ValueError, EOFError):
            return "down"

    # -- ZooKeeper, when it is reachable -----------------------------------------------------------------------

    @property
    def zookeeper_connect(self) -> str | None:
        """The ZooKeeper connect string (``$KAFKALAB_ZOOKEEPER_CONNECT``), or None when it was not given."""
        return self._zookeeper_connect

    #: no ZooKeeperServer or state directory of ours (``Cluster.zookeeper``, ``Cluster.dir``)
    zookeeper = None
    dir = None

    @property
    def zk(self):
        """A started kazoo client on the cluster's ZooKeeper (``zk.get_children("/brokers/ids")``)."""
        self._check_open()
        if self._zookeeper_connect is None:
            raise ZooKeeperUnavailable(f"no ZooKeeper address: set {ZOOKEEPER_ENV} (e.g. zookeeper:2181 inside "
                                       "the compose network, localhost:2181 on the host)")
        with self._lock:
            if self._zk_client is None:
                if self._zk_failed_at is not None and time.monotonic() - self._zk_failed_at < 10:
                    raise ZooKeeperUnavailable(f"ZooKeeper at {self._zookeeper_connect} cannot be reached")
                from kazoo.client import KazooClient
                client = KazooClient(hosts=self._zookeeper_connect, timeout=10.0)
                try:
                    client.start(timeout=5.0)
                except Exception as exc:   # noqa: BLE001 - kazoo's timeout, or a name that does not resolve
                    client.stop()
                    client.close()
                    self._zk_failed_at = time.monotonic()
                    raise ZooKeeperUnavailable(f"ZooKeeper at {self._zookeeper_connect} cannot be reached: "
                                               f"{exc}") from None
                self._zk_client = client
            return self._zk_client

    def _zk_read(self, method: str, path: str, timeout_s: float = 3.0):
        """``zk.<method>(path)`` with a timeout, as ``Cluster._zk_read``. Without a ZooKeeper address the one
        read the dashboard makes, the children of ``/brokers/topics``, is answered from Metadata."""
        if self._zookeeper_connect is None:
            if method == "get_children" and path == zk_data.BROKER_TOPICS:
                return sorted(self.metadata()["topics"])
            raise ZooKeeperUnavailable(f"no ZooKeeper address ({ZOOKEEPER_ENV} is not set)")
        return timed_zk_read(self.zk, self._zookeeper_connect, method, path, timeout_s)

    def _registered_ids(self) -> set[int] | None:
        """The registered brokers: ``/brokers/ids`` when ZooKeeper is reachable, else the live brokers of a
        Metadata answer; None when neither can be read."""
        if self._zookeeper_connect is not None:
            try:
                ids = {int(i) for i in self._zk_read("get_children", zk_data.BROKER_IDS)}
                self._known_ids.update(ids)
                return ids
            except Exception:   # noqa: BLE001 -- ZooKeeper down: fall back on Kafka's view
                pass
        try:
            return set(self.metadata([])["brokers"])
        except ConnectionError:
            return None

    def _registered(self, broker_id: int) -> bool | None:
        ids = self._registered_ids()
        return None if ids is None else broker_id in ids

    # -- what a student looks at -----------------------------------------------------------------------------

    @property
    def broker_ids(self) -> list[int]:
        """Every broker id seen: in Metadata, in ZooKeeper, or among the compose project's containers."""
        if not self._known_ids:
            self._registered_ids()
            try:
                self.metadata([])
            except ConnectionError:
                pass
        if self.docker is not None:
            try:
                self._known_ids.update(self.docker.refresh())
            except DockerError:
                pass
        return sorted(self._known_ids)

    @property
    def controller(self) -> int | None:
        """The controller's id: ``/controller`` when ZooKeeper is reachable, else Metadata's ``controller_id``."""
        if self._zookeeper_connect is not None:
            try:
                data, _ = self._zk_read("get", zk_data.CONTROLLER)
                return zk_data.decode_controller(data)
            except ZooKeeperUnavailable:
                pass
            except Exception:   # noqa: BLE001 -- no /controller right now
                return None
        try:
            return self.metadata([])["controller"]
        except ConnectionError:
            return None

    def _alive(self, broker_id: int) -> str:
        if self.docker is not None:
            try:
                return self.docker.state(broker_id)
            except (DockerError, KeyError):
                pass
        return self.probe(broker_id)

    @property
    def brokers(self):
        """One row per broker: id, host, port, pid (None: not ours), alive (from Docker: running, paused,
        stopped, killed, exited, starting; without Docker from a probe: running, silent, down), registered
        (``/brokers/ids/<id>`` exists, or, without ZooKeeper, the broker is in the cluster's metadata),
        is_controller, container. A pandas DataFrame (a list of dicts without pandas)."""
        self._check_open()
        ids = self.broker_ids
        registered = self._registered_ids()
        controller = self.controller
        with ThreadPoolExecutor(max_workers=max(1, len(ids))) as pool:
            alive = dict(zip(ids, pool.map(self._alive, ids)))
        rows = []
        for i in ids:
            host, port = self._addresses.get(i, ("", 0))
            container = self.docker.container_name(i) if self.docker is not None else None
            rows.append({"id": i, "host": host, "port": port, "pid": None, "alive": alive[i],
                         "registered": None if registered is None else i in registered,
                         "is_controller": i == controller,
                         "container": container or self.service.format(id=i)})
        try:
            import pandas as pd
        except ImportError:
            return rows
        return pd.DataFrame(rows, columns=["id", "host", "port", "pid", "alive", "registered", "is_controller",
                                           "container"])

    def _partition_rows(self, topic: str) -> list[dict]:
        if self._zookeeper_connect is not None:
            try:
                return zookeeper_partition_rows(self._zk_read, topic)
            except ZooKeeperUnavailable:
                pass   # Metadata below
        md = self.metadata([topic])
        t = md["topics"].get(topic)
        if t is None or t["error"] != 0:
            raise KeyError(f"no topic {topic!r} in the cluster's metadata (error {None if t is None else t['error']})")
        return [{k: p[k] for k in ("partition", "leader", "replicas", "isr", "leader_epoch")} for p in t["partitions"]]

    def describe(self, topic: str, timeout_s: float = 1.0):
        """One row per partition of ``topic``: partition, leader, replicas, isr, leader_epoch (the partition
        state znodes when ZooKeeper is reachable, else Metadata), high_watermark (ListOffsets to the leader, as
        a consumer asks) and ``leo_<id>``, each replica's log end offset (ListOffsets with replica_id -2). A
        replica that cannot answer (down, paused) shows a missing value. Same columns as ``Cluster.describe``."""
        self._check_open()
        rows = self._partition_rows(topic)
        replica_ids = sorted({r for row in rows for r in row["replicas"]})
        if any(i not in self._addresses for i in replica_ids):
            try:
                self.metadata([])
            except ConnectionError:
                pass
        return describe_rows(rows, self._addresses.get, topic, timeout_s)

    def broker_configs(self, broker_id: int | None = None, names=WATCHED_CONFIGS) -> dict[str, str | None]:
        """Broker configs by DescribeConfigs (v1) from ``broker_id`` (default: the first that answers);
        ``names=None``: every config the broker has."""
        ids = [broker_id] if broker_id is not None else self.broker_ids
        errors = []
        for i in ids:
            address = self._addresses.get(i)
            if address is None:
                continue
            try:
                result = describe_broker_configs(*address, i, names, self.request_timeout_s)
            except (OSError, ValueError, EOFError) as exc:
                errors.append(f"broker {i}: {exc or type(exc).__name__}")
                continue
            if result.error_code:
                errors.append(f"broker {i}: error {result.error_code} {result.error_message or ''}")
                continue
            found = {c.name: c.value for c in result.configs}
            return found if names is None else {n: found.get(n) for n in names}
        raise ConnectionError("no broker answered DescribeConfigs: " + ("; ".join(errors) or "no broker known"))

    @property
    def configs(self) -> dict[str, str]:
        """Every broker config as a broker reports it (DescribeConfigs; read once). ``Cluster.configs`` holds
        what was set; this holds those and every other, so ``configs["zookeeper.session.timeout.ms"]`` works on
        both."""
        if self._configs is None:
            try:
                self._configs = {k: v for k, v in self.broker_configs(names=None).items() if v is not None}
            except ConnectionError:
                return {}
        return self._configs

    def lab_defaults(self):
        """The lab defaults the lessons rely on (:data:`~kafkalab.cluster.LAB_DEFAULTS`) next to what the
        brokers report: config, lab, kafka_default, broker, matches."""
        n = len(self.broker_ids) or 3
        reported = self.broker_configs()
        rows = [{"config": name, "lab": str(d.for_brokers(n)), "kafka_default": str(d.kafka_default),
                 "broker": reported.get(name), "matches": reported.get(name) == str(d.for_brokers(n))}
                for name, d in LAB_DEFAULTS.items()]
        try:
            import pandas as pd
        except ImportError:
            return rows
        return pd.DataFrame(rows)

    def broker_log(self, broker_id: int, lines: int = 30) -> str:
        """The last ``lines`` lines of the broker's container log (Docker API), or the command that shows it."""
        if self.docker is not None:
            return self.docker.logs(int(broker_id), lines)
        return f"(no Docker access here) run: docker compose logs --tail {lines} {self.service.format(id=broker_id)}"

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Disconnect (the cluster is not ours: nothing is stopped)."""
        with self._lock:
            self._closed = True
            client, self._zk_client = self._zk_client, None
        if client is not None:
            try:
                client.stop()
                client.close()
            except Exception:   # noqa: BLE001
                pass

    def shutdown(self) -> None:
        raise NotImplementedError("an external cluster is stopped where it runs: docker compose down")

    def __enter__(self) -> "ExternalCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return (f"<kafkalab ExternalCluster{state}: bootstrap_servers={self.bootstrap_servers!r}, "
                f"zookeeper={self._zookeeper_connect!r}, controls={self.controls!r}>")
