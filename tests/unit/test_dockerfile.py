"""docker/jupyter/Dockerfile installs what pyproject.toml requires, and Spark's Kafka connector to match.

No Docker engine here: the Dockerfile is read instruction by instruction, the
way the builder runs it (WORKDIR, COPY, RUN in order), and the build step that
fetches ``spark-sql-kafka-0-10`` is tested on its own, offline.
"""
from __future__ import annotations

import fnmatch
import os
import re
import shlex
import sys
import tomllib

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCKERFILE = os.path.join(ROOT, "docker", "jupyter", "Dockerfile")
sys.path.insert(0, os.path.join(ROOT, "docker", "jupyter"))
import spark_kafka  # noqa: E402


def instructions() -> list[tuple[str, str]]:
    """``[(INSTRUCTION, arguments)]`` with line continuations joined and comments dropped."""
    with open(DOCKERFILE) as f:
        lines = f.read().splitlines()
    out, current = [], ""
    for line in lines:
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        word, _, rest = current.partition(" ")
        out.append((word.upper(), rest.strip()))
        current = ""
    return out


def pyproject() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def dockerignore() -> list[str]:
    path = os.path.join(ROOT, ".dockerignore")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def ignored(path: str, patterns: list[str]) -> bool:
    parts = path.split("/")
    for pattern in patterns:
        p = pattern.rstrip("/")
        if fnmatch.fnmatch(path, p) or fnmatch.fnmatch(path, p.removeprefix("**/")) or \
                any(fnmatch.fnmatch("/".join(parts[:i]), p) for i in range(1, len(parts) + 1)):
            return True
    return False


def test_base_image_is_pinned_and_its_python_is_one_pyproject_allows():
    base = [args for word, args in instructions() if word == "FROM"]
    assert len(base) == 1
    m = re.fullmatch(r"python:(\d+)\.(\d+)\.(\d+)-slim-(\w+)", base[0])
    assert m, f"pin the base image to python:X.Y.Z-slim-<debian>, not {base[0]}"
    python = Version(".".join(m.groups()[:3]))
    assert python in SpecifierSet(pyproject()["project"]["requires-python"])


def test_java_17_is_installed_with_its_compiler():
    """The JDK, not the JRE: lesson 06 compiles kafkalab's WordCount.java for Kafka Streams (a JRE has no
    javac, and no jdk.compiler module for ``java WordCount.java`` either)."""
    runs = " ".join(args for word, args in instructions() if word == "RUN")
    assert re.search(r"apt-get install .*openjdk-17-jdk-headless", runs)


def test_kafka_streams_is_fetched_and_compiled_at_build_time_into_a_cache_the_lab_user_owns():
    steps = instructions()
    pip = next(i for i, (w, a) in enumerate(steps) if w == "RUN" and "pip install" in a)
    fetch = next(i for i, (w, a) in enumerate(steps) if w == "RUN" and "fetch_streams" in a)
    user = next(i for i, (w, a) in enumerate(steps) if w == "USER")
    dist = [a for w, a in steps[:fetch] if w == "ENV" and a.startswith("KAFKALAB_DIST=")]
    assert pip < fetch < user, "kafkalab.streams is installed first; the cache is written as root"
    assert "compile_source(fetch_streams())" in steps[fetch][1], "the jars and the compiled WordCount, both"
    assert dist, "KAFKALAB_DIST is set before the fetch, so the lab user's kafkalab finds the same cache"
    assert f"chown -R kafkalab:kafkalab {os.path.dirname(dist[-1].split('=', 1)[1])}" in steps[fetch][1]


