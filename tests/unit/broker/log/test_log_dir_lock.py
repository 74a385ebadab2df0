"""Kafka's ``.lock``: one broker per log directory, in this process or another."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from confluent_kafka import Producer

import kafkalab
from kafkalab.broker.server.config import BrokerConfig
from kafkalab.broker.kafka_server import StartupError
from kafkalab.broker.log.log_manager import CLEAN_SHUTDOWN_FILE, LogDirLock, LogDirLockedError, LogManager

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
KAFKA_WORDING = ("Failed to acquire lock on file .lock in {dir}. "
                 "A Kafka instance in another process or thread is using this directory.")


def test_second_in_process_broker_on_the_same_directory_is_refused(tmp_path):
    log_dir = str(tmp_path / "logs")
    with kafkalab.mini(log_dir=log_dir) as first:
        with pytest.raises(StartupError) as e:
            kafkalab.mini(log_dir=log_dir)
        assert str(e.value) == KAFKA_WORDING.format(dir=log_dir)
        assert os.path.exists(os.path.join(log_dir, ".lock"))
        p = Producer({"bootstrap.servers": first.bootstrap_servers})   # the first broker is unharmed
        p.produce("still-mine", b"v")
        assert p.flush(15) == 0
    with kafkalab.mini(log_dir=log_dir) as again:                      # closed: the lock is free again
        assert again.server.log_manager.had_clean_shutdown


def test_broker_process_refuses_a_directory_in_use(broker_process, tmp_path):
    bp = broker_process(configs={"num.partitions": 1}).start()
    env = dict(os.environ, PYTHONPATH=ROOT)
    second = subprocess.run([sys.executable, "-m", "kafkalab.broker", "--port", "0", "--log-dir", bp.log_dir],
                            capture_output=True, text=True, timeout=60, env=env)
    assert second.returncode == 1
    assert KAFKA_WORDING.format(dir=bp.log_dir) in second.stderr
    assert "ready" not in second.stdout
    # the refused broker touched nothing: the running one still has no clean-shutdown marker to lose
    # and serves as before
    assert not os.path.exists(os.path.join(bp.log_dir, CLEAN_SHUTDOWN_FILE))
    p = Producer({"bootstrap.servers": bp.bootstrap_servers})
    p.produce("t", b"v")
    assert p.flush(15) == 0
    bp.stop()
    assert os.path.exists(os.path.join(bp.log_dir, CLEAN_SHUTDOWN_FILE))


def test_in_process_broker_refuses_a_directory_a_process_uses(broker_process):
    bp = broker_process().start()
    with pytest.raises(StartupError, match="Failed to acquire lock on file .lock"):
        kafkalab.mini(log_dir=bp.log_dir)


def test_a_killed_broker_leaves_its_directory_unlocked(broker_process):
    bp = broker_process().start()
    bp.kill()                                    # the kernel drops the flock with the process
    with kafkalab.mini(log_dir=bp.log_dir) as b:
        assert not b.server.log_manager.had_clean_shutdown


def test_lock_is_released_by_close_and_by_a_failed_start(tmp_path):
    config = BrokerConfig({"log.dirs": str(tmp_path)})
    manager = LogManager(str(tmp_path), config, lock_dir=True)
    with pytest.raises(LogDirLockedError):
        LogManager(str(tmp_path), config, lock_dir=True)
    manager.close()
    assert not manager.dir_lock.held
    LogManager(str(tmp_path), config, lock_dir=True).release_lock()
    # a broker whose port is taken fails to start after locking: the lock must not stay behind
    with kafkalab.mini(log_dir=str(tmp_path / "a")) as running:
        with pytest.raises(StartupError, match="port"):
            kafkalab.mini(log_dir=str(tmp_path / "b"), port=running.port)
        LogDirLock(str(tmp_path / "b")).release()


def test_log_manager_without_lock_dir_takes_no_lock(tmp_path):
    """What the unit tests rely on to reopen a directory after a simulated crash."""
    config = BrokerConfig({"log.dirs": str(tmp_path)})
    first = LogManager(str(tmp_path), config)
    second = LogManager(str(tmp_path), config)
    assert first.dir_lock is None and second.dir_lock is None
    LogDirLock(str(tmp_path)).release()
