"""``python -m kafkalab.kraft.storage_tool format --cluster-id ID --config node.properties``: what Kafka's
``kafka-storage.sh format`` does for a static quorum, for a mini KRaft node.

It writes ``meta.properties`` into the node's ``log.dirs``: ``cluster.id``, ``directory.id`` (a random
id for the directory, KIP-858), ``node.id`` and ``version=1``, Kafka 4's layout; a directory already
formatted is left alone (``--ignore-formatted``), one formatted for another cluster is an error. The
bootstrap metadata Kafka keeps in ``bootstrap.checkpoint`` is not written: the mini controllers carry their
feature levels themselves (Kafka 4.4's defaults less what the mini brokers do not implement:
:mod:`kafkalab.controller.feature_control_manager`).
"""
from __future__ import annotations

import argparse
import base64
import os
import sys
import time
import uuid

META_PROPERTIES = "meta.properties"


def read_properties(path: str) -> dict[str, str]:
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, _, value = line.partition("=")
                out[key.strip()] = value.strip()
    return out


def directory_id_of(log_dir: str) -> uuid.UUID | None:
    """The ``directory.id`` in a formatted log dir's meta.properties (None if there is none)."""
    try:
        text = read_properties(os.path.join(log_dir, META_PROPERTIES)).get("directory.id")
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")) if text else None
    except (OSError, ValueError):
        return None


def format_storage(properties_path: str, cluster_id: str) -> str:
    props = read_properties(properties_path)
    log_dir = props["log.dirs"].split(",")[0]
    path = os.path.join(log_dir, META_PROPERTIES)
    if os.path.exists(path):
        existing = read_properties(path).get("cluster.id")
        if existing != cluster_id:
            raise ValueError(f"{log_dir} is formatted for cluster {existing}, not {cluster_id}")
        return f"All of the log directories are already formatted: {log_dir}"
    os.makedirs(log_dir, exist_ok=True)
    directory_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    text = (f"#\n#{time.strftime('%a %b %d %H:%M:%S UTC %Y', time.gmtime())}\ncluster.id={cluster_id}\n"
            f"directory.id={directory_id}\nnode.id={props['node.id']}\nversion=1\n")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return f"Formatting metadata directory {log_dir} with metadata.version 4.4-IV2."


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m kafkalab.kraft.storage_tool")
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("format")
    f.add_argument("--cluster-id", required=True)
    f.add_argument("--config", required=True)
    f.add_argument("--ignore-formatted", action="store_true")
    args = p.parse_args(argv)
    try:
        print(format_storage(args.config, args.cluster_id))
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
