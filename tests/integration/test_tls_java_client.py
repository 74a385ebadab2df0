"""Kafka's own Java client (kafka-clients 4.4, from the distribution ``kafkalab fetch-kafka 4`` fetches) over the
mini broker's SSL listener with PEM trust and key stores (KIP-651), with and without mutual TLS.

The client is ``tests/java/SslClient.java``, compiled with ``javac`` (kafkalab.streams.jvm); the test is skipped
only where Java or the distribution cannot be had, never because the broker misbehaves."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import kafkalab
from kafkalab.security import CertificateAuthority

SOURCE = Path(__file__).resolve().parent.parent / "java" / "SslClient.java"


@pytest.fixture(scope="module")
def ssl_client():
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.streams.jvm import StreamsJvmError, java_command
    try:
        home = Path(fetch_kafka("4"))
        prefix = java_command(home, [], ["-Xmx128m", "-Dlog4j2.level=warn"], source=SOURCE)
    except Exception as e:   # no Java, no javac-compatible JDK, no distribution
        if isinstance(e, (StreamsJvmError, OSError)) or "fetch" in type(e).__name__.lower():
            pytest.skip(f"no Java client here: {e}")
        raise
    return prefix


@pytest.mark.parametrize("mutual", [False, True])
def test_the_java_client_produces_and_consumes_over_ssl(ssl_client, tmp_path, mutual):
    ca = CertificateAuthority(directory=str(tmp_path / "ca"))
    client_auth = "required" if mutual else "none"
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners="PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                       **ca.broker_configs(client_auth=client_auth)) as broker:
        args = ["run", broker.listeners["SSL"], "java-tls", "20", ca.ca_path]
        if mutual:
            args.append(ca.issue("CN=java-client,O=kafkalab", name="java").keystore_path)
        out = subprocess.run(ssl_client + args, capture_output=True, text=True, timeout=180)
        assert "ACKED 20" in out.stdout and "CONSUMED 20" in out.stdout, out.stdout + out.stderr[-3000:]
