"""Third-party clients over SASL_SSL: each client produces N keyed records and consumes them back with
PLAIN (a user of the JAAS config) and SCRAM-SHA-512 (a user made over the admin API), against a standalone mini
broker, a mini ZooKeeper-mode cluster, a mini KRaft cluster and, as their oracles, Kafka 3.9 in ZooKeeper mode and
Kafka 4.4 in KRaft mode (combined nodes). Also malformed frames on the SASL_SSL listener, before and in the middle
of a SASL exchange: each closes its own connection (logged by a mini broker) and a good client is served right
after.

Every target has the lab's PLAINTEXT listener (the admin API, topic creation) and CLIENTS, a SASL_SSL listener, as in
test_cluster_listeners. Each target starts once per module and serves every client. The clients: confluent-kafka
(librdkafka), kafka-python, aiokafka, Kafka's Java client (tests/java/SaslClient.java), kcat and kafkajs
(tests/js, installed by scripts/test.sh with npm). A client whose program is not on this machine is skipped, saying
so; never because a broker misbehaves."""
from __future__ import annotations

import asyncio
import logging
import re
import shutil
import socket
import ssl
import struct
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (AdminClient, NewTopic, ScramCredentialInfo, ScramMechanism,
                                  UserScramCredentialUpsertion)
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)

import kafkalab
from kafkalab.broker.common.security.scram.scram_formatter import ScramFormatter, auth_message
from kafkalab.broker.common.security.scram.scram_mechanism import SCRAM_SHA_512
from kafkalab.broker.common.security.scram.scram_messages import ClientFinalMessage, ServerFirstMessage
from kafkalab.security import CertificateAuthority
from tests.helpers import kafka_wire as wire
from tests.helpers.cluster_helpers import wait_until

N = 20
WAIT_S = 60
ROOT = Path(__file__).resolve().parent.parent
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_paula="paula-secret";'
#: the user and password of each mechanism: paula in the JAAS config, sam made over the admin API
USERS = {"PLAIN": ("paula", "paula-secret"), "SCRAM-SHA-512": ("sam", "sam-secret")}
MECHANISMS = list(USERS)
EXPECTED = sorted((f"k{i}", f"v{i}") for i in range(N))


def configs(ca: CertificateAuthority) -> dict:
    return {"listeners": "PLAINTEXT://127.0.0.1:0,CLIENTS://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENTS:SASL_SSL",
            "inter.broker.listener.name": "PLAINTEXT",
            **ca.broker_configs(listener="CLIENTS"),
            "listener.name.clients.sasl.enabled.mechanisms": ",".join(MECHANISMS),
            "listener.name.clients.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.clients.scram-sha-512.sasl.jaas.config": SCRAM_JAAS}


@dataclass
class Target:
    name: str
    lab: str        # PLAINTEXT: the lab's tooling
    clients: str    # CLIENTS (SASL_SSL), every broker's
    brokers: int
    ca: CertificateAuthority
    #: the text a broker logged so far, by CLIENTS address (None: an in-process broker, logging to this process)
    log_of: Callable[[str], str] | None

    @property
    def first(self) -> str:
        return self.clients.split(",")[0]

    def topic(self, client: str, mechanism: str) -> str:
        """A new topic of three partitions (replicated on every broker of a cluster)."""
        name = f"{client}-{mechanism.lower()}-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": self.lab})
        admin.create_topics([NewTopic(name, 3, min(3, self.brokers))])[name].result(WAIT_S)

        def led() -> bool:
            partitions = admin.list_topics(name, timeout=10).topics[name].partitions
            return len(partitions) == 3 and all(p.leader >= 0 for p in partitions.values())
        wait_until(led, f"leaders for {name}", WAIT_S)
        return name


