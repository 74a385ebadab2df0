"""``kafkalab.connect()``: the Kafka a lesson talks to — embedded, or a real cluster.

Every notebook starts with::

    kafka = kafkalab.connect()

and ends with ``kafka.close()``. What ``connect()`` returns depends on where
the notebook runs:

* **On a laptop or in CI** (the default): a fresh mini broker inside the
  notebook's own kernel (:func:`kafkalab.mini`), listening on a free port of
  127.0.0.1 and writing into a temporary directory that ``close()`` removes.
* **A local cluster to break** — ``kafkalab.connect(brokers=3)``: a real
  ZooKeeper and three broker processes (:func:`kafkalab.cluster`); the lab
  defaults (:data:`kafkalab.cluster.LAB_DEFAULTS`) apply, ``broker_configs``
  override them, ``kafka.cluster`` is the :class:`~kafkalab.cluster.Cluster`
  with its controls (``kafka.cluster.kill(2)``, ``.describe(topic)``, ...),
  and ``close()`` stops it all. With ``KAFKALAB_BACKEND=kafka`` in the
  environment the brokers are Apache Kafka 3.9's own (``kafkalab fetch-kafka``
  first): the same lesson on the real thing, except what only kafkalab's
  brokers can do (fault injection). Without ``brokers=N`` that variable makes
  ``connect()`` start one Kafka broker process (a JVM cannot be embedded):
  ``kafka.broker`` is then ``None``, and the broker's files are in
  ``kafka.cluster.brokers["log_dir"]``.
* **In KRaft mode** — with ``KAFKALAB_MODE=kraft`` in the environment, the
  clusters ``connect(brokers=N)`` starts have no ZooKeeper: three controllers
  form the metadata quorum (:func:`kafkalab.cluster` with ``mode="kraft"``;
  with ``KAFKALAB_BACKEND=kafka`` Apache Kafka 4.x's own nodes). Without
  ``brokers=N`` that variable, too, makes ``connect()`` start a one-broker
  cluster rather than an embedded broker: a mini broker in the kernel is a
  standalone broker, of neither architecture.
* **A cluster started from a terminal** with ``kafkalab up``: with the two
  lines it prints exported (``KAFKALAB_BOOTSTRAP_SERVERS`` and
  ``KAFKALAB_CLUSTER_DIR``) before starting JupyterLab, ``connect()`` attaches
  to it: ``kafka.cluster`` reads and controls it (through ``kafkalab up``'s
  supervisor), so a notebook's dashboard watches while a terminal breaks it.
  ``close()`` only disconnects; ``kafkalab down`` stops it.
* **Against a real cluster** — the workshop's ``docker compose up`` or any
  Kafka you run yourself: set the environment variable
  ``KAFKALAB_BOOTSTRAP_SERVERS`` (a comma-separated ``host:port`` list, the
  value of the clients' ``bootstrap.servers`` config) before starting
  JupyterLab. ``connect()`` then starts nothing, and ``close()`` stops nothing.
  Where the environment also says how that cluster is run
  (``KAFKALAB_ZOOKEEPER_CONNECT`` or ``KAFKALAB_COMPOSE_PROJECT``, as the
  workshop's compose file sets them), ``kafka.cluster`` is an
  :class:`~kafkalab.cluster.external.ExternalCluster` with the same controls:
  ``kill(2)`` goes through the Docker API or prints the ``docker compose`` command.

A lesson that needs kafkalab's own brokers whatever the environment says (lesson
02 injects faults, lesson 04 sets the broker's clock and reads its files) asks
for them with ``connect(local=True)``: in the workshop it then runs on brokers
started inside the notebook's container, next to the compose cluster.

Either way the object has ``.bootstrap_servers`` and ``.close()``, works as
a context manager, and can create the topics a lesson needs
(:meth:`LabKafka.create_topic`). Clients never know the difference: they
speak the same protocol to both.

An embedded broker lives in the kernel's process, so it dies with the
kernel (restart the kernel and it is gone; at interpreter exit every open
broker is closed). Running ``connect()`` again — say you re-run a notebook
from the top after a cell failed — first closes the broker the previous
``connect()`` started, so re-running never piles up brokers.
"""
from __future__ import annotations

import os
import time
import warnings

