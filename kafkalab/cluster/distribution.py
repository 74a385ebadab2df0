"""``kafkalab fetch-kafka [VERSION]``: Apache Kafka's own broker and tools, fetched into a cache.

The lab checks what its mini broker and its lessons claim against the real thing, so real Kafka
must be one command away. ``fetch_kafka("3.9")`` returns a directory laid out as Kafka's binary
release is where it matters (``libs/*.jar``, ``config/``), which ``kafkalab.cluster(backend="kafka")``
then runs::

    ~/.kafkalab/dist/3.9.2/                 ($KAFKALAB_DIST/3.9.2 when that is set)
        libs/kafka_2.13-3.9.2.jar ...       the broker, the tools and their runtime dependencies
        config/log4j.properties             a quiet log4j configuration for the lab's brokers
        kafkalab-dist.json                  version, source, and every jar's SHA-256

Where it comes from, first that works:

1. ``$KAFKA_HOME``, if it holds a release of the version asked for (used in place, not copied);
2. the Maven repository, through the machine's ``mvn`` (``org.apache.kafka:kafka_2.13`` and
   ``kafka-tools`` with their runtime dependencies, the way Kafka's own build lists them). Maven
   checks each download against the repository's SHA-1 (``--strict-checksums``), and each jar is
   checked again against the ``.sha1`` Maven keeps beside it before it is copied;
3. the same through Apache Ivy, which pyspark ships (it is what ``spark.jars.packages`` uses), for a
   machine without Maven;
4. Apache's release archive (``kafka_2.13-VERSION.tgz``, checked against its ``.sha512``), where the
   network reaches it.

Nothing is fetched at import time or without being asked. A version is ``3.9.2`` (exactly that
one), ``3.9`` (the newest 3.9.x the repository serves) or ``4`` (the newest 4.x). 3.x runs in
ZooKeeper mode (the lab's default cluster); 4.x has only KRaft. A second call for a version
already in the cache reuses it without the network, after checking its files against the
manifest. A failed fetch leaves nothing in the cache: everything is staged in a ``.partial-*``
directory and renamed into place only once complete.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable

from . import maven
from .maven import FetchError

DIST_ENV_VAR = "KAFKALAB_DIST"
MANIFEST = "kafkalab-dist.json"
#: ZooKeeper mode (the lab's default cluster) and KRaft (Kafka 4 has nothing else)
ZOOKEEPER_VERSION = "3.9"
KRAFT_VERSION = "4"
SCALA = "2.13"
#: what a distribution is made of: the broker (kafka.Kafka, kafka.tools.StorageTool, ...) and the tools
#: (org.apache.kafka.tools.*: kafka-topics, kafka-transactions, kafka-metadata-quorum, ...)
ARTIFACTS = (f"kafka_{SCALA}", "kafka-tools")
SOURCES = ("kafka-home", "maven", "ivy", "tarball")
TARBALL_URL = "https://archive.apache.org/dist/kafka/{v}/kafka_{scala}-{v}.tgz"

_SPEC = re.compile(r"^(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?$")
_KAFKA_JAR = re.compile(rf"^kafka_{re.escape(SCALA)}-(\d+\.\d+\.\d+)\.jar$")

LOG4J_PROPERTIES = """\
# written by kafkalab: the broker's own log (server.log) at INFO, the noisy parts at WARN
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.common.utils.AppInfoParser=WARN
"""

LOG4J2_YAML = """\
# written by kafkalab: the broker's own log at INFO, the noisy parts at WARN
Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.request.logger
        level: WARN
      - name: org.apache.kafka.common.utils.AppInfoParser
        level: WARN