def start(name: str, ca: CertificateAuthority, directory: str):
    """The target's context manager: a broker or a three-broker cluster with :func:`configs`."""
    if name == "mini":
        return kafkalab.mini(log_dir=directory, **configs(ca))
    if name.startswith("mini-"):
        return kafkalab.cluster(brokers=3, mode=name[len("mini-"):], dir=directory, **configs(ca))
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.kraft_config import KRaftBackend
    if name == "kafka-3.9":   # ZooKeeper mode: the oracle of the mini ZooKeeper-mode cluster
        from kafkalab.cluster import KafkaBackend
        return kafkalab.cluster(brokers=3, dir=directory, backend=KafkaBackend(str(fetch_kafka("3.9"))),
                                **configs(ca))
    # combined broker+controller nodes: three JVMs, not six, on a CI machine's two cores
    return kafkalab.cluster(brokers=3, mode="kraft", combined=True, dir=directory,
                            backend=KRaftBackend(str(fetch_kafka("4"))), **configs(ca))


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca")))


@pytest.fixture(scope="module", params=["mini", "mini-zookeeper", "mini-kraft",
                                        pytest.param("kafka-3.9", marks=pytest.mark.cluster),
                                        pytest.param("kafka-4.4", marks=pytest.mark.cluster)])
def target(request, ca, tmp_path_factory):
    with start(request.param, ca, str(tmp_path_factory.mktemp(request.param))) as t:
        if request.param == "mini":
            target = Target("mini", t.listeners["PLAINTEXT"], t.listeners["CLIENTS"], 1, ca, None)
        else:
            rows = t.brokers.to_dict("records")
            logs = {row["listeners"]["CLIENTS"]: row["log"] for row in rows}
            target = Target(request.param, t.bootstrap_servers, t.listeners["CLIENTS"], len(rows), ca,
                            lambda address: Path(logs[address]).read_text(errors="replace"))
        user, password = USERS["SCRAM-SHA-512"]
        admin = AdminClient({"bootstrap.servers": target.lab})
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode())]).values():
            f.result(WAIT_S)
        for address in target.clients.split(","):   # the credential has reached every broker
            wait_until(lambda: scram_authenticates(target, address), f"{user} authenticating on {address}", WAIT_S)
        yield target


# --- the wire, over TLS --------------------------------------------------------------------------------------------

def tls_connect(target: Target, address: str | None = None) -> ssl.SSLSocket:
    sock = wire.connect(address or target.first, timeout=15)
    context = ssl.create_default_context(cafile=target.ca.ca_path)
    return context.wrap_socket(sock, server_hostname=(address or target.first).rpartition(":")[0])


def closed(sock: socket.socket, timeout: float = 15) -> bool:
    """True if the broker ends ``sock`` within ``timeout`` s: EOF, a reset, or TLS torn down; False if it stays open."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except (socket.timeout, TimeoutError):
        return False
    except OSError:   # ConnectionResetError, ssl.SSLError (SSLEOFError, an alert)
        return True


def handshake(sock, mechanism: str, correlation_id: int = 1):
    return wire.roundtrip(sock, SaslHandshakeRequest(mechanism=mechanism), SaslHandshakeResponse, 1, correlation_id)


def authenticate(sock, token: bytes, correlation_id: int):
    return wire.roundtrip(sock, SaslAuthenticateRequest(auth_bytes=token), SaslAuthenticateResponse, 2,
                          correlation_id)


def client_first(sock, user: str) -> tuple[str, ServerFirstMessage]:
    """SaslHandshake SCRAM-SHA-512 and the client-first message: its bare part and the server's answer."""
    assert handshake(sock, "SCRAM-SHA-512").error_code == 0
    bare = f"n={user},r=matrixnonce{uuid.uuid4().hex[:8]}"
    first = authenticate(sock, f"n,,{bare}".encode(), 2)
    assert first.error_code == 0, first
    return bare, ServerFirstMessage.parse(first.auth_bytes)


