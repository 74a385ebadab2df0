#!/usr/bin/env bash
# Run every test: unit and integration tests (tests/), and nbval over the lessons (notebooks/)
# and the lab solutions (labs/*/solution.ipynb; labs/conftest.py skips the exercises).
# Creates/updates ./.venv first (see scripts/_env.sh). Extra arguments go to pytest, e.g. -x or -k.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
cd "$ROOT"
exec python -m pytest tests notebooks labs \
    --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
    --nbval-cell-timeout 300 -p no:cacheprovider -ra "$@"
