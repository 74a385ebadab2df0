"""kafkalab: learn Kafka by running it — real clients, real brokers, real failures.

``kafkalab.mini()`` starts a broker in this process (see :mod:`kafkalab.broker.mini`).
``kafkalab.connect()`` is what the notebooks use: that embedded broker, or the external
cluster named by ``$KAFKALAB_BOOTSTRAP_SERVERS`` (see :mod:`kafkalab.lab`).
"""
from .broker.mini import MiniBroker, mini
from .lab import LabKafka, connect

__version__ = "0.1.0"
__all__ = ["MiniBroker", "mini", "LabKafka", "connect", "__version__"]