def scram_authenticates(target: Target, address: str) -> bool:
    """A whole SCRAM-SHA-512 exchange as sam on ``address``, then a Metadata request served."""
    user, password = USERS["SCRAM-SHA-512"]
    with tls_connect(target, address) as sock:
        assert handshake(sock, "SCRAM-SHA-512").error_code == 0
        bare = f"n={user},r=matrixnonce{uuid.uuid4().hex[:8]}"
        first = authenticate(sock, f"n,,{bare}".encode(), 2)
        if first.error_code:   # not (yet) a user this broker knows
            return False
        server_first = ServerFirstMessage.parse(first.auth_bytes)
        f = ScramFormatter(SCRAM_SHA_512)
        final = ClientFinalMessage(b"n,,", server_first.nonce)
        salted = f.salted_password(password, server_first.salt, server_first.iterations)
        final.proof = f.client_proof(salted, auth_message(bare, server_first.to_message(), final.without_proof()))
        if authenticate(sock, final.to_bytes(), 3).error_code:
            return False
        return bool(wire.roundtrip(sock, MetadataRequest(topics=None), MetadataResponse, 1, 4).brokers)


# --- the clients ---------------------------------------------------------------------------------------------------

def confluent_kafka_client(target: Target, mechanism: str, topic: str) -> list[tuple[str, str]]:
    user, password = USERS[mechanism]
    conf = {**target.ca.client_configs(), "bootstrap.servers": target.clients, "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
    producer = Producer({**conf, "acks": "all"})
    for i in range(N):
        producer.produce(topic, key=f"k{i}", value=f"v{i}")
    assert producer.flush(WAIT_S) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got, deadline = [], time.monotonic() + WAIT_S
    try:
        while len(got) < N and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.key().decode(), m.value().decode()))
    finally:
        consumer.close()
    return got


def kafka_python_client(target: Target, mechanism: str, topic: str) -> list[tuple[str, str]]:
    from kafka import KafkaConsumer, KafkaProducer
    user, password = USERS[mechanism]
    common = {**target.ca.kafka_python_configs(), "bootstrap_servers": target.clients.split(","),
              "security_protocol": "SASL_SSL", "sasl_mechanism": mechanism, "sasl_plain_username": user,
              "sasl_plain_password": password}
    producer = KafkaProducer(acks="all", **common)
    for f in [producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(N)]:
        f.get(timeout=WAIT_S)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                             consumer_timeout_ms=WAIT_S * 1000, **common)
    got = []
    try:
        for record in consumer:
            got.append((record.key.decode(), record.value.decode()))
            if len(got) == N:
                break
    finally:
        consumer.close()
    return got


def aiokafka_client(target: Target, mechanism: str, topic: str) -> list[tuple[str, str]]:
    aiokafka = pytest.importorskip("aiokafka", reason="aiokafka is not installed (pyproject's test extra has it)")
    from aiokafka.helpers import create_ssl_context
    user, password = USERS[mechanism]

    async def run() -> list[tuple[str, str]]:
        common = {"bootstrap_servers": target.clients, "security_protocol": "SASL_SSL", "sasl_mechanism": mechanism,
                  "sasl_plain_username": user, "sasl_plain_password": password,
                  "ssl_context": create_ssl_context(cafile=target.ca.ca_path)}
        producer = aiokafka.AIOKafkaProducer(acks="all", **common)
        await producer.start()
        try:
            for i in range(N):
                await producer.send_and_wait(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest", **common)
        await consumer.start()
        got: list[tuple[str, str]] = []
        try:
            deadline = time.monotonic() + WAIT_S
            while len(got) < N and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend((r.key.decode(), r.value.decode()) for r in records)
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


def records_printed(out: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    assert f"ACKED {N}" in out.stdout, out.stdout + out.stderr[-3000:]
    return [tuple(line.split()[1:3]) for line in out.stdout.splitlines() if line.startswith("RECORD ")]


@pytest.fixture(scope="module")
def java_client():
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.streams.jvm import StreamsJvmError, java_command
    try:
        home = Path(fetch_kafka("4"))
        return java_command(home, [], ["-Xmx128m", "-Dlog4j2.level=warn"], source=ROOT / "java" / "SaslClient.java")
    except Exception as e:   # no Java, no javac-compatible JDK, no distribution
        if isinstance(e, (StreamsJvmError, OSError)) or "fetch" in type(e).__name__.lower():
            pytest.skip(f"no Java client here: {e}")
        raise


def java(prefix: list[str], target: Target, mechanism: str, topic: str, tmp_path) -> list[tuple[str, str]]:
    user, password = USERS[mechanism]
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    props = {**target.ca.java_client_configs(), "security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
             "sasl.jaas.config": f'{module} required username="{user}" password="{password}";'}
    path = tmp_path / "client.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    out = subprocess.run(prefix + [target.clients, topic, str(N), str(path)], capture_output=True, text=True,
                         timeout=180)
    return records_printed(out)


def kcat_binary() -> str:
    binary = shutil.which("kcat") or shutil.which("kafkacat")
    if binary is None:
        pytest.skip("no kcat here (Debian's package kcat; .ci/run installs it)")
    return binary


def librdkafka_of_kcat() -> tuple[int, ...]:
    """The librdkafka kcat is linked with (Debian 12's kcat 1.7.1: 2.0.2), from ``kcat -V``."""
    match = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", subprocess.run([kcat_binary(), "-V"], capture_output=True,
                                                                       text=True, timeout=30).stdout)
    assert match, "kcat -V names no librdkafka"
    return tuple(int(g) for g in match.groups())


