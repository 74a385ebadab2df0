"""The ``kafkalab`` command: dump-log, broker and lab, run as real subprocesses."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest
from confluent_kafka import Producer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def kafkalab(*args, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=ENV)


@pytest.fixture
def cli_broker(tmp_path):
    """``kafkalab broker`` as a child process; stopped (and killed if need be) at teardown."""
    procs = []

    def start(*extra):
        log_dir = str(tmp_path / "data")
        proc = subprocess.Popen([sys.executable, "-m", "kafkalab.cli", "broker", "--port", "0",
                                 "--log-dir", log_dir, *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        procs.append(proc)
        line = proc.stdout.readline()
        match = re.search(r"ready on (\S+:\d+)", line)
        assert match, f"broker did not start: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        return proc, match.group(1), log_dir

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            stream.close()


def test_help_lists_the_commands():
    result = kafkalab("--help")
    assert result.returncode == 0
    for command in ("dump-log", "broker", "lab"):
        assert command in result.stdout
    assert kafkalab("--version").stdout.strip().startswith("kafkalab ")


def test_no_command_prints_help_and_fails():
    result = kafkalab()
    assert result.returncode == 2 and "dump-log" in result.stdout


def test_each_command_has_help():
    dump = kafkalab("dump-log", "--help")
    assert dump.returncode == 0 and "--print-data-log" in dump.stdout
    broker = kafkalab("broker", "--help")
    assert broker.returncode == 0 and "--log-dir" in broker.stdout and "kafkalab broker" in broker.stdout
    lab = kafkalab("lab", "--help")
    assert lab.returncode == 0 and "--no-browser" in lab.stdout


def test_broker_then_dump_its_segments(cli_broker):
    proc, bootstrap, log_dir = cli_broker("--config", "log.segment.bytes=400",
                                          "--config", "log.index.interval.bytes=100")
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(12):
        producer.produce("cli-topic", key=f"key-{i}", value=f"value-{i}", partition=0)
        producer.flush(15)   # one batch per record, so segments roll every few records
    assert len(producer) == 0
    del producer

    proc.send_signal(signal.SIGTERM)        # a clean shutdown flushes and checkpoints
    assert proc.wait(30) == 0

    partition_dir = os.path.join(log_dir, "cli-topic-0")
    logs = sorted(f for f in os.listdir(partition_dir) if f.endswith(".log"))
    assert len(logs) > 1, logs   # log.segment.bytes=400 made the log roll
    first = os.path.join(partition_dir, logs[0])

    batches_only = kafkalab("dump-log", first)
    assert batches_only.returncode == 0, batches_only.stderr
    lines = batches_only.stdout.splitlines()
    assert lines[:2] == [f"Dumping {first}", "Log starting offset: 0"]
    assert lines[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 ")
    assert all(line.endswith("isvalid: true") for line in lines[2:])
    assert not any(line.startswith("|") for line in lines)

    data = kafkalab("dump-log", first, "--print-data-log")
    assert data.returncode == 0
    assert "| offset: 0 CreateTime: " in data.stdout and "key: key-0 payload: value-0" in data.stdout

    # every record, across all segments, via the partition directory
    everything = kafkalab("dump-log", partition_dir, "--print-data-log").stdout
    assert [int(m) for m in re.findall(r"^\| offset: (\d+) ", everything, re.M)] == list(range(12))

    index = os.path.join(partition_dir, logs[0].replace(".log", ".index"))
    timeindex = os.path.join(partition_dir, logs[0].replace(".log", ".timeindex"))
    both = kafkalab("dump-log", "--files", f"{index},{timeindex}")
    assert both.returncode == 0 and both.stderr == ""   # no index entry disagrees with the log
    assert re.search(r"^offset: \d+ position: \d+$", both.stdout, re.M)
    assert re.search(r"^timestamp: \d+ offset: \d+$", both.stdout, re.M)


def test_dump_log_reports_a_torn_segment(tmp_path, cli_broker):
    proc, bootstrap, log_dir = cli_broker()
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(3):
        producer.produce("torn", value=b"x" * 50, partition=0)
        producer.flush(15)
    del producer
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    segment = os.path.join(log_dir, "torn-0", "00000000000000000000.log")
    size = os.path.getsize(segment)
    os.truncate(segment, size - 20)   # as if the broker died while writing the last batch
    result = kafkalab("dump-log", segment, "--print-data-log")
    assert result.returncode == 0
    assert re.search(r"Found \d+ invalid bytes at the end of 00000000000000000000.log", result.stdout)
    assert result.stdout.count("isvalid: true") == 2


def test_dump_log_missing_file():
    result = kafkalab("dump-log", "/nonexistent/00000000000000000000.log")
    assert result.returncode == 1 and "no such file" in result.stderr
    assert kafkalab("dump-log").returncode == 2


def test_broker_rejects_bad_flags(tmp_path):
    result = kafkalab("broker", "--log-dir", str(tmp_path), "--config", "num.partitions=zero", timeout=60)
    assert result.returncode == 2 and "num.partitions" in result.stderr


def test_lab_dry_run_points_at_the_notebooks():
    result = kafkalab("lab", "--dry-run", "--no-browser", "--port", "8899")
    assert result.returncode == 0
    assert "jupyterlab" in result.stdout
    # the checkout's root (so labs/ is reachable from the lessons), opened at lesson 00
    assert f"--notebook-dir={ROOT}" in result.stdout.split()
    assert "--LabApp.default_url=/lab/tree/notebooks/00_first_events.ipynb" in result.stdout
    assert "--port=8899" in result.stdout and "--no-browser" in result.stdout


def test_lab_with_missing_folder(tmp_path):
    result = kafkalab("lab", "--dry-run", "--notebook-dir", str(tmp_path / "nope"))
    assert result.returncode == 2 and "notebooks" in result.stderr
