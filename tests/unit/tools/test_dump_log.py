"""kafkalab.tools.dump_log on files built byte by byte from Kafka's spec.

The fixtures come from ``kafka_spec``, written with ``struct`` following the
"Record Batch" section of Kafka's protocol documentation (message format v2)
and the OffsetIndex/TimeIndex layouts, not with kafkalab's own encoder, so the
dumper is checked against the format a real broker writes.
"""
from __future__ import annotations

import functools
import gzip
import io
import os
import struct

import pytest
from tests.helpers.kafka_spec import index_entry, record, records_batch, time_index_entry

from kafkalab.tools import dump_log, dump_log_df, read_offset_index, read_segment, read_time_index

T0 = 1_700_000_000_000
spec_batch = functools.partial(records_batch, base_ts=T0)  # the batches here start at T0 unless told


def crc_of(batch: bytes) -> int:
    return struct.unpack_from(">I", batch, 17)[0]


def write(path, data: bytes) -> str:
    path = str(path)
    with open(path, "wb") as f:
        f.write(data)
    return path


def run_dump(*paths, **kwargs) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    dump_log(*paths, file=out, err=err, **kwargs)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def simple_segment(tmp_path):
    """Two batches: offsets 0-1 (one record with headers, one without key), then offset 2."""
    b1 = spec_batch(0, [record(0, 0, b"k1", b"hello", [(b"trace", b"1"), (b"src", b"x")]),
                        record(1, 5, None, b"no key")], max_ts=T0 + 5)
    b2 = spec_batch(2, [record(0, 0, b"k1", None)], base_ts=T0 + 9, leader_epoch=3)
    path = write(tmp_path / "00000000000000000000.log", b1 + b2)
    return path, b1, b2


# --- .log -----------------------------------------------------------------------

def test_batch_and_record_lines_match_kafka(simple_segment):
    path, b1, b2 = simple_segment
    out, err = run_dump(path, print_data_log=True)
    assert out.splitlines() == [
        f"Dumping {path}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: {T0 + 5} size: {len(b1)} magic: 2 "
        f"compresscodec: none crc: {crc_of(b1)} isvalid: true",
        f"| offset: 0 CreateTime: {T0} keySize: 2 valueSize: 5 sequence: -1 headerKeys: [trace,src] "
        "key: k1 payload: hello",
        f"| offset: 1 CreateTime: {T0 + 5} keySize: -1 valueSize: 6 sequence: -1 headerKeys: [] payload: no key",
        "baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: {len(b1)} CreateTime: {T0 + 9} size: {len(b2)} "
        f"magic: 2 compresscodec: none crc: {crc_of(b2)} isvalid: true",
        f"| offset: 2 CreateTime: {T0 + 9} keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: k1",
    ]
    assert err == ""


def test_without_print_data_log_only_batches_like_kafka(simple_segment):
    path, _, _ = simple_segment
    out, _ = run_dump(path, print_data_log=False)
    lines = out.splitlines()
    assert len(lines) == 4 and all(line.startswith("baseOffset:") for line in lines[2:])


def test_deep_iteration_shows_record_metadata_without_data(simple_segment):
    path, _, _ = simple_segment
    out, _ = run_dump(path, print_data_log=False, deep_iteration=True)
    records = [line for line in out.splitlines() if line.startswith("|")]
    assert len(records) == 3
    assert not any("payload" in line or "key:" in line for line in records)


def test_skip_record_metadata_prints_only_data(simple_segment):
    path, _, _ = simple_segment
    out, _ = run_dump(path, print_data_log=True, skip_record_metadata=True)
    records = [line for line in out.splitlines() if not line.startswith(("Dumping", "Log", "baseOffset"))]
    assert records == ["| key: k1 payload: hello", "| payload: no key", "| key: k1"]


def test_idempotent_batch_sequences(tmp_path):
    batch = spec_batch(10, [record(i, i, b"k", b"v%d" % i) for i in range(3)],
                       producer_id=4000, producer_epoch=2, base_sequence=5, max_ts=T0 + 2)
    path = write(tmp_path / "00000000000000000010.log", batch)
    out, _ = run_dump(path)
    assert ("baseOffset: 10 lastOffset: 12 count: 3 baseSequence: 5 lastSequence: 7 producerId: 4000 "
            "producerEpoch: 2 ") in out
    assert "Log starting offset: 10" in out
    seqs = [line.split("sequence: ")[1].split()[0] for line in out.splitlines() if line.startswith("|")]
    assert seqs == ["5", "6", "7"]


