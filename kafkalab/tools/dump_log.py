"""Dump log segments and their indexes, like Kafka's ``kafka-dump-log.sh``.

Kafka ships ``bin/kafka-dump-log.sh --files 00000000000000000000.log
--print-data-log`` (the class ``kafka.tools.DumpLogSegments``) to look inside
the files of a partition directory. This module does the same for the files
the mini broker writes — which have Kafka's own format, so it reads a real
broker's files too — and prints the same lines:

``.log`` (a segment: record batches, message format v2 / "magic 2")::

    Dumping 00000000000000000000.log
    Log starting offset: 0
    baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1
      producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false
      deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000001 size: 80
      magic: 2 compresscodec: none crc: 3040594468 isvalid: true
    | offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 2 sequence: -1 headerKeys: [] key: a payload: v1

  (one line per batch, shown wrapped here). Record lines (``|``) appear with
  ``print_data_log`` (``--print-data-log``), which adds the key and value, or
  with ``deep_iteration`` (``--deep-iteration``) alone, which leaves them out.
  ``isvalid`` is the batch's CRC-32C check. Bytes after the last whole batch
  (a write torn by a crash) are reported as ``Found N invalid bytes at the
  end of ...``, as Kafka does; nothing here raises on a damaged file.

``.index`` (sparse offset index) and ``.timeindex`` (time index)::

    offset: 35 position: 4150          timestamp: 1700000000035 offset: 35

  Each offset-index entry is checked against the ``.log`` next to it, as
  Kafka does: an entry whose offset is not the last offset of the batch at
  that position is reported as a mismatch.

From Python: :func:`dump_log` prints, :func:`dump_log_df` returns a pandas
DataFrame (one row per record, per batch, or per index entry), and
:func:`read_segment` / :func:`read_offset_index` / :func:`read_time_index`
return the parsed structures. Files are only read, never modified.

``.txnindex``: ``version: 0 producerId: 1000 firstOffset: 4 lastOffset: 7 lastStableOffset: 8``
per aborted transaction; ``.snapshot`` (producer state): ``producerId: ... producerEpoch: ...`` per producer
(:mod:`kafkalab.tools.dump_snapshot`). Control batches (transaction markers): ``endTxnMarker: COMMIT ...``.
``--transaction-log-decoder`` decodes the records of ``__transaction_state``, ``--cluster-metadata-decoder``
those of KRaft's ``__cluster_metadata`` (segments and ``.checkpoint`` snapshots; see
:mod:`kafkalab.metadata.metadata_records`).

``--offsets-decoder`` those of ``__consumer_offsets`` (:mod:`kafkalab.tools.offsets_decoder`). Not covered:
message formats v0/v1 (magic 0 and 1, before Kafka 0.11; Kafka 4 no longer writes or reads them); keys and
values are shown as UTF-8 text like Kafka's default StringDecoder.
"""
from __future__ import annotations

import mmap
import os
import struct
import sys
from dataclasses import dataclass, field
from typing import IO, Iterator

from ..broker.common.errors import KafkaError
from ..broker.log.index import OffsetIndex, TimeIndex
from ..broker.coordinator.transaction.transaction_log import format_record as format_transaction_log_record
from .offsets_decoder import format_record as format_offsets_record
from .dump_snapshot import PRODUCER_SNAPSHOT_SUFFIX, dump_producer_snapshot, dump_txn_index
from ..broker.log.log_cleaner import DELETE_HORIZON_MASK
from ..broker.log.transaction_index import TXN_INDEX_SUFFIX
from ..broker.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX
from ..broker.common.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, compute_crc, iter_batches, iter_records
from ..metadata.metadata_records import CHECKPOINT_SUFFIX, CONTROL_RECORD_TYPES, control_text, snapshot_header  # noqa: F401
from ..metadata.metadata_records import payload_text as cluster_metadata_payload

