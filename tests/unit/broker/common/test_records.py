"""RecordBatch v2: encoding, CRC-32C, offsets and LogAppendTime, and every codec as the clients frame it."""
from __future__ import annotations

import struct

import cramjam
import pytest
from kafka import codec as kcodec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafkalab.broker.apis.produce import validate_records
from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.common.records import COMPRESSION_CODES, HEADER_SIZE, BatchHeader, Record, assign_offsets, build_batch, compute_crc, decompress, iter_batches, iter_records, validate_batch

RECORDS = [Record(i, 1_700_000_000_000 + 10 * i, None if i == 1 else b"key-%d" % i,
                  None if i == 2 else b"value-%d" % i * 20, [("trace", b"t%d" % i), ("empty", None)] if i else [])
           for i in range(5)]


def _fields(records):
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


def _codes(exc_info):
    return exc_info.value.code


@pytest.mark.parametrize("codec", sorted(COMPRESSION_CODES))
def test_build_and_read_back(codec):
    batch = build_batch(RECORDS, compression=COMPRESSION_CODES[codec], producer_id=7, producer_epoch=1,
                        base_sequence=40)
    header = BatchHeader.parse(batch)
    assert (header.magic, header.compression, header.records_count, header.last_offset_delta) == (2, codec, 5, 4)
    assert (header.producer_id, header.producer_epoch, header.base_sequence, header.last_sequence) == (7, 1, 40, 44)
    assert header.size == len(batch) and header.crc == compute_crc(batch)
    validate_batch(batch, 0, header)
    assert _fields(iter_records(batch)) == _fields(RECORDS)


