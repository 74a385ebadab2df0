"""Broker and topic configuration, under Kafka's own names and defaults.

Kafka has two layers (see the "Broker Configs" and "Topic Configs" pages of
the Kafka documentation):

* **broker configs** (``server.properties``): ``num.partitions``,
  ``auto.create.topics.enable``, ``log.segment.bytes``, ...
* **topic configs**: ``segment.bytes``, ``retention.ms``, ``cleanup.policy``, ...
  Each topic config has a broker-wide default, usually the same name with a
  ``log.`` prefix (``retention.ms`` <- ``log.retention.ms``). A topic override
  set with CreateTopics or (Incremental)AlterConfigs wins over the default.

The topic configs, ``LogConfig`` and how configs are parsed live in the log layer,
:mod:`kafkalab.broker.log.log_config` (Kafka keeps ``LogConfig`` in its storage module), and are
re-exported here.

Values are kept as Python values (int, bool, str); :func:`parse` turns the
strings a client or a command line sends into them and raises ``ValueError``
with a message naming the config when a value does not fit.
"""
from __future__ import annotations

from typing import Any

from ..common.endpoint import DEFAULT_PROTOCOL_MAP, SECURITY_PROTOCOLS
from ..coordinator.group.group_config import BOUND_CONFIGS
from ..security.authorizer.acl_authorizer import AUTHORIZER_CLASS_NAMES
from ..log.log_config import (  # noqa: F401 (LogConfig re-exported: the broker's modules import it from here)
    ALL_TOPIC_CONFIGS, TOPIC_CONFIG_SYNONYMS, TOPIC_CONFIGS, TOPIC_TO_BROKER, topic_configs, ConfigDef,
    ConfigDescription, ConfigSource, ConfigSynonym,
    LogConfig, _between, _d, _nonneg, _positive, parse, to_string)
from .listener_config import SASL_CONFIGS, SSL_CONFIGS, ListenerConfigs, listener_override_def