_OFFSET_ENTRY = OffsetIndex.entry      # relativeOffset, position
_TIME_ENTRY = TimeIndex.entry          # timestamp, relativeOffset


# --- the parsed structures -----------------------------------------------------

@dataclass
class RecordInfo:
    """One record of a batch, as DumpLogSegments shows it."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    header_keys: list[str]
    sequence: int

    @property
    def key_size(self) -> int:
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        return -1 if self.value is None else len(self.value)


@dataclass
class BatchInfo:
    """One record batch found in a segment file.

    ``header`` is None only when not even a whole 61-byte header is left.
    ``is_valid`` is False when the stored CRC-32C does not match the bytes,
    when the batch is torn (the file ends inside it), or when its records
    cannot be decoded; ``error`` then says which.
    """

    position: int
    size: int
    header: BatchHeader | None
    is_valid: bool
    records: list[RecordInfo] = field(default_factory=list)
    error: str | None = None
    torn: bool = False

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: a compacted batch holding tombstones records when they may go."""
        if self.header is None or not self.header.attributes & DELETE_HORIZON_MASK:
            return None
        return self.header.base_timestamp


@dataclass
class SegmentDump:
    """Everything read from one ``.log`` file."""

    path: str
    base_offset: int | None
    file_size: int
    batches: list[BatchInfo]

    @property
    def valid_bytes(self) -> int:
        """Bytes up to the end of the last whole batch (what Kafka's recovery keeps)."""
        whole = [b for b in self.batches if not b.torn]
        return whole[-1].position + whole[-1].size if whole else 0

    @property
    def invalid_bytes(self) -> int:
        """Bytes after the last whole batch: a torn write, or garbage."""
        return self.file_size - self.valid_bytes

    @property
    def records(self) -> list[RecordInfo]:
        return [r for b in self.batches for r in b.records]


def _base_offset_of(path: str) -> int | None:
    stem = os.path.basename(path).split(".")[0]
    return int(stem) if stem.isdigit() else None


def _record_sequence(header: BatchHeader, offset: int) -> int:
    """DefaultRecord.sequence(): the batch's base sequence plus the offset delta, wrapping at 2^31."""
    if header.base_sequence < 0:
        return -1
    return (header.base_sequence + offset - header.base_offset) % 2**31


def _read_batch(buf: bytes, position: int, header: BatchHeader, decode_records: bool) -> BatchInfo:
    info = BatchInfo(position, header.size, header, is_valid=True)
    errors = []
    if header.magic != 2:
        info.is_valid = False
        info.error = (f"magic {header.magic}: message format v{header.magic} (before Kafka 0.11) "
                      "is not decoded by this tool")
        return info
    if compute_crc(buf) != header.crc:
        info.is_valid = False
        errors.append(f"CRC-32C mismatch: stored {header.crc}, computed {compute_crc(buf)}")
    if decode_records:
        try:
            for r in iter_records(buf):
                info.records.append(RecordInfo(r.offset, r.timestamp, r.key, r.value,
                                               [k for k, _ in r.headers], _record_sequence(header, r.offset)))
        except KafkaError as exc:
            info.is_valid = False
            errors.append(f"records cannot be read: {exc.message}")
        except Exception as exc:   # noqa: BLE001 - damaged bytes can break a decoder in many ways; report, don't crash
            info.is_valid = False
            errors.append(f"records cannot be read: {type(exc).__name__}: {exc}")
    info.error = "; ".join(errors) or None
    return info


def iter_segment(path: str, decode_records: bool = True) -> Iterator[BatchInfo]:
    """Yield each batch of the ``.log`` file at ``path``, then a torn tail if there is one.

    Reads through a memory map, so a 1 GiB segment is not loaded at once.
    """
    size = os.path.getsize(path)
    if size == 0:
        return
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        end = 0
        for position, header in iter_batches(mm, strict=False):
            yield _read_batch(mm[position:position + header.size], position, header, decode_records)
            end = position + header.size
        if end < size:
            yield _torn_tail(mm, end, size)


