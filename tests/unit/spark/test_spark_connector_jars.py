"""kafkalab.spark.connector without a network or a JVM: the coordinate, which jars go on the classpath, the
messages; and kafkalab's source giving null headers for a record without any, as Spark's does."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from kafkalab.cluster.maven import FetchError
from kafkalab.spark import connector

ROOT = Path(__file__).resolve().parents[3]


def test_the_coordinate_is_the_installed_pyspark_and_its_scala():
    import pyspark
    scala = connector.scala_version()
    assert scala in ("2.12", "2.13")
    assert connector.coordinate() == f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{pyspark.__version__}"
    # the JupyterLab image's build step names the same one
    spec = importlib.util.spec_from_file_location("spark_kafka", ROOT / "docker" / "jupyter" / "spark_kafka.py")
    spark_kafka = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(spark_kafka)
    scala_of_image = spark_kafka.scala_version(str(connector.pyspark_jars()))
    assert spark_kafka.coordinate(spark_kafka.spark_version(), scala_of_image) == connector.coordinate()


def test_only_the_jars_pyspark_lacks_go_on_the_classpath(tmp_path):
    shipped = tmp_path / "jars"
    shipped.mkdir()
    for name in ("spark-core_2.13-4.2.0.jar", "spark-tags_2.13-4.2.0.jar", "zstd-jni-1.5.7-7.jar",
                 "lz4-java-1.11.0.jar", "commons-pool-1.5.4.jar", "hadoop-client-runtime-3.4.2.jar"):
        (shipped / name).touch()
    resolved = [Path(n) for n in ("spark-sql-kafka-0-10_2.13-4.2.0.jar",
                                  "spark-token-provider-kafka-0-10_2.13-4.2.0.jar", "kafka-clients-3.9.2.jar",
                                  "commons-pool2-2.13.1.jar", "spark-tags_2.13-4.2.0.jar", "zstd-jni-1.5.6-10.jar",
                                  "lz4-java-1.10.1.jar", "hadoop-client-runtime-3.5.0.jar")]
    assert [p.name for p in connector.not_shipped(resolved, shipped)] == [
        "spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-token-provider-kafka-0-10_2.13-4.2.0.jar",
        "kafka-clients-3.9.2.jar", "commons-pool2-2.13.1.jar"]


def test_spark_configs_either_way():
    assert connector.spark_configs("packages") == {"spark.jars.packages": connector.coordinate()}
    with pytest.raises(ValueError, match="via"):
        connector.spark_configs("pip")


def test_a_connector_in_pysparks_own_jars_needs_no_configs(monkeypatch, tmp_path):
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / f"scala-library-{connector.scala_version()}.16.jar").touch()
    monkeypatch.setattr(connector, "pyspark_jars", lambda: jars)
    assert not connector.in_pyspark() and connector.spark_configs("packages")
    (jars / connector.coordinate().split(":", 1)[1].replace(":", "-").__add__(".jar")).touch()
    assert connector.in_pyspark()    # as in the JupyterLab image: spark-sql-kafka-0-10_<scala>-<spark>.jar
    assert connector.spark_configs() == {} and connector.spark_configs("maven") == {}


def test_a_connector_version_the_repository_lacks_is_one_message_saying_so(monkeypatch, tmp_path):
    def missing(name, coordinates, root, timeout=900):
        assert name == coordinates[0].split(":", 1)[1].replace(":", "-")
        raise FetchError("maven: the repository does not have it", kind="version")

    monkeypatch.setattr("kafkalab.cluster.maven.fetch_jars", missing)
    with pytest.raises(connector.ConnectorUnavailable, match=r"must be the same version as pyspark") as e:
        connector.spark_configs("maven")
    assert connector.coordinate() in str(e.value)

    def offline(name, coordinates, root, timeout=900):
        raise FetchError("maven: the Maven repository cannot be reached (no network?); nothing was fetched")

    monkeypatch.setattr("kafkalab.cluster.maven.fetch_jars", offline)
    with pytest.raises(connector.ConnectorUnavailable, match="cannot be reached"):
        connector.fetch(tmp_path)


def test_a_cached_connector_is_used_without_maven(monkeypatch, tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    for name in ("spark-sql-kafka-0-10_2.13-9.9.9.jar", "kafka-clients-3.9.2.jar"):
        (libs / name).write_bytes(b"jar")
    monkeypatch.setattr("kafkalab.cluster.maven.fetch_jars", lambda name, coordinates, root, timeout=900: tmp_path)
    configs = connector.spark_configs("maven")
    assert [os.path.basename(j) for j in configs["spark.jars"].split(",")] == [
        "kafka-clients-3.9.2.jar", "spark-sql-kafka-0-10_2.13-9.9.9.jar"]


class _Message:
    def __init__(self, offset, headers):
        self._offset, self._headers = offset, headers

    def key(self):
        return None

    def value(self):
        return b"v"

    def offset(self):
        return self._offset

    def timestamp(self):
        return (1, 1735722000000)

    def headers(self):
        return self._headers


def test_records_without_headers_read_as_null_headers_as_in_spark():
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from kafkalab.spark.reader import _to_arrow
    from kafkalab.spark.source import kafka_schema

    schema = to_arrow_schema(kafka_schema(include_headers=True), timezone="UTC")
    batch = _to_arrow([_Message(0, None), _Message(1, [("h", b"x"), ("n", None)]), _Message(2, [])], "t", 0,
                      schema, schema.field("headers").type, pa)
    assert batch.column(batch.schema.get_field_index("headers")).to_pylist() == [
        None, [{"key": "h", "value": b"x"}, {"key": "n", "value": None}], None]
