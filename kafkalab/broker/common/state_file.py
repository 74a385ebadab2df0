"""The standalone broker's small JSON state files (``client-quotas.json``, ``scram-credentials.json``,
``acls.json``): read tolerantly at start-up, written whole and atomically (a temporary file renamed over the old,
as Kafka writes its checkpoint files), so a broker killed mid-write leaves the previous state."""
from __future__ import annotations

import json
import logging
import os
from typing import Any

log = logging.getLogger(__name__)


def read_state_file(path: str, what: str) -> Any:
    """The file's JSON, or None if it does not exist, or cannot be read (logged: "starting without ``what``")."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("cannot read %s: %s; starting without %s", path, exc, what)
        return None


def write_state_file(path: str, data: Any, indent: int | None = None) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=indent)
    os.replace(tmp, path)