def _torn_tail(mm, position: int, size: int) -> BatchInfo:
    left = size - position
    if left < HEADER_SIZE:
        return BatchInfo(position, left, None, is_valid=False, torn=True,
                         error=f"torn batch: only {left} bytes left, less than a {HEADER_SIZE}-byte batch header")
    header = BatchHeader.parse(mm, position)
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        why = f"corrupt batch: batchLength {header.batch_length} is smaller than a header"
    else:
        why = f"torn batch: its header says {header.size} bytes, the file holds {left}"
    return BatchInfo(position, left, header, is_valid=False, torn=True, error=why)


def read_segment(path: str, decode_records: bool = True) -> SegmentDump:
    """Parse a whole ``.log`` segment file (see :class:`SegmentDump`)."""
    return SegmentDump(path, _base_offset_of(path), os.path.getsize(path),
                       list(iter_segment(path, decode_records)))


def _read_entries(path: str, entry: struct.Struct) -> list[tuple]:
    """Entries of an index file, stopping at Kafka's zero-filled preallocated tail (and ignoring
    a partial entry at the end)."""
    with open(path, "rb") as f:
        data = f.read()
    usable = len(data) - len(data) % entry.size
    entries = []
    for i, fields in enumerate(entry.iter_unpack(data[:usable])):
        relative = fields[0] if entry is _OFFSET_ENTRY else fields[1]
        if i > 0 and relative == 0:  # a running Kafka broker preallocates index files with zeros
            break
        entries.append(fields)
    return entries


def read_offset_index(path: str) -> list[tuple[int, int]]:
    """``(offset, position)`` entries of a ``.index`` file (absolute offsets)."""
    base = _base_offset_of(path) or 0
    entries = _read_entries(path, _OFFSET_ENTRY)
    return [(base + rel, pos) for rel, pos in entries]


def read_time_index(path: str) -> list[tuple[int, int]]:
    """``(timestamp, offset)`` entries of a ``.timeindex`` file (absolute offsets)."""
    base = _base_offset_of(path) or 0
    entries = _read_entries(path, _TIME_ENTRY)
    return [(ts, base + rel) for ts, rel in entries]


def _sibling(path: str, suffix: str) -> str:
    stem = os.path.basename(path).split(".")[0]
    return os.path.join(os.path.dirname(os.path.abspath(path)), stem + suffix)


def _batch_last_offset_at(log_path: str, position: int) -> int | None:
    """The last offset of the batch starting at ``position`` in ``log_path`` (None if there is none)."""
    if not os.path.exists(log_path):
        return None
    with open(log_path, "rb") as f:
        f.seek(position)
        head = f.read(HEADER_SIZE)
    if len(head) < HEADER_SIZE:
        return None
    return BatchHeader.parse(head).last_offset


# --- printing, Kafka style -----------------------------------------------------

def _bool(value: bool) -> str:
    return "true" if value else "false"


def _text(data: bytes) -> str:
    """Kafka's default StringDecoder: the bytes as UTF-8."""
    return data.decode("utf-8", "replace")


def format_batch(b: BatchInfo) -> str:
    """The batch line of DumpLogSegments.printBatchLevel."""
    h = b.header
    if h.magic != 2:
        return f"offset: {h.base_offset} position: {b.position} size: {b.size} magic: {h.magic} isvalid: false"
    horizon = b.delete_horizon_ms
    horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
    return (f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
            f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} producerId: {h.producer_id} "
            f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
            f"isTransactional: {_bool(h.is_transactional)} isControl: {_bool(h.is_control)} "
            f"deleteHorizonMs: {horizon_text} position: {b.position} {h.timestamp_type}: {h.max_timestamp} "
            f"size: {b.size} magic: {h.magic} compresscodec: {h.compression} crc: {h.crc} "
            f"isvalid: {_bool(b.is_valid)}")