from .broker.mini import MiniBroker, config_name
from .cluster.cluster import Cluster
from .cluster.configs import MODE_ENV_VAR, mode_from_env as _mode  # noqa: F401 -- MODE_ENV_VAR importable from here too

ENV_VAR = "KAFKALAB_BOOTSTRAP_SERVERS"
#: the brokers of a local cluster (``connect(brokers=N)``): ``mini`` (the default) or ``kafka``
BACKEND_ENV_VAR = "KAFKALAB_BACKEND"
"""Name of the environment variable that points the lessons at an external cluster."""

_current: "LabKafka | None" = None

# The helper's own admin clients log warnings and errors only: librdkafka's informational lines
# (connection closed, queue purged on destroy) would otherwise show up in the notebook's cells.
_ADMIN_LOG_LEVEL = 4


class LabKafka:
    """A handle on the Kafka a lesson uses: ``.bootstrap_servers``, ``.close()``.

    ``broker`` is the embedded :class:`~kafkalab.broker.mini.MiniBroker`, or
    ``None`` when the lesson talks to a cluster. ``cluster`` is the local
    :class:`~kafkalab.cluster.Cluster` that ``connect(brokers=N)`` started, or ``None``.
    """

    def __init__(self, bootstrap_servers: str, broker: MiniBroker | None = None, cluster: Cluster | None = None):
        self.bootstrap_servers = bootstrap_servers
        self.broker = broker
        self.cluster = cluster
        self._closed = False

    @property
    def embedded(self) -> bool:
        """True when the broker runs inside this kernel (``kafkalab.mini()``)."""
        return self.broker is not None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def listeners(self) -> dict[str, str]:
        """Each listener's name -> where a client of it connects (every broker's ``host:port``, comma-separated): the
        embedded broker's or the cluster's listeners (``listeners=`` configs add some), ``PLAINTEXT`` alone for an
        external cluster, whose listeners the lab does not know."""
        if self.broker is not None:
            return self.broker.listeners
        if self.cluster is not None and hasattr(self.cluster, "listeners"):
            return self.cluster.listeners
        return {"PLAINTEXT": self.bootstrap_servers}

    def client_config(self, **overrides) -> dict:
        """A confluent-kafka config dict: ``bootstrap.servers`` plus ``overrides``.

        Python-style names are turned into Kafka's (``group_id`` -> ``group.id``)::

            Consumer(kafka.client_config(group_id="lesson", enable_auto_commit=False))
        """
        config = {"bootstrap.servers": self.bootstrap_servers}
        config.update({config_name(k): v for k, v in overrides.items()})
        return config

    def metrics(self, names=None):
        """Kafka's own metrics of the brokers this lesson talks to, under the names the Prometheus JMX exporter gives
        them (``kafka_server_replicamanager_underreplicatedpartitions``): a pandas DataFrame with the columns broker,
        metric, labels, value, time (:meth:`kafkalab.Cluster.metrics`, :meth:`kafkalab.MiniBroker.metrics`).
        ``names``: a metric name or prefix, or a list of them. An external cluster's metrics are not known here:
        they are served where its operators put them (the JMX exporter's port on each broker)."""
        self._check_open()
        if self.broker is not None:
            return self.broker.metrics(names)
        if self.cluster is not None:
            return self.cluster.metrics(names)
        raise RuntimeError("metrics() needs brokers kafkalab started (kafkalab.connect() without "
                           "KAFKALAB_BOOTSTRAP_SERVERS, or `kafkalab up`): an external cluster's metrics are "
                           "served where its operators put them, not known to the lab")

    def topics(self) -> list[str]:
        """Names of the topics the cluster has (internal ones like ``__consumer_offsets`` excluded)."""
        self._check_open()
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": _ADMIN_LOG_LEVEL})
        try:
            names = admin.list_topics(timeout=15).topics
            return sorted(n for n in names if not n.startswith("__"))
        finally:
            del admin

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None,
                     **configs) -> str:
        """Create a topic and return its name.

        ``replication_factor=None`` takes the cluster's ``default.replication.factor``.
        ``configs`` are topic configs under Kafka's names (``**{"retention.ms": 60000}``)
        or Python ones (``retention_ms=60000``).

        A topic that already exists is never reused — a re-run of a lesson
        against a long-lived cluster would otherwise find the events of the
        previous run in it. Instead the name gets a suffix (``events-2``,
        ``events-3``, ...), a note says so, and the name actually used is
        returned: always write ``topic = kafka.create_topic("events")``.
        """
        self._check_open()
        from confluent_kafka.admin import AdminClient, NewTopic

        topic_configs = {config_name(k): str(v) for k, v in configs.items()}
        existing = set(self.topics())
        chosen, n = name, 1
        while chosen in existing:
            n += 1
            chosen = f"{name}-{n}"
        if chosen != name:
            print(f"note: topic {name!r} already exists (from an earlier run?); using {chosen!r} instead")

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": _ADMIN_LOG_LEVEL})
        try:
            futures = admin.create_topics(
                [NewTopic(chosen, partitions, -1 if replication_factor is None else replication_factor,
                          config=topic_configs)],
                operation_timeout=30, request_timeout=30)
            futures[chosen].result(60)
        finally:
            del admin
        self.wait_for_topic(chosen, partitions)
        return chosen

    def wait_for_topic(self, topic: str, partitions: int, timeout_s: float = 30.0) -> None:
        """Wait until every live broker's metadata shows ``topic`` with ``partitions`` partitions, each with a leader.

        Kafka answers CreateTopics and CreatePartitions once the controller has made the change; each broker
        learns of it a moment later (from the controller's UpdateMetadata in ZooKeeper mode, from the metadata
        log in KRaft). Until then a client whose Metadata request reaches a broker that has not caught up sees
        the topic missing, or with its old partition count: a producer would hash keys over too few partitions.
        Each broker is asked directly (Metadata v7 on a socket of its own), so no broker is left out."""
        self._check_open()
        from .cluster.kafka_requests import metadata_answer, metadata_request

        def shows_topic(answer) -> bool:
            t = answer["topics"].get(topic)
            return (t is not None and t["error"] == 0 and len(t["partitions"]) == partitions
                    and all(p["leader"] is not None for p in t["partitions"]))

        bootstrap = [hp.rsplit(":", 1) for hp in self.bootstrap_servers.split(",")]
        deadline = time.monotonic() + timeout_s
        behind: list = []
        while True:
            brokers, behind = None, []
            for host, port in bootstrap:
                try:
                    brokers = metadata_answer(metadata_request(host, int(port), topics=[]))["brokers"]
                    break
                except OSError:
                    continue
            for node, (host, port) in sorted((brokers or {}).items()):
                try:
                    if not shows_topic(metadata_answer(metadata_request(host, port, topics=[topic]))):
                        behind.append(node)
                except OSError:
                    behind.append(node)
            if brokers and not behind:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {topic!r}: after {timeout_s:.0f} s, brokers {behind or 'none reachable'} "
                                   f"still do not show {partitions} partitions, each with a leader")
            time.sleep(0.05)

    def close(self) -> None:
        """Stop the embedded broker or the local cluster (and delete its temporary directory); a no-op for
        an external cluster."""
        global _current
        if self.broker is not None:
            self.broker.close()
        if self.cluster is not None:
            self.cluster.close()
        self._closed = True
        if _current is self:
            _current = None

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this kafkalab connection is closed; run kafkalab.connect() again")

    def __enter__(self) -> "LabKafka":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.embedded:
            kind = "embedded mini broker"
        elif self.cluster is not None and not getattr(self.cluster, "external", False):
            kind = f"local cluster of {len(self.cluster.broker_ids)} brokers"
        else:
            kind = f"external cluster (from {ENV_VAR})"
        state = " closed" if self._closed else ""
        return f"<kafkalab{state}: {kind}, bootstrap_servers={self.bootstrap_servers!r}>"


