"""The kafkalab mini broker: Kafka's wire protocol and log format, in small readable modules.

Start at :mod:`kafkalab.broker.base_broker` for how the parts fit together,
:mod:`kafkalab.broker.apis` for the requests it answers, and
:mod:`kafkalab.broker.log` for how records sit on disk.
"""
from .mini import MiniBroker, mini

__all__ = ["MiniBroker", "mini"]
