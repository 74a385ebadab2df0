"""Loading a partition's log from disk, and recovering it after a crash.

What Kafka's ``LogLoader`` does when a broker starts, in small:

1. **Leftovers of interrupted operations.** ``.cleaned`` files (a cleaner run
   that did not finish) and ``.deleted`` files are removed. A ``.swap``
   segment is a cleaned segment that was complete when the broker stopped:
   the segments it replaces are deleted and it takes their place (its
   indexes are rebuilt; stray ``.index.swap`` files are removed, as Kafka does).
2. **Open the segments.** An index file that cannot be right (a size that is
   not a whole number of entries, entries that do not increase) or that is
   missing is rebuilt from the ``.log`` file, with a warning in the broker log.
3. **Recovery.** Without the ``.kafka_cleanshutdown`` marker (the broker
   crashed or was killed), every segment from the one holding the
   *recovery point* (``recovery-point-offset-checkpoint``) on is re-read:
   each batch's length, magic, offsets and CRC-32C are checked, the indexes
   are rebuilt, and the file is cut at the first invalid batch. A segment
   cut short means what follows cannot be trusted, so later segments are
   deleted, as Kafka does. Segments before the recovery point were fsynced
   and are trusted.
4. **Batch framing.** Every segment's batch headers are read for its end offset
   and largest timestamp, which also checks its framing: a segment whose framing is
   broken (garbage after a clean shutdown, say), or whose indexes point past
   its end (a file cut by hand), is recovered too.
   **Producer state** (idempotence, open transactions) comes from the latest
   ``.snapshot`` file (:mod:`kafkalab.broker.log.producer_snapshot`) plus the
   batches after it: after a clean shutdown the snapshot at the log end offset,
   so nothing is replayed; after a crash the latest snapshot at or below the
   recovery point's segment, then the batches from there on (Kafka's
   ``rebuildProducerState``). A snapshot with a bad CRC is deleted with a
   warning and the next older one is used (or the whole log replayed).
5. **Checkpoints ahead of the files** (segment files removed or cut by hand):
   the recovery point and the log start offset never stay past the log end.

Everything repaired is logged at WARNING and listed in ``log.recovery_report``.
"""
from __future__ import annotations

import logging
import os

from .producer_snapshot import (CorruptSnapshotError, delete_snapshots, list_snapshots, marker_coordinator_epoch,
                                read_snapshot, remove_stray_snapshots, take_snapshot)
from .segment import (CLEANED_FILE_SUFFIX, DELETED_FILE_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_FILE_SUFFIX,
                      TIME_INDEX_SUFFIX, LogSegment)

# ``ulog`` below is the UnifiedLog (log.py) being loaded. log.py imports this module, so this
# module never imports log.py back: the annotations name the class as a string only.

log = logging.getLogger(__name__)


def _base_offset_of(name: str) -> int | None:
    prefix = name.split(".", 1)[0]
    return int(prefix) if len(prefix) == 20 and prefix.isdigit() else None


def _report(ulog: "UnifiedLog", message: str) -> None:
    log.warning("%s: %s", ulog.name, message)
    ulog.recovery_report.append(message)


def _remove_temporary_files(ulog: "UnifiedLog") -> None:
    for name in sorted(os.listdir(ulog.dir)):
        path = os.path.join(ulog.dir, name)
        if name.endswith(CLEANED_FILE_SUFFIX):
            _report(ulog, f"removing {name}: left by a cleaner run that did not finish (the old segments are intact)")
            os.remove(path)
        elif name.endswith(DELETED_FILE_SUFFIX):
            os.remove(path)
        elif name.endswith((INDEX_SUFFIX + SWAP_FILE_SUFFIX, TIME_INDEX_SUFFIX + SWAP_FILE_SUFFIX)):
            os.remove(path)  # as Kafka: a swapped-in segment's indexes are rebuilt from its log


