"""Spark with Kafka on a laptop: ``session()``, ``kafka_format(spark)`` and kafkalab's Kafka data source.

::

    from kafkalab.spark import kafka_format, session

    spark = session()                                   # local Spark, kafkalab's source registered
    lines = (spark.readStream.format(kafka_format(spark))
             .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
             .option("subscribe", "word-count-input")
             .load())
    ...
    spark.stop()

``kafka_format(spark)`` is ``"kafka"`` — Spark's own connector — when
``spark-sql-kafka-0-10`` is on the classpath (e.g. started with
``spark.jars.packages``), and ``"kafkalab-kafka"``, the Python data source in
:mod:`kafkalab.spark.source`, otherwise. Both take the same options and give
the same columns, so the code is the code you would run against production.
"""
from __future__ import annotations

import atexit
import os
import sys
import tempfile
import warnings

from .source import NAME, KafkaDataSource, kafka_schema

__all__ = ["session", "stop", "kafka_format", "log_path", "KafkaDataSource", "NAME", "kafka_schema"]

BUILTIN_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"

_sessions: list = []


def session(app_name: str = "kafkalab", cores: int = 2, shuffle_partitions: int = 2, ui: bool = False,
            log_level: str = "WARN", **configs):
    """A local SparkSession fit for a laptop and a notebook, with kafkalab's Kafka source registered.

    ``local[cores]``; ``spark.sql.shuffle.partitions`` small (Spark's default,
    200, makes every aggregation run 200 tiny tasks: ~10 s for a first
    word-count batch on 2 cores); the web UI off unless ``ui=True``. The JVM's
    own output (Spark's log at ``log_level``) goes to a file, ``log_path(spark)``,
    not into the notebook. More Spark configs as keyword arguments:
    ``session(**{"spark.driver.memory": "2g"})``. If a session is already
    running it is returned as it is. It is stopped at interpreter exit too,
    so a kernel that ends leaves no JVM (and the JVM exits by itself when
    its Python dies: it watches its stdin).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)          # workers use this Python (and its packages)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is None:
        conf = (SparkConf().setMaster(f"local[{cores}]").setAppName(app_name)
                .set("spark.sql.shuffle.partitions", str(shuffle_partitions))
                .set("spark.ui.enabled", str(ui).lower())
                .set("spark.ui.showConsoleProgress", "false")
                .set("spark.log.level", log_level)
                .set("spark.sql.session.timeZone", "UTC")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.driver.host", "127.0.0.1"))
        for key, value in configs.items():
            conf.set(key, str(value))
        directory = tempfile.mkdtemp(prefix="kafkalab-spark-")
        global _log_path
        _log_path = os.path.join(directory, "spark.log")
        log = open(_log_path, "ab")   # noqa: SIM115 -- the JVM writes to it for its whole life
        gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        log.close()
        SparkContext(conf=conf, gateway=gateway)
    spark = SparkSession.builder.getOrCreate()
    spark.dataSource.register(KafkaDataSource)
    if not _sessions:
        atexit.register(_stop_all)
    if spark not in _sessions:
        _sessions.append(spark)
    return spark


_log_path: str | None = None


def log_path(spark=None) -> str | None:
    """The file the Spark JVM started by :func:`session` writes its log and output to."""
    return _log_path


def stop(spark=None) -> None:
    """Stop the session and its JVM (``spark.stop()`` alone keeps the JVM for a next session).

    After this no Spark process of this Python is left; a later :func:`session` starts a new JVM.
    """
    from pyspark import SparkContext

    for s in ([spark] if spark is not None else []) + list(_sessions):
        try:
            s.stop()
        except Exception:   # noqa: BLE001 -- already stopped, or the JVM is gone
            pass
    _sessions.clear()
    gateway = SparkContext._gateway
    if gateway is not None:
        proc = getattr(gateway, "proc", None)
        try:
            gateway.shutdown()
        except Exception:   # noqa: BLE001
            pass
        if proc is not None:
            try:
                proc.stdin.close()   # the gateway server exits when its stdin closes
                proc.wait(timeout=20)
            except Exception:   # noqa: BLE001
                proc.kill()
                proc.wait()
        SparkContext._gateway = None
        SparkContext._jvm = None


def _stop_all():
    try:
        stop()
    except Exception:   # noqa: BLE001 -- at exit, best effort
        pass


def has_builtin_kafka(spark) -> bool:
    """True when Spark's own Kafka connector (spark-sql-kafka-0-10) is on the session's classpath."""
    try:
        jvm = spark.sparkContext._jvm
        loader = jvm.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(BUILTIN_PROVIDER, False, loader)
        return True
    except Exception:   # noqa: BLE001 -- no class, or no JVM access (Spark Connect)
        return False


def kafka_format(spark) -> str:
    """The format to read and write Kafka with: ``"kafka"`` when Spark's connector is there, else kafkalab's."""
    return "kafka" if has_builtin_kafka(spark) else NAME
