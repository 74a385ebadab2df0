"""kafkalab: learn Kafka by running it — real clients, real brokers, real failures.

``kafkalab.mini()`` starts a broker in this process (see :mod:`kafkalab.broker.mini`).
"""
from .broker.mini import MiniBroker, mini

__version__ = "0.1.0"
__all__ = ["MiniBroker", "mini", "__version__"]
