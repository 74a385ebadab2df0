"""docker-compose.yml (the workshop cluster) is consistent, checked without a Docker engine.

What a broken compose file does in a classroom — a broker advertising a name
nobody can resolve, two brokers on one port, a replication factor of 3 on two
brokers, the notebooks' bootstrap list missing a broker, a lesson's "6 s" that
is 18 s on this cluster — is caught here, by reading the file as Compose does
(YAML with merge keys) and checking it against what Kafka and the lessons need.
"""
from __future__ import annotations

import os
import re

import pytest

yaml = pytest.importorskip("yaml")

from kafkalab.cluster import LAB_DEFAULTS  # noqa: E402
from kafkalab.cluster.docker_api import PrintedControls  # noqa: E402
from kafkalab.cluster.external import parse_bootstrap  # noqa: E402
from kafkalab.cluster.kafka_backend import KAFKA_ONLY_DEFAULTS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPOSE = os.path.join(ROOT, "docker-compose.yml")
SOCKET_OVERRIDE = os.path.join(ROOT, "docker-compose.docker-socket.yml")


def load(path: str) -> dict:
    with open(path) as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def compose() -> dict:
    return load(COMPOSE)


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


def env(service: dict) -> dict[str, str]:
    """A service's environment as strings (Compose accepts a mapping or a list of NAME=VALUE)."""
    e = service.get("environment") or {}
    if isinstance(e, list):
        e = dict(item.split("=", 1) for item in e)
    return {k: "" if v is None else str(v) for k, v in e.items()}


def brokers(services) -> dict[str, dict]:
    return {name: s for name, s in services.items() if "cp-kafka" in s.get("image", "")}


def listeners(value: str) -> dict[str, tuple[str, int]]:
    """``"INTERNAL://0.0.0.0:19092,HOST://0.0.0.0:9092"`` -> ``{"INTERNAL": ("0.0.0.0", 19092), ...}``."""
    out = {}
    for item in value.split(","):
        m = re.fullmatch(r"\s*([A-Z_][A-Z0-9_]*)://([^:]*):(\d+)\s*", item)
        assert m, f"not a listener: {item!r}"
        assert m.group(1) not in out, f"listener {m.group(1)} twice in {value!r}"
        out[m.group(1)] = (m.group(2), int(m.group(3)))
    return out


def published(service: dict) -> list[tuple[str, int, int]]:
    """``ports: ["127.0.0.1:9092:9092"]`` -> ``[("127.0.0.1", 9092, 9092)]``."""
    out = []
    for entry in service.get("ports") or []:
        assert isinstance(entry, str), f"use the short syntax HOST_IP:HOST_PORT:CONTAINER_PORT, not {entry!r}"
        parts = entry.split(":")
        assert len(parts) == 3, f"{entry!r}: bind an address explicitly (127.0.0.1:HOST:CONTAINER)"
        out.append((parts[0], int(parts[1]), int(parts[2])))
    return out