"""


def dist_root() -> Path:
    """Where fetched distributions live: ``$KAFKALAB_DIST``, else ``~/.kafkalab/dist``."""
    return Path(os.environ.get(DIST_ENV_VAR) or Path.home() / ".kafkalab" / "dist").expanduser()


def parse_version(spec: str | None) -> tuple[int, ...]:
    """``"3.9.2"`` -> (3, 9, 2); ``"3.9"`` / ``"3.9.x"`` -> (3, 9); ``"4"`` / ``"4.x"`` -> (4,)."""
    spec = ZOOKEEPER_VERSION if spec in (None, "") else str(spec).strip()
    m = _SPEC.match(spec)
    if not m:
        raise FetchError(f"'{spec}' is not a Kafka version: give one like 3.9.2 (exactly), 3.9 (the newest 3.9.x) "
                         "or 4 (the newest 4.x)")
    parts = []
    for group in m.groups():
        if group is None or group == "x":
            break
        parts.append(int(group))
    if parts[0] not in (3, 4):
        raise FetchError(f"Kafka {spec} is not a version kafkalab runs: it runs 3.x (ZooKeeper mode, e.g. 3.9) and "
                         "4.x (KRaft, e.g. 4)")
    return tuple(parts)


def matches(version: tuple[int, ...], wanted: tuple[int, ...]) -> bool:
    return version[:len(wanted)] == wanted


def version_text(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def maven_version(wanted: tuple[int, ...]) -> str:
    """The Maven version for ``wanted``: exact, or a range the repository resolves to its newest match."""
    if len(wanted) == 3:
        return version_text(wanted)
    low = wanted + (0,) * (3 - len(wanted))
    high = wanted + (999,) * (3 - len(wanted))
    return f"[{version_text(low)},{version_text(high)}]"


def distribution_version(home: str | os.PathLike) -> tuple[int, int, int] | None:
    """The Kafka version of a distribution directory, from its ``libs/kafka_2.13-X.Y.Z.jar``."""
    libs = Path(home) / "libs"
    if not libs.is_dir():
        return None
    for jar in sorted(libs.iterdir()):
        m = _KAFKA_JAR.match(jar.name)
        if m:
            return tuple(int(x) for x in m.group(1).split("."))   # type: ignore[return-value]
    return None


# -- the cache ---------------------------------------------------------------------------------------------

def verify(home: Path) -> str | None:
    """Check a cached distribution against its manifest; None when intact, else what is wrong."""
    try:
        manifest = json.loads((home / MANIFEST).read_text())
    except (OSError, ValueError):
        return f"{home} has no readable {MANIFEST}"
    for rel, digest in manifest.get("files", {}).items():
        path = home / rel
        if not path.is_file():
            return f"{rel} is missing"
        if maven.sha256(path) != digest:
            return f"{rel} does not match its SHA-256 in {MANIFEST}"
    return None


def cached(wanted: tuple[int, ...], root: Path | None = None) -> Path | None:
    """The newest intact distribution in the cache that matches ``wanted``, or None (no network used)."""
    root = root or dist_root()
    if not root.is_dir():
        return None
    found = []
    for d in root.iterdir():
        if d.name.startswith(".") or not (d / MANIFEST).is_file():
            continue
        version = distribution_version(d)
        if version and matches(version, wanted):
            found.append((version, d))
    for version, d in sorted(found, reverse=True):
        if verify(d) is None:
            return d
    return None


def find_distribution(wanted: tuple[int, ...]) -> Path | None:
    """``$KAFKA_HOME`` if it holds a matching release, else the newest matching cached one."""
    home = os.environ.get("KAFKA_HOME")
    if home:
        version = distribution_version(home)
        if version and matches(version, wanted):
            return Path(home).resolve()
    return cached(wanted)


# -- fetching ---------------------------------------------------------------------------------------------

def _java() -> str:
    from .zookeeper import require_java
    return require_java("Kafka", FetchError)


def _slf4j_binding(jars: list[Path]) -> tuple[str, str, str] | None:
    """Kafka 4 logs through log4j 2, but its Maven artifacts leave out the slf4j binding that its release
    tarball ships (``log4j-slf4j-impl``): without it the broker would log nothing. The binding of the same
    log4j version, or None when one is there already (3.x ships ``slf4j-reload4j``)."""
    names = [j.name for j in jars]
    if any(n.startswith(("slf4j-reload4j-", "log4j-slf4j-impl-", "log4j-slf4j2-impl-")) for n in names):
        return None
    for n in names:
        m = re.match(r"^log4j-core-(\d[\w.]*)\.jar$", n)
        if m:
            return ("org.apache.logging.log4j", "log4j-slf4j-impl", m.group(1))
    return None


def fetch_with_maven(wanted: tuple[int, ...], staging: Path, timeout: float = 900) -> str:
    """Resolve with ``mvn``, check every jar against the SHA-1 beside it, copy them to ``staging/libs``."""
    mvn = maven.find_mvn()
    missing = (f"the repository has no Kafka {version_text(wanted)} (org.apache.kafka:kafka_{SCALA}); see the "
               "versions at https://kafka.apache.org/downloads")
    work = staging / ".maven"
    jars = maven.resolve(mvn, [("org.apache.kafka", a, maven_version(wanted)) for a in ARTIFACTS], work, missing,
                         timeout)
    if not jars:
        raise FetchError(f"maven resolved no jars for Kafka {version_text(wanted)}")
    binding = _slf4j_binding(jars)
    if binding:
        jars += maven.resolve(mvn, [binding], work / "logging", missing, timeout)
    maven.copy_verified(jars, staging / "libs")
    shutil.rmtree(work)
    if distribution_version(staging) is None:
        raise FetchError(f"maven resolved no kafka_{SCALA} jar for Kafka {version_text(wanted)}")
    return "maven"


def _ivy_retrieve(ivy: Path, dependencies: list[tuple[str, str, str]], work: Path, libs: Path,
                  wanted: tuple[int, ...], timeout: float) -> None:
    maven.ivy_retrieve(_java(), ivy, dependencies, work, libs,
                       f"the repository has no Kafka {version_text(wanted)} (org.apache.kafka:kafka_{SCALA})", timeout)


def fetch_with_ivy(wanted: tuple[int, ...], staging: Path, timeout: float = 900) -> str:
    """Resolve with Apache Ivy (pyspark's ``jars/ivy-*.jar``), which checks SHA-1/MD5 as it downloads."""
    ivy = maven.ivy_jar()
    if ivy is None:
        raise FetchError("ivy: pyspark's ivy jar is not installed")
    libs = staging / "libs"
    libs.mkdir()
    _ivy_retrieve(ivy, [("org.apache.kafka", a, maven_version(wanted)) for a in ARTIFACTS], staging / ".ivy", libs,
                  wanted, timeout)
    binding = _slf4j_binding(sorted(libs.glob("*.jar")))
    if binding:
        _ivy_retrieve(ivy, [binding], staging / ".ivy-logging", libs, wanted, timeout)
    shutil.rmtree(staging / ".ivy", ignore_errors=True)
    shutil.rmtree(staging / ".ivy-logging", ignore_errors=True)
    if distribution_version(staging) is None:
        raise FetchError(f"ivy resolved no kafka_{SCALA} jar for Kafka {version_text(wanted)}", kind="version")
    return "ivy"


def fetch_tarball(wanted: tuple[int, ...], staging: Path, timeout: float = 120) -> str:
    """Apache's release tarball, checked against its published SHA-512 (an exact version only)."""
    import tarfile
    import urllib.error
    import urllib.request
    if len(wanted) != 3:
        raise FetchError("tarball: needs an exact version such as 3.9.2")
    url = TARBALL_URL.format(v=version_text(wanted), scala=SCALA)
    try:
        with urllib.request.urlopen(url + ".sha512", timeout=timeout) as r:
            published = "".join(r.read().decode().split(":")[-1].split()).lower()
        tgz = staging / "kafka.tgz"
        with urllib.request.urlopen(url, timeout=timeout) as r, open(tgz, "wb") as f:
            shutil.copyfileobj(r, f)
    except urllib.error.HTTPError as e:
        raise FetchError(f"tarball: {url} answered {e.code}; is {version_text(wanted)} a Kafka release?",
                         kind="version" if e.code == 404 else "unavailable") from None
    except (urllib.error.URLError, OSError) as e:
        raise FetchError(f"tarball: Apache's release archive cannot be reached ({e}); nothing was fetched") from None
    if hashlib.sha512(tgz.read_bytes()).hexdigest() != published:
        raise FetchError(f"tarball: {tgz.name} does not match its published SHA-512 (corrupt download)",
                         kind="corrupt")
    with tarfile.open(tgz) as tar:
        top = f"kafka_{SCALA}-{version_text(wanted)}/"
        for member in tar.getmembers():
            if member.name.startswith(top) and (member.isfile() or member.isdir()):
                member.name = member.name[len(top):]
                if member.name and not member.name.startswith(("/", "..")):
                    tar.extract(member, staging)
    tgz.unlink()
    return "tarball"


FETCHERS: dict[str, Callable[[tuple[int, ...], Path], str]] = {
    "maven": fetch_with_maven, "ivy": fetch_with_ivy, "tarball": fetch_tarball}


def _write_config(staging: Path, version: tuple[int, ...]) -> None:
    config = staging / "config"
    config.mkdir(exist_ok=True)
    if version[0] >= 4:
        (config / "kafkalab-log4j2.yaml").write_text(LOG4J2_YAML)
    else:
        (config / "kafkalab-log4j.properties").write_text(LOG4J_PROPERTIES)


def _finish(staging: Path, root: Path, source: str) -> Path:
    version = distribution_version(staging)
    assert version is not None
    _write_config(staging, version)
    files = {str(p.relative_to(staging)): maven.sha256(p) for p in sorted((staging / "libs").glob("*.jar"))}
    (staging / MANIFEST).write_text(json.dumps(
        {"version": version_text(version), "source": source, "scala": SCALA, "artifacts": list(ARTIFACTS),
         "fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "files": files}, indent=1) + "\n")
    final = root / version_text(version)
    try:
        os.rename(staging, final)
    except OSError:            # another fetch finished first: keep its copy if it is intact
        if verify(final) is not None:
            shutil.rmtree(final, ignore_errors=True)
            os.rename(staging, final)
    return final


def _remove_stale_partials(root: Path) -> None:
    import psutil
    for d in root.glob(".partial-*"):
        pid = d.name.rsplit("-", 1)[-1]
        if not (pid.isdigit() and psutil.pid_exists(int(pid))):
            shutil.rmtree(d, ignore_errors=True)


def fetch_kafka(version: str | None = None, *, sources: tuple[str, ...] = SOURCES,
                say: Callable[[str], None] | None = None) -> Path:
    """Apache Kafka ``version`` (default: the newest 3.9.x), fetched into the cache if not there yet.

    Returns the distribution's directory. Raises :class:`FetchError` with one line saying why,
    leaving nothing half-written in the cache.
    """
    say = say or (lambda line: None)
    wanted = parse_version(version)
    unknown = set(sources) - set(SOURCES)
    if unknown:
        raise FetchError(f"unknown source {sorted(unknown)[0]!r}: the sources are {', '.join(SOURCES)}")
    _java()
    if "kafka-home" in sources and os.environ.get("KAFKA_HOME"):
        home = os.environ["KAFKA_HOME"]
        found = distribution_version(home)
        if found and matches(found, wanted):
            say(f"using KAFKA_HOME={home} (Kafka {version_text(found)})")
            return Path(home).resolve()
        say(f"KAFKA_HOME={home} does not hold Kafka {version_text(wanted)}; looking elsewhere")
    root = dist_root()
    hit = cached(wanted, root)
    if hit is not None:
        say(f"Kafka {hit.name} is already in {root}")
        return hit
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale_partials(root)
    errors = []
    for source in [s for s in sources if s in FETCHERS]:
        staging = Path(tempfile.mkdtemp(prefix=f".partial-{version_text(wanted)}-", suffix=f"-{os.getpid()}",
                                        dir=root))
        try:
            say(f"fetching Kafka {version_text(wanted)} through {source} ...")
            used = FETCHERS[source](wanted, staging)
            final = _finish(staging, root, used)
            say(f"Kafka {final.name} fetched through {used}: {len(list((final / 'libs').glob('*.jar')))} jars")
            return final
        except FetchError as e:
            if e.kind != "unavailable":
                raise
            errors.append(e)
            say(f"  {e}")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    if not errors:
        raise FetchError(f"no source to fetch Kafka {version_text(wanted)} from (sources: {', '.join(sources)})")
    # every source was unavailable: name them all, on one line
    raise FetchError("Kafka could not be fetched: " + "; ".join(str(e) for e in errors))
