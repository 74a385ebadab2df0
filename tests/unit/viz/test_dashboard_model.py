"""What the dashboard shows for a given cluster state (kafkalab.viz.dashboard_model), without a cluster."""
from __future__ import annotations

from kafkalab.viz import dashboard_model as m
from kafkalab.viz.cluster_state import (CLUSTER, EMBEDDED, EXTERNAL, BrokerInfo, GroupInfo, GroupOffset, MemberInfo,
                                        PartitionInfo, Snapshot)


def three_brokers(states=("running", "running", "running"), registered=(True, True, True), controller=1):
    snap = Snapshot(CLUSTER, "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", backend="mini", controller=controller)
    snap.brokers = [BrokerInfo(i + 1, "127.0.0.1", 9000 + i, 100 + i, s, r, i + 1 == controller)
                    for i, (s, r) in enumerate(zip(states, registered))]
    return snap


def enabled(row):
    return {b.action for b in row.buttons if b.enabled}


def test_broker_status_and_buttons_follow_the_process_state():
    rows = m.broker_rows(three_brokers(("running", "killed", "paused"), (True, True, True)))
    assert [(r.status_class, r.status) for r in rows] == [
        ("up", "up"), ("down", "down (killed), still registered"), ("frozen", "frozen (paused)")]
    assert rows[0].controller and not rows[1].controller
    assert enabled(rows[0]) == {"kill", "stop", "restart", "pause"}
    assert enabled(rows[1]) == {"restart"}
    assert enabled(rows[2]) == {"kill", "stop", "restart", "resume"}
    resume = [b for b in rows[0].buttons if b.action == "resume"][0]
    assert not resume.enabled and "not paused" in resume.reason


def test_a_killed_broker_whose_session_expired_is_just_down():
    rows = m.broker_rows(three_brokers(("running", "killed", "stopped"), (True, False, False)))
    assert [r.status for r in rows[1:]] == ["down (killed)", "down (stopped)"]
    assert rows[1].registered == "no"


def test_embedded_and_external_grey_out_every_button_with_the_reason():
    embedded = Snapshot(EMBEDDED, "127.0.0.1:9092", [BrokerInfo(0, "127.0.0.1", 9092, 42, "running")], controller=0)
    row = m.broker_rows(embedded)[0]
    assert row.status_class == "up" and row.controller and not enabled(row)
    assert all("inside this notebook's kernel" in b.reason for b in row.buttons)
    external = Snapshot(EXTERNAL, "kafka:9092", [BrokerInfo(1, "kafka", 9092, None, "up")], controller=1)
    row = m.broker_rows(external)[0]
    assert row.status == "up" and row.pid == "" and not enabled(row)
    assert all("only watched" in b.reason and "kafkalab up" in b.reason for b in row.buttons)


def test_partition_bars_offline_and_under_replicated():
    snap = three_brokers()
    snap.partitions = [
        PartitionInfo("orders", 0, 1, [1, 2, 3], [1, 2, 3], 10, {1: 10, 2: 10, 3: 10}),
        PartitionInfo("orders", 1, 2, [2, 3, 1], [2, 1], 8, {2: 10, 3: 4, 1: 8}),
        PartitionInfo("orders", 2, None, [3], [3], None, {3: None}),
    ]
    rows = m.partition_rows(snap)
    assert [r.flag for r in rows] == ["", "under-replicated", "offline"]
    healthy, lagging, offline = rows
    assert [b.fraction for b in healthy.bars] == [1.0, 1.0, 1.0] and healthy.hw_fraction == 1.0
    bars = {b.broker: b for b in lagging.bars}
    assert bars[2].is_leader and bars[2].fraction == 1.0            # the leader is ahead of the high watermark
    assert lagging.hw_fraction == 0.8
    assert not bars[3].in_isr and bars[3].behind == 4 and bars[3].fraction == 0.4
    assert bars[1].behind == 0
    assert offline.bars[0].leo is None and offline.bars[0].fraction == 0.0
    page = m.partitions_html(rows)
    assert page.count('class="kafkalab-partition"') == 3
    assert "under-replicated" in page and "offline" in page and "NOT in the ISR" in page
    assert "#f8d0d0" in page and "#fdebc8" in page                  # offline red, under-replicated orange