def megabytes(size) -> int:
    m = re.fullmatch(r"(\d+)\s*([kmg]?)b?", str(size).strip().lower())
    assert m, f"not a memory size: {size!r}"
    n, unit = int(m.group(1)), m.group(2)
    return {"": n // (1024 * 1024), "k": n // 1024, "m": n, "g": n * 1024}[unit]


def workshop_section() -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.index("## Workshop")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


# -- shape ----------------------------------------------------------------------------------------------------

def test_the_cluster_is_zookeeper_three_brokers_and_jupyter(compose, services):
    assert compose["name"] == "kafkalab"
    assert set(services) == {"zookeeper", "kafka-1", "kafka-2", "kafka-3", "jupyter"}
    assert sorted(brokers(services)) == ["kafka-1", "kafka-2", "kafka-3"]


def test_broker_ids_are_distinct_and_match_the_service_name_label_and_hostname(services):
    ids = {}
    for name, s in brokers(services).items():
        broker_id = int(env(s)["KAFKA_BROKER_ID"])
        ids[name] = broker_id
        assert name == f"kafka-{broker_id}", "ExternalCluster's printed commands name the service kafka-<id>"
        assert s["hostname"] == name
        assert str(s["labels"]["kafkalab.broker.id"]) == str(broker_id), "the Docker API controls find brokers by it"
        assert s.get("restart") == "no", "a killed broker must stay dead until a lesson restarts it"
    assert sorted(ids.values()) == [1, 2, 3]


def test_listeners_advertised_listeners_and_ports_are_distinct_and_match(services):
    host_ports = set()
    for name, s in brokers(services).items():
        e = env(s)
        bound = listeners(e["KAFKA_LISTENERS"])
        advertised = listeners(e["KAFKA_ADVERTISED_LISTENERS"])
        protocols = dict(item.split(":") for item in e["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
        assert set(bound) == set(advertised) == set(protocols), name
        assert e["KAFKA_INTER_BROKER_LISTENER_NAME"] in bound
        for listener, (_, port) in bound.items():
            assert advertised[listener][1] == port, f"{name}: {listener} advertises another port than it binds"
        # inside the compose network: the broker's own hostname; from the host: localhost and a published port
        assert advertised["INTERNAL"][0] == s["hostname"]
        assert advertised["HOST"][0] == "localhost"
        port = advertised["HOST"][1]
        assert ("127.0.0.1", port, port) in published(s), f"{name}: HOST listener port {port} is not published"
        assert port not in host_ports
        host_ports.add(port)


def test_every_published_port_is_distinct_and_bound_to_loopback(services):
    seen = set()
    for name, s in services.items():
        for address, host_port, _ in published(s):
            assert address == "127.0.0.1", f"{name}: {address}:{host_port} would be reachable from the network"
            assert host_port not in seen, f"host port {host_port} published twice"
            seen.add(host_port)
    assert {2181, 8888, 9092, 9093, 9094} == seen


def test_replication_factors_fit_three_brokers(services):
    n = len(brokers(services))
    for name, s in brokers(services).items():
        e = env(s)
        factors = {k: int(v) for k, v in e.items() if k.endswith("REPLICATION_FACTOR")}
        assert factors, name
        assert all(1 <= f <= n for f in factors.values()), factors
        assert int(e["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"]) <= int(e["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"])
        if "KAFKA_MIN_INSYNC_REPLICAS" in e:
            assert int(e["KAFKA_MIN_INSYNC_REPLICAS"]) <= int(e["KAFKA_DEFAULT_REPLICATION_FACTOR"])


def test_brokers_agree_on_everything_but_their_identity(services):
    own = {"KAFKA_BROKER_ID", "KAFKA_LISTENERS", "KAFKA_ADVERTISED_LISTENERS"}
    shared = [{k: v for k, v in env(s).items() if k not in own} for s in brokers(services).values()]
    assert all(e == shared[0] for e in shared)
    assert len({s["image"] for s in brokers(services).values()}) == 1


# -- what the notebooks rely on ----------------------------------------------------------------------------------

def test_jupyter_bootstrap_list_names_every_broker_on_the_internal_listener(services):
    e = env(services["jupyter"])
    listed = parse_bootstrap(e["KAFKALAB_BOOTSTRAP_SERVERS"])
    internal = [listeners(env(s)["KAFKA_ADVERTISED_LISTENERS"])["INTERNAL"] for s in brokers(services).values()]
    assert sorted(listed) == sorted(internal)
    assert len(set(listed)) == len(listed)


def test_jupyter_knows_zookeeper_and_the_compose_project(compose, services):
    e = env(services["jupyter"])
    zk = services["zookeeper"]
    port = int(env(zk)["ZOOKEEPER_CLIENT_PORT"])
    assert e["KAFKALAB_ZOOKEEPER_CONNECT"] == f"{zk['hostname']}:{port}"
    assert all(env(s)["KAFKA_ZOOKEEPER_CONNECT"] == e["KAFKALAB_ZOOKEEPER_CONNECT"] for s in brokers(services).values())
    assert e["KAFKALAB_COMPOSE_PROJECT"] == compose["name"]
    # the printed commands name real services
    for broker_id in (1, 2, 3):
        service = PrintedControls().command("kill", broker_id).split()[-1]
        assert service in services


def test_brokers_set_the_lab_defaults_the_lessons_rely_on(services):
    n = len(brokers(services))
    expected = {name: d.for_brokers(n) for name, d in LAB_DEFAULTS.items()}
    expected.update({name: fn(n) for name, fn in KAFKA_ONLY_DEFAULTS.items()})
    for name, s in brokers(services).items():
        e = env(s)
        for config, value in expected.items():
            # Confluent's images turn KAFKA_<NAME> into the config <name> (. -> _, upper case)
            var = "KAFKA_" + config.upper().replace(".", "_")
            assert e.get(var) == str(value), f"{name}: {var} should be {value} (docs/cluster.md), not {e.get(var)}"
        assert "KAFKA_MIN_INSYNC_REPLICAS" not in e, "min.insync.replicas stays Kafka's 1, as on a lab cluster"


def test_zookeeper_allows_the_brokers_session_timeout(services):
    tick = int(env(services["zookeeper"])["ZOOKEEPER_TICK_TIME"])
    for s in brokers(services).values():
        timeout = int(env(s)["KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS"])
        assert 2 * tick <= timeout <= 20 * tick, "ZooKeeper would clamp the session to [2, 20] ticks"


def test_jupyter_requires_its_token(services):
    token = env(services["jupyter"])["JUPYTER_TOKEN"]
    m = re.fullmatch(r"\$\{JUPYTER_TOKEN:-(.+)\}", token)
    assert m and m.group(1).strip(), "JUPYTER_TOKEN needs a non-empty default (':-' also covers an empty value)"


# -- health, order, images, memory --------------------------------------------------------------------------------

def test_every_service_has_a_healthcheck_and_dependencies_wait_for_health(services):
    for name, s in services.items():
        check = s.get("healthcheck")
        assert check and check.get("test") and not check.get("disable"), f"{name} has no healthcheck"
        assert check["test"][0] in ("CMD", "CMD-SHELL")
        for dep, condition in (s.get("depends_on") or {}).items():
            assert dep in services
            assert condition == {"condition": "service_healthy"}, f"{name} -> {dep}: {condition}"
    assert set(services["jupyter"]["depends_on"]) == {"zookeeper", *brokers(services)}
    for s in brokers(services).values():
        assert set(s["depends_on"]) == {"zookeeper"}
        port = listeners(env(s)["KAFKA_LISTENERS"])["INTERNAL"][1]
        assert f"localhost:{port}" in " ".join(s["healthcheck"]["test"]), "the healthcheck asks the broker itself"


def test_images_are_pinned(services):
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    tags = {}
    for name, s in services.items():
        image = s["image"]
        repo, sep, tag = image.rpartition(":")
        assert sep and "/" not in tag, f"{name}: {image} has no tag"
        assert tag != "latest" and re.fullmatch(r"\d+\.\d+\.\d+", tag), f"{name}: {image} is not pinned to x.y.z"
        tags[repo] = tag
        assert "platform" not in s, "every image exists for amd64 and arm64: do not pin one architecture"
    assert tags["confluentinc/cp-kafka"] == tags["confluentinc/cp-zookeeper"]
    assert int(tags["confluentinc/cp-kafka"].split(".")[0]) == 7, "Confluent Platform 8 (Kafka 4) has no ZooKeeper mode"
    assert tags["kafkalab-jupyter"] == version, "the JupyterLab image is tagged with kafkalab's version"


def test_memory_limits_are_set_and_their_sum_is_in_the_readme(services):
    limits = {}
    for name, s in services.items():
        assert "mem_limit" in s, f"{name} has no memory limit"
        limits[name] = megabytes(s["mem_limit"])
    total = sum(limits.values())
    assert total <= 6 * 1024, f"{total} MB does not fit a laptop's Docker"
    assert f"{total} MB" in workshop_section(), f"README's workshop section should state the total, {total} MB"
    with open(COMPOSE) as f:
        assert f"= {total}m" in f.read(), "the compose file's header comment states the total"
    for s in brokers(services).values():
        heap = re.search(r"-Xmx(\d+)m", env(s)["KAFKA_HEAP_OPTS"])
        assert heap and int(heap.group(1)) + 64 + 256 <= limits["kafka-1"], "heap + tool heap + JVM overhead"


# -- the opt-in Docker socket ------------------------------------------------------------------------------------------

def test_docker_socket_is_opt_in_and_the_readme_says_what_it_gives(services):
    for name, s in services.items():
        assert not any("docker.sock" in str(v) for v in s.get("volumes") or []), f"{name} mounts the socket by default"
    override = load(SOCKET_OVERRIDE)
    assert set(override["services"]) == {"jupyter"}
    jupyter = override["services"]["jupyter"]
    assert any(str(v).endswith(":/var/run/docker.sock") for v in jupyter["volumes"])
    assert jupyter.get("group_add"), "the notebook's user needs the socket's group"
    text = workshop_section()
    assert "docker-compose.docker-socket.yml" in text
    assert "root-equivalent" in text
