"""Partition leadership in KRaft: PartitionChangeBuilder's ISR/ELR transitions and election outcomes, and
the ReplicationControlManager paths that use it (fencing, unfencing, unclean restarts, ElectLeaders, the auto leader
rebalance), replayed through Kafka's record format.

The expected outcomes are Kafka 4.4's (org.apache.kafka.controller.PartitionChangeBuilder, ReplicationControlManager):
min.insync.replicas=2 on RF 3, brokers fenced one after the other -> ISR [1,2,3] -> [1,2] (ELR empty) -> [1] with
ELR [2] -> [] with ELR [1,2], LastKnownElr [1] and no leader; a broker of the ELR coming back leads with ISR [it]."""
from __future__ import annotations

import types
import uuid

from kafkalab.controller.cluster_control_manager import BrokerRegistration, ClusterControlManager
from kafkalab.controller.feature_control_manager import FeatureControlManager
from kafkalab.controller.partition_change_builder import RECOVERING, Election, PartitionChangeBuilder
from kafkalab.controller.producer_id_control_manager import ProducerIdControlManager
from kafkalab.controller.quorum_controller import replay_record
from kafkalab.controller.replication_control_manager import (PREFERRED, UNCLEAN, PartitionRegistration,
                                                             ReplicationControlManager)
from kafkalab.metadata.metadata_records import decode_metadata_record

ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE = 84, 80, 83
UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_ID = uuid.UUID(int=7)


def build(part, isr=None, acceptable=(1, 2, 3), min_isr=2, elr=True, election=Election.ONLINE, unclean_shutdown=()):
    builder = PartitionChangeBuilder(part, TOPIC_ID, 0, set(acceptable).__contains__, min_isr, elr)
    builder.set_election(election).set_unclean_shutdown_replicas(unclean_shutdown)
    if isr is not None:
        builder.set_target_isr(isr)
    record = builder.build()
    return None if record is None else {k: v for k, v in record.data.items() if k not in ("topic_id", "partition_id")}


# -- PartitionChangeBuilder ---------------------------------------------------------------------------------------

def test_isr_shrink_above_min_isr_changes_only_the_isr():
    part = PartitionRegistration([1, 2, 3], [1, 2, 3], 1)
    assert build(part, isr=[1, 2], acceptable=(1, 2)) == {"isr": [1, 2]}


def test_isr_below_min_isr_puts_the_removed_replica_in_the_elr():
    part = PartitionRegistration([1, 2, 3], [1, 2], 1)
    assert build(part, isr=[1], acceptable=(1,)) == {"isr": [1], "eligible_leader_replicas": [2]}


def test_last_isr_member_leaving_empties_the_isr_and_records_the_last_leader():
    part = PartitionRegistration([1, 2, 3], [1], 1, elr=[2])
    assert build(part, isr=[], acceptable=()) == {"leader": -1, "isr": [], "eligible_leader_replicas": [1, 2],
                                                  "last_known_elr": [1]}


def test_without_elr_the_isr_is_never_empty():
    part = PartitionRegistration([1, 2, 3], [1], 1)
    assert build(part, isr=[], acceptable=(), elr=False) == {"leader": -1}


def test_elr_member_leads_an_empty_isr_and_becomes_the_isr():
    part = PartitionRegistration([1, 2, 3], [], -1, elr=[1, 2], last_known_elr=[1])
    assert build(part, acceptable=(2,)) == {"leader": 2, "isr": [2], "eligible_leader_replicas": [1],
                                            "last_known_elr": []}


def test_elr_is_not_used_while_the_isr_has_members():
    part = PartitionRegistration([1, 2, 3], [3], -1, elr=[1, 2])
    assert build(part, acceptable=(1, 2)) is None


def test_isr_back_at_min_isr_clears_the_elr():
    part = PartitionRegistration([1, 2, 3], [2], 2, elr=[1])
    assert build(part, isr=[2, 3]) == {"isr": [2, 3], "eligible_leader_replicas": []}


def test_unclean_shutdown_replica_is_left_out_of_the_elr():
    part = PartitionRegistration([1, 2, 3], [1, 2], 1)
    assert build(part, isr=[1], acceptable=(1,), unclean_shutdown=[2]) == {"isr": [1]}


def test_preferred_election_picks_the_first_replica_when_in_isr():
    part = PartitionRegistration([1, 2, 3], [1, 2, 3], 2, leader_epoch=3)
    assert build(part, election=Election.PREFERRED) == {"leader": 1}
    assert build(part, election=Election.ONLINE) is None          # the current leader may stay


