"""``python -m kafkalab.kraft --port P --log-dir D --broker-id N --config process.roles=broker
--config controller.quorum.voters=1@h:p,... --config cluster.id=ID [--config key=value ...]``

One mini broker in KRaft mode (:class:`~kafkalab.kraft.broker_server.BrokerServer`) as its own process,
with the arguments, ready line and exit statuses of ``python -m kafkalab.broker``::

    kafkalab broker 4 ready on 127.0.0.1:9092 log.dirs=/tmp/x

It is ready once the controllers have unfenced it. With ``--config process.roles=broker,controller``
(and ``controller.listener.names=CONTROLLER``; the node id one of the voters) it is a combined node,
:class:`~kafkalab.kraft.kafka_raft_server.KafkaRaftServer`: its controller listens at its address in
``controller.quorum.voters`` and also takes ``controller.quorum.election.*``,
``metadata.max.idle.interval.ms`` and ``broker.session.timeout.ms``.
"""
from __future__ import annotations

import sys

from ..broker.__main__ import main as broker_main
from .kafka_raft_server import kraft_server


def main(argv=None) -> int:
    return broker_main(argv, server_class=kraft_server, defaults={"process.roles": "broker"})


if __name__ == "__main__":
    sys.exit(main())