def _kafka_python_batch(codec_id, n=50):
    """A batch exactly as kafka-python's producer builds it (its own codecs and framing)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec_id, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=2**20)
    for i in range(n):
        builder.append(i, timestamp=1_000 + i, key=b"k%d" % i, value=b"hello kafka " * 10, headers=[("n", b"%d" % i)])
    return bytes(builder.build())


@pytest.mark.parametrize("name,codec_id", [("gzip", 1), ("snappy", 2), ("lz4", 3), ("zstd", 4)])
def test_reads_kafka_python_framing(name, codec_id):
    batch = _kafka_python_batch(codec_id)
    header = BatchHeader.parse(batch)
    assert header.compression == name
    validate_batch(batch, 0, header)
    records = list(iter_records(batch))
    assert [(r.offset, r.key, r.headers) for r in records] == [(i, b"k%d" % i, [("n", b"%d" % i)]) for i in range(50)]


def test_snappy_framings():
    """The Java client and kafka-python frame snappy the xerial way; librdkafka sends one raw block."""
    data = b"abcdefgh" * 10_000
    xerial = kcodec.snappy_encode(data, xerial_compatible=True, xerial_blocksize=4096)
    assert xerial[:8] == b"\x82SNAPPY\x00"
    assert decompress(2, xerial) == data
    assert decompress(2, bytes(cramjam.snappy.compress_raw(data))) == data
    assert decompress(3, kcodec.lz4_encode(data)) == data  # LZ4 frame format (KIP-57)
    assert decompress(4, kcodec.zstd_encode(data)) == data


@pytest.mark.parametrize("codec,garbage", [(1, b"\x1f\x8bnot gzip"), (2, b"\x82SNAPPY\x00" + b"\x00" * 8 + b"\xff" * 4),
                                           (2, b"\x82SNAPPY\x00" + b"\x00" * 8 + struct.pack(">i", -4) + b"xx"),
                                           (3, b"\x04\x22\x4d\x18garbage"), (4, b"\x28\xb5\x2f\xfdgarbage"),
                                           (2, b"random")])
def test_corrupt_compressed_data(codec, garbage):
    with pytest.raises(KafkaError) as exc:
        decompress(codec, garbage)
    assert _codes(exc) == ErrorCode.CORRUPT_MESSAGE


def test_crc_mismatch_is_corrupt_message():
    batch = bytearray(build_batch(RECORDS))
    batch[-1] ^= 0xFF  # flip a bit of the last record
    with pytest.raises(KafkaError) as exc:
        validate_batch(batch, 0, BatchHeader.parse(batch))
    assert _codes(exc) == ErrorCode.CORRUPT_MESSAGE


def test_base_offset_and_leader_epoch_are_outside_the_crc():
    batch = bytearray(build_batch(RECORDS))
    assign_offsets(batch, 1234, partition_leader_epoch=9)
    header = BatchHeader.parse(batch)
    assert (header.base_offset, header.partition_leader_epoch) == (1234, 9)
    validate_batch(batch, 0, header)
    assert [r.offset for r in iter_records(batch)] == [1234 + i for i in range(5)]


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_log_append_time_rewrites_header_and_crc(codec):
    batch = bytearray(build_batch(RECORDS, compression=COMPRESSION_CODES[codec]))
    payload = bytes(batch[HEADER_SIZE:])
    assign_offsets(batch, 100, log_append_time=1_800_000_000_000)
    header = BatchHeader.parse(batch)
    validate_batch(batch, 0, header)  # a fresh CRC
    assert header.timestamp_type == "LogAppendTime" and header.max_timestamp == 1_800_000_000_000
    assert bytes(batch[HEADER_SIZE:]) == payload  # the records themselves are stored as sent
    assert {r.timestamp for r in iter_records(batch)} == {1_800_000_000_000}


def test_truncated_and_garbage_batches():
    batch = build_batch(RECORDS)
    with pytest.raises(KafkaError) as exc:
        list(iter_batches(batch[:-1], strict=True))
    assert _codes(exc) == ErrorCode.CORRUPT_MESSAGE
    assert list(iter_batches(batch + batch[:30], strict=False)) == [(0, BatchHeader.parse(batch))]
    bad_count = bytearray(batch)
    struct.pack_into(">i", bad_count, 57, 1000)  # records count no longer matches lastOffsetDelta
    struct.pack_into(">I", bad_count, 17, compute_crc(bad_count))
    with pytest.raises(KafkaError) as exc:
        validate_batch(bad_count, 0, BatchHeader.parse(bad_count))
    assert _codes(exc) == ErrorCode.INVALID_RECORD
    junk = bytearray(build_batch([Record(0, 0, b"k", b"v", [])]))
    junk[HEADER_SIZE:] = b"\x7f" * (len(junk) - HEADER_SIZE)  # records that do not parse, valid CRC
    struct.pack_into(">I", junk, 17, compute_crc(junk))
    with pytest.raises(KafkaError) as exc:
        list(iter_records(junk))
    assert _codes(exc) == ErrorCode.CORRUPT_MESSAGE


def _batch_with(**kw):
    return build_batch([Record(0, 0, b"k", b"v", [])], **kw)


@pytest.mark.parametrize("records,version,code", [
    (b"", 9, ErrorCode.INVALID_RECORD),
    (b"\x00" * 30, 9, ErrorCode.INVALID_RECORD),
    (_batch_with() * 2, 9, ErrorCode.INVALID_RECORD),                       # exactly one batch (v3+)
    (_batch_with()[:-3], 9, ErrorCode.INVALID_RECORD),                      # truncated
    (_batch_with(compression=4), 6, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),  # zstd needs v7
    (_batch_with(attributes_extra=0x20), 9, ErrorCode.INVALID_RECORD),      # control batch
    (_batch_with(producer_id=5, producer_epoch=0, base_sequence=-1), 9, ErrorCode.INVALID_RECORD),
])
def test_produce_validate_records(records, version, code):
    with pytest.raises(KafkaError) as exc:
        validate_records(version, records)
    assert _codes(exc) == code


def test_produce_validate_records_magic():
    batch = bytearray(_batch_with())
    batch[16] = 1
    with pytest.raises(KafkaError) as exc:
        validate_records(9, bytes(batch))
    assert _codes(exc) == ErrorCode.INVALID_RECORD
    validate_records(7, _batch_with(compression=4))
    validate_records(3, _batch_with())


def test_kafka_python_reads_what_we_build():
    """The other direction: what the broker writes itself (e.g. the cleaner's output) is a valid batch."""
    batch = bytearray(build_batch(RECORDS, compression=COMPRESSION_CODES["gzip"]))
    assign_offsets(batch, 10)
    parsed = DefaultRecordBatch(bytes(batch))
    assert parsed.validate_crc()
    assert [(r.offset, r.key, r.value, list(r.headers)) for r in parsed] == \
        [(10 + i, r.key, r.value, r.headers) for i, r in enumerate(RECORDS)]
