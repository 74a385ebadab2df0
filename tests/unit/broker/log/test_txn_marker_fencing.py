"""A partition refuses a COMMIT/ABORT marker from an older transaction coordinator than the last
marker it took for that producer (Kafka's ``ProducerAppendInfo.appendEndTxnMarker``): a coordinator
that lost the leadership of ``__transaction_state`` while its markers were on their way (the markers
are sent after EndTxn is answered) gets TRANSACTION_COORDINATOR_FENCED and writes nothing, so it
cannot end the producer's next transaction on that partition."""
from __future__ import annotations

import pytest
from tests.helpers.kafka_spec import batch

from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.common.records import COMMIT, TRANSACTIONAL_MASK, build_end_txn_marker
from kafkalab.broker.log.log_manager import LogManager
from kafkalab.broker.server.config import BrokerConfig, LogConfig

T0 = 1_700_000_000_000
PID = 4000


def open_log(tmp_path):
    broker = BrokerConfig({"log.dirs": str(tmp_path)})
    return LogManager(str(tmp_path), broker).get_or_create_log("t", 0, LogConfig(broker, {}))


def produce(log, seq):
    log.append_as_leader(batch(0, [(T0 + seq, b"k", b"v")], producer_id=PID, producer_epoch=0, base_sequence=seq,
                               attributes=TRANSACTIONAL_MASK))


def test_a_marker_from_an_older_coordinator_epoch_is_fenced(tmp_path):
    log = open_log(tmp_path)
    produce(log, 0)
    log.append_as_leader(build_end_txn_marker(COMMIT, PID, 0, 5, T0 + 1), from_coordinator=True)   # epoch 5
    produce(log, 1)                                        # the producer's next transaction, open at offset 2
    end = log.log_end_offset
    with pytest.raises(KafkaError) as exc:                 # the zombie coordinator (epoch 4) repeats its marker
        log.append_as_leader(build_end_txn_marker(COMMIT, PID, 0, 4, T0 + 2), from_coordinator=True)
    assert exc.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.log_end_offset == end and log.producer_state.first_unstable_offset == 2   # still open
    # the same coordinator again (a retried marker) and a newer one are taken
    log.append_as_leader(build_end_txn_marker(COMMIT, PID, 0, 5, T0 + 3), from_coordinator=True)
    assert log.producer_state.first_unstable_offset is None
    produce(log, 2)
    log.append_as_leader(build_end_txn_marker(COMMIT, PID, 0, 6, T0 + 4), from_coordinator=True)
    assert log.producer_state.first_unstable_offset is None
    assert log.producer_state.producers[PID].coordinator_epoch == 6
    log.close()