_BROKER_ONLY: list[ConfigDef] = [
    _d("broker.id", "int", 0, "This broker's id", _nonneg),
    _d("listeners", "string", "PLAINTEXT://127.0.0.1:0", "Listener List - Comma-separated list of URIs we will "
       "listen on and the listener names (NAME://host:port; port 0: a free one). If the listener name is not a "
       "security protocol, listener.security.protocol.map must also be set. Listener names and port numbers must "
       "be unique unless one listener is an IPv4 address and the other an IPv6 address (for the same port). "
       "Kafka's default is PLAINTEXT://:9092; the mini broker's PLAINTEXT://127.0.0.1:0"),
    _d("advertised.listeners", "string", "", "Listeners to publish for clients to use (in Metadata, and in "
       "ZooKeeper), if different than the listeners config; per listener name. Unlike listeners, ports may "
       "repeat, and 0.0.0.0 is not valid (default: the listeners)"),
    _d("listener.security.protocol.map", "string", DEFAULT_PROTOCOL_MAP, "Map between listener names and "
       "security protocols, NAME:PROTOCOL,... (e.g. INTERNAL:PLAINTEXT,EXTERNAL:SSL). A listener's own SSL and "
       "SASL settings are set with the prefix listener.name.<listener name in lower case>. (e.g. "
       "listener.name.internal.ssl.keystore.location); unset, the generic config is used"),
    _d("inter.broker.listener.name", "string", None, "Name of listener used for communication between brokers "
       "(default: the one of security.inter.broker.protocol). Only one of it and security.inter.broker.protocol "
       "may be set"),
    _d("security.inter.broker.protocol", "string", "PLAINTEXT", "Security protocol used to communicate between "
       "brokers; the listener of that name is used", valid_values=SECURITY_PROTOCOLS),
    *SSL_CONFIGS,
    *SASL_CONFIGS,
    _d("log.dirs", "string", "", "Directory holding the partition directories"),
    _d("num.partitions", "int", 1, "Partitions of an auto-created topic", _positive),
    _d("default.replication.factor", "int", 1, "Replication factor of an auto-created topic", _positive),
    _d("auto.create.topics.enable", "bool", True, "Create a topic when a client asks for an unknown one"),
    _d("max.partitions.per.request", "int", 1000,
       "Most partitions one CreateTopics or CreatePartitions request may add (POLICY_VIOLATION beyond)", _positive),
    _d("max.broker.partitions", "int", 4000,
       "Most partitions a standalone broker hosts (KIP-578; also capped by the open-file limit)", _positive),
    _d("delete.topic.enable", "bool", True, "Allow DeleteTopics"),
    _d("offsets.topic.num.partitions", "int", 50, "Partitions of __consumer_offsets", _positive),
    _d("offsets.topic.replication.factor", "int", 1, "Replication factor of __consumer_offsets", _positive),
    _d("offsets.retention.minutes", "int", 10080, "How long committed offsets of an empty group are kept", _positive),
    _d("offsets.retention.check.interval.ms", "long", 600_000, "How often expired offsets are removed", _positive),
    _d("offset.metadata.max.bytes", "int", 4096, "Largest metadata string an offset commit may carry", _nonneg),
    _d("group.initial.rebalance.delay.ms", "int", 3000, "Wait for more members before the first rebalance", _nonneg),
    _d("group.min.session.timeout.ms", "int", 6000, "Smallest session.timeout.ms a consumer may ask for", _nonneg),
    _d("group.max.session.timeout.ms", "int", 1_800_000, "Largest session.timeout.ms a consumer may ask for", _nonneg),
    _d("group.max.size", "int", 2**31 - 1, "Most members a group may have", _positive),
    _d("group.consumer.session.timeout.ms", "int", 45000,
       "KIP-848 consumer groups: a member silent this long is fenced (the broker decides, not the client)", _positive),
    _d("group.consumer.heartbeat.interval.ms", "int", 5000,
       "KIP-848 consumer groups: how often members heartbeat (told in every ConsumerGroupHeartbeat response)",
       _positive),
    _d("group.consumer.assignors", "list", "uniform,range",
       "KIP-848 server-side assignors; the first is the default", None),
    _d("group.consumer.max.size", "int", 2**31 - 1, "Most members a KIP-848 consumer group may have", _positive),
    _d("group.consumer.regex.refresh.interval.ms", "int", 600_000,
       "KIP-848 consumer groups: how often the coordinator resolves the groups' subscribed regexes again "
       "(also when topics are created, at most every 10 s)", _positive),
    _d("group.consumer.migration.policy", "string", "bidirectional",
       "KIP-848 online migration of a group with members: upgrade (a classic group of the consumer protocol type "
       "becomes a consumer group when a consumer-protocol member joins), downgrade (a consumer group whose last "
       "consumer-protocol member leaves becomes a classic group), bidirectional or disabled; empty groups are "
       "always converted", valid_values=("disabled", "upgrade", "downgrade", "bidirectional")),
    _d("group.share.session.timeout.ms", "int", 45000,
       "KIP-932 share groups: a member silent this long is removed from its share group", _positive),
    _d("group.share.heartbeat.interval.ms", "int", 5000,
       "KIP-932 share groups: how often members heartbeat (told in every ShareGroupHeartbeat response)", _positive),
    _d("group.share.max.size", "int", 200, "Most members a KIP-932 share group may have", _positive),
    _d("group.share.record.lock.duration.ms", "int", 30000,
       "KIP-932: how long a share consumer holds a record it acquired before it becomes available again",
       _positive),
    _d("group.share.delivery.count.limit", "int", 5,
       "KIP-932: a record delivered this many times without being accepted is archived (never delivered again)",
       _between(2, 10)),
    _d("group.share.partition.max.record.locks", "int", 2000,
       "KIP-932: most records of one share-partition acquired (in flight) at once", _positive),
    *[_d(name, "int", default, f"The {'smallest' if '.min.' in name else 'largest'} "
         f"{name.replace('group.', '', 1).replace('.min.', '.', 1).replace('.max.', '.', 1)} a group may set "
         "(a group config, IncrementalAlterConfigs on a GROUP resource)", _positive)
      for name, default in BOUND_CONFIGS.items()],
    _d("share.coordinator.state.topic.num.partitions", "int", 50,
       "Partitions of __share_group_state (KIP-932: the share coordinator's topic)", _positive),
    _d("share.coordinator.state.topic.replication.factor", "int", 3,
       "Replication factor of __share_group_state (a standalone broker: 1)", _positive),
    _d("log.retention.check.interval.ms", "long", 300_000, "How often retention is checked", _positive),
    _d("log.initial.task.delay.ms", "long", 30_000,
       "When the first retention check runs after start-up (an internal config of Kafka's)", _nonneg),
    _d("log.retention.hours", "int", 168, "retention.ms default in hours (log.retention.ms wins)"),
    _d("log.retention.minutes", "int", None, "retention.ms default in minutes (log.retention.ms wins)"),
    _d("log.roll.hours", "int", 168, "segment.ms default in hours (log.roll.ms wins)", _positive),
    _d("log.roll.jitter.hours", "int", 0, "segment.jitter.ms default in hours (log.roll.jitter.ms wins)",
       _nonneg),
    _d("log.cleaner.enable", "bool", True, "Run the log cleaner for compacted topics"),
    _d("log.cleaner.backoff.ms", "long", 15_000, "Sleep between cleaner runs when nothing is cleanable", _nonneg),
    _d("log.flush.offset.checkpoint.interval.ms", "int", 60_000, "How often the recovery point is checkpointed",
       _nonneg),
    _d("log.flush.scheduler.interval.ms", "long", 2**63 - 1, "How often the flusher checks flush.ms", _nonneg),
    _d("socket.request.max.bytes", "int", 104_857_600, "Largest request frame; larger closes the connection",
       _positive),
    _d("replica.lag.time.max.ms", "long", 30_000, "A follower behind for longer leaves the ISR", _positive),
    _d("transactional.id.expiration.ms", "int", 604_800_000, "Idle time before producer state expires", _positive),
    _d("transaction.max.timeout.ms", "int", 900_000, "Largest transaction.timeout.ms a producer may ask for",
       _positive),
    _d("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10_000,
       "How often transactions past their timeout are aborted", _positive),
    _d("transaction.state.log.num.partitions", "int", 50, "Partitions of __transaction_state", _positive),
    _d("transaction.state.log.replication.factor", "int", 3,
       "Replication factor of __transaction_state (a standalone broker caps it at 1)", _positive),
    _d("transaction.state.log.min.isr", "int", 2,
       "min.insync.replicas of __transaction_state (capped at its replication factor)", _positive),
    _d("transaction.state.log.segment.bytes", "int", 104_857_600, "segment.bytes of __transaction_state",
       _positive),
    _d("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3_600_000,
       "How often transactional ids idle for transactional.id.expiration.ms are removed", _positive),
    _d("producer.id.expiration.ms", "int", 86_400_000, "Idle time before an idempotent producer's state goes",
       _positive),
    _d("cluster.id", "string", "", "Cluster id reported in Metadata (default: derived from log dir)"),
    _d("zookeeper.connect", "string", "", "ZooKeeper connection string (cluster mode)"),
    # -- cluster mode (ZooKeeper): the controller, replication, leader balance ------------------
    _d("zookeeper.session.timeout.ms", "int", 18_000, "ZooKeeper session timeout: a silent broker's "
       "registration disappears after it", _positive),
    _d("zookeeper.connection.timeout.ms", "int", None, "Longest wait to connect to ZooKeeper "
       "(unset: zookeeper.session.timeout.ms)"),
    _d("broker.rack", "string", None, "Rack of this broker (rack-aware replica placement)"),
    # -- KRaft mode (kafkalab.kraft.BrokerServer): no ZooKeeper, a controller quorum ----------------
    _d("process.roles", "string", "", "KRaft: 'broker' for a broker of a KRaft cluster, 'broker,controller' for a "
       "combined node (empty: ZooKeeper or standalone)"),
    _d("controller.quorum.voters", "string", "", "KRaft: the controllers, id@host:port,..."),
    _d("metadata.log.dir", "string", None, "KRaft: where __cluster_metadata-0 lives (unset: log.dirs)"),
    _d("broker.heartbeat.interval.ms", "int", 2000, "KRaft: how often a broker heartbeats to the active "
       "controller", _positive),
    _d("broker.session.timeout.ms", "int", 9000, "KRaft: a broker without heartbeats for this long is fenced "
       "(read by the controllers)", _positive),
    _d("controller.quorum.fetch.timeout.ms", "int", 2000, "KRaft: no Fetch answer from the quorum leader for "
       "this long: look for another", _positive),
    _d("controller.quorum.request.timeout.ms", "int", 2000, "KRaft: timeout of a request to a controller",
       _positive),
    # -- KRaft, read by a combined node's controller (process.roles=broker,controller) -----------------
    _d("controller.listener.names", "string", None, "KRaft: the controller listener's name (a combined node "
       "listens on it at its controller.quorum.voters address)"),
    _d("controller.quorum.election.timeout.ms", "int", 1000, "KRaft (combined node): a candidate without a "
       "majority after this long starts another election", _positive),
    _d("controller.quorum.election.backoff.max.ms", "int", 1000, "KRaft (combined node): longest random wait "
       "before another election", _positive),
    _d("metadata.max.idle.interval.ms", "int", 500, "KRaft (combined node): the active controller appends a "
       "NoOpRecord after this long without a record", _nonneg),
    _d("metadata.log.segment.bytes", "int", 1024 * 1024 * 1024, "KRaft (combined node): segment size of "
       "__cluster_metadata-0", _positive),
    _d("metadata.log.max.record.bytes.between.snapshots", "long", 20 * 1024 * 1024, "KRaft (combined node): a "
       "snapshot after this many bytes of committed metadata records", _positive),
    _d("metadata.log.max.snapshot.interval.ms", "long", 3_600_000, "KRaft (combined node): a snapshot after this "
       "long if anything was committed (0: never by time)", _nonneg),
    _d("metadata.max.retention.bytes", "long", 100 * 1024 * 1024, "KRaft (combined node): metadata log and "
       "snapshots kept up to this size (-1: no limit)"),
    _d("metadata.max.retention.ms", "long", 604_800_000, "KRaft (combined node): metadata log segments and "
       "snapshots older than this are deleted once a newer snapshot exists (-1: no limit)"),
    _d("controller.socket.timeout.ms", "int", 30_000, "Socket timeout of controller-to-broker requests",
       _positive),
    _d("controlled.shutdown.enable", "bool", True, "Move leadership away before shutting down"),
    _d("controlled.shutdown.max.retries", "int", 3, "ControlledShutdown attempts before shutting down anyway",
       _nonneg),
    _d("controlled.shutdown.retry.backoff.ms", "long", 5000, "Wait between ControlledShutdown attempts", _nonneg),
    _d("auto.leader.rebalance.enable", "bool", True, "Move leadership back to preferred replicas in the "
       "background"),
    _d("leader.imbalance.check.interval.seconds", "long", 300, "How often the controller checks leader balance",
       _positive),
    _d("leader.imbalance.per.broker.percentage", "int", 10, "Share of non-preferred leaders on a broker that "
       "triggers a preferred-leader election", _nonneg),
    _d("replica.fetch.wait.max.ms", "int", 500, "Longest a follower's Fetch waits at the leader", _nonneg),
    _d("replica.fetch.min.bytes", "int", 1, "Bytes a follower's Fetch waits for", _positive),
    _d("replica.fetch.max.bytes", "int", 1_048_576, "Bytes a follower fetches per partition", _nonneg),
    _d("replica.fetch.response.max.bytes", "int", 10_485_760, "Bytes a follower fetches per request", _nonneg),
    _d("replica.fetch.backoff.ms", "int", 1000, "Sleep after a follower's fetch failed", _nonneg),
    _d("replica.socket.timeout.ms", "int", 30_000, "Socket timeout of follower fetches", _positive),
    _d("num.replica.fetchers", "int", 1, "Fetcher threads per source broker", _positive),
    _d("max.incremental.fetch.session.cache.slots", "int", 1000, "Incremental fetch sessions (KIP-227) the "
       "broker keeps", _nonneg),
    _d("quota.window.num", "int", 11, "Samples kept to measure a client's rate against its quota", _positive),
    _d("quota.window.size.seconds", "int", 1, "Time span of each quota sample", _positive),
    _d("replica.high.watermark.checkpoint.interval.ms", "long", 5000, "How often high watermarks are "
       "written to replication-offset-checkpoint", _positive),
    # -- authorization (Kafka's AclAuthorizer / StandardAuthorizer configs) ----------------------------------------
    _d("authorizer.class.name", "string", "", "The authorizer: kafka.security.authorizer.AclAuthorizer "
       "(ZooKeeper mode, standalone; not in Kafka 4, a KRaft node refuses it) or "
       "org.apache.kafka.metadata.authorizer.StandardAuthorizer (KRaft, standalone); empty: none, every request is "
       "allowed", valid_values=("",) + AUTHORIZER_CLASS_NAMES),
    _d("super.users", "string", "", "Principals allowed everything, no ACL read (User:admin;User:ops)"),
    _d("allow.everyone.if.no.acl.found", "bool", False,
       "With an authorizer: allow an action on a resource no ACL matches (false: denied)"),
    # -- kafkalab's own (not in Kafka, whose metrics are JMX MBeans): the metrics served as Prometheus text ------
    _d("kafkalab.metrics.enabled", "bool", True, "kafkalab's own, not in Kafka: keep Kafka's metrics "
       "(kafka.server, kafka.network, kafka.log, kafka.controller) and serve them; false: none are kept"),
    _d("kafkalab.metrics.port", "int", 0, "kafkalab's own, not in Kafka: the port of http://<host>:<port>/metrics, "
       "this broker's metrics as Prometheus text under the JMX exporter's names (0: a free port; -1: no server, "
       "the metrics are still kept)", _between(-1, 65535)),
]