def test_preferred_election_keeps_the_leader_when_the_preferred_replica_is_out_of_the_isr():
    part = PartitionRegistration([1, 2, 3], [2, 3], 2)
    assert build(part, election=Election.PREFERRED) is None


def test_unclean_election_takes_a_live_replica_out_of_the_isr():
    part = PartitionRegistration([1, 2, 3], [1], -1)
    assert build(part, acceptable=(3,), elr=False) is None
    assert build(part, acceptable=(3,), elr=False, election=Election.UNCLEAN) == {
        "leader": 3, "isr": [3], "leader_recovery_state": RECOVERING}


def test_balanced_recovery_elects_the_last_known_leader():
    part = PartitionRegistration([1, 2, 3], [], -1, elr=[], last_known_elr=[3])
    assert build(part, acceptable=(1,)) is None                      # last leader not back: nothing
    assert build(part, acceptable=(3,)) == {"leader": 3, "isr": [3], "leader_recovery_state": RECOVERING,
                                            "last_known_elr": []}


# -- ReplicationControlManager, records replayed ------------------------------------------------------------------

class State:
    """What a controller replays into, with brokers 1-3 registered and unfenced."""

    def __init__(self, elr_level: int = 1, min_isr: int = 2, unclean: bool = False):
        self.features = FeatureControlManager()
        self.cluster = ClusterControlManager(None, self.features)
        self.replication = ReplicationControlManager(self.cluster, 1, 3, min_isr, unclean)
        self.producer_ids = ProducerIdControlManager()
        self.offset = 0
        self.apply(self.features.bootstrap_records([("metadata.version", 33),
                                                    ("eligible.leader.replicas.version", elr_level)]))
        for b in (1, 2, 3):
            self.cluster.registrations[b] = BrokerRegistration(b, 10 + b, str(uuid.UUID(int=b)), fenced=False)
        request = types.SimpleNamespace(validate_only=False, topics=[types.SimpleNamespace(
            name="t", num_partitions=-1, replication_factor=-1, assignments=[types.SimpleNamespace(
                partition_index=0, broker_ids=[1, 2, 3])], configs=[])])
        request.topics[0].num_partitions = request.topics[0].replication_factor = -1
        records, results = self.replication.create_topics(request)
        assert results[0]["error_code"] == 0
        self.apply(records)

    def apply(self, records) -> list[dict]:
        out = []
        for r in records:
            decoded = decode_metadata_record(r.encode())
            replay_record(self, self.offset, decoded)
            self.offset += 1
            out.append(decoded.data)
        return out

    @property
    def part(self) -> PartitionRegistration:
        return self.replication.topics[self.replication.topics_by_name["t"]].partitions[0]

    def fence(self, broker: int) -> None:
        self.apply(self.replication.handle_broker_removed(broker))
        self.cluster.registrations[broker].fenced = True

    def unfence(self, broker: int) -> None:
        self.apply(self.replication.handle_broker_unfenced(broker))
        self.cluster.registrations[broker].fenced = False

    def view(self):
        p = self.part
        return p.leader, p.isr, p.elr, p.last_known_elr


def test_fencing_brokers_one_by_one_fills_elr_as_kafka_does():
    s = State()
    s.fence(3)
    assert s.view() == (1, [1, 2], [], [])
    s.fence(2)
    assert s.view() == (1, [1], [2], [])
    epoch = s.part.leader_epoch
    s.fence(1)
    assert s.view() == (-1, [], [1, 2], [1])
    assert s.part.leader_epoch == epoch + 1
    s.unfence(2)                     # an ELR member comes back: it leads, alone in the ISR
    assert s.view() == (2, [2], [1], [])


def test_fencing_without_elr_keeps_the_last_isr_member():
    s = State(elr_level=0)
    for b in (3, 2, 1):
        s.fence(b)
    assert s.view() == (-1, [1], [], [])
    s.unfence(2)                      # not in the ISR: stays leaderless (no unclean election)
    assert s.view() == (-1, [1], [], [])
    s.unfence(1)
    assert s.view() == (1, [1], [], [])


def test_unclean_restart_removes_the_broker_from_the_elr():
    s = State()
    for b in (3, 2, 1):
        s.fence(b)
    assert s.view() == (-1, [], [1, 2], [1])
    s.apply(s.replication.handle_broker_shutdown(2, clean=False))
    assert s.view() == (-1, [], [1], [1])
    assert s.replication.handle_broker_shutdown(1, clean=True) == []   # clean: it keeps its ELR place


