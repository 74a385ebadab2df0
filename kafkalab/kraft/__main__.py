"""``python -m kafkalab.kraft --port P --log-dir D --broker-id N --config process.roles=broker
--config controller.quorum.voters=1@h:p,... --config cluster.id=ID [--config key=value ...]``

One mini broker in KRaft mode (:class:`~kafkalab.kraft.broker_server.BrokerServer`) as its own process,
with the arguments, ready line and exit statuses of ``python -m kafkalab.broker``::

    kafkalab broker 4 ready on 127.0.0.1:9092 log.dirs=/tmp/x

It is ready once the controllers have unfenced it.
"""
from __future__ import annotations

import asyncio
import logging
import sys

from ..broker.__main__ import parse_args, run
from ..broker.server.config import BrokerConfig
from ..broker.server.kafka_server import StartupError
from .broker_server import BrokerServer


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    overrides = {"broker.id": args.broker_id, "log.dirs": args.log_dir, "process.roles": "broker",
                 "listeners": f"PLAINTEXT://{args.host}:{args.port}"}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"--config expects key=value, got {item!r}", file=sys.stderr)
            return 2
        overrides[key.strip()] = value.strip()
    try:
        config = BrokerConfig(overrides)
        BrokerServer.check_config(config)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(run(config, args.parent_pid, server_class=BrokerServer))
    except StartupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
