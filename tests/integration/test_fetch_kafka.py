"""``kafkalab fetch-kafka`` against the real Maven repository: a fetch, its reuse, and what goes wrong.

The first test fetches the newest Kafka 3.9.x into the user's cache (CI does so before the tests, and keeps
it between runs); the others work in throw-away caches and Maven repositories of their own.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.cluster import distribution as d

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
M2 = Path.home() / ".m2" / "repository"

pytestmark = pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven (mvn), which .ci/run installs")


def cli(*args, **env):
    full = dict(os.environ, PYTHONPATH=ROOT)
    full.pop("KAFKA_HOME", None)
    full.update(env)
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", "fetch-kafka", *args], capture_output=True,
                          text=True, env=full, cwd=ROOT, timeout=900)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def fetched():
    """Kafka 3.9 in the user's cache (fetched now if CI or an earlier run has not)."""
    done = cli("3.9")
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def test_fetch_prints_the_directory_last_and_the_files_check_out(fetched):
    assert fetched.parent == d.dist_root() and fetched.name.startswith("3.9.")
    assert (fetched / "libs" / f"kafka_2.13-{fetched.name}.jar").is_file()
    assert (fetched / "libs" / f"kafka-tools-{fetched.name}.jar").is_file()
    assert any(p.name.startswith("zookeeper-3.") for p in (fetched / "libs").iterdir())   # ZooKeeper mode's client
    assert d.verify(fetched) is None
    assert (fetched / "config" / "kafkalab-log4j.properties").is_file()


def test_a_second_fetch_reuses_the_cache_without_maven(fetched, tmp_path):
    done = cli("3.9", PATH=str(tmp_path))        # no mvn, no java on PATH: the cache must answer by itself...
    # ...except that Java is checked first, since Kafka cannot run without it
    assert done.returncode == 1 and "Kafka runs on Java" in done.stderr
    java_only = tmp_path / "bin"
    java_only.mkdir()
    (java_only / "java").symlink_to(shutil.which("java"))
    done = cli("3.9", PATH=str(java_only))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(fetched)
    assert "already in" in done.stderr


def test_an_unknown_version_is_one_line_and_leaves_nothing(tmp_path):
    done = cli("3.9.99", KAFKALAB_DIST=str(tmp_path / "cache"))
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == ("error: maven: the repository has no Kafka 3.9.99 (org.apache.kafka:"
                                            "kafka_2.13); see the versions at https://kafka.apache.org/downloads")
    assert os.listdir(tmp_path / "cache") == []


def test_no_network_is_one_line_and_leaves_nothing(tmp_path):
    # a repository nobody answers at, and an empty local repository: Maven has to go out, and cannot
    done = cli("3.9.2", "--source", "maven", KAFKALAB_DIST=str(tmp_path / "cache"),
               KAFKALAB_MAVEN_REPO=f"http://127.0.0.1:{closed_port()}/",
               MAVEN_OPTS=f"-Dmaven.repo.local={tmp_path / 'm2'}")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == ("error: Kafka could not be fetched: maven: the Maven repository cannot "
                                            "be reached (no network?); nothing was fetched")
    assert os.listdir(tmp_path / "cache") == []


def _local_repo_with_a_corrupt_jar(fetched: Path, root: Path) -> Path:
    """A Maven local repository that is the user's, except for a kafka_2.13 jar with one byte flipped.

    Every directory is a symlink into ~/.m2, but org/apache/kafka/kafka_2.13/<version> is a copy."""
    version = fetched.name
    repo = root / "m2"
    path = Path("org") / "apache" / "kafka" / "kafka_2.13" / version
    for depth in range(len(path.parts)):
        here = Path(*path.parts[:depth])
        (repo / here).mkdir(parents=True, exist_ok=True)
        for entry in (M2 / here).iterdir():
            if entry.name != path.parts[depth]:
                (repo / here / entry.name).symlink_to(entry)
    shutil.copytree(M2 / path, repo / path)
    jar = repo / path / f"kafka_2.13-{version}.jar"
    data = bytearray(jar.read_bytes())
    data[len(data) // 2] ^= 0xFF
    jar.write_bytes(bytes(data))
    return repo


def test_a_corrupt_jar_is_refused_and_leaves_nothing(fetched, tmp_path):
    repo = _local_repo_with_a_corrupt_jar(fetched, tmp_path)
    done = cli(fetched.name, "--source", "maven", KAFKALAB_DIST=str(tmp_path / "cache"),
               MAVEN_OPTS=f"-Dmaven.repo.local={repo}")
    assert done.returncode == 1
    last = done.stderr.splitlines()[-1]
    assert last.startswith(f"error: maven: kafka_2.13-{fetched.name}.jar in the local Maven repository does not "
                           "match its SHA-1 (corrupt download)"), done.stderr
    assert os.listdir(tmp_path / "cache") == []


def test_a_corrupted_cache_is_fetched_again(fetched, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(fetched, cache / fetched.name)
    jar = cache / fetched.name / "libs" / f"kafka_2.13-{fetched.name}.jar"
    jar.write_bytes(jar.read_bytes()[:-10])                      # truncated
    done = cli("3.9", KAFKALAB_DIST=str(cache))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(cache / fetched.name)
    assert d.verify(cache / fetched.name) is None
