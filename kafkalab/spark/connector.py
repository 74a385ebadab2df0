"""Spark's own Kafka connector, ``spark-sql-kafka-0-10``, for the installed pyspark: which one, and its jars.

Spark's Kafka source and sink (format ``kafka``) are not in pyspark's wheel:
they are the Maven artifact ``org.apache.spark:spark-sql-kafka-0-10_<scala>:<spark>``,
which must be the very Spark version and Scala version of the pyspark that
loads it (:func:`coordinate` reads both from the installed pyspark). Two ways
to put it on a session's classpath, both cached between runs::

    from kafkalab.spark import session
    from kafkalab.spark.connector import spark_configs

    spark = session(**spark_configs())             # kafka_format(spark) is now "kafka"

* ``via="maven"`` (the default when ``mvn`` is on PATH):
  :func:`kafkalab.cluster.maven.fetch_jars` resolves the connector and its
  runtime dependencies once, each jar checked against the repository's SHA-1,
  into ``~/.kafkalab/dist/spark-sql-kafka-0-10_<scala>-<spark>/libs``
  (``$KAFKALAB_DIST`` moves it; Maven's own cache is ``~/.m2``); later calls
  check the directory's manifest and use no network and no Maven. Only the
  jars pyspark does not ship already go into ``spark.jars`` (the connector,
  ``spark-token-provider-kafka-0-10``, ``kafka-clients``, ``commons-pool2``):
  no second copy of a library on the classpath.
* ``via="packages"``: ``spark.jars.packages`` names the coordinate and Spark's
  bundled Ivy resolves it at every session start, from ``~/.ivy2.5.2`` (its
  ``cache/`` and ``jars/``) once it has been downloaded; ``spark.jars.ivy``
  moves that. Needs no ``mvn``, but each session start pays Ivy's resolution
  (measured here, cached: a session starts in 7.1 s, 5.9 s the maven way, 5.4 s
  without the connector) and its classpath gets Ivy's picks of libraries
  pyspark already has (lz4, snappy, slf4j, hadoop-client).

``via="auto"`` is ``maven`` with ``mvn`` on PATH, else ``packages``.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

SCALA_LIBRARY = re.compile(r"^scala-library-(\d+\.\d+)\.\d+\.jar$")
#: the Maven repository Spark's Ivy and mvn both use by default (named in messages only)
REPOSITORY = "Maven Central"


class ConnectorUnavailable(RuntimeError):
    """Spark's Kafka connector for this pyspark cannot be had; the message says why and what to do."""


def pyspark_jars() -> Path:
    import pyspark
    return Path(pyspark.__file__).resolve().parent / "jars"


def spark_version() -> str:
    import pyspark
    return pyspark.__version__


def scala_version(jars_dir: Path | None = None) -> str:
    """The Scala binary version pyspark was built for (``"2.13"``), from its ``scala-library`` jar."""
    jars_dir = jars_dir or pyspark_jars()
    for name in sorted(os.listdir(jars_dir)):
        m = SCALA_LIBRARY.match(name)
        if m:
            return m.group(1)
    raise ConnectorUnavailable(f"no scala-library-*.jar in {jars_dir}: is this a pyspark installation?")


def coordinate() -> str:
    """``org.apache.spark:spark-sql-kafka-0-10_<scala>:<spark>`` for the installed pyspark."""
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala_version()}:{spark_version()}"


def _artifacts(jar_name: str) -> set[str]:
    """The artifact names a jar's file name may stand for: each prefix ending before ``-<digit>``
    (versions hold dashes, ``zstd-jni-1.5.7-7``; artifacts hold digits, ``kafka-0-10_2.13``)."""
    name = jar_name[:-4] if jar_name.endswith(".jar") else jar_name
    return {name[:i] for i in range(1, len(name) - 1) if name[i] == "-" and name[i + 1].isdigit()}


def not_shipped(jars: list[Path], jars_dir: Path | None = None) -> list[Path]:
    """The ``jars`` whose artifact pyspark does not already ship (in any version)."""
    shipped: set[str] = set()
    for name in os.listdir(jars_dir or pyspark_jars()):
        if name.endswith(".jar"):
            shipped |= _artifacts(name)
    return [j for j in jars if not _artifacts(j.name) & shipped]


def fetch(root: Path | None = None) -> list[Path]:
    """The connector's jars that pyspark lacks, resolved with ``mvn`` once and cached (see the module)."""
    from ..cluster.distribution import dist_root
    from ..cluster.maven import FetchError, fetch_jars

    coord = coordinate()
    name = coord.split(":", 1)[1].replace(":", "-")          # spark-sql-kafka-0-10_2.13-4.2.0
    try:
        directory = fetch_jars(name, [coord], root or dist_root())
    except FetchError as e:
        if e.kind == "version":
            raise ConnectorUnavailable(
                f"{REPOSITORY} has no {coord}: Spark's Kafka connector must be the same version as pyspark "
                f"({spark_version()}), and that version of it is not published there. Install a pyspark whose "
                f"connector is published (pip index versions pyspark; the connector's versions are listed on "
                f"{REPOSITORY} under org.apache.spark:spark-sql-kafka-0-10_{scala_version()})") from None
        raise ConnectorUnavailable(f"{coord} could not be fetched: {e}") from None
    return not_shipped(sorted((directory / "libs").glob("*.jar")))


def in_pyspark(jars_dir: Path | None = None) -> bool:
    """True when pyspark's own ``jars/`` already holds the connector (the workshop's JupyterLab image puts it
    there at build time, ``docker/jupyter/spark_kafka.py``): every session has it, nothing to fetch."""
    jars_dir = jars_dir or pyspark_jars()
    return (jars_dir / f"spark-sql-kafka-0-10_{scala_version(jars_dir)}-{spark_version()}.jar").is_file()


def spark_configs(via: str = "auto") -> dict[str, str]:
    """Spark configs that put the connector on a new session's classpath: ``session(**spark_configs())``.
    None (``{}``) when pyspark's own jars already hold it (:func:`in_pyspark`): no fetch, no network."""
    if via not in ("auto", "maven", "packages"):
        raise ValueError(f"via must be 'auto', 'maven' or 'packages', not {via!r}")
    if in_pyspark():
        return {}
    if via == "auto":
        via = "maven" if shutil.which("mvn") else "packages"
    if via == "maven":
        return {"spark.jars": ",".join(str(j) for j in fetch())}
    if via == "packages":
        return {"spark.jars.packages": coordinate()}
    raise ValueError(f"via must be 'auto', 'maven' or 'packages', not {via!r}")
