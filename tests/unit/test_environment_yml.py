"""environment.yml (conda-forge) covers every dependency of pyproject.toml at a compatible version.

There is no conda here, so the file is checked against pyproject.toml: each
requirement has a conda-forge package (under conda-forge's name where it
differs from PyPI's) whose version spec allows only versions pyproject.toml
allows; Python and Java match the rest of the project; pip installs only
kafkalab itself.
"""
from __future__ import annotations

import os
import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

yaml = pytest.importorskip("yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: PyPI name -> conda-forge package name, where they differ
CONDA_NAMES = {"confluent-kafka": "python-confluent-kafka", "matplotlib": "matplotlib-base",
               "prometheus-client": "prometheus_client"}


def pyproject() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def environment() -> dict:
    with open(os.path.join(ROOT, "environment.yml")) as f:
        return yaml.safe_load(f)


def conda_specs(env: dict) -> dict[str, str]:
    """conda package name -> its version spec ("" when none), from the non-pip dependencies."""
    out = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(.*)", dep.strip())
        name, spec = m.group(1).lower(), m.group(2).replace(" ", "")
        assert name not in out, f"{name} listed twice"
        out[name] = spec
    return out


def pip_entries(env: dict) -> list[str]:
    return [entry for dep in env["dependencies"] if isinstance(dep, dict) for entry in dep.get("pip", [])]


def conda_to_pep440(spec: str) -> SpecifierSet:
    """conda's match spec version part as PEP 440: ``=1.2`` means 1.2.* (fuzzy), ``==1.2.3`` is exact."""
    parts = []
    for item in filter(None, spec.split(",")):
        m = re.fullmatch(r"(==|>=|<=|!=|>|<|=)?([\w.*]+)", item)
        assert m, f"cannot read conda version spec {spec!r}"
        op, version = m.group(1) or "=", m.group(2)
        if op == "=":
            parts.append(f"=={version.rstrip('.*')}.*" if not version.endswith("*") else f"=={version}")
        else:
            parts.append(f"{op}{version}")
    return SpecifierSet(",".join(parts))


def allows_only_what(conda: SpecifierSet, wanted: SpecifierSet) -> bool:
    """Every version the conda spec allows is one pyproject allows (for the operators pyproject uses)."""
    for w in wanted:
        if w.operator == "==":
            if not any(c.operator == "==" and c.version == w.version for c in conda):
                return False
        elif w.operator in (">=", ">"):
            lows = [Version(c.version) for c in conda if c.operator in (">=", ">", "==") and "*" not in c.version]
            if not lows or max(lows) < Version(w.version) or (w.operator == ">" and max(lows) == Version(w.version)):
                return False
        elif w.operator in ("<", "<="):
            highs = [Version(c.version) for c in conda if c.operator in ("<", "<=", "==") and "*" not in c.version]
            if not highs or min(highs) > Version(w.version):
                return False
        else:
            raise AssertionError(f"extend this test for the operator {w.operator!r}")
    return True


def requirements(group: list[str]) -> list[Requirement]:
    return [Requirement(r) for r in group]


def test_only_conda_forge():
    assert environment()["channels"] == ["conda-forge"]


def test_python_and_java_match_the_project():
    specs = conda_specs(environment())
    python = specs["python"]
    assert re.fullmatch(r"=3\.\d+", python), "pin the Python minor version, e.g. python=3.11"
    assert Version(python[1:] + ".0") in SpecifierSet(pyproject()["project"]["requires-python"])
    with open(os.path.join(ROOT, "docker", "jupyter", "Dockerfile")) as f:
        base = re.search(r"^FROM python:(\d+\.\d+)\.", f.read(), re.M).group(1)
    assert python[1:] == base, "the conda environment and the JupyterLab image use the same Python"
    assert specs["openjdk"] == "=17", "Java 17, as the README and the image"
    assert "pip" in specs


@pytest.mark.parametrize("group", ["dependencies", "test"])
def test_every_requirement_is_a_conda_forge_package_at_a_compatible_version(group):
    project = pyproject()["project"]
    reqs = requirements(project["dependencies"] if group == "dependencies"
                        else project["optional-dependencies"][group])
    specs = conda_specs(environment())
    for req in reqs:
        name = CONDA_NAMES.get(req.name.lower(), req.name.lower())
        assert name in specs, f"{req} (conda-forge: {name}) is missing from environment.yml"
        assert allows_only_what(conda_to_pep440(specs[name]), req.specifier), \
            f"environment.yml has {name}{specs[name]}, which allows versions pyproject.toml's {req} does not"


def test_no_conda_package_beyond_the_project_s_needs():
    project = pyproject()["project"]
    needed = {"python", "openjdk", "pip"}
    for r in requirements(project["dependencies"] + sum(project["optional-dependencies"].values(), [])):
        needed.add(CONDA_NAMES.get(r.name.lower(), r.name.lower()))
    extra = set(conda_specs(environment())) - needed
    assert not extra, f"in environment.yml but not in pyproject.toml: {sorted(extra)}"


def test_pip_installs_only_kafkalab_itself():
    entries = pip_entries(environment())
    assert len(entries) == 1
    m = re.fullmatch(r"-e\s+\.(\[([\w,]+)\])?", entries[0].strip())
    assert m, f"pip should install only kafkalab (editable, from the repository root), not {entries[0]!r}"
    for extra in (m.group(2) or "").split(",") if m.group(2) else []:
        assert extra in pyproject()["project"]["optional-dependencies"]


# -- the checker itself ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("conda, wanted, ok", [
    ("==3.0.12", "==3.0.12", True),
    ("=3.0.12", "==3.0.12", False),      # conda's = is fuzzy (3.0.12.*): not an exact pin
    ("==3.0.11", "==3.0.12", False),
    (">=2.4", ">=2.4", True),
    (">=2.5", ">=2.4", True),
    (">=2.3", ">=2.4", False),
    ("", ">=2.4", False),
    (">=2.4,<3", ">=2.4", True),
    ("==2.16.1", ">=2", True),
])
def test_compatibility_check(conda, wanted, ok):
    assert allows_only_what(conda_to_pep440(conda), SpecifierSet(wanted)) is ok
