#!/usr/bin/env bash
# Run every test: unit and integration tests (tests/), and nbval over the lessons (notebooks/)
# and the lab solutions (labs/*/solution.ipynb). The exercises are skipped: with their TODOs unfilled
# they fail by design (tests/test_labs.py checks that they do).
# Creates/updates ./.venv first (see scripts/_env.sh). Extra arguments go to pytest, e.g. -x or -k.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
cd "$ROOT"
exec python -m pytest tests notebooks labs --ignore-glob='labs/*/exercise.ipynb' \
    --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
    --nbval-cell-timeout 300 -p no:cacheprovider -ra --durations=25 "$@"
