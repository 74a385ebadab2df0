#!/usr/bin/env bash
# Open the kafkalab lessons in JupyterLab. Each notebook starts its own broker inside its kernel
# (no Docker, no Kafka download). Creates/updates ./.venv first (see scripts/_env.sh).
# Extra arguments go to `jupyter lab`, e.g. ./scripts/lab.sh --no-browser --port 8899
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
cd "$ROOT"
extra=()
[ "$(id -u)" = 0 ] && extra+=(--allow-root)   # containers and CI machines often run as root
exec jupyter lab ${extra[@]+"${extra[@]}"} --ServerApp.root_dir="$ROOT" \
    --LabApp.default_url=/lab/tree/notebooks/00_first_events.ipynb "$@"
