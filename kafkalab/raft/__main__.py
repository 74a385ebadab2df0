"""``python -m kafkalab.raft``: one controller of the mini KRaft quorum as a process of its own.

    python -m kafkalab.raft --node-id 1 --voters 1@127.0.0.1:41001,2@127.0.0.1:41002,3@127.0.0.1:41003 \\
        --metadata-log-dir /tmp/c1 [--config controller.quorum.election.timeout.ms=500 ...] [--parent-pid P]

It prints ``kafkalab raft node N ready on HOST:PORT`` once its listener is up. SIGTERM or SIGINT
stops it cleanly (a leader resigns first); with ``--parent-pid`` it also stops when that process is
gone, as the mini broker does.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from ..broker.utils.parent_watch import watch_parent
from .kafka_raft_client import RaftConfig
from .raft_config import parse_voters
from .raft_node import RaftNode

CONFIGS = {"controller.quorum.election.timeout.ms": "election_timeout_ms",
           "controller.quorum.fetch.timeout.ms": "fetch_timeout_ms",
           "controller.quorum.election.backoff.max.ms": "election_backoff_max_ms",
           "controller.quorum.request.timeout.ms": "request_timeout_ms"}
IDLE_INTERVAL = "metadata.max.idle.interval.ms"


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m kafkalab.raft", description=__doc__.splitlines()[0])
    p.add_argument("--node-id", type=int, required=True)
    p.add_argument("--voters", required=True, help="controller.quorum.voters: id@host:port,...")
    p.add_argument("--metadata-log-dir", required=True)
    p.add_argument("--listen", default=None, help="host:port for an observer (a voter listens where --voters says)")
    p.add_argument("--config", action="append", default=[], help="name=value (controller.quorum.*, "
                                                                  f"{IDLE_INTERVAL})")
    p.add_argument("--cluster-id", default=None, help="the cluster id DescribeCluster gives (kafka-storage's)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--parent-pid", type=int, default=None)
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


async def run(node: RaftNode, parent_pid: int | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watcher = loop.create_task(watch_parent(parent_pid, stop)) if parent_pid else None
    await node.start()
    url = getattr(node, "metrics_url", None)   # a ControllerNode's Kafka metrics (python -m kafkalab.controller)
    metrics = f" metrics={url}" if url else ""
    print(f"kafkalab raft node {node.config.node_id} ready on {node.server.host}:{node.server.port}{metrics}",
          flush=True)
    try:
        await stop.wait()
    finally:
        await node.stop(resign=True)
        if watcher is not None:
            watcher.cancel()


def main(argv=None, node_class=RaftNode, node_configs: dict | None = None, node_defaults: dict | None = None,
         string_configs: frozenset = frozenset()) -> int:
    """The command line; ``python -m kafkalab.controller`` calls it with its ``ControllerNode`` and the
    controller's own configs (``node_configs``: config name -> the node's keyword argument; ``node_defaults``:
    keyword argument -> its value when not given; ``string_configs``: those given as text, not integers)."""
    import random
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    node_configs = node_configs or {}
    try:
        voters = parse_voters(args.voters)
        raft_settings, node_settings, idle_ms = {}, dict(node_defaults or {}), 500
        for item in args.config:
            name, sep, value = (part.strip() for part in item.partition("="))
            if sep and name in string_configs and name in node_configs:
                node_settings[node_configs[name]] = value
                continue
            value = {"true": "1", "false": "0"}.get(value.lower(), value)    # boolean configs as 1/0
            if not sep or not value.lstrip("-").isdigit():
                raise ValueError(f"malformed --config {item!r} (name=integer, or true/false)")
            if name == IDLE_INTERVAL:
                idle_ms = int(value)
            elif name in CONFIGS:
                raft_settings[CONFIGS[name]] = int(value)
            elif name in node_configs:
                node_settings[node_configs[name]] = int(value)
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
    try:   # a controller's security configs are checked here (ValueError with the config's name)
        node = node_class(config, args.metadata_log_dir, idle_ms, random.Random(args.seed), listen, **node_settings)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    asyncio.run(run(node, args.parent_pid))
    return 0


if __name__ == "__main__":
    sys.exit(main())
