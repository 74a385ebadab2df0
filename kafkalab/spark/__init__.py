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
``session(**connector.spark_configs())`` starts a session with Spark's
connector for the installed pyspark (:mod:`kafkalab.spark.connector`: the
connector's version must be pyspark's; its jars are fetched once and cached).

Nothing is left in the temporary directory. Everything a session writes there
(the JVM's log, Spark's scratch space ``spark.local.dir``, the JVM's
``java.io.tmpdir`` with the temporary checkpoints of queries started without
``checkpointLocation``) goes under one directory, ``kafkalab-spark-<pid>-*``,
named after the Python process that owns it. :func:`stop` and the
interpreter's exit remove it; if the owner was killed (a notebook kernel
SIGKILLed by its manager, ``kill -9``), the next :func:`session` of any Python
removes every such directory whose owner is gone. The JVM runs in a session of
its own: Jupyter's kernel, when asked to shut down, signals the children in its
process group and waits for them, up to ~30 s for a Spark JVM, past the 5 s
its manager waits before a SIGKILL that skips every clean-up.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
import warnings

from .source import NAME, KafkaDataSource, kafka_schema

__all__ = ["session", "stop", "kafka_format", "log_path", "work_dir", "remove_orphaned_dirs", "KafkaDataSource", "NAME",
           "kafka_schema"]

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
        remove_orphaned_dirs()
        global _log_path, _work_dir
        _work_dir = directory = tempfile.mkdtemp(prefix=f"{WORK_DIR_PREFIX}{os.getpid()}-")
        for sub in ("local", "tmp"):
            os.mkdir(os.path.join(directory, sub))
        if not conf.contains("spark.local.dir"):
            conf.set("spark.local.dir", os.path.join(directory, "local"))     # shuffle files, block manager
        java_options = conf.get("spark.driver.extraJavaOptions", "")
        if "-Djava.io.tmpdir=" not in java_options:                              # temporary checkpoints, jars
            conf.set("spark.driver.extraJavaOptions",
                     f"{java_options} -Djava.io.tmpdir={os.path.join(directory, 'tmp')}".strip())
        _log_path = os.path.join(directory, "spark.log")
        log = open(_log_path, "ab")   # noqa: SIM115 -- the JVM writes to it for its whole life
        # start_new_session: out of the kernel's process group (see the module's docstring); the JVM still
        # exits when this Python does, however it ends: it reads its stdin, a pipe from us, to end-of-file.
        gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log, "start_new_session": True})
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
_work_dir: str | None = None
WORK_DIR_PREFIX = "kafkalab-spark-"
_WORK_DIR_NAME = re.compile(re.escape(WORK_DIR_PREFIX) + r"(\d+)-[A-Za-z0-9_]+$")


def _owner_alive(pid: int, directory: str) -> bool:
    """Whether the process that made ``directory`` still runs (a process started after it is another one)."""
    if pid == os.getpid():
        return True
    try:
        import psutil
        try:
            return psutil.Process(pid).create_time() <= os.stat(directory).st_mtime + 1
        except psutil.NoSuchProcess:
            return False
    except ImportError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def remove_orphaned_dirs(parent: str | None = None) -> list[str]:
    """Remove the ``kafkalab-spark-<pid>-*`` directories whose owner is gone; return their paths.

    :func:`session` calls it before it starts a JVM, so a killed kernel's directory lasts at most until
    the next session on this machine."""
    parent = parent or tempfile.gettempdir()
    removed = []
    for name in os.listdir(parent):
        match = _WORK_DIR_NAME.match(name)
        path = os.path.join(parent, name)
        if match and os.path.isdir(path) and not _owner_alive(int(match.group(1)), path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def work_dir(spark=None) -> str | None:
    """The directory of this Python's Spark JVM: its log, ``spark.local.dir`` and ``java.io.tmpdir``."""
    return _work_dir


def log_path(spark=None) -> str | None:
    """The file the Spark JVM started by :func:`session` writes its log and output to."""
    return _log_path


def stop(spark=None) -> None:
    """Stop the session and its JVM (``spark.stop()`` alone keeps the JVM for a next session).

    After this no Spark process of this Python is left, and its :func:`work_dir` (the log included)
    is removed; a later :func:`session` starts a new JVM.
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
    global _work_dir
    if _work_dir is not None:   # the JVM that wrote there has exited
        shutil.rmtree(_work_dir, ignore_errors=True)
        _work_dir = None


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
