"""``python -m kafkalab.controller``: one KRaft controller (Raft replica + QuorumController) as a process.

    python -m kafkalab.controller --node-id 1 --voters 1@127.0.0.1:41001,2@127.0.0.1:41002,3@127.0.0.1:41003 \\
        --metadata-log-dir /tmp/c1 --cluster-id ID [--config broker.session.timeout.ms=3000 ...] [--parent-pid P]

The same arguments as ``python -m kafkalab.raft``, and the controller's configs: ``broker.session.timeout.ms``
(default 9000), ``num.partitions`` and ``default.replication.factor`` (CreateTopics' -1), ``min.insync.replicas`` and
``unclean.leader.election.enable`` (topic defaults the elections use), ``auto.leader.rebalance.enable``,
``leader.imbalance.check.interval.seconds`` and ``leader.imbalance.per.broker.percentage``, the bounds of a group's
configs (``group.share.min.session.timeout.ms`` and its siblings), the authorizer's (``authorizer.class.name``:
``org.apache.kafka.metadata.authorizer.StandardAuthorizer`` or none, ``super.users``,
``allow.everyone.if.no.acl.found``), besides
``controller.quorum.*`` and ``metadata.max.idle.interval.ms``; ``kafkalab.metrics.enabled`` (default true) and
``kafkalab.metrics.port`` (default 0: a free port; -1: not served), as a mini broker's; and, as text, what
secures the controller listener and the controller's connections to the others, by Kafka's names
(``listener.security.protocol.map`` with ``CONTROLLER:SASL_SSL``, ``controller.listener.names``,
``sasl.mechanism.controller.protocol``, ``listener.name.controller.ssl.*``,
``listener.name.controller.plain.sasl.jaas.config``, ...). It prints ``kafkalab raft
node N ready on HOST:PORT metrics=URL`` once its listener is up (``metrics=``: where Kafka's raft-metrics and
KafkaController metrics are served as Prometheus text; not there when not served); SIGTERM stops it cleanly (an
active controller resigns first).
"""
from __future__ import annotations

import sys

from ..raft.__main__ import main as raft_main
from ..broker.server.listener_config import is_security_config
from .controller_node import AUTHORIZER_CONFIGS, GROUP_BOUND_CONFIGS, LEADERSHIP_CONFIGS, ControllerNode
from .snapshot_generator import SNAPSHOT_CONFIGS

CONTROLLER_CONFIGS = {"broker.session.timeout.ms": "session_timeout_ms", "num.partitions": "default_num_partitions",
                      "default.replication.factor": "default_replication_factor",
                      "metadata.log.segment.bytes": "log_segment_bytes", **SNAPSHOT_CONFIGS,
                      **LEADERSHIP_CONFIGS, **GROUP_BOUND_CONFIGS, **AUTHORIZER_CONFIGS,
                      "kafkalab.metrics.enabled": "metrics_enabled", "kafkalab.metrics.port": "metrics_port"}
#: the configs whose values are text (the others are integers, or booleans as 1/0)
STRING_CONFIGS = frozenset({"authorizer.class.name", "super.users"})
#: as a broker's (kafkalab/broker/server/config.py): Kafka's metrics kept, served on a free port
DEFAULTS = {"metrics_enabled": 1, "metrics_port": 0}


def main(argv=None) -> int:
    """The security configs (:func:`~kafkalab.broker.server.listener_config.is_security_config`) are taken out as text
    for the controller listener and its connections; the rest go to ``python -m kafkalab.raft``'s command line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    rest, security = [], {}
    i = 0
    while i < len(argv):
        if argv[i] == "--config" and i + 1 < len(argv) and is_security_config(argv[i + 1].partition("=")[0].strip()):
            name, _, value = argv[i + 1].partition("=")
            security[name.strip()] = value.strip()
            i += 2
            continue
        rest.append(argv[i])
        i += 1
    return raft_main(rest, node_class=ControllerNode, node_configs=CONTROLLER_CONFIGS,
                     node_defaults={**DEFAULTS, "security_configs": security}, string_configs=STRING_CONFIGS)


if __name__ == "__main__":
    sys.exit(main())