#: Broker configs (server.properties), including the broker-wide topic defaults.
BROKER_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in _BROKER_ONLY}
for _topic_name, _broker_name in TOPIC_TO_BROKER.items():
    _t = TOPIC_CONFIGS[_topic_name]
    BROKER_CONFIGS.setdefault(_broker_name, ConfigDef(_broker_name, _t.type, _t.default, _t.doc,
                                                      _t.validator, _t.valid_values))
BROKER_CONFIGS["log.retention.ms"] = ConfigDef("log.retention.ms", "long", None,
                                               "retention.ms default; unset means log.retention.hours")
BROKER_CONFIGS["log.roll.ms"] = ConfigDef("log.roll.ms", "long", None,
                                          "segment.ms default; unset means log.roll.hours")
BROKER_CONFIGS["log.roll.jitter.ms"] = ConfigDef("log.roll.jitter.ms", "long", None,
                                                 "segment.jitter.ms default; unset means log.roll.jitter.hours")

#: Broker configs that stand for one another, most specific first (Kafka's
#: ``DynamicBrokerConfig.brokerConfigSynonyms``): ``log.retention.ms`` wins over
#: ``log.retention.minutes``, which wins over ``log.retention.hours``.
BROKER_SYNONYM_GROUPS: list[list[str]] = [
    [b for b, _ in TOPIC_CONFIG_SYNONYMS[t]] for t in ("retention.ms", "segment.ms", "segment.jitter.ms")]