def format_record(r: RecordInfo, h: BatchHeader, print_data_log: bool = True,
                  skip_record_metadata: bool = False, transaction_log_decoder: bool = False,
                  cluster_metadata_decoder: bool = False, offsets_decoder: bool = False) -> str:
    """A record line of DumpLogSegments (``| offset: ...``). Control records are decoded as Kafka 4.4 does
    (transaction markers, KRaft's LeaderChange, SnapshotHeader/Footer, KRaftVersion, KRaftVoters)."""
    line, prefix = "", "| "
    if not skip_record_metadata:
        line = (f"{prefix}offset: {r.offset} {h.timestamp_type}: {r.timestamp} keySize: {r.key_size} "
                f"valueSize: {r.value_size} sequence: {r.sequence} headerKeys: [{','.join(r.header_keys)}]")
        prefix = " "
        if h.is_control:
            line += control_text(r.key, r.value)
    if print_data_log and not h.is_control and cluster_metadata_decoder:   # metadata records have no key
        line += f" payload: {cluster_metadata_payload(r.offset, r.value)}"
    elif print_data_log and not h.is_control and transaction_log_decoder:
        line += prefix + format_transaction_log_record(r.key, r.value)
    elif print_data_log and not h.is_control and offsets_decoder:
        line += prefix + format_offsets_record(r.key, r.value, r.offset)
    elif print_data_log and not h.is_control:
        if r.key is not None:
            line += f"{prefix}key: {_text(r.key)}"
            prefix = " "
        if r.value is not None:
            line += f"{prefix}payload: {_text(r.value)}"
    return line


def _dump_segment(path: str, print_data_log: bool, deep_iteration: bool, skip_record_metadata: bool,
                  out: IO[str], err: IO[str], transaction_log_decoder: bool = False,
                  cluster_metadata_decoder: bool = False, offsets_decoder: bool = False) -> None:
    base = _base_offset_of(path)
    if snapshot_header(path) is not None:   # a KRaft snapshot (.checkpoint)
        print(snapshot_header(path), file=out)
    elif base is not None:
        print(f"Log starting offset: {base}", file=out)
    deep = deep_iteration or print_data_log
    last_offset, gaps = None, []
    for b in iter_segment(path, decode_records=deep):
        if b.torn:
            print(f"Found {b.size} invalid bytes at the end of {os.path.basename(path)}", file=out)
            print(f"  ({b.error}; log recovery truncates the segment here at start-up)", file=out)
            break
        print(format_batch(b), file=out)
        if b.header.magic != 2:
            continue
        for r in b.records:
            if last_offset is not None and r.offset != last_offset + 1:
                gaps.append((last_offset, r.offset))
            last_offset = r.offset
            print(format_record(r, b.header, print_data_log, skip_record_metadata, transaction_log_decoder,
                                cluster_metadata_decoder, offsets_decoder), file=out)
        if b.error and deep:
            print(f"  ({b.error})", file=out)
    if gaps:
        print(f"Non-consecutive offsets in {os.path.abspath(path)}", file=err)
        for first, second in gaps:
            print(f"  {first} is followed by {second}", file=err)


def _dump_offset_index(path: str, verify_only: bool, out: IO[str], err: IO[str]) -> None:
    entries = read_offset_index(path)
    if not entries:
        print(f"{path} is empty.", file=out)
        return
    log_path = _sibling(path, LOG_SUFFIX)
    mismatches = []
    for offset, position in entries:
        found = _batch_last_offset_at(log_path, position)
        if found is not None and found != offset:
            mismatches.append((offset, found))
        if not verify_only:
            print(f"offset: {offset} position: {position}", file=out)
    if mismatches:
        print(f"Mismatches in :{os.path.abspath(path)}", file=err)
        for index_offset, log_offset in mismatches:
            print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=err)


