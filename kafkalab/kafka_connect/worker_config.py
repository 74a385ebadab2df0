"""A distributed worker's configuration (``connect-distributed.properties``), with the lab's defaults.

Every name is Kafka Connect's own (``DistributedConfig``, ``WorkerConfig``). What the lab sets differently
from Connect's defaults, and why, is :data:`LAB_DEFAULTS` (and docs/connect.md):

========================================  ================  ==========  ==============================================
config                                    Connect default   lab         why
========================================  ================  ==========  ==============================================
key.converter / value.converter           (none: required)  JsonConver  Connect's sample file names JsonConverter too
key/value.converter.schemas.enable        true              false       plain JSON in the topic, no schema envelope
offset.flush.interval.ms                  60000             1000        source offsets visible in the offsets topic
                                                                        within a second (and fewer lines redelivered
                                                                        after a crash)
scheduled.rebalance.max.delay.ms          300000            3000        a dead worker's tasks move in seconds, not
                                                                        five minutes (KIP-415's delay)
session.timeout.ms                        10000             6000        the broker's group.min.session.timeout.ms:
                                                                        a killed worker is noticed sooner
heartbeat.interval.ms                     3000              1000        a third of the session, as Connect's is
offset.storage.partitions                 25                5           fewer files on a laptop's broker
*.storage.replication.factor              3                 brokers     as many as the cluster has, at most 3
plugin.discovery                          hybrid_warn       service_l.  every plugin here has a ServiceLoader
                                                                        manifest: no class-path scan at start-up
========================================  ================  ==========  ==============================================
"""
from __future__ import annotations

#: the lab's worker defaults: see the table above
LAB_DEFAULTS: dict[str, object] = {
    "group.id": "connect-cluster",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "key.converter.schemas.enable": "false",
    "value.converter.schemas.enable": "false",
    "offset.storage.topic": "connect-offsets",
    "offset.storage.partitions": 5,
    "config.storage.topic": "connect-configs",
    "status.storage.topic": "connect-status",
    "status.storage.partitions": 5,
    "offset.flush.interval.ms": 1000,
    "scheduled.rebalance.max.delay.ms": 3000,
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 1000,
    "plugin.discovery": "service_load",
}
#: what :func:`worker_config` sets from its arguments; ``configs`` may not override these
OWNED = ("bootstrap.servers", "listeners", "rest.advertised.host.name", "rest.advertised.port",
         "rest.advertised.listener")
REPLICATION_FACTORS = ("offset.storage.replication.factor", "config.storage.replication.factor",
                       "status.storage.replication.factor")
HOST = "127.0.0.1"


def kafka_name(name: str) -> str:
    """``offset_flush_interval_ms`` -> ``offset.flush.interval.ms``; a name with a dot is kept as it is."""
    return name if "." in name else name.replace("_", ".")


def worker_config(bootstrap_servers: str, rest_port: int, brokers: int, configs: dict | None = None) -> dict:
    """The worker config for a worker whose REST API listens on ``127.0.0.1:rest_port``.

    ``brokers`` (how many brokers the Kafka cluster has) sets the internal topics' replication factor
    (at most 3, Connect's default). ``configs`` are more worker configs under Kafka's names or Python ones;
    they win over the lab's defaults, except for the connection and listener, which the lab owns."""
    if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
        raise ValueError("bootstrap_servers: give the brokers as 'host:port[,host:port...]'")
    if not isinstance(rest_port, int) or not 0 < rest_port < 65536:
        raise ValueError(f"rest_port {rest_port!r} is not a TCP port")
    if not isinstance(brokers, int) or brokers < 1:
        raise ValueError(f"brokers {brokers!r}: a Kafka cluster has at least one broker")
    extra = {kafka_name(k): v for k, v in (configs or {}).items()}
    clash = sorted(set(extra) & set(OWNED))
    if clash:
        raise ValueError(f"{', '.join(clash)}: set by connect_cluster() itself (the broker it was given and a free "
                         f"port per worker); leave them out")
    config: dict[str, object] = {"bootstrap.servers": bootstrap_servers.strip(), **LAB_DEFAULTS}
    config.update({name: min(3, brokers) for name in REPLICATION_FACTORS})
    config.update({"listeners": f"http://{HOST}:{rest_port}", "rest.advertised.host.name": HOST,
                   "rest.advertised.port": rest_port})
    config.update(extra)
    for name in REPLICATION_FACTORS:
        factor = int(config[name])
        if factor > brokers:
            raise ValueError(f"{name}={factor} but the Kafka cluster has {brokers} broker(s): Connect could not "
                             f"create its internal topics (INVALID_REPLICATION_FACTOR)")
    return config


def to_properties(config: dict) -> str:
    """A Java ``.properties`` file, escaped so that any value reads back as it was written."""
    def escape(text: str) -> str:
        return (text.replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")
                .replace("#", "\\#").replace("!", "\\!"))
    return "".join(f"{escape(str(k))}={escape(str(v))}\n" for k, v in config.items())