def _complete_swaps(ulog: "UnifiedLog") -> None:
    """Finish ``replace_segments`` for every complete ``.swap`` segment (Kafka's LogLoader does the same)."""
    swaps = sorted({b for b in map(_base_offset_of, os.listdir(ulog.dir)) if b is not None
                    and os.path.exists(os.path.join(ulog.dir, f"{b:020d}{LOG_SUFFIX}{SWAP_FILE_SUFFIX}"))})
    for base in swaps:
        seg = LogSegment(ulog.dir, base, index_interval_bytes=ulog.config["index.interval.bytes"],
                         max_index_size=ulog.config["segment.index.bytes"], file_suffix=SWAP_FILE_SUFFIX)
        seg.recover()
        end = seg.next_offset
        for name in os.listdir(ulog.dir):
            other = _base_offset_of(name)
            if other is not None and base <= other < end and not name.endswith(SWAP_FILE_SUFFIX):
                os.remove(os.path.join(ulog.dir, name))
        seg.change_file_suffixes(SWAP_FILE_SUFFIX, "")
        seg.close()
        _report(ulog, f"completed an interrupted cleaner swap: segment {base} replaces the segments "
                      f"holding offsets {base}..{end - 1}")


def load_log(ulog: "UnifiedLog", had_clean_shutdown: bool) -> None:
    _remove_temporary_files(ulog)
    _complete_swaps(ulog)
    bases = sorted(b for b in (_base_offset_of(f) for f in os.listdir(ulog.dir) if f.endswith(LOG_SUFFIX))
                   if b is not None)
    for base in bases:
        ulog._add_segment(ulog._new_segment(base))
    if not ulog.segments:  # a new log (or every segment file was removed): start at the log start offset
        ulog._add_segment(ulog._new_segment(ulog.log_start_offset))
    else:
        _recover_segments(ulog, had_clean_shutdown)
    first_unflushed = None
    if not had_clean_shutdown:  # the segment the recovery starts with: no snapshot above its base is trusted
        first_unflushed = ulog.segments[ulog.segment_for(min(ulog.recovery_point, ulog.log_end_offset))].base_offset

    # the checkpoints may be ahead of what is on disk (files removed or cut by hand): never past the end
    ulog.pending_flush_offset = ulog.active_segment.base_offset
    end = ulog.log_end_offset
    if had_clean_shutdown:
        ulog.recovery_point = end
    ulog.recovery_point = min(ulog.recovery_point, end)
    first_base = ulog.segments[0].base_offset
    if ulog.log_start_offset > end:
        _report(ulog, f"log start offset {ulog.log_start_offset} is past the log end offset {end}; using {end}")
        ulog.log_start_offset = end
    ulog.log_start_offset = max(ulog.log_start_offset, first_base)
    remove_stray_snapshots(ulog.dir, [seg.base_offset for seg in ulog.segments])
    rebuild_producer_state(ulog, first_unflushed)


def _latest_valid_snapshot(ulog: "UnifiedLog"):
    """(offset, entries) of the latest readable snapshot; corrupt ones are deleted with a warning."""
    for offset, path in reversed(list_snapshots(ulog.dir).items()):
        try:
            return offset, read_snapshot(path)
        except CorruptSnapshotError as e:
            _report(ulog, f"failed to load producer snapshot {os.path.basename(path)}: {e}; deleted")
            os.remove(path)
    return None, None


def rebuild_producer_state(ulog: "UnifiedLog", max_snapshot_offset: int | None = None) -> None:
    """Producer state from the latest snapshot at or below ``max_snapshot_offset`` (default: the log end
    offset) plus the batches after it (Kafka's ``truncateAndReload`` and ``rebuildProducerState``).

    Snapshots past that offset, or at or below the log start offset, are deleted first. When
    batches were replayed, snapshots are taken at the base offsets of the last two segments (of every
    replayed segment after a crash, as Kafka's per-segment recovery does) and at the log end offset.
    ``ulog.producer_state_replayed_batches`` counts the batches read.
    """
    end = ulog.log_end_offset
    limit = end if max_snapshot_offset is None else min(end, max_snapshot_offset)
    delete_snapshots(ulog.dir, [o for o in list_snapshots(ulog.dir) if o > limit or o <= ulog.log_start_offset])
    offset, entries = _latest_valid_snapshot(ulog)
    state = ulog.producer_state
    if offset is None:
        state.truncate()
        offset = ulog.log_start_offset
    else:
        state.load_snapshot_entries(entries)
    ulog.producer_state_replayed_batches = 0
    if offset >= end:
        return
    bases = [seg.base_offset for seg in ulog.segments]
    snapshot_at = set(bases[-2:]) if max_snapshot_offset is None else set(bases)
    for seg in ulog.segments:
        if seg.next_offset <= offset:
            continue
        if seg.base_offset > offset and seg.base_offset in snapshot_at:
            take_snapshot(ulog.dir, seg.base_offset, state.snapshot_entries())
        for pos, header in seg.batches_from(0):
            if header.base_offset < offset:
                continue
            epoch = marker_coordinator_epoch(seg.read_at(pos, header.size)) if header.is_control else -1
            state.update(header, epoch)
            ulog.producer_state_replayed_batches += 1
    take_snapshot(ulog.dir, end, state.snapshot_entries())


