#!/usr/bin/env bash
# Open the kafkalab lessons in JupyterLab. Each notebook starts its own broker inside its kernel
# (no Docker, no Kafka download). Creates/updates ./.venv first (see scripts/_env.sh).
# Extra arguments go to `jupyter lab`, e.g. ./scripts/lab.sh --no-browser --port 8899
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
cd "$ROOT"
extra=()
[ "$(id -u)" = 0 ] && extra+=(--allow-root)   # containers and CI machines often run as root
# no "get notified about Jupyter news?" pop-up over the lesson (kafkalab/jupyter_config disables the
# announcements plugin), no news feed, no update check
export JUPYTER_CONFIG_PATH="$ROOT/kafkalab/jupyter_config${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
extra+=(--LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate)
exec jupyter lab ${extra[@]+"${extra[@]}"} --ServerApp.root_dir="$ROOT" \
    --LabApp.default_url=/lab/tree/notebooks/00_first_events.ipynb "$@"
