"""Jars from the Maven repository, with their runtime dependencies, each checked against its checksum.

What ``kafkalab fetch-kafka`` (``distribution.py``) and the lab's other JVM parts (Kafka Streams, Spark's
Kafka connector, ...) fetch goes through here: the machine's ``mvn`` resolves ``group:artifact:version``
coordinates (``--strict-checksums``: each download checked against the repository's SHA-1), lists the
resolved jars in its local repository (``~/.m2``), and :func:`copy_verified` checks every jar once more
against the ``.sha1`` beside it before copying it. A failure is one line (:class:`FetchError`).

``$KAFKALAB_MAVEN_REPO`` names another repository (a mirror: every request goes there instead).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

#: a Maven repository to use instead of the default one (a URL, e.g. file:///srv/m2 for an offline mirror)
MAVEN_REPO_ENV_VAR = "KAFKALAB_MAVEN_REPO"
#: the goal that lists the resolved jars (the plugin version Maven 3.8 binds by default, so nothing more to fetch)
DEPENDENCY_LIST = "org.apache.maven.plugins:maven-dependency-plugin:2.8:list"
MANIFEST = "kafkalab-jars.json"


class FetchError(RuntimeError):
    """Kafka could not be fetched; the message is one line saying why and what to do.

    ``kind`` says whether another source may do better: ``"unavailable"`` (that tool or that network
    is missing: try the next source), ``"version"`` (the repository has no such version) and
    ``"corrupt"`` (a file failed its checksum), which end the search.
    """

    def __init__(self, message: str, kind: str = "unavailable"):
        super().__init__(message)
        self.kind = kind


def find_mvn() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FetchError("maven: no 'mvn' on PATH")
    return mvn


def classify(output: str, what: str, missing: str) -> FetchError:
    """One line from a resolver's failure output; ``missing`` says what the repository does not have."""
    text = output.lower()
    if "checksum" in text:
        return FetchError(f"{what}: a downloaded file failed its checksum (a corrupt or tampered download); nothing "
                          "was kept, try again", kind="corrupt")
    if any(s in text for s in ("unknownhost", "connection refused", "connect timed out", "network is unreachable",
                               "no route to host", "could not transfer", "connection reset", "connecttimeout",
                               "temporary failure in name resolution", "offline mode")):
        return FetchError(f"{what}: the Maven repository cannot be reached (no network?); nothing was fetched")
    if any(s in text for s in ("could not find artifact", "no versions available", "could not resolve version range",
                               "not found", "unresolved dependency", "failed to collect dependencies")):
        return FetchError(f"{what}: {missing}", kind="version")
    errors = [line for line in output.splitlines() if line.startswith("[ERROR]") and line[7:].strip()]
    last = errors[:1] or [line for line in output.splitlines() if line.strip()][-1:] or ["no output"]
    return FetchError(f"{what} failed: {last[0].strip()[:300]}")


def _pom(dependencies: list[tuple[str, str, str]]) -> str:
    deps = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
                   for g, a, v in dependencies)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            '<groupId>kafkalab</groupId><artifactId>kafka-distribution</artifactId><version>1</version>'
            f'<packaging>pom</packaging><dependencies>{deps}</dependencies></project>\n')


def _maven_settings(repo_url: str) -> str:
    return ("<settings><mirrors><mirror><id>kafkalab</id><mirrorOf>*</mirrorOf>"
            f"<url>{repo_url}</url></mirror></mirrors></settings>\n")