#: librdkafka before 2.6.1 puts its own nonce in front of SCRAM's combined nonce in client-final
#: (confluentinc/librdkafka#4895); Kafka 4 refuses that (Kafka 3.9 did not), and so does the mini broker in
#: KRaft mode and standalone (in ZooKeeper mode it checks as Kafka 3.9)
SCRAM_NONCE_FIXED = (2, 6, 1)


def kcat_produce(target: Target, mechanism: str, topic: str) -> subprocess.CompletedProcess:
    return subprocess.run(kcat_command(target, mechanism, topic) + ["-P", "-K", ":", "-X", "acks=all"],
                          capture_output=True, text=True, input="".join(f"k{i}:v{i}\n" for i in range(N)),
                          timeout=WAIT_S)


def kcat_command(target: Target, mechanism: str, topic: str) -> list[str]:
    user, password = USERS[mechanism]
    return [kcat_binary(), "-b", target.clients, "-t", topic, "-X", "security.protocol=SASL_SSL",
            "-X", f"sasl.mechanisms={mechanism}", "-X", f"sasl.username={user}", "-X", f"sasl.password={password}",
            "-X", f"ssl.ca.location={target.ca.ca_path}"]


def kcat(target: Target, mechanism: str, topic: str) -> list[tuple[str, str]]:
    produced = kcat_produce(target, mechanism, topic)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(kcat_command(target, mechanism, topic) + ["-C", "-o", "beginning", "-e", "-c", str(N),
                                                                         "-f", "%k %s\n"],
                              capture_output=True, text=True, timeout=WAIT_S)
    assert consumed.returncode == 0, consumed.stderr
    return [tuple(line.split()) for line in consumed.stdout.splitlines() if line.strip()]


def kafkajs(target: Target, mechanism: str, topic: str) -> list[tuple[str, str]]:
    script = ROOT / "js" / "sasl_client.js"
    node = shutil.which("node")
    if node is None or not (ROOT / "js" / "node_modules" / "kafkajs").is_dir():
        pytest.skip("no kafkajs here (node and `npm install` in tests/js: scripts/test.sh does it where npm is)")
    user, password = USERS[mechanism]
    out = subprocess.run([node, str(script), target.clients, topic, str(N), mechanism.lower(), user, password,
                          target.ca.ca_path], capture_output=True, text=True, timeout=120)
    return records_printed(out)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka", "kcat", "kafkajs"])
