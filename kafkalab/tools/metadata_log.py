"""KRaft's metadata log as a table, for notebooks: :func:`metadata_log_df`.

``kafkalab dump-log --cluster-metadata-decoder FILE`` prints the records of
``__cluster_metadata`` as Kafka's ``kafka-dump-log.sh`` does;
:func:`metadata_log_df` returns the same records as a pandas DataFrame, one row
per record: ``offset``, ``timestamp``, ``epoch`` (the batch's partition leader
epoch: the Raft epoch of the controller that appended it), ``control`` (True
for the quorum's own control records), ``type`` (``TOPIC_RECORD``,
``PARTITION_CHANGE_RECORD``, ... or ``LeaderChange``, ``SnapshotHeader``, ...),
``version`` and ``data`` (the record's fields as a dict, named as Kafka's JSON
names them: ``topicId``, ``isr``, ``leader``). A value that cannot be read
has type ``ERROR`` and the reason in ``data["error"]``.
"""
from __future__ import annotations

import os
import struct

from .dump_log import iter_segment
from ..metadata.metadata_records import (
    CHECKPOINT_SUFFIX, CONTROL_RECORD_TYPES, CONTROL_SCHEMAS, MetadataParseError, decode_control_record,
    decode_metadata_record,
)

COLUMNS = ["offset", "timestamp", "epoch", "control", "type", "version", "data", "file"]


def _files(path: str, snapshots: bool) -> list[str]:
    if not os.path.isdir(path):
        return [path]
    names = sorted(n for n in os.listdir(path)
                   if n.endswith(".log") or (snapshots and n.endswith(CHECKPOINT_SUFFIX)))
    return [os.path.join(path, n) for n in names]


def _control_row(key: bytes | None, value: bytes | None) -> tuple[str, int | None, dict]:
    type_id = struct.unpack_from(">hh", key)[1] if key is not None and len(key) >= 4 else -1
    if type_id not in CONTROL_SCHEMAS:
        return CONTROL_RECORD_TYPES.get(type_id, f"UNKNOWN({type_id})"), None, {}
    label = CONTROL_SCHEMAS[type_id][1].rstrip(":")
    try:
        _, version, data = decode_control_record(type_id, value)
    except MetadataParseError as exc:
        return "ERROR", None, {"error": f"{label}: {exc}"}
    return label, version, data


def metadata_log_df(path, snapshots: bool = False):
    """The records of a ``__cluster_metadata`` segment (``.log``), snapshot (``.checkpoint``) or partition directory
    (its ``.log`` segments in order; with ``snapshots=True`` its ``.checkpoint`` files first) as a DataFrame."""
    import pandas as pd

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file or directory: {path}")
    rows = []
    for file in _files(path, snapshots):
        for batch in iter_segment(file):
            if batch.torn or batch.header is None:
                continue
            for r in batch.records:
                if batch.header.is_control:
                    kind, version, data = _control_row(r.key, r.value)
                else:
                    try:
                        rec = decode_metadata_record(r.value)
                        kind, version, data = rec.type, rec.version, rec.data
                    except MetadataParseError as exc:
                        kind, version, data = "ERROR", None, {"error": str(exc)}
                rows.append(dict(offset=r.offset, timestamp=r.timestamp, epoch=batch.header.partition_leader_epoch,
                                 control=batch.header.is_control, type=kind, version=version, data=data,
                                 file=os.path.basename(file)))
    return pd.DataFrame(rows, columns=COLUMNS).astype({"version": "Int64"})