def _dump_time_index(path: str, verify_only: bool, out: IO[str], err: IO[str]) -> None:
    entries = read_time_index(path)
    previous = -1
    out_of_order = []
    for timestamp, offset in entries:
        if timestamp <= previous:
            out_of_order.append((timestamp, previous))
        previous = timestamp
        if not verify_only:
            print(f"timestamp: {timestamp} offset: {offset}", file=out)
    if out_of_order:
        print(f"Found out of order timestamp in :{os.path.abspath(path)}", file=err)
        for timestamp, before in out_of_order:
            print(f"  Index timestamp: {timestamp}, Previously indexed timestamp: {before}", file=err)


def _expand(paths) -> list[str]:
    """Files to dump: a partition directory stands for its segment files, oldest first."""
    out = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            logs = [f for f in os.listdir(p) if f.endswith(LOG_SUFFIX)]
            out += [os.path.join(p, f) for f in sorted(logs, key=lambda f: (_base_offset_of(f) is None, f))]
        else:
            out.append(p)
    return out


def dump_log(*paths, print_data_log: bool = True, deep_iteration: bool = False,
             skip_record_metadata: bool = False, verify_index_only: bool = False, transaction_log_decoder: bool = False,
             cluster_metadata_decoder: bool = False, offsets_decoder: bool = False, file=None, err=None) -> None:
    """Print ``.log``, ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot`` and ``.checkpoint`` files as
    ``kafka-dump-log.sh`` does.

    ``paths`` are files or partition directories (a directory means all its ``.log`` segments). From
    Python the records are printed with their keys and values (``print_data_log=True``); ``kafkalab
    dump-log`` follows Kafka's command line, where ``--print-data-log`` asks for them. Problems found
    (non-consecutive offsets, index mismatches, missing files, unknown kinds) go to ``err`` (stderr).
    """
    dump_files(paths, print_data_log=print_data_log, deep_iteration=deep_iteration,
               skip_record_metadata=skip_record_metadata, verify_index_only=verify_index_only,
               transaction_log_decoder=transaction_log_decoder, cluster_metadata_decoder=cluster_metadata_decoder,
               offsets_decoder=offsets_decoder, file=file, err=err)


def dump_files(paths, *, print_data_log: bool, deep_iteration: bool = False, skip_record_metadata: bool = False,
               verify_index_only: bool = False, transaction_log_decoder: bool = False,
               cluster_metadata_decoder: bool = False, offsets_decoder: bool = False, file: IO[str] | None = None,
               err: IO[str] | None = None) -> bool:
    """What :func:`dump_log` and ``kafkalab dump-log`` do; False if a file was missing or of an unknown kind."""
    out = file if file is not None else sys.stdout
    err = err if err is not None else sys.stderr
    ok = True
    for path in _expand(paths):
        if not os.path.isfile(path):
            print(f"error: no such file: {path}", file=err)
            ok = False
            continue
        print(f"Dumping {path}", file=out)
        if path.endswith(LOG_SUFFIX) or path.endswith(CHECKPOINT_SUFFIX):
            _dump_segment(path, print_data_log, deep_iteration, skip_record_metadata, out, err, transaction_log_decoder,
                          cluster_metadata_decoder, offsets_decoder)
        elif path.endswith(TIME_INDEX_SUFFIX):
            _dump_time_index(path, verify_index_only, out, err)
        elif path.endswith(INDEX_SUFFIX):
            _dump_offset_index(path, verify_index_only, out, err)
        elif path.endswith(TXN_INDEX_SUFFIX):
            dump_txn_index(path, out)
        elif path.endswith(PRODUCER_SNAPSHOT_SUFFIX):
            dump_producer_snapshot(path, out, err)
        else:
            print(f"Ignoring unknown file {path}", file=err)
            ok = False
    return ok


# --- DataFrames, for notebooks -------------------------------------------------