def _up_cluster() -> Cluster | None:
    """The cluster ``kafkalab up`` started, attached, when the environment points at it: ``$KAFKALAB_CLUSTER_DIR``
    (what ``kafkalab up`` prints to export), or ``$KAFKALAB_BOOTSTRAP_SERVERS`` naming the brokers of the one in
    the default state directory. Its controls (``kafka.cluster.kill(2)``, the dashboard's buttons) go through
    ``kafkalab up``'s supervisor; ``close()`` only disconnects (``kafkalab down`` stops it)."""
    from .cluster.supervisor import DIR_ENV_VAR, classify, default_dir, open_cluster, supervisor_state
    directory = os.environ.get(DIR_ENV_VAR, "").strip()
    if directory:
        return open_cluster(directory)   # a clear error when it is not running
    wanted = os.environ.get(ENV_VAR, "").strip()
    if wanted:
        directory = default_dir()
        if classify(directory) == "running" and (supervisor_state(directory) or {}).get("bootstrap_servers") == wanted:
            return open_cluster(directory)
    return None


def _external_cluster(bootstrap_servers: str):
    """The controls of an external cluster whose environment says how it is run, else None (see
    :meth:`kafkalab.cluster.external.ExternalCluster.from_env`); a failure there must not stop the lesson."""
    from .cluster.external import ExternalCluster
    try:
        return ExternalCluster.from_env(bootstrap_servers)
    except Exception as exc:   # noqa: BLE001 -- e.g. controls='docker' without Docker: produce/consume still work
        warnings.warn(f"kafka.cluster is not available: {exc}", stacklevel=3)
        return None


