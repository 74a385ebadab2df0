"""``kafkalab fetch-jmx-exporter``: the Prometheus JMX exporter's java agent, so real Kafka serves its metrics as
the mini broker does.

A mini broker serves its Kafka metrics as Prometheus text itself (:mod:`kafkalab.broker.common.metrics.prometheus`).
Real Kafka keeps them as JMX MBeans; the exporter's agent (``io.prometheus.jmx:jmx_prometheus_javaagent``), started
inside the broker's JVM with::

    -javaagent:<jar>=<host>:<port>:<rules>

serves them at ``http://host:port/metrics``. The rules are kafkalab's own, ``jmx_exporter/kafka.yml`` beside this
module: they give each MBean the sample name and labels the mini broker gives it, so ``Cluster.metrics()`` and one
query work on both.

The jar is fetched like Kafka (:func:`kafkalab.cluster.maven.fetch_jars`: Maven, checked against the repository's
SHA-1, cached with a manifest of SHA-256s) into ``~/.kafkalab/dist/jmx_prometheus_javaagent-VERSION/libs/``
(``$KAFKALAB_DIST``). Nothing is fetched while a cluster starts: without the jar, Kafka's brokers start without
metrics (``metrics_url`` None) and one warning says how to fetch it.
"""
from __future__ import annotations

import warnings
from pathlib import Path

from .maven import FetchError, fetch_jars

GROUP, ARTIFACT = "io.prometheus.jmx", "jmx_prometheus_javaagent"
#: the version the lab runs (what Maven Central serves here)
VERSION = "1.0.1"
#: kafkalab's rules: the mini broker's sample names for Kafka's MBeans
RULES = Path(__file__).parent / "jmx_exporter" / "kafka.yml"

_warned = False


def _name(version: str) -> str:
    return f"{ARTIFACT}-{version}"


def fetch_jmx_exporter(version: str = VERSION, root: Path | None = None) -> Path:
    """The agent's jar, fetched into the cache if it is not there (:class:`~kafkalab.cluster.maven.FetchError`
    if it cannot be)."""
    from .distribution import dist_root
    if not version or not all(part.isdigit() for part in version.split(".")):
        raise FetchError(f"'{version}' is not a version of {ARTIFACT}: give one like {VERSION}")
    directory = fetch_jars(_name(version), [f"{GROUP}:{ARTIFACT}:{version}"], root or dist_root())
    return directory / "libs" / f"{_name(version)}.jar"


def cached_agent(version: str = VERSION, root: Path | None = None) -> Path | None:
    """The cached jar, or None (never fetches)."""
    from .distribution import dist_root
    jar = (root or dist_root()) / _name(version) / "libs" / f"{_name(version)}.jar"
    return jar if jar.is_file() else None


def find_agent(warn: bool = True) -> Path | None:
    """The cached jar; None, with one warning per process (``warn``), when it has not been fetched."""
    global _warned
    jar = cached_agent()
    if jar is None and warn and not _warned:
        _warned = True
        warnings.warn(f"Kafka's brokers start without metrics (metrics_url None): the Prometheus JMX exporter "
                      f"({GROUP}:{ARTIFACT}:{VERSION}) is not fetched; run 'kafkalab fetch-jmx-exporter' once",
                      RuntimeWarning, stacklevel=3)
    return jar


def agent_for(metrics: bool | None) -> Path | None:
    """A real-Kafka backend's agent jar: ``metrics=None`` (the default) the cached jar if it is fetched, silently
    none if not; ``True`` the same with one warning when it is missing; ``False`` none."""
    if metrics is False:
        return None
    return find_agent(warn=metrics is True)


def javaagent_option(jar: Path | str, host: str, port: int, rules: Path | str = RULES) -> str:
    """``-javaagent:<jar>=<host>:<port>:<rules>``: the agent serving ``http://host:port/metrics``."""
    if not isinstance(port, int) or not 0 < port <= 65535:
        raise ValueError(f"the metrics port must be 1 to 65535, not {port!r}")
    if not Path(rules).is_file():
        raise FileNotFoundError(f"the exporter's rules file {rules} does not exist")
    bracketed = f"[{host}]" if ":" in host else host
    return f"-javaagent:{jar}={bracketed}:{port}:{rules}"


def javaagent_for(backend, b) -> str | None:
    """The ``-javaagent`` option for node ``b`` of ``backend`` (a real-Kafka backend whose ``agent_jar`` is set),
    on ``b.metrics_port`` (a free port, chosen once and kept over restarts), with ``b.metrics_url`` set to where it
    serves; None for a backend without the agent (a real-Kafka one also clears ``b.metrics_url``)."""
    if not hasattr(backend, "agent_jar"):
        return None     # mini brokers serve their metrics themselves (their ready line says where)
    if backend.agent_jar is None:
        b.metrics_url = None
        return None
    from .ports import free_port
    while not b.metrics_port or b.metrics_port in (b.port, b.controller_port):   # not the node's own listeners
        b.metrics_port = free_port(b.host)
    b.metrics_url = metrics_url(b.host, b.metrics_port)
    return backend.javaagent(b.host, b.metrics_port)


def metrics_url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/metrics"