def _recover_segments(ulog: "UnifiedLog", had_clean_shutdown: bool) -> None:
    # segments whose indexes are broken or missing: rebuild them whatever the shutdown was
    for seg in ulog.segments:
        if seg.index_problem is not None:
            _recover_segment(ulog, seg, f"index rebuilt ({seg.index_problem})")

    # no clean shutdown marker: recover every segment from the recovery point on
    if not had_clean_shutdown:
        first = ulog.segment_for(ulog.recovery_point)
        for seg in list(ulog.segments[first:]):
            if seg in ulog.segments:
                _recover_segment(ulog, seg, None)

    # producer state and per-segment end offsets from the batch headers (checks framing too)
    for _ in range(len(ulog.segments) + 1):  # each failed pass recovers (and may drop) segments
        if _scan_headers(ulog):
            break


def _recover_segment(ulog: "UnifiedLog", seg: LogSegment, why: str | None, min_offset: int = 0) -> None:
    truncated, problem = seg.recover(min_offset)
    if why is not None:
        _report(ulog, f"segment {seg.base_offset}: {why}")
    if truncated:
        _report(ulog, f"segment {seg.base_offset}: {problem}; truncated {truncated} bytes, "
                      f"the log now ends at offset {seg.next_offset}")
        _drop_segments_after(ulog, seg)


def _drop_segments_after(ulog: "UnifiedLog", seg: LogSegment) -> None:
    i = ulog.segments.index(seg)
    for later in ulog.segments[i + 1:]:
        _report(ulog, f"deleting segment {later.base_offset}: it follows a corrupt segment")
        later.delete()
    del ulog.segments[i + 1:]
    del ulog._bases[i + 1:]


def _scan_headers(ulog: "UnifiedLog") -> bool:
    """Next offsets and max timestamps from the batch headers; False if a segment had to be recovered."""
    expected = None
    for seg in ulog.segments:
        end = 0
        seg.next_offset = seg.base_offset
        max_ts, max_ts_offset = -1, seg.base_offset
        problem = None
        segment_min = max(seg.base_offset, expected or 0)
        for pos, header in seg.batches_from(0):
            if header.magic != 2:
                problem = f"magic byte {header.magic} at byte {pos}"
                break
            if header.base_offset < max(seg.base_offset, expected or 0) or header.last_offset_delta < 0:
                problem = f"offset {header.base_offset} at byte {pos} is out of order"
                break
            if header.max_timestamp > max_ts:
                max_ts, max_ts_offset = header.max_timestamp, header.last_offset
            seg.next_offset = header.next_offset
            expected = header.next_offset
            end = pos + header.size
        if problem is None and end < seg.size:
            problem = f"{seg.size - end} bytes at the end are not a whole batch"
        if problem is None and len(seg.offset_index) and (seg.offset_index.last_position >= max(end, 1)
                                                          or seg.offset_index.last_offset >= seg.next_offset):
            problem = "the offset index points past the end of the log"
        if problem is None and len(seg.time_index) and seg.time_index.last_entry[1] >= seg.next_offset:
            problem = "the time index points past the end of the log"
        if problem is not None:
            _recover_segment(ulog, seg, f"{problem}; checking every batch", min_offset=segment_min)
            return False
        seg.max_timestamp_so_far, seg.offset_of_max_timestamp_so_far = max_ts, max_ts_offset
        seg.bytes_since_last_index_entry = end - seg.offset_index.last_position if len(seg.offset_index) else end
        expected = max(expected or 0, seg.base_offset, seg.next_offset)
    return True