def resolve(mvn: str, dependencies: list[tuple[str, str, str]], work: Path, missing: str,
            timeout: float = 900) -> list[Path]:
    """The runtime jars of ``dependencies`` (group, artifact, version), as paths in the local repository."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(_pom(dependencies))
    listing = work / "dependencies.txt"
    listing.unlink(missing_ok=True)
    cmd = [mvn, "-B", "--no-transfer-progress", "--strict-checksums", "-f", str(work / "pom.xml"), DEPENDENCY_LIST,
           "-DincludeScope=runtime", "-DoutputAbsoluteArtifactFilename=true", f"-DoutputFile={listing}"]
    repo_url = os.environ.get(MAVEN_REPO_ENV_VAR)
    if repo_url:
        (work / "settings.xml").write_text(_maven_settings(repo_url))
        cmd[1:1] = ["-s", str(work / "settings.xml")]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise FetchError(f"maven: no answer from the repository in {timeout:.0f} s (no network?)") from None
    if done.returncode != 0 or not listing.is_file():
        raise classify(done.stdout + done.stderr, "maven", missing)
    return [Path(m.group(1)) for m in re.finditer(r":(/[^\s:]+\.jar)\b", listing.read_text())]


def copy_verified(jars: list[Path], libs: Path) -> None:
    """Copy ``jars`` (paths in the local repository) into ``libs``, each checked against its ``.sha1``."""
    libs.mkdir(parents=True, exist_ok=True)
    for jar in jars:
        sha1_file = Path(str(jar) + ".sha1")
        if sha1_file.is_file():
            words = sha1_file.read_text().split()
            expected = words[0].strip().lower() if words else ""
            if expected != hashlib.sha1(jar.read_bytes()).hexdigest():
                raise FetchError(f"maven: {jar.name} in the local Maven repository does not match its SHA-1 "
                                 f"(corrupt download); delete {jar.parent} and fetch again", kind="corrupt")
        shutil.copy2(jar, libs / jar.name)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def install_staged(staging: Path, final: Path, coordinates: list[str]) -> None:
    """Write the manifest of ``staging/libs`` (every jar's SHA-256) and rename ``staging`` to ``final``."""
    files = {str(p.relative_to(staging)): sha256(p) for p in sorted((staging / "libs").glob("*.jar"))}
    (staging / MANIFEST).write_text(json.dumps({"coordinates": coordinates, "files": files}, indent=1) + "\n")
    try:
        os.rename(staging, final)
    except OSError:      # another process finished first
        pass


def ivy_jar() -> Path | None:
    """Apache Ivy, as pyspark ships it (``jars/ivy-*.jar``: what ``spark.jars.packages`` uses), or None."""
    try:
        import pyspark
    except ImportError:
        return None
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("ivy-*.jar"))
    return jars[-1] if jars else None


def ivy_retrieve(java: str, ivy: Path, dependencies: list[tuple[str, str, str]], work: Path, libs: Path,
                 missing: str, timeout: float = 900) -> None:
    """Resolve ``dependencies`` with Ivy (which checks SHA-1/MD5 as it downloads) and copy their jars into
    ``libs``; ``missing`` says, in a failure, what the repository lacks."""
    work.mkdir(parents=True, exist_ok=True)
    deps = "".join(f'<dependency org="{g}" name="{a}" rev="{v}" conf="default->default"/>' for g, a, v in dependencies)
    (work / "ivy.xml").write_text('<ivy-module version="2.0"><info organisation="kafkalab" module="kafka"/>'
                                  f'<dependencies>{deps}</dependencies></ivy-module>\n')
    cmd = [java, "-jar", str(ivy), "-ivy", str(work / "ivy.xml"), "-confs", "default",
           "-retrieve", str(libs / "[artifact]-[revision](-[classifier]).[ext]"), "-types", "jar", "bundle"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise FetchError(f"ivy: no answer from the repository in {timeout:.0f} s (no network?)") from None
    if done.returncode != 0:
        raise classify(done.stdout + done.stderr, "ivy", missing)


def fetch_jars(name: str, coordinates: list[str], root: Path, timeout: float = 900) -> Path:
    """``coordinates`` (``"group:artifact:version"``) with their runtime dependencies, in ``root/name/libs``.

    Cached: a second call returns the same directory without Maven once its manifest checks out. A
    failure leaves nothing behind (staged in ``.partial-*``, renamed into place when complete)."""
    final = root / name
    manifest = final / MANIFEST
    if manifest.is_file():
        try:
            files = json.loads(manifest.read_text())["files"]
            if all((final / rel).is_file() and sha256(final / rel) == digest for rel, digest in files.items()):
                return final
        except (OSError, ValueError, KeyError):
            pass
        shutil.rmtree(final, ignore_errors=True)
    deps = []
    for c in coordinates:
        parts = c.split(":")
        if len(parts) != 3 or not all(parts):
            raise FetchError(f"'{c}' is not a Maven coordinate: give group:artifact:version")
        deps.append(tuple(parts))
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".partial-{name}-", suffix=f"-{os.getpid()}", dir=root))
    try:
        jars = resolve(find_mvn(), deps, staging / ".maven",
                       f"the repository does not have {', '.join(coordinates)}", timeout)
        copy_verified(jars, staging / "libs")
        shutil.rmtree(staging / ".maven")
        install_staged(staging, final, coordinates)
        return final
    finally:
        shutil.rmtree(staging, ignore_errors=True)
