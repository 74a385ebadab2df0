"""The kafkalab mini broker: Kafka's wire protocol and log format, in small readable modules.

Start at :mod:`kafkalab.broker.base_broker` for how the parts fit together,
:mod:`kafkalab.broker.apis` for the requests it answers, and
:mod:`kafkalab.broker.log` for how records sit on disk.

The packages, bottom layer first (import-control.toml; docs/architecture.md): ``common``
(errors, record batches, topic rules, replica assignment; ``common.message``: the message codec and
schemas), ``utils``; ``log`` (UnifiedLog, LogSegment, LogConfig), ``network`` (SocketServer,
request_channel), ``zk``; ``cluster`` (Partition); ``coordinator`` (group, transaction, share);
``server`` (the KafkaBroker contract, ReplicaManager, the delayed operations, configs, quotas,
faults); ``zk_controller`` (the ZooKeeper-mode KafkaController) and ``apis`` (one module per API).
On top: ``kafka_apis`` (KafkaApis: dispatch), ``base_broker`` (BaseBroker), ``kafka_server``
(KafkaServer: ZooKeeper mode and standalone; the KRaft BrokerServer is :mod:`kafkalab.kraft.broker_server`),
``mini`` (``kafkalab.mini()``) and ``__main__`` (``python -m kafkalab.broker``).
"""
from .mini import MiniBroker, mini

__all__ = ["MiniBroker", "mini"]
