"""``kafkalab.kafka_connect``: Apache Kafka Connect itself, its distributed workers as JVMs beside the lessons.

::

    kafka = kafkalab.connect()
    with kafkalab.connect_cluster(kafka, workers=2) as connect:
        connect.create_connector("lines-in", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": "/tmp/in.txt", "topic": "lines"})
        connect.status_table()           # the connector and its tasks: state, worker
        connect.kill(1)                  # SIGKILL a worker: its tasks move to the other one
        connect.source_offsets()         # what the offsets topic holds

The package is named ``kafka_connect`` because ``kafkalab.connect`` is the lessons' way to their Kafka.
``connect_cluster()`` fetches ``connect-runtime``, ``connect-file``, ``connect-json`` and
``connect-transforms`` from the Maven repository once (cached in ``~/.kafkalab/dist``; :mod:`.jvm`), writes
each worker's config (:mod:`.worker_config`), runs the workers (:mod:`.cluster`) and talks to their REST API
(:mod:`.rest`); :mod:`.offsets` reads source offsets from the offsets topic.
"""
from .cluster import ConnectCluster, ConnectError, ConnectWorker, connect_cluster
from .jvm import CONNECT_VERSION, ConnectJvmError, fetch_connect
from .rest import ConnectRestError
from .worker_config import LAB_DEFAULTS, worker_config

__all__ = ["connect_cluster", "ConnectCluster", "ConnectWorker", "ConnectError", "ConnectRestError",
           "ConnectJvmError", "fetch_connect", "CONNECT_VERSION", "LAB_DEFAULTS", "worker_config"]