def test_pip_installs_the_project_itself_from_its_pyproject():
    """Installing ``.`` (the project) makes pip install every dependency at pyproject.toml's versions."""
    workdir, copied, installed = "/", set(), None
    for word, args in instructions():
        if word == "WORKDIR":
            workdir = os.path.join(workdir, args)
        elif word == "COPY":
            parts = [p for p in shlex.split(args) if not p.startswith("--")]
            *sources, dest = parts
            dest = os.path.normpath(os.path.join(workdir, dest))
            for src in sources:
                copied.add(os.path.normpath(os.path.join(dest, os.path.basename(src)))
                           if dest.endswith("/") or len(sources) > 1 or dest == os.path.normpath(workdir)
                           else dest)
        elif word == "RUN" and "pip install" in args and installed is None:
            m = re.search(r"pip install [^&;]*?'?\.(\[([\w,]+)\])?'?(\s|$)", args)
            assert m, f"the first pip install must install the project ('.'): {args}"
            installed = (workdir, m.group(2))
            assert os.path.join(workdir, "pyproject.toml") in copied, "pyproject.toml is copied before pip install"
            assert os.path.join(workdir, "kafkalab") in copied, "the kafkalab package is copied before pip install"
            assert "pip check" in args, "pip check fails the build on broken requirements"
    assert installed is not None, "the Dockerfile never pip-installs kafkalab"
    extras = installed[1]
    if extras:
        for extra in extras.split(","):
            assert extra in pyproject()["project"]["optional-dependencies"]
    # nothing else installs Python packages beside pyproject.toml's (a second list would drift)
    runs = [args for word, args in instructions() if word == "RUN" and "pip install" in args]
    assert len(runs) == 1


def test_every_copied_path_exists_and_is_not_dockerignored():
    patterns = dockerignore()
    for word, args in instructions():
        if word != "COPY":
            continue
        parts = [p for p in shlex.split(args) if not p.startswith("--")]
        for src in parts[:-1]:
            assert os.path.exists(os.path.join(ROOT, src)), f"COPY {src}: not in the repository"
            assert not ignored(src, patterns), f"COPY {src}: excluded by .dockerignore"


def test_the_spark_kafka_connector_is_fetched_after_pyspark_and_before_dropping_root():
    steps = instructions()
    index = {i: (w, a) for i, (w, a) in enumerate(steps)}
    pip = next(i for i, (w, a) in index.items() if w == "RUN" and "pip install" in a)
    fetch = next(i for i, (w, a) in index.items() if w == "RUN" and "spark_kafka.py" in a)
    user = next(i for i, (w, a) in index.items() if w == "USER")
    assert pip < fetch < user, "the jars go into the root-owned pyspark install, after pip installed it"
    assert re.search(r"python \S*spark_kafka\.py(\s|$|&)", steps[fetch][1]), "no --print-coordinate: really fetch"
    assert steps[user][1] != "root"


def test_the_token_is_never_disabled():
    cmd = " ".join(a for w, a in instructions() if w in ("CMD", "ENTRYPOINT"))
    assert "jupyter" in cmd and "lab" in cmd
    assert not re.search(r"token=\s*(''|\"\"|\s|,|\])", cmd), "an empty token turns authentication off"
    assert "disable_check_xsrf" not in cmd and "allow_origin" not in cmd


# -- the connector fetch (docker/jupyter/spark_kafka.py), offline -----------------------------------------------

def pinned(name: str) -> str:
    for dep in pyproject()["project"]["dependencies"]:
        m = re.fullmatch(rf"{re.escape(name)}==([\w.]+)", dep.split(";")[0].strip())
        if m:
            return m.group(1)
    raise AssertionError(f"{name} is not pinned in pyproject.toml")


def test_the_coordinate_matches_the_installed_pyspark():
    jars = os.path.join(spark_kafka.pyspark_home(), "jars")
    scala = spark_kafka.scala_version(jars)
    assert re.fullmatch(r"2\.1[23]", scala)
    assert any(n.startswith(f"spark-core_{scala}-") for n in os.listdir(jars)), "pyspark's own jars are Scala " + scala
    assert spark_kafka.spark_version() == pinned("pyspark")
    assert spark_kafka.coordinate(spark_kafka.spark_version(), scala) == \
        f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{pinned('pyspark')}"


def test_scala_version_needs_a_pyspark(tmp_path):
    with pytest.raises(RuntimeError, match="scala-library"):
        spark_kafka.scala_version(str(tmp_path))
    (tmp_path / "scala-library-2.12.18.jar").write_bytes(b"")
    assert spark_kafka.scala_version(str(tmp_path)) == "2.12"


