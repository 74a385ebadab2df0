"""``python -m kafkalab.controller``: one KRaft controller (Raft replica + QuorumController) as a process.

    python -m kafkalab.controller --node-id 1 --voters 1@127.0.0.1:41001,2@127.0.0.1:41002,3@127.0.0.1:41003 \\
        --metadata-log-dir /tmp/c1 --cluster-id ID [--config broker.session.timeout.ms=3000 ...] [--parent-pid P]

The same arguments as ``python -m kafkalab.raft``, and the controller's configs: ``broker.session.timeout.ms``
(default 9000), ``num.partitions`` and ``default.replication.factor`` (CreateTopics' -1), besides
``controller.quorum.*`` and ``metadata.max.idle.interval.ms``. It prints ``kafkalab raft node N ready on
HOST:PORT`` once its listener is up; SIGTERM stops it cleanly (an active controller resigns first).
"""
from __future__ import annotations

import asyncio
import logging
import random
import sys

from ..raft.__main__ import CONFIGS, IDLE_INTERVAL, parse_args, parse_voters, run
from ..raft.kafka_raft_client import RaftConfig
from .controller_node import ControllerNode

CONTROLLER_CONFIGS = {"broker.session.timeout.ms": "session_timeout_ms", "num.partitions": "default_num_partitions",
                      "default.replication.factor": "default_replication_factor"}


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        voters = parse_voters(args.voters)
        raft_settings, controller_settings, idle_ms = {}, {}, 500
        for item in args.config:
            name, sep, value = (part.strip() for part in item.partition("="))
            if not sep or not value.lstrip("-").isdigit():
                raise ValueError(f"malformed --config {item!r} (name=integer)")
            if name == IDLE_INTERVAL:
                idle_ms = int(value)
            elif name in CONFIGS:
                raft_settings[CONFIGS[name]] = int(value)
            elif name in CONTROLLER_CONFIGS:
                controller_settings[CONTROLLER_CONFIGS[name]] = int(value)
            else:
                raise ValueError(f"unknown --config {item!r}")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    listen = None
    if args.listen:
        host, _, port = args.listen.rpartition(":")
        listen = (host, int(port))
    config = RaftConfig(args.node_id, voters, cluster_id=args.cluster_id, **raft_settings)
    node = ControllerNode(config, args.metadata_log_dir, idle_ms, random.Random(args.seed), listen,
                          **controller_settings)
    asyncio.run(run(node, args.parent_pid))
    return 0


if __name__ == "__main__":
    sys.exit(main())
