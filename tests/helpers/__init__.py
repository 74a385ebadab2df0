"""Code the tests share, and that benchmarks/ reuses: ``from tests.helpers import kafka_wire as wire``.

Nothing here is collected by pytest (no ``test_*.py``). The repository root is on ``sys.path``: pytest adds it
(``pythonpath = ["."]`` in pyproject.toml), and ``python -m benchmarks.NAME`` run from the root has it.
``tests/`` itself has no ``__init__.py`` (a namespace package), so pytest's default import mode keeps working
for the test files and ``tests/conftest.py``.
"""
