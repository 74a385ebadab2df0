"""A mini broker's Kafka metrics, served as Prometheus text under the JMX exporter's names (issue #31).

On a standalone ``kafkalab.mini()``: where they are served and that the server goes with the broker; then that the
numbers are Kafka's (records in, bytes in, requests, log offsets, partitions and leaders, a deleted topic's series
gone), each compared with what the clients and Metadata say.
"""
from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

import kafkalab
from tests.conftest import NO_RETENTION_CHECK, free_port


def scrape_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain")
        return response.read().decode()


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    text = scrape_text(url)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_served_at_metrics_url_and_gone_with_the_broker(tmp_path):
    before = set(threading.enumerate())
    broker = kafkalab.mini(log_dir=str(tmp_path / "b"), **NO_RETENTION_CHECK)
    try:
        url = broker.metrics_url
        host, port = url.removeprefix("http://").removesuffix("/metrics").rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) not in (0, broker.port)
        scrape(url)
    finally:
        broker.close()
    assert set(threading.enumerate()) == before   # no HTTP server thread left
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)
    with socket.socket() as s:   # nothing listens there any more (SO_REUSEADDR: the scrape's TIME_WAIT may remain)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", int(port)))
        s.listen()


def test_the_metrics_port_config(tmp_path):
    port = free_port()
    with kafkalab.mini(log_dir=str(tmp_path / "a"), **{"kafkalab.metrics.port": port}) as broker:
        assert broker.metrics_url == f"http://127.0.0.1:{port}/metrics"
        scrape(broker.metrics_url)
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"kafkalab.metrics.port": -1}) as broker:
        assert broker.metrics_url is None and broker.server.metrics is not None   # kept, not served
    with kafkalab.mini(log_dir=str(tmp_path / "c"), **{"kafkalab.metrics.enabled": False}) as broker:
        assert broker.metrics_url is None and broker.server.metrics is None
    with pytest.raises(ValueError, match="kafkalab.metrics.port"):
        kafkalab.mini(log_dir=str(tmp_path / "d"), **{"kafkalab.metrics.port": 70000})


def test_a_metrics_port_in_use_fails_the_start_clearly(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(kafkalab.broker.kafka_server.StartupError, match="kafkalab.metrics.port"):
            kafkalab.mini(log_dir=str(tmp_path / "e"), **{"kafkalab.metrics.port": port})