def test_unclean_leader_election_enable_elects_out_of_sync_replica_on_unfence():
    s = State(elr_level=0, unclean=True)
    for b in (3, 2, 1):
        s.fence(b)
    s.unfence(3)
    assert s.view()[:2] == (3, [3])
    assert s.part.leader_recovery_state == RECOVERING


def test_elect_leaders_preferred_and_its_errors():
    s = State()
    s.fence(1)
    assert s.view()[:2] == (2, [2, 3])
    records, results = s.replication.elect_leaders(PREFERRED, [("t", [0, 5]), ("nope", [0])])
    assert records == []
    assert results == [("t", [(0, PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available."),
                              (5, UNKNOWN_TOPIC_OR_PARTITION, "No such partition as t-5")]),
                       ("nope", [(0, UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nope")])]
    s.cluster.registrations[1].fenced = False
    s.apply([_isr_change(s, [2, 3, 1])])       # broker 1 caught up again (its leader's AlterPartition)
    records, results = s.replication.elect_leaders(PREFERRED, [("t", [0])])
    assert results == [("t", [(0, 0, None)])]
    s.apply(records)
    assert s.view()[:2] == (1, [2, 3, 1])
    _, results = s.replication.elect_leaders(PREFERRED, None)
    assert results == [("t", [])]              # all partitions: ELECTION_NOT_NEEDED left out
    _, results = s.replication.elect_leaders(PREFERRED, [("t", [0])])
    assert results[0][1][0][1] == ELECTION_NOT_NEEDED


def test_elect_leaders_unclean():
    s = State(elr_level=0)
    for b in (3, 2, 1):
        s.fence(b)
    s.cluster.registrations[3].fenced = False
    records, results = s.replication.elect_leaders(UNCLEAN, [("t", [0])])
    assert results == [("t", [(0, 0, None)])]
    s.apply(records)
    assert s.view()[:2] == (3, [3])
    _, results = s.replication.elect_leaders(UNCLEAN, [("t", [0])])
    assert results[0][1][0][1] == ELECTION_NOT_NEEDED
    s2 = State(elr_level=0)
    for b in (3, 2, 1):
        s2.fence(b)
    _, results = s2.replication.elect_leaders(UNCLEAN, [("t", [0])])
    assert results[0][1][0][1:] == (ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                    "Eligible topic partition leaders are not available.")


def test_maybe_balance_partition_leaders_returns_leadership_to_the_preferred_replica():
    s = State()
    s.fence(1)
    assert s.replication.are_partition_leaders_imbalanced()
    assert s.replication.maybe_balance_partition_leaders() == ([], False)   # 1 is not back in the ISR yet
    s.unfence(1)
    s.apply([_isr_change(s, [2, 3, 1])])
    records, more = s.replication.maybe_balance_partition_leaders()
    assert not more and len(records) == 1
    s.apply(records)
    assert s.view()[0] == 1 and not s.replication.are_partition_leaders_imbalanced()


def _isr_change(s, isr):
    from kafkalab.metadata.api_message_and_version import ApiMessageAndVersion
    return ApiMessageAndVersion("PartitionChangeRecord", 2, {"partition_id": 0,
                                                             "topic_id": s.replication.topics_by_name["t"], "isr": isr})


def test_clean_shutdown_marker_carries_the_broker_epoch(tmp_path):
    """A KRaft broker's clean shutdown writes its broker epoch in .kafka_cleanshutdown (Kafka's CleanShutdownFileHandler
    JSON); the next start reads it (PreviousBrokerEpoch of its registration); a ZooKeeper-mode marker holds -1."""
    import json

    from kafkalab.broker.log.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
    from kafkalab.broker.server.config import BrokerConfig
    config = BrokerConfig({})
    LogManager(str(tmp_path), config).close(broker_epoch=42)
    with open(tmp_path / CLEAN_SHUTDOWN_FILE) as f:
        assert json.load(f) == {"version": 0, "brokerEpoch": 42}
    manager = LogManager(str(tmp_path), config)
    assert manager.had_clean_shutdown and manager.previous_broker_epoch == 42
    manager.close()
    with open(tmp_path / CLEAN_SHUTDOWN_FILE) as f:
        assert json.load(f) == {"version": 0, "brokerEpoch": -1}
    assert LogManager(str(tmp_path), config).previous_broker_epoch == -1
