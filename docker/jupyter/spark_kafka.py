"""Put Spark's own Kafka connector, ``spark-sql-kafka-0-10``, into the installed pyspark (image build step).

Spark's Kafka source and sink are not in pyspark's wheel: they are the Maven
artifact ``org.apache.spark:spark-sql-kafka-0-10_<scala>:<spark version>``
(plus what it needs: ``spark-token-provider-kafka-0-10``, ``kafka-clients``,
``commons-pool2``), which one normally names in ``spark.jars.packages`` so that
Spark's Ivy resolver fetches them from Maven Central when a session starts.

A classroom should not download anything while students run the lesson, so
the JupyterLab image does it once, at build time::

    python docker/jupyter/spark_kafka.py            # in the Dockerfile, as root

1. read the Spark and Scala versions of the installed pyspark (``pyspark.__version__``
   and ``jars/scala-library-<scala>.x.jar``), so the connector always matches;
2. start Spark once with ``spark.jars.packages`` naming the connector and
   ``spark.jars.ivy`` a scratch directory: Spark's own resolver fetches it and its
   dependencies from Maven Central;
3. copy the resolved jars into ``pyspark/jars`` — every session's classpath — except
   those whose artifact pyspark already ships (two versions of a library on one
   classpath is a bug waiting to happen);
4. start a fresh session without ``spark.jars.packages`` and check that
   ``kafkalab.spark.kafka_format(spark)`` is ``"kafka"``; the build fails otherwise.

``--print-coordinate`` only prints the Maven coordinate (no network).
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SCALA_LIBRARY = re.compile(r"^scala-library-(\d+\.\d+)\.\d+\.jar$")


def pyspark_home() -> str:
    import pyspark
    return os.path.dirname(os.path.abspath(pyspark.__file__))


def spark_version() -> str:
    import pyspark
    return pyspark.__version__


def scala_version(jars_dir: str) -> str:
    """The Scala binary version pyspark was built for (``"2.13"``), from its scala-library jar."""
    for name in sorted(os.listdir(jars_dir)):
        m = SCALA_LIBRARY.match(name)
        if m:
            return m.group(1)
    raise RuntimeError(f"no scala-library-*.jar in {jars_dir}: is this a pyspark installation?")


def coordinate(spark: str, scala: str) -> str:
    """The Maven coordinate of Spark's Kafka connector for this Spark and Scala."""
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{spark}"


def module_candidates(jar_name: str) -> set[str]:
    """The artifact names a jar's file name may stand for: every prefix that ends before ``-<digit>``.

    Ivy retrieves ``<org>_<artifact>-<version>.jar``, pyspark ships ``<artifact>-<version>.jar``; versions
    can hold dashes (``zstd-jni-1.5.6-10``) and artifacts digits (``kafka-0-10_2.13``), so each split is a
    candidate; two jars are the same artifact when their candidates meet."""
    name = jar_name[:-4] if jar_name.endswith(".jar") else jar_name
    return {name[:i] for i in range(1, len(name) - 1) if name[i] == "-" and name[i + 1].isdigit()}


def ivy_artifact(jar_name: str) -> str:
    """``org.apache.kafka_kafka-clients-3.9.0.jar`` -> ``kafka-clients-3.9.0.jar`` (the organisation dropped)."""
    org, sep, rest = jar_name.partition("_")
    return rest if sep and "." in org and "-" not in org else jar_name


def install(resolved_dir: str, jars_dir: str) -> tuple[list[str], list[str]]:
    """Copy the resolved jars that pyspark does not already ship into ``jars_dir``: ``(copied, skipped)``."""
    shipped = set()
    for name in os.listdir(jars_dir):
        if name.endswith(".jar"):
            shipped |= module_candidates(name)
    copied, skipped = [], []
    for path in sorted(glob.glob(os.path.join(resolved_dir, "*.jar"))):
        target = ivy_artifact(os.path.basename(path))
        if module_candidates(target) & shipped:
            skipped.append(target)
            continue
        shutil.copy2(path, os.path.join(jars_dir, target))
        copied.append(target)
    return copied, skipped


_CHECK = """
import sys
from kafkalab.spark import kafka_format, log_path, session, stop
ok = False
try:
    spark = session(app_name="kafkalab-image-check", **dict(a.split("=", 1) for a in sys.argv[1:]))
    print("kafka_format:", kafka_format(spark), flush=True)
    ok = kafka_format(spark) == "kafka"
finally:
    if not ok and log_path():
        sys.stderr.write("--- the end of Spark's log (" + log_path() + ") ---\\n")
        sys.stderr.write(open(log_path(), errors="replace").read()[-6000:])
    stop()   # after reading the log: stop() removes it with the session's directory
sys.exit(0 if ok else 1)
"""


def spark_check(*configs: str) -> bool:
    """Start Spark in a fresh Python (with ``key=value`` configs) and tell whether its Kafka connector is there."""
    return subprocess.run([sys.executable, "-c", _CHECK, *configs]).returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print-coordinate", action="store_true", help="print the Maven coordinate and exit")
    args = parser.parse_args(argv)
    home = pyspark_home()
    jars_dir = os.path.join(home, "jars")
    coord = coordinate(spark_version(), scala_version(jars_dir))
    if args.print_coordinate:
        print(coord)
        return 0
    print(f"pyspark {spark_version()} in {home}: fetching {coord} with Spark's resolver", flush=True)
    ivy = tempfile.mkdtemp(prefix="kafkalab-ivy-")
    try:
        if not spark_check(f"spark.jars.packages={coord}", f"spark.jars.ivy={ivy}"):
            print(f"Spark could not load {coord}", file=sys.stderr)
            return 1
        copied, skipped = install(os.path.join(ivy, "jars"), jars_dir)
    finally:
        shutil.rmtree(ivy, ignore_errors=True)
    print(f"copied into {jars_dir}: {', '.join(copied) or 'nothing'}")
    print(f"already shipped by pyspark: {', '.join(skipped) or 'nothing'}")
    if not spark_check():
        print("after the copy, a plain session still has no Kafka connector", file=sys.stderr)
        return 1
    print(f"ok: kafkalab.spark.kafka_format() is 'kafka' with pyspark {spark_version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