def test_sequence_wraps_at_int32_max(tmp_path):
    batch = spec_batch(0, [record(i, 0, b"k", b"v") for i in range(3)],
                       producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    path = write(tmp_path / "00000000000000000000.log", batch)
    dump = read_segment(path)
    assert [r.sequence for r in dump.records] == [2**31 - 2, 2**31 - 1, 0]
    assert dump.batches[0].header.last_sequence == 0


def test_gzip_batch(tmp_path):
    records = [record(i, i, b"key-%d" % i, b"value " * 20) for i in range(4)]
    batch = spec_batch(0, records, attributes=1, compress=gzip.compress, max_ts=T0 + 3)
    path = write(tmp_path / "00000000000000000000.log", batch)
    out, _ = run_dump(path)
    assert "compresscodec: gzip" in out and "isvalid: true" in out
    assert [r.key for r in read_segment(path).records] == [b"key-0", b"key-1", b"key-2", b"key-3"]


def test_log_append_time_batch(tmp_path):
    broker_ts = T0 + 1000
    batch = spec_batch(0, [record(0, 0, b"a", b"1"), record(1, 7, b"b", b"2")],
                       attributes=0x08, max_ts=broker_ts)
    path = write(tmp_path / "00000000000000000000.log", batch)
    out, _ = run_dump(path)
    assert f"LogAppendTime: {broker_ts} size:" in out
    assert out.count(f"| offset: 0 LogAppendTime: {broker_ts} ") == 1
    assert out.count(f"| offset: 1 LogAppendTime: {broker_ts} ") == 1


def test_control_batch_commit_marker(tmp_path):
    key = struct.pack(">hh", 0, 1)            # version 0, type COMMIT
    value = struct.pack(">hi", 0, 7)          # version 0, coordinatorEpoch 7
    batch = spec_batch(5, [record(0, 0, key, value)], attributes=0x10 | 0x20,
                       producer_id=9, producer_epoch=0)
    path = write(tmp_path / "00000000000000000005.log", batch)
    out, _ = run_dump(path)
    assert "isTransactional: true isControl: true" in out
    assert out.splitlines()[-1] == ("| offset: 5 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 "
                                    "headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 7")


def test_delete_horizon(tmp_path):
    horizon = T0 + 86_400_000
    batch = spec_batch(0, [record(0, 0, b"gone", None)], attributes=0x40, base_ts=horizon)
    path = write(tmp_path / "00000000000000000000.log", batch)
    out, _ = run_dump(path)
    assert f"deleteHorizonMs: OptionalLong[{horizon}]" in out


def test_crc_mismatch_is_reported_invalid_not_a_crash(simple_segment, tmp_path):
    _, b1, b2 = simple_segment
    damaged = bytearray(b1)
    damaged[damaged.index(b"hello")] = ord("j")  # "jello": one flipped byte inside the CRC-covered part
    path = write(tmp_path / "00000000000000000000.log", bytes(damaged) + b2)
    out, _ = run_dump(path)
    batch_lines = [line for line in out.splitlines() if line.startswith("baseOffset")]
    assert batch_lines[0].endswith(f"crc: {crc_of(b1)} isvalid: false")
    assert batch_lines[1].endswith("isvalid: true")
    assert "payload: jello" in out           # the records are still shown, as Kafka shows them
    dump = read_segment(path)
    assert not dump.batches[0].is_valid and "CRC-32C mismatch" in dump.batches[0].error
    assert dump.invalid_bytes == 0


def test_undecodable_records_are_reported_invalid(tmp_path):
    # a "gzip" batch whose payload is not gzip at all, with a correct CRC over it
    batch = spec_batch(0, [b"\x01\x02\x03 not gzip"], attributes=1)
    path = write(tmp_path / "00000000000000000000.log", batch)
    out, _ = run_dump(path)
    assert "isvalid: false" in out and "records cannot be read" in out
    assert read_segment(path).batches[0].is_valid is False


def test_torn_tail_reported_like_kafka(simple_segment, tmp_path):
    _, b1, b2 = simple_segment
    torn = b1 + b2[:40]  # a crash in the middle of writing the second batch (not even a whole header)
    path = write(tmp_path / "00000000000000000000.log", torn)
    out, _ = run_dump(path)
    assert "Found 40 invalid bytes at the end of 00000000000000000000.log" in out
    dump = read_segment(path)
    assert dump.valid_bytes == len(b1) and dump.invalid_bytes == 40
    assert dump.batches[-1].torn and not dump.batches[-1].is_valid


def test_torn_batch_with_whole_header(simple_segment, tmp_path):
    _, b1, b2 = simple_segment
    path = write(tmp_path / "00000000000000000000.log", b1 + b2[:-3])
    frame = dump_log_df(path, level="batch")
    assert list(frame["isvalid"]) == [True, False]
    assert frame["error"].iloc[-1] == f"torn batch: its header says {len(b2)} bytes, the file holds {len(b2) - 3}"
    assert frame.attrs["invalid_bytes"] == len(b2) - 3
    assert list(dump_log_df(path)["offset"]) == [0, 1]  # the records of whole batches only


def test_garbage_length_does_not_crash(simple_segment, tmp_path):
    _, b1, _ = simple_segment
    path = write(tmp_path / "00000000000000000000.log", b1 + b"\x00" * 100)  # e.g. a preallocated tail
    out, _ = run_dump(path)
    assert "Found 100 invalid bytes at the end of" in out
    assert "batchLength 0 is smaller than a header" in read_segment(path).batches[-1].error


def test_empty_segment(tmp_path):
    path = write(tmp_path / "00000000000000000042.log", b"")
    out, _ = run_dump(path)
    assert out.splitlines() == [f"Dumping {path}", "Log starting offset: 42"]
    assert dump_log_df(path).empty


def test_non_consecutive_offsets_go_to_stderr(tmp_path):
    # what a compacted segment looks like: offsets 0, 3, 4 survive
    b1 = spec_batch(0, [record(0, 0, b"a", b"1")])
    b2 = spec_batch(3, [record(0, 0, b"b", b"2"), record(1, 0, b"c", b"3")])
    path = write(tmp_path / "00000000000000000000.log", b1 + b2)
    _, err = run_dump(path)
    assert err.splitlines() == [f"Non-consecutive offsets in {os.path.abspath(path)}", "  0 is followed by 3"]


def test_dumping_does_not_modify_files(simple_segment):
    path, b1, b2 = simple_segment
    index = write(os.path.join(os.path.dirname(path), "00000000000000000000.index"), index_entry(2, len(b1)))
    before = {p: (open(p, "rb").read(), os.stat(p).st_mtime_ns) for p in (path, index)}
    run_dump(path, index)
    dump_log_df(path)
    dump_log_df(index)
    assert {p: (open(p, "rb").read(), os.stat(p).st_mtime_ns) for p in (path, index)} == before


# --- .index and .timeindex ---------------------------------------------------------

def test_offset_index_with_preallocated_zero_tail(simple_segment):
    path, b1, _ = simple_segment
    directory = os.path.dirname(path)
    # relativeOffset 2 at the second batch's position, then the zeros a running Kafka broker preallocates
    index = write(os.path.join(directory, "00000000000000000000.index"),
                  index_entry(2, len(b1)) + b"\x00" * 80)
    out, err = run_dump(index)
    assert out.splitlines() == [f"Dumping {index}", f"offset: 2 position: {len(b1)}"]
    assert err == ""
    assert read_offset_index(index) == [(2, len(b1))]


def test_offset_index_mismatch_reported(simple_segment):
    path, b1, _ = simple_segment
    index = write(os.path.join(os.path.dirname(path), "00000000000000000000.index"),
                  index_entry(1, len(b1)))  # says offset 1 lives where offset 2's batch is
    _, err = run_dump(index)
    assert err.splitlines() == [f"Mismatches in :{os.path.abspath(index)}", "  Index offset: 1, log offset: 2"]


def test_offset_index_relative_to_base(tmp_path):
    index = write(tmp_path / "00000000000000001000.index", index_entry(3, 4096) + index_entry(9, 8192))
    assert read_offset_index(index) == [(1003, 4096), (1009, 8192)]
    frame = dump_log_df(index)
    assert list(frame.columns) == ["offset", "position"] and list(frame["offset"]) == [1003, 1009]


def test_empty_index(tmp_path):
    index = write(tmp_path / "00000000000000000000.index", b"")
    out, _ = run_dump(index)
    assert out.splitlines()[-1] == f"{index} is empty."


def test_time_index(tmp_path):
    data = time_index_entry(T0 + 10, 4) + time_index_entry(T0 + 20, 9) + b"\x00" * 24
    index = write(tmp_path / "00000000000000000100.timeindex", data)
    out, err = run_dump(index)
    assert out.splitlines() == [f"Dumping {index}", f"timestamp: {T0 + 10} offset: 104",
                                f"timestamp: {T0 + 20} offset: 109"]
    assert err == ""
    assert read_time_index(index) == [(T0 + 10, 104), (T0 + 20, 109)]
    assert list(dump_log_df(index).columns) == ["timestamp", "offset"]


def test_time_index_out_of_order_reported(tmp_path):
    data = time_index_entry(T0 + 20, 4) + time_index_entry(T0 + 10, 9)
    index = write(tmp_path / "00000000000000000000.timeindex", data)
    _, err = run_dump(index)
    assert "Found out of order timestamp in" in err


# --- DataFrames and directories -------------------------------------------------------

def test_record_frame(simple_segment):
    path, _, _ = simple_segment
    frame = dump_log_df(path)
    assert list(frame["offset"]) == [0, 1, 2]
    assert list(frame["key"]) == ["k1", None, "k1"]
    assert list(frame["value"]) == ["hello", "no key", None]
    assert list(frame["headerKeys"]) == [["trace", "src"], [], []]
    assert list(frame["baseOffset"]) == [0, 0, 2]
    assert frame["isvalid"].all()
    raw = dump_log_df(path, decode=False)
    assert raw["value"].iloc[0] == b"hello"


def test_batch_frame_has_kafkas_fields(simple_segment):
    path, b1, b2 = simple_segment
    frame = dump_log_df(path, level="batch")
    assert list(frame["baseOffset"]) == [0, 2] and list(frame["lastOffset"]) == [1, 2]
    assert list(frame["position"]) == [0, len(b1)] and list(frame["size"]) == [len(b1), len(b2)]
    assert list(frame["crc"]) == [crc_of(b1), crc_of(b2)]
    assert list(frame["compresscodec"]) == ["none", "none"]


def test_partition_directory(tmp_path):
    write(tmp_path / "00000000000000000000.log", spec_batch(0, [record(0, 0, b"a", b"1")]))
    write(tmp_path / "00000000000000000001.log", spec_batch(1, [record(0, 0, b"b", b"2")]))
    write(tmp_path / "partition.metadata", b"version: 0\n")
    frame = dump_log_df(tmp_path)
    assert list(frame["offset"]) == [0, 1] and list(frame["segment"]) == [0, 1]
    out, _ = run_dump(tmp_path)
    assert [line for line in out.splitlines() if line.startswith("Dumping")] == [
        f"Dumping {tmp_path / '00000000000000000000.log'}", f"Dumping {tmp_path / '00000000000000000001.log'}"]


def test_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError):
        dump_log_df(tmp_path / "nope.log")
    with pytest.raises(ValueError, match="level"):
        dump_log_df(tmp_path, level="segment")
    from kafkalab.tools.dump_log import dump_files

    out, err = io.StringIO(), io.StringIO()
    assert dump_log(tmp_path / "nope.log", file=out, err=err) is None   # reported, not raised
    assert "no such file" in err.getvalue()
    other = write(tmp_path / "leader-epoch-checkpoint", b"0\n0\n")
    assert dump_files([other], print_data_log=True, file=out, err=err) is False
    assert f"Ignoring unknown file {other}" in err.getvalue()


