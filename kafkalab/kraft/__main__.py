"""``python -m kafkalab.kraft --port P --log-dir D --broker-id N --config process.roles=broker
--config controller.quorum.voters=1@h:p,... --config cluster.id=ID [--config key=value ...]``

One mini broker in KRaft mode (:class:`~kafkalab.kraft.broker_server.BrokerServer`) as its own process,
with the arguments, ready line and exit statuses of ``python -m kafkalab.broker``::

    kafkalab broker 4 ready on 127.0.0.1:9092 log.dirs=/tmp/x

It is ready once the controllers have unfenced it.
"""
from __future__ import annotations

import sys

from ..broker.__main__ import main as broker_main
from .broker_server import BrokerServer


def main(argv=None) -> int:
    return broker_main(argv, server_class=BrokerServer, defaults={"process.roles": "broker"})


if __name__ == "__main__":
    sys.exit(main())