def test_a_client_produces_and_consumes_keyed_records(target, client, mechanism):
    run = {"confluent-kafka": confluent_kafka_client, "kafka-python": kafka_python_client,
           "aiokafka": aiokafka_client, "kcat": kcat, "kafkajs": kafkajs}[client]
    topic = target.topic(client, mechanism)
    if (client == "kcat" and mechanism.startswith("SCRAM") and librdkafka_of_kcat() < SCRAM_NONCE_FIXED
            and target.name not in ("mini-zookeeper", "kafka-3.9")):
        # this kcat's SCRAM is refused by Kafka 4.4 and by the mini broker alike, with Kafka's message (a
        # ZooKeeper-mode broker is Kafka 3.9's, whose endsWith check lets it through: it is served below)
        refused = kcat_produce(target, mechanism, topic)
        assert refused.returncode != 0
        assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in refused.stderr, refused.stderr
        return
    assert sorted(run(target, mechanism, topic)) == EXPECTED


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_java_client_produces_and_consumes_keyed_records(target, java_client, mechanism, tmp_path):
    topic = target.topic("java", mechanism)
    assert sorted(java(java_client, target, mechanism, topic, tmp_path)) == EXPECTED


# --- malformed frames ----------------------------------------------------------------------------------------------

def garbage_before_the_tls_handshake(target: Target) -> socket.socket:
    sock = wire.connect(target.first, timeout=15)
    sock.sendall(struct.pack(">i", 20) + b"\x00\x03\x00\x0c" + b"\x00" * 16)   # a Kafka frame, not TLS
    return sock


def garbage_before_the_sasl_handshake(target: Target) -> socket.socket:
    sock = tls_connect(target)
    junk = b"\xff\xff\x00\x00" + bytes(range(24))   # API key -1
    sock.sendall(struct.pack(">i", len(junk)) + junk)
    return sock


def metadata_between_handshake_and_authenticate(target: Target) -> socket.socket:
    sock = tls_connect(target)
    assert handshake(sock, "SCRAM-SHA-512").error_code == 0
    sock.sendall(wire.encode(MetadataRequest(topics=None), 1, correlation_id=9))
    frame = wire.recv_frame(sock)      # Kafka: an error response of that API, then the close
    assert struct.unpack_from(">i", frame)[0] == 9
    return sock


def truncated_authenticate_mid_scram(target: Target) -> socket.socket:
    sock = tls_connect(target)
    client_first(sock, USERS["SCRAM-SHA-512"][0])
    frame = wire.encode(SaslAuthenticateRequest(auth_bytes=b"c=biws,r=" + b"x" * 60 + b",p=proof"), 2,
                        correlation_id=3)[4:]
    cut = frame[:len(frame) // 2]      # the size tells the truth: the request inside is cut short
    sock.sendall(struct.pack(">i", len(cut)) + cut)
    return sock


def absurd_size(target: Target) -> socket.socket:
    sock = tls_connect(target)
    sock.sendall(struct.pack(">i", 0x7FFFFFF0) + b"\x00\x11\x00\x01" + b"\x00" * 12)
    return sock


#: each case, and what a mini broker logs for it (Kafka's Selector logs some of them at DEBUG only)
MALFORMED = {garbage_before_the_tls_handshake: "(SSL handshake failed)",
             garbage_before_the_sasl_handshake: "closing connection",
             metadata_between_handshake_and_authenticate:
                 "(Unexpected Kafka request of type METADATA during SASL authentication.)",
             truncated_authenticate_mid_scram: "closing connection",
             absurd_size: "frame size 2147483632 outside"}


@pytest.mark.parametrize("case", list(MALFORMED), ids=[c.__name__ for c in MALFORMED])
def test_a_malformed_frame_closes_its_connection_and_the_next_client_is_served(target, case, caplog):
    before = target.log_of(target.first) if target.log_of else ""
    with caplog.at_level(logging.INFO):
        with case(target) as sock:
            assert closed(sock)
        assert scram_authenticates(target, target.first)   # the next client: served at once
    if target.name.startswith("mini"):
        if target.log_of is None:
            logged = "\n".join(r.getMessage() for r in caplog.records)
        else:
            wait_until(lambda: MALFORMED[case] in target.log_of(target.first)[len(before):], "the log line", 10)
            logged = target.log_of(target.first)[len(before):]
        assert MALFORMED[case] in logged, logged[-3000:]
        assert "Traceback" not in logged and "unexpected error" not in logged