@pytest.mark.parametrize("jar, module", [
    ("kafka-clients-3.9.1.jar", "kafka-clients"),
    ("zstd-jni-1.5.6-10.jar", "zstd-jni"),
    ("spark-sql-kafka-0-10_2.13-4.3.0.jar", "spark-sql-kafka-0-10_2.13"),
    ("commons-pool2-2.12.1.jar", "commons-pool2"),
])
def test_module_candidates_include_the_artifact(jar, module):
    assert module in spark_kafka.module_candidates(jar)


def test_ivy_names_lose_their_organisation():
    assert spark_kafka.ivy_artifact("org.apache.kafka_kafka-clients-3.9.1.jar") == "kafka-clients-3.9.1.jar"
    assert spark_kafka.ivy_artifact("org.apache.spark_spark-sql-kafka-0-10_2.13-4.3.0.jar") == \
        "spark-sql-kafka-0-10_2.13-4.3.0.jar"
    assert spark_kafka.ivy_artifact("kafka-clients-3.9.1.jar") == "kafka-clients-3.9.1.jar"


def test_install_copies_the_connector_but_nothing_pyspark_already_ships(tmp_path):
    """The real pyspark's jar names against what Ivy resolves for the connector (files made here)."""
    real = os.path.join(spark_kafka.pyspark_home(), "jars")
    jars = tmp_path / "jars"
    jars.mkdir()
    for name in os.listdir(real):
        (jars / name).write_bytes(b"")
    before = set(os.listdir(jars))
    scala, version = spark_kafka.scala_version(real), spark_kafka.spark_version()
    shipped_lz4 = next(n for n in before if n.startswith("lz4-java-"))
    resolved = tmp_path / "ivy-jars"
    resolved.mkdir()
    connector = [f"org.apache.spark_spark-sql-kafka-0-10_{scala}-{version}.jar",
                 f"org.apache.spark_spark-token-provider-kafka-0-10_{scala}-{version}.jar",
                 "org.apache.kafka_kafka-clients-3.9.1.jar"]
    already = ["org.lz4_lz4-java-0.0.1.jar",                       # another version of a jar pyspark ships
               "org.slf4j_slf4j-api-1.0.0.jar"]
    for name in connector + already:
        (resolved / name).write_bytes(b"jar:" + name.encode())
    copied, skipped = spark_kafka.install(str(resolved), str(jars))
    assert sorted(copied) == sorted(spark_kafka.ivy_artifact(n) for n in connector)
    assert sorted(skipped) == ["lz4-java-0.0.1.jar", "slf4j-api-1.0.0.jar"]
    after = set(os.listdir(jars))
    assert after - before == set(copied)
    assert shipped_lz4 in after and "lz4-java-0.0.1.jar" not in after
    assert (jars / f"spark-sql-kafka-0-10_{scala}-{version}.jar").read_bytes().startswith(b"jar:org.apache.spark_")


def test_jupyterlab_is_configured_as_scripts_lab_sh_configures_it():
    """The options scripts/lab.sh gives JupyterLab (no announcement pop-up, no update check) hold in the image."""
    with open(os.path.join(ROOT, "scripts", "lab.sh")) as f:
        lab_sh = f.read()
    steps = instructions()
    cmd = " ".join(a for w, a in steps if w == "CMD")
    for option in re.findall(r"--LabApp\.[\w.]+=[\w.]+", lab_sh):
        assert option in cmd, f"{option} (scripts/lab.sh) is missing from the image's CMD"
    if "JUPYTER_CONFIG_PATH" in lab_sh:
        m = re.search(r'JUPYTER_CONFIG_PATH="\$ROOT/([\w/]+)', lab_sh)
        env = [a for w, a in steps if w == "ENV" and a.startswith("JUPYTER_CONFIG_PATH=")]
        assert env and env[0].endswith("/" + m.group(1)), "JUPYTER_CONFIG_PATH points at kafkalab's jupyter_config"
        src = env[0].split("=", 1)[1].removeprefix("/home/kafkalab/src/")
        assert os.path.isdir(os.path.join(ROOT, src)), "and that directory is copied into the image (COPY kafkalab)"

