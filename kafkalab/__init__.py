"""kafkalab: learn Kafka by running it — real clients, real brokers, real failures.

``kafkalab.mini()`` starts a broker in this process (see :mod:`kafkalab.broker.mini`).
``kafkalab.cluster(brokers=3)`` starts a real ZooKeeper and three broker processes to
break (see :mod:`kafkalab.cluster`).
``kafkalab.connect()`` is what the notebooks use: that embedded broker, a local cluster
(``connect(brokers=3)``), or the external cluster named by ``$KAFKALAB_BOOTSTRAP_SERVERS``
(see :mod:`kafkalab.lab`).
``kafkalab.fetch_kafka("3.9")`` fetches Apache Kafka itself, for ``cluster(backend="kafka")``
(see :mod:`kafkalab.cluster.distribution`).
``kafkalab.connect_cluster(kafka, workers=2)`` runs Apache Kafka Connect's distributed workers against it
(see :mod:`kafkalab.kafka_connect`; ``kafkalab.fetch_connect()`` fetches them).
``kafkalab.schema_registry(kafka)`` starts a schema registry speaking Confluent's REST API, its
schemas in the ``_schemas`` topic of that Kafka (see :mod:`kafkalab.registry`).
``kafkalab.security.CertificateAuthority()`` makes a CA and certificates for SSL listeners, and the broker's and
clients' configs that use them (see :mod:`kafkalab.security`).
"""
from . import cluster  # a callable package: kafkalab.cluster(brokers=3) returns a Cluster
from .broker.mini import MiniBroker, mini
from .cluster import Cluster
from .cluster.processes import remove_dir_when_this_process_dies
from .cluster.distribution import fetch_kafka
from .cluster.metrics import metrics_frame
from .kafka_connect import connect_cluster, fetch_connect   # after .broker.mini: its atexit runs first
from .lab import LabKafka, connect
from .registry import SchemaRegistry, schema_registry
from . import security   # kafkalab.security.CertificateAuthority: TLS certificates for a lesson

# an in-process broker's temporary log directory goes even when this process is killed (kill -9, nbval)
MiniBroker.temp_dir_guard = staticmethod(remove_dir_when_this_process_dies)
# MiniBroker.metrics(): its Prometheus text as a DataFrame, read by the lab's side
MiniBroker.metrics_reader = staticmethod(metrics_frame)

__version__ = "0.1.0"
__all__ = ["MiniBroker", "mini", "cluster", "Cluster", "LabKafka", "connect", "fetch_kafka", "SchemaRegistry",
           "schema_registry", "connect_cluster", "fetch_connect", "security", "__version__"]
