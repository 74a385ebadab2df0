# Sourced by scripts/lab.sh and scripts/test.sh: make ./.venv exist, up to date, and active.
#
#   - picks a Python >= 3.10 ($PYTHON, else python3.11, python3.12, python3.13, python3.10, python3)
#   - creates .venv with `python -m venv` (or $KAFKALAB_VENV) the first time
#   - runs `pip install -e '.[test]'` when .venv is new or pyproject.toml changed since
#   - warns when Java is missing (PySpark and ZooKeeper need Java 17)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${KAFKALAB_VENV:-$ROOT/.venv}"

kafkalab_python() {
    local candidate
    for candidate in ${PYTHON:-} python3.11 python3.12 python3.13 python3.10 python3; do
        if command -v "$candidate" >/dev/null 2>&1 \
           && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

if [ ! -x "$VENV/bin/python" ]; then
    if ! PY="$(kafkalab_python)"; then
        echo "error: kafkalab needs Python 3.10 or newer (3.11 recommended); none found on PATH." >&2
        echo "       Install Python 3.11, or point PYTHON at one: PYTHON=/path/to/python3.11 $0" >&2
        exit 1
    fi
    echo "==> creating $VENV with $PY ($("$PY" --version 2>&1))"
    if ! "$PY" -m venv "$VENV"; then
        rm -rf "$VENV"
        echo "error: '$PY -m venv' failed. On Debian/Ubuntu install the venv module first:" >&2
        echo "       sudo apt-get install python3-venv" >&2
        exit 1
    fi
fi

STAMP="$VENV/.kafkalab-installed"
WANT="$(cat "$ROOT/pyproject.toml" | cksum)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
    echo "==> installing kafkalab and its dependencies into $VENV (first time: a few minutes)"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e "$ROOT[test]"
    echo "$WANT" > "$STAMP"
fi

export VIRTUAL_ENV="$VENV"
export PATH="$VENV/bin:$PATH"
export JUPYTER_PREFER_ENV_PATH=1   # use this venv's "python3" kernel, not one from ~/.local/share/jupyter
unset PYTHONHOME

if ! command -v java >/dev/null 2>&1; then
    echo "warning: no 'java' on PATH. Lessons 00, 01, 04 and 05 run without it, but PySpark (lesson 06)" >&2
    echo "         and the ZooKeeper cluster (lessons 02 and 03) need Java 17: e.g. sudo apt-get install openjdk-17-jre-headless," >&2
    echo "         brew install openjdk@17, or conda install -c conda-forge openjdk=17. See README: Troubleshooting." >&2
fi