def test_list_segments_and_files(tmp_path):
    b0 = spec_batch(0, [record(0, 0, b"a", b"1"), record(1, 60_000, b"b", b"2")], max_ts=T0 + 60_000)
    b2 = spec_batch(2, [record(0, 0, b"c", b"3")], base_ts=T0 + 120_000)
    write(tmp_path / "00000000000000000000.log", b0)
    write(tmp_path / "00000000000000000000.index", b"")
    write(tmp_path / "00000000000000000000.timeindex", time_index_entry(T0 + 60_000, 1))
    write(tmp_path / "00000000000000000002.log", b2)
    write(tmp_path / "00000000000000000002.log.deleted", b"old")   # not a segment
    from kafkalab.tools import list_files, list_segments

    segments = list_segments(tmp_path)
    assert list(segments["segment"]) == ["00000000000000000000.log", "00000000000000000002.log"]
    assert list(segments["baseOffset"]) == [0, 2] and list(segments["lastOffset"]) == [1, 2]
    assert list(segments["records"]) == [2, 1] and list(segments["bytes"]) == [len(b0), len(b2)]
    assert list(segments["timeIndexEntries"]) == [1, 0]
    assert list(segments["maxTimestamp"]) == [T0 + 60_000, T0 + 120_000]
    assert list(segments["active"]) == [False, True]
    files = list_files(tmp_path)
    assert "00000000000000000002.log.deleted" in list(files["file"])
    assert dict(zip(files["file"], files["bytes"]))["00000000000000000000.log"] == len(b0)


def test_partition_directory_with_an_empty_segment_keeps_dtypes(tmp_path):
    write(tmp_path / "00000000000000000000.log", b"")   # what compaction can leave behind
    write(tmp_path / "00000000000000000003.log", spec_batch(3, [record(0, 0, b"a", b"1")]))
    frame = dump_log_df(tmp_path)
    assert list(frame["offset"]) == [3] and frame["offset"].dtype == "int64"
    batches = dump_log_df(tmp_path, level="batch")
    assert list(batches["baseOffset"]) == [3] and batches["error"].iloc[0] is None