def _backend() -> str:
    return os.environ.get(BACKEND_ENV_VAR, "").strip() or "mini"


def connect(bootstrap_servers: str | None = None, brokers: int | None = None, local: bool = False,
            **broker_configs) -> LabKafka:
    """The Kafka a lesson talks to; see the module docstring.

    ``bootstrap_servers`` (or else ``$KAFKALAB_BOOTSTRAP_SERVERS``) selects an
    external cluster. Otherwise, with ``brokers=N`` a local cluster of N broker
    processes and a ZooKeeper starts (:func:`kafkalab.cluster`), and without it
    a mini broker starts in this process (one Kafka broker process with
    ``$KAFKALAB_BACKEND=kafka`` or ``$KAFKALAB_MODE=kraft``; the cluster is a
    KRaft one with ``$KAFKALAB_MODE=kraft``). ``broker_configs`` (Kafka's broker
    config names, e.g. ``**{"num.partitions": 3}``) go to those brokers; they
    cannot change an external cluster and are ignored there with a warning.

    ``local=True`` starts the lesson's own broker (or, with ``brokers=N``, its own
    cluster) even where ``$KAFKALAB_BOOTSTRAP_SERVERS`` or a ``kafkalab up`` cluster
    is set: for lessons that need what only kafkalab's brokers have — fault
    injection, the broker's clock and its files — and so would fail on the
    workshop's Apache Kafka brokers.
    """
    global _current
    if _current is not None and not _current.closed:
        _current.close()
    if local and bootstrap_servers:
        raise ValueError("connect(local=True) starts brokers of its own: it takes no bootstrap_servers")
    attached = None if bootstrap_servers or local else _up_cluster()
    bootstrap_servers = None if local else bootstrap_servers or os.environ.get(ENV_VAR, "").strip() or None
    if attached is not None:
        if broker_configs or brokers is not None:
            warnings.warn(f"{sorted(broker_configs) + (['brokers'] if brokers is not None else [])} are ignored: "
                          f"the cluster 'kafkalab up' started in {attached.dir} is used as it is", stacklevel=2)
        _current = LabKafka(attached.bootstrap_servers, cluster=attached)
    elif bootstrap_servers:
        if broker_configs or brokers is not None:
            ignored = sorted(broker_configs) + (["brokers"] if brokers is not None else [])
            warnings.warn(f"{ignored} are ignored: {ENV_VAR} points at an external cluster, which starts "
                          f"nothing and whose brokers keep their own configuration", stacklevel=2)
        _current = LabKafka(bootstrap_servers, cluster=_external_cluster(bootstrap_servers))
    elif brokers is not None or _backend() != "mini" or _mode() != "zookeeper":
        # With brokers=N a local cluster; without it, one broker process of the lesson's own where the
        # environment asks for Kafka's brokers (a JVM cannot run inside this kernel) or for KRaft mode
        from .cluster.cluster import cluster
        started = cluster(brokers=1 if brokers is None else brokers, backend=_backend(), mode=_mode(),
                          **broker_configs)
        _current = LabKafka(started.bootstrap_servers, cluster=started)
    else:
        broker = MiniBroker(**broker_configs)
        _current = LabKafka(broker.bootstrap_servers, broker)
    return _current