def test_empty_partitions_and_groups_say_so():
    snap = three_brokers()
    assert "no partitions" in m.partitions_html(m.partition_rows(snap))
    assert "no consumer groups" in m.groups_html(m.group_rows(snap))


def test_group_rows_lag_and_owner():
    snap = three_brokers()
    snap.groups = [
        GroupInfo("billing", "stable", [MemberInfo("m-1", "worker-a", "/127.0.0.1", [("orders", 0)]),
                                        MemberInfo("m-2", "worker-b", "/127.0.0.1", [("orders", 1)])],
                  [GroupOffset("orders", 0, 4, 10), GroupOffset("orders", 1, None, 7)]),
        GroupInfo("idle", "empty", [], []),
    ]
    rows = m.group_rows(snap)
    assert [(r.group, r.partition, r.owner, r.committed, r.end, r.lag) for r in rows] == [
        ("billing", 0, "worker-a@/127.0.0.1", 4, 10, 6),
        ("billing", 1, "worker-b@/127.0.0.1", None, 7, None),
        ("idle", None, "", None, None, None)]
    assert snap.groups[0].total_lag == 6
    page = m.groups_html(rows)
    assert "<b>6</b>" in page and "idle" in page


def test_html_escapes_names():
    snap = three_brokers()
    snap.partitions = [PartitionInfo("<script>", 0, 1, [1], [1], 0, {1: 0})]
    assert "<script>" not in m.partitions_html(m.partition_rows(snap))
    assert "&lt;script&gt;" in m.partitions_html(m.partition_rows(snap))


def test_the_header_shows_kafkas_metrics_and_the_lag_bad_values_in_red():
    snap = three_brokers()
    assert "UnderReplicatedPartitions" not in m.header_html(snap)    # no metrics served: no line
    snap.metrics = {"UnderReplicatedPartitions": 2.0, "OfflinePartitionsCount": 0.0, "ActiveControllerCount": 1.0}
    snap.groups = [GroupInfo("g", "stable", [], [GroupOffset("t", 0, 3, 10), GroupOffset("t", 1, 5, 5)])]
    line = m.metrics_html(snap)
    assert "color:#d62728'>UnderReplicatedPartitions 2<" in line
    assert "OfflinePartitionsCount 0" in line and "color:#d62728'>OfflinePartitionsCount" not in line
    assert "color:#d62728'>ActiveControllerCount" not in line and "consumer lag 7" in line
    snap.metrics["ActiveControllerCount"] = 0.0                     # no controller: red too
    assert "color:#d62728'>ActiveControllerCount 0<" in m.metrics_html(snap)
    assert m.metrics_html(snap) in m.header_html(snap)


def test_headline_metrics_are_the_clusters_sums_but_kraft_s_offline_count_is_every_controllers():
    import pandas as pd

    from kafkalab.viz.cluster_state import headline_metrics
    rows = [(3001, "kafka_controller_kafkacontroller_activecontrollercount", 1),
            (3002, "kafka_controller_kafkacontroller_activecontrollercount", 0),
            (3001, "kafka_controller_kafkacontroller_offlinepartitionscount", 2),   # every KRaft controller
            (3002, "kafka_controller_kafkacontroller_offlinepartitionscount", 2),   # counts the same partitions
            (1, "kafka_server_replicamanager_underreplicatedpartitions", 1),
            (2, "kafka_server_replicamanager_underreplicatedpartitions", 2),
            (1, "kafka_server_replicamanager_underreplicatedpartitions_other", 5)]   # a prefix match: left out
    frame = pd.DataFrame(rows, columns=["broker", "metric", "value"])
    assert headline_metrics(frame) == {"UnderReplicatedPartitions": 3.0, "OfflinePartitionsCount": 2.0,
                                       "ActiveControllerCount": 1.0}
