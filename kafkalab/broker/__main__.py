"""``python -m kafkalab.broker --port P --log-dir D [--broker-id N] [--config key=value ...]``

Runs one mini broker as its own process (what the cluster launcher starts,
and what a test kills with SIGKILL). Prints one line once it accepts
connections::

    kafkalab broker 0 ready on 127.0.0.1:9092 metrics=http://127.0.0.1:40123/metrics log.dirs=/tmp/x

(``metrics=``: where its Kafka metrics are served as Prometheus text; not there with ``kafkalab.metrics.port=-1``.)

SIGTERM and SIGINT shut it down cleanly (logs flushed, checkpoints written)
and it exits with status 0. With ``--parent-pid P`` it also shuts down when
process P is gone (the cluster launcher passes its own pid, so that a broker
never outlives the notebook or test that started it, even one killed with
SIGKILL): it checks every half second, and if the clean shutdown has not
finished 10 s later it exits at once. If it cannot start (the port is in use, the log
directory cannot be written) it prints ``error: ...`` and exits with status 1;
a bad flag or config exits with status 2.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from .server.config import BrokerConfig
from .kafka_server import KafkaServer, StartupError
from .utils.parent_watch import watch_parent


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m kafkalab.broker", description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=9092, help="port to listen on (0: pick a free one)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--log-dir", required=True, help="log.dirs: where partition directories live")
    p.add_argument("--broker-id", type=int, default=0)
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="any broker config by its Kafka name, e.g. num.partitions=3 (repeatable)")
    p.add_argument("--parent-pid", type=int, default=None,
                   help="shut down when this process is gone (the launcher's pid)")
    p.add_argument("--log-level", default="WARNING", type=str.upper,
                   choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
    return p.parse_args(argv)


async def run(config: BrokerConfig, parent_pid: int | None = None, server_class=KafkaServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):  # before starting: a signal during log recovery stops cleanly too
        loop.add_signal_handler(sig, stop.set)
    watcher = loop.create_task(watch_parent(parent_pid, stop)) if parent_pid else None
    server = server_class(config)   # KafkaServer; kafkalab.kraft's BrokerServer in KRaft mode
    await server.start()
    try:
        if not stop.is_set():
            metrics = f"metrics={server.metrics_url} " if server.metrics_url else ""
            print(f"kafkalab broker {server.broker_id} ready on {server.advertised_host}:{server.advertised_port} "
                  f"{metrics}log.dirs={server.log_dir}", flush=True)
            await stop.wait()
    finally:
        try:
            await server.stop()
        finally:
            if watcher is not None:
                watcher.cancel()


def main(argv=None, server_class=KafkaServer, defaults: dict | None = None) -> int:
    """The command line; ``python -m kafkalab.kraft`` calls it with its ``BrokerServer`` and
    ``process.roles=broker`` as a default (the server class checks the configs first: ``check_config``)."""
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    overrides = {"broker.id": args.broker_id, "log.dirs": args.log_dir, **(defaults or {}),
                 "listeners": f"PLAINTEXT://{args.host}:{args.port}"}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"--config expects key=value, got {item!r}", file=sys.stderr)
            return 2
        overrides[key.strip()] = value.strip()
    try:
        config = BrokerConfig(overrides)
        server_class.check_config(config)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(run(config, args.parent_pid, server_class=server_class))
    except StartupError as exc:  # the port is in use, the log dir cannot be written, ...
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