SEGMENT_COLUMNS = ["segment", "baseOffset", "lastOffset", "records", "batches", "bytes", "indexEntries",
                   "timeIndexEntries", "maxTimestamp", "active"]


def list_segments(partition_dir):
    """The segments of a partition directory, oldest first, one row each (a pandas DataFrame).

    Columns: ``segment`` (the ``.log`` file name), ``baseOffset`` (from the
    name), ``lastOffset``, ``records``, ``batches``, ``bytes`` (size of the
    ``.log``), ``indexEntries`` / ``timeIndexEntries`` (entries in the
    ``.index`` / ``.timeindex``), ``maxTimestamp`` (the largest record
    timestamp, what ``retention.ms`` compares) and ``active`` (True for the
    last segment, the one new records are appended to). Only batch headers
    are read. Files being deleted or cleaned (``.deleted``, ``.cleaned``,
    ``.swap``) are not segments and are left out; :func:`list_files` shows them.
    """
    import pandas as pd

    rows = []
    for path in _expand([os.fspath(partition_dir)]):
        base = _base_offset_of(path)
        if base is None:
            continue
        batches = [b for b in iter_segment(path, decode_records=False) if not b.torn]
        index = _sibling(path, INDEX_SUFFIX)
        timeindex = _sibling(path, TIME_INDEX_SUFFIX)
        rows.append(dict(
            segment=os.path.basename(path), baseOffset=base,
            lastOffset=batches[-1].header.last_offset if batches else None,
            records=sum(b.header.records_count for b in batches), batches=len(batches),
            bytes=os.path.getsize(path),
            indexEntries=len(read_offset_index(index)) if os.path.exists(index) else 0,
            timeIndexEntries=len(read_time_index(timeindex)) if os.path.exists(timeindex) else 0,
            maxTimestamp=max((b.header.max_timestamp for b in batches), default=None),
            active=False))
    if rows:
        rows[-1]["active"] = True
    return pd.DataFrame(rows, columns=SEGMENT_COLUMNS).astype({"lastOffset": "Int64", "maxTimestamp": "Int64"})


def list_files(partition_dir):
    """Every file in a partition directory with its size in bytes (a pandas DataFrame, sorted by name)."""
    import pandas as pd

    directory = os.fspath(partition_dir)
    names = sorted(n for n in os.listdir(directory) if os.path.isfile(os.path.join(directory, n)))
    return pd.DataFrame([(n, os.path.getsize(os.path.join(directory, n))) for n in names],
                        columns=["file", "bytes"])


BATCH_COLUMNS = ["baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId",
                 "producerEpoch", "partitionLeaderEpoch", "isTransactional", "isControl", "deleteHorizonMs",
                 "position", "timestampType", "maxTimestamp", "size", "magic", "compresscodec", "crc",
                 "isvalid", "error"]
RECORD_COLUMNS = ["offset", "timestamp", "timestampType", "key", "value", "keySize", "valueSize", "sequence",
                  "headerKeys", "baseOffset", "position", "compresscodec", "isvalid"]


_INT_BATCH_COLUMNS = ["baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId",
                      "producerEpoch", "partitionLeaderEpoch", "deleteHorizonMs", "position", "maxTimestamp",
                      "size", "magic", "crc"]


def _keep_none(df, rows: list[dict], *columns: str) -> None:
    """Show a null key or value as None (pandas would turn it into NaN in a text column)."""
    import pandas as pd

    for col in columns:
        df[col] = pd.Series([row[col] for row in rows], dtype=object, index=df.index)


