"""``kafkalab fetch-kafka``: versions, the cache and its checks, and one clear line for each bad input.

What needs the Maven repository (a real fetch, an unknown version, no network, a corrupt jar) is in
tests/integration/test_fetch_kafka.py; these run without it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kafkalab.cluster import distribution as d
from kafkalab.cluster import maven
from kafkalab.cluster.distribution import FetchError, fetch_kafka, parse_version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.mark.parametrize("spec, parsed, maven", [
    (None, (3, 9), "[3.9.0,3.9.999]"),            # the default: the newest 3.9.x (ZooKeeper mode)
    ("3.9.2", (3, 9, 2), "3.9.2"),
    ("3.9", (3, 9), "[3.9.0,3.9.999]"),
    ("3.9.x", (3, 9), "[3.9.0,3.9.999]"),
    ("4", (4,), "[4.0.0,4.999.999]"),
    ("4.x", (4,), "[4.0.0,4.999.999]"),
    (" 4.1 ", (4, 1), "[4.1.0,4.1.999]"),
])
def test_versions(spec, parsed, maven):
    assert parse_version(spec) == parsed
    assert d.maven_version(parsed) == maven


@pytest.mark.parametrize("spec, says", [
    ("2.8.1", "not a version kafkalab runs"),
    ("5", "not a version kafkalab runs"),
    ("latest", "is not a Kafka version"),
    ("3.9.2.1", "is not a Kafka version"),
    ("3..9", "is not a Kafka version"),
])
def test_bad_versions_say_what_a_version_looks_like(spec, says):
    with pytest.raises(FetchError, match=says):
        parse_version(spec)


def fake_distribution(root, version: str, *, manifest: bool = True, corrupt: bool = False):
    home = root / version
    (home / "libs").mkdir(parents=True)
    jar = home / "libs" / f"kafka_2.13-{version}.jar"
    jar.write_bytes(b"PK fake broker " + version.encode())
    (home / "libs" / "kafka-clients.jar").write_bytes(b"PK fake clients")
    files = {f"libs/{p.name}": maven.sha256(p) for p in (home / "libs").iterdir()}
    if manifest:
        (home / d.MANIFEST).write_text(json.dumps({"version": version, "files": files}))
    if corrupt:
        jar.write_bytes(b"PK a flipped byte " + version.encode())
    return home


def test_cached_picks_the_newest_intact_match(tmp_path):
    fake_distribution(tmp_path, "3.8.1")
    fake_distribution(tmp_path, "3.9.1")
    fake_distribution(tmp_path, "3.9.2", corrupt=True)           # fails its manifest: never used
    fake_distribution(tmp_path, "3.9.3", manifest=False)         # a half-written one: never used
    fake_distribution(tmp_path, "4.4.0")
    assert d.cached((3, 9), tmp_path) == tmp_path / "3.9.1"
    assert d.cached((3,), tmp_path) == tmp_path / "3.9.1"
    assert d.cached((4,), tmp_path) == tmp_path / "4.4.0"
    assert d.cached((3, 7), tmp_path) is None
    assert "does not match its SHA-256" in d.verify(tmp_path / "3.9.2")
    assert "no readable" in d.verify(tmp_path / "3.9.3")


def test_a_cached_version_is_reused_without_any_resolver(tmp_path, monkeypatch):
    monkeypatch.setenv(d.DIST_ENV_VAR, str(tmp_path))
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    fake_distribution(tmp_path, "3.9.2")

    def no_network(*args, **kwargs):
        raise AssertionError("a cached version must not be fetched again")
    monkeypatch.setattr(d, "FETCHERS", {"maven": no_network, "ivy": no_network, "tarball": no_network})
    said = []
    assert fetch_kafka("3.9", say=said.append) == tmp_path / "3.9.2"
    assert fetch_kafka("3.9.2") == tmp_path / "3.9.2"
    assert said == [f"Kafka 3.9.2 is already in {tmp_path}"]


def test_kafka_home_of_the_right_version_is_used_in_place(tmp_path, monkeypatch):
    home = fake_distribution(tmp_path / "elsewhere", "3.9.1", manifest=False)
    monkeypatch.setenv("KAFKA_HOME", str(home))
    monkeypatch.setenv(d.DIST_ENV_VAR, str(tmp_path / "cache"))
    assert fetch_kafka("3.9") == home
    assert not (tmp_path / "cache").exists()                      # nothing copied, nothing fetched


@pytest.mark.parametrize("output, kind, says", [
    ("[ERROR] Failed to execute goal on project kafka-distribution: Could not resolve dependencies for project "
     "kafkalab:kafka-distribution:pom:1: Could not find artifact org.apache.kafka:kafka_2.13:jar:3.9.99 in central",
     "version", "has no Kafka 3.9.99"),
    ("[ERROR] Failed to execute goal on project kafka-distribution: Could not resolve dependencies: No versions "
     "available for org.apache.kafka:kafka_2.13:jar:[3.9.99,3.9.999] within specified range", "version", "has no Kafka"),
    ("[ERROR] Plugin org.apache.maven.plugins:maven-dependency-plugin:2.8 or one of its dependencies could not be "
     "resolved: Could not transfer artifact ... from/to kafkalab (http://127.0.0.1:9/): Connect to 127.0.0.1:9 "
     "failed: Connection refused", "unavailable", "cannot be reached"),
    ("[ERROR] ... Checksum validation failed, expected 1234 but is 5678", "corrupt", "failed its checksum"),
    ("[ERROR] Something nobody foresaw\n[ERROR] more", "unavailable", "maven failed: .ERROR. Something nobody"),
])
def test_resolver_failures_become_one_line(output, kind, says):
    """Each kind of Maven failure (texts as Maven 3.8 prints them) becomes one line saying what to do."""
    e = maven.classify(output, "maven", "the repository has no Kafka 3.9.99 (org.apache.kafka:kafka_2.13)")
    assert e.kind == kind and "\n" not in str(e)
    assert __import__("re").search(says, str(e)), str(e)


def test_kafka_4_gets_the_slf4j_binding_its_release_ships(tmp_path):
    from pathlib import Path
    kafka4 = [Path(n) for n in ("kafka_2.13-4.4.0.jar", "log4j-api-2.25.5.jar", "log4j-core-2.25.5.jar",
                                "slf4j-api-1.7.36.jar")]
    assert d._slf4j_binding(kafka4) == ("org.apache.logging.log4j", "log4j-slf4j-impl", "2.25.5")
    kafka3 = [Path(n) for n in ("kafka_2.13-3.9.2.jar", "reload4j-1.2.25.jar", "slf4j-reload4j-1.7.36.jar")]
    assert d._slf4j_binding(kafka3) is None


def test_a_failed_fetch_leaves_nothing_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(d.DIST_ENV_VAR, str(tmp_path))
    monkeypatch.delenv("KAFKA_HOME", raising=False)

    def half_then_fail(wanted, staging):
        (staging / "libs").mkdir()
        (staging / "libs" / "kafka_2.13-3.9.2.jar").write_bytes(b"half")
        raise FetchError("maven: the Maven repository cannot be reached (no network?); nothing was fetched")
    monkeypatch.setattr(d, "FETCHERS", {"maven": half_then_fail, "ivy": half_then_fail, "tarball": half_then_fail})
    with pytest.raises(FetchError, match="could not be fetched: maven: the Maven repository cannot be reached"):
        fetch_kafka("3.9.2")
    assert list(tmp_path.iterdir()) == []


def test_a_stale_partial_of_a_dead_process_is_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(d.DIST_ENV_VAR, str(tmp_path))
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".partial-3.9-abc-{dead.stdout.strip()}"
    stale.mkdir()

    def fake_maven(wanted, staging):
        (staging / "libs").mkdir()
        (staging / "libs" / "kafka_2.13-3.9.2.jar").write_bytes(b"PK")
        return "maven"
    monkeypatch.setattr(d, "FETCHERS", {"maven": fake_maven})
    home = fetch_kafka("3.9", sources=("maven",))
    assert home == tmp_path / "3.9.2" and not stale.exists()
    assert d.verify(home) is None and (home / "config" / "kafkalab-log4j.properties").is_file()
    assert json.loads((home / d.MANIFEST).read_text())["source"] == "maven"


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", "fetch-kafka", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)


def test_cli_without_java_says_so_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env.update(PATH=str(tmp_path / "empty-bin"), KAFKALAB_DIST=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    env.pop("KAFKA_HOME", None)
    done = _cli("3.9", env=env)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: Kafka runs on Java, and no 'java' was found (on PATH or in $JAVA_HOME): install a Java 17 runtime "
        "(Debian: apt-get install openjdk-17-jre-headless)"]
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("version", ["2.8.1", "banana"])
def test_cli_bad_version_is_one_line_and_exit_1(tmp_path, version):
    env = dict(os.environ, KAFKALAB_DIST=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    done = _cli(version, env=env)
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("error: ")
    assert not (tmp_path / "cache").exists()


def test_fetch_jars_refuses_a_bad_coordinate_and_leaves_nothing(tmp_path):
    with pytest.raises(FetchError, match="'kafka-streams' is not a Maven coordinate: give group:artifact:version"):
        maven.fetch_jars("streams", ["kafka-streams"], tmp_path)
    assert list(tmp_path.iterdir()) == []