class BrokerConfig:
    """A broker's configs: Kafka defaults overridden by what was given.

    ``BrokerConfig({"num.partitions": "3"})["num.partitions"] == 3``. Unknown
    names raise ``ValueError`` naming the config, so a typo is caught early.
    """

    def __init__(self, overrides: dict[str, Any] | None = None):
        self._values = {name: d.default for name, d in BROKER_CONFIGS.items()}
        self.overrides: dict[str, Any] = {}
        self._listener_configs: ListenerConfigs | None = None
        for name, value in (overrides or {}).items():
            self.set(name, value)
        self._listener_configs = ListenerConfigs(self)   # Kafka's KafkaConfig checks its listeners when made

    def set(self, name: str, value: Any) -> None:
        """Set one config; ``listener.name.<listener>.[<mechanism>.]<config>`` sets a listener's own value of
        ``<config>`` (:func:`~kafkalab.broker.server.listener_config.listener_override_def` says which)."""
        defn = BROKER_CONFIGS.get(name)
        if defn is None:
            defn = listener_override_def(name, BROKER_CONFIGS)
            if defn is None:
                raise ValueError(f"Unknown broker configuration {name!r}")
            self.overrides[name] = parse(defn, value)
        else:
            self._values[name] = self.overrides[name] = parse(defn, value)
        self._listener_configs = None

    @property
    def listener_configs(self) -> ListenerConfigs:
        """The listeners, their security protocols and configs (parsed and checked, Kafka's ``KafkaConfig``)."""
        if self._listener_configs is None:
            self._listener_configs = ListenerConfigs(self)
        return self._listener_configs

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def get(self, name: str) -> Any:
        """A config's value, also of a listener's own config (``listener.name.<l>.sasl.enabled.mechanisms``);
        None if it has none (a listener override not set)."""
        if name in self.overrides:
            return self.overrides[name]
        return self._values.get(name)

    def topic_default(self, topic_config: str) -> Any:
        """The broker-wide default of a topic config (``retention.ms`` <- ``log.retention.ms``)."""
        for broker_name, factor in TOPIC_CONFIG_SYNONYMS.get(topic_config, ()):
            value = self._values[broker_name]
            if value is not None:
                return value * factor if factor != 1 else value
        return ALL_TOPIC_CONFIGS[topic_config].default

    def items(self):
        return self._values.items()

    def synonyms(self, names) -> list[ConfigSynonym]:
        """Where the broker configs ``names`` get their values: static ones (set at start-up) first,
        then Kafka's built-in defaults, as Kafka lists them."""
        static = [ConfigSynonym(n, to_string(self.overrides[n]), ConfigSource.STATIC_BROKER_CONFIG)
                  for n in names if n in self.overrides and self.overrides[n] is not None]
        default = [ConfigSynonym(n, to_string(BROKER_CONFIGS[n].default), ConfigSource.DEFAULT_CONFIG)
                   for n in names if BROKER_CONFIGS[n].default is not None]
        return static + default

    def describe(self, name: str) -> ConfigDescription:
        """A broker config as DescribeConfigs shows it. All are read-only: the mini broker has no
        dynamic broker configs (KIP-226), they are set when it starts."""
        group = next((g for g in BROKER_SYNONYM_GROUPS if name in g), [name])
        synonyms = self.synonyms(group[group.index(name):])
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        return ConfigDescription(name, to_string(self._values[name]), source, synonyms, True, BROKER_CONFIGS[name])