def _batch_row(b: BatchInfo) -> dict:
    h = b.header
    row = dict.fromkeys(BATCH_COLUMNS)
    row.update(position=b.position, size=b.size, isvalid=b.is_valid, error=b.error)
    if h is not None:
        row.update(baseOffset=h.base_offset, lastOffset=h.last_offset, count=h.records_count,
                   baseSequence=h.base_sequence, lastSequence=h.last_sequence, producerId=h.producer_id,
                   producerEpoch=h.producer_epoch, partitionLeaderEpoch=h.partition_leader_epoch,
                   isTransactional=h.is_transactional, isControl=h.is_control,
                   deleteHorizonMs=b.delete_horizon_ms, timestampType=h.timestamp_type,
                   maxTimestamp=h.max_timestamp, magic=h.magic, compresscodec=h.compression, crc=h.crc)
    return row


def _record_rows(b: BatchInfo, decode: bool) -> list[dict]:
    conv = (lambda d: None if d is None else _text(d)) if decode else (lambda d: d)
    h = b.header
    return [dict(offset=r.offset, timestamp=r.timestamp, timestampType=h.timestamp_type, key=conv(r.key),
                 value=conv(r.value), keySize=r.key_size, valueSize=r.value_size, sequence=r.sequence,
                 headerKeys=list(r.header_keys), baseOffset=h.base_offset, position=b.position,
                 compresscodec=h.compression, isvalid=b.is_valid)
            for r in b.records]


def dump_log_df(path, level: str = "record", decode: bool = True):
    """The content of a ``.log``, ``.index`` or ``.timeindex`` file as a pandas DataFrame.

    For a ``.log`` segment, ``level="record"`` gives one row per record
    (offset, timestamp, key, value, sizes, sequence, header keys, and the
    batch it sits in) and ``level="batch"`` one row per batch with the
    fields of Kafka's batch line; a torn tail shows up there as a last row
    with ``isvalid`` False and an ``error``. Keys and values are UTF-8 text
    (``decode=False`` keeps the bytes). A partition directory gives all its
    segments, with a ``segment`` column (the base offset). An ``.index`` gives
    ``offset, position``; a ``.timeindex`` gives ``timestamp, offset``.

    ``df.attrs`` carries ``path`` and, for segments, ``invalid_bytes``.
    """
    import pandas as pd

    path = os.fspath(path)
    if level not in ("record", "batch"):
        raise ValueError(f"level must be 'record' or 'batch', not {level!r}")
    if os.path.isdir(path):
        frames = []
        invalid = 0
        for seg_path in _expand([path]):
            df = dump_log_df(seg_path, level, decode)
            invalid += df.attrs["invalid_bytes"]
            frames.append(df.assign(segment=_base_offset_of(seg_path)))
        cols = (RECORD_COLUMNS if level == "record" else BATCH_COLUMNS) + ["segment"]
        frames = [f for f in frames if len(f)]   # an empty segment (e.g. emptied by the cleaner) adds no rows
        df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)
        for col in ("key", "value") if level == "record" else ("error",):
            df[col] = df[col].astype(object).where(df[col].notna(), None)
        df.attrs.update(path=path, invalid_bytes=invalid)
        return df
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file: {path}")
    if path.endswith(TIME_INDEX_SUFFIX):
        df = pd.DataFrame(read_time_index(path), columns=["timestamp", "offset"])
    elif path.endswith(INDEX_SUFFIX):
        df = pd.DataFrame(read_offset_index(path), columns=["offset", "position"])
    elif path.endswith(LOG_SUFFIX):
        seg = read_segment(path)
        if level == "batch":
            rows = [_batch_row(b) for b in seg.batches]
            df = pd.DataFrame(rows, columns=BATCH_COLUMNS).astype({c: "Int64" for c in _INT_BATCH_COLUMNS})
            _keep_none(df, rows, "error")
        else:
            rows = [row for b in seg.batches if not b.torn for row in _record_rows(b, decode)]
            df = pd.DataFrame(rows, columns=RECORD_COLUMNS)
            _keep_none(df, rows, "key", "value")
        df.attrs["invalid_bytes"] = seg.invalid_bytes
    else:
        raise ValueError(f"{path}: not a .log, .index or .timeindex file")
    df.attrs["path"] = path
    return df
