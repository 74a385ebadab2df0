"""Finding and running ZooKeeper: Java, the jars ($ZOOKEEPER_HOME, pyspark, Debian), clear errors."""
from __future__ import annotations

import os

import psutil
import pytest

from kafkalab.cluster import zookeeper as zkmod
from kafkalab.cluster.zookeeper import ZooKeeperNotFound, ZooKeeperServer, four_letter_word


def _no_java_anywhere(monkeypatch, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_missing_java_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    _no_java_anywhere(monkeypatch, tmp_path)
    with pytest.raises(ZooKeeperNotFound, match="openjdk-17") as e:
        zkmod.find_java()
    assert "PATH" in str(e.value)


def test_java_home_without_java_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    _no_java_anywhere(monkeypatch, tmp_path)
    with pytest.raises(ZooKeeperNotFound, match="JAVA_HOME=.*no-jdk"):
        zkmod.find_java()


def test_start_without_java_raises_before_starting_anything(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    _no_java_anywhere(monkeypatch, tmp_path)
    server = ZooKeeperServer(str(tmp_path / "zk"))
    with pytest.raises(ZooKeeperNotFound):
        server.start()
    assert server.process is None


def test_zookeeper_home_without_jars_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))
    with pytest.raises(ZooKeeperNotFound, match="ZOOKEEPER_HOME=") as e:
        zkmod.find_classpath()
    assert "apache-zookeeper" in str(e.value) and "pip install pyspark" in str(e.value)


def test_nothing_found_names_the_three_ways(monkeypatch):
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    monkeypatch.setattr(zkmod, "classpath_from_pyspark", lambda: None)
    monkeypatch.setattr(zkmod, "DEBIAN_JAR", "/nonexistent/zookeeper.jar")
    with pytest.raises(ZooKeeperNotFound) as e:
        zkmod.find_classpath()
    for hint in ("pip install pyspark", "ZOOKEEPER_HOME", "apt-get install zookeeper"):
        assert hint in str(e.value)


def test_debian_package_is_the_fallback(monkeypatch, tmp_path):
    jar = tmp_path / "zookeeper.jar"
    jar.write_bytes(b"")
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    monkeypatch.setattr(zkmod, "classpath_from_pyspark", lambda: None)
    monkeypatch.setattr(zkmod, "DEBIAN_JAR", str(jar))
    assert zkmod.find_classpath() == str(jar)   # its manifest's Class-Path brings the rest


def test_pyspark_jars_are_found():
    cp = zkmod.classpath_from_pyspark()
    assert cp is not None
    names = [os.path.basename(p) for p in cp.split(os.pathsep)]
    assert any(n.startswith("zookeeper-3") for n in names)
    assert any(n.startswith("zookeeper-jute-") for n in names)


@pytest.fixture
def zookeeper_home(tmp_path):
    """An Apache ZooKeeper release layout (lib/*.jar) made of pyspark's jars."""
    home = tmp_path / "apache-zookeeper-bin"
    (home / "lib").mkdir(parents=True)
    for path in zkmod.classpath_from_pyspark().split(os.pathsep):
        os.symlink(path, home / "lib" / os.path.basename(path))
    return home


def test_zookeeper_home_wins_and_runs(monkeypatch, tmp_path, zookeeper_home):
    monkeypatch.setenv("ZOOKEEPER_HOME", str(zookeeper_home))
    cp = zkmod.find_classpath()
    assert all(p.startswith(str(zookeeper_home)) for p in cp.split(os.pathsep))
    with ZooKeeperServer(str(tmp_path / "zk")) as zk:
        assert "Mode: standalone" in four_letter_word(zk.host, zk.port, "srvr")
        assert str(zookeeper_home) in " ".join(psutil.Process(zk.pid).cmdline())


def test_start_measures_time_writes_config_and_log_and_stop_ends_the_process(tmp_path):
    server = ZooKeeperServer(str(tmp_path / "zk"))
    with server:
        assert server.running and server.port > 0
        assert 0 < server.start_time_s < 30
        assert four_letter_word(server.host, server.port, "ruok") == "imok"
        cfg = (tmp_path / "zk" / "zoo.cfg").read_text()
        assert f"clientPort={server.port}" in cfg and "dataDir=" in cfg
        pid = server.pid
    assert not server.running
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    log = (tmp_path / "zk" / "zookeeper.log").read_text()
    assert "ZooKeeperServer" in log     # log4j is on the classpath: the server says what it does


def test_a_port_in_use_is_refused_instead_of_taking_the_other_server_for_ours(tmp_path):
    with ZooKeeperServer(str(tmp_path / "a")) as first:
        second = ZooKeeperServer(str(tmp_path / "b"), port=first.port)
        with pytest.raises(RuntimeError, match="in use"):
            second.start(timeout_s=15)
        assert second.process is None


def test_a_server_that_exits_at_once_reports_its_log(tmp_path):
    server = ZooKeeperServer(str(tmp_path / "zk"), heap_mb=0)   # -Xmx0m: the JVM refuses to start
    with pytest.raises(RuntimeError, match="exited with status .*zookeeper.log"):
        server.start(timeout_s=15)
    assert not server.running
