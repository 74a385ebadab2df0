"""Share groups' broker metrics (Kafka 4.4's ShareGroupMetrics and SharePartitionMetrics, KIP-932 / KIP-1103) on
the mini broker and on a real Kafka 4.4 node (the JMX exporter's agent, kafkalab's rules) in one scenario:

* 10 records, one share consumer acknowledging explicitly: offset 3 RELEASEd at its first delivery (then
  ACCEPTed at its second), offset 5 REJECTed, every other ACCEPTed: RecordAcknowledgementsPerSec counts
  Accept 9, Release 1, Reject 1, Renew 0, per record;
* a second group whose first consumer holds 4 records unacknowledged, then is closed without acknowledging
  (its session ends: released, not timed out) — and a third whose consumer holds them in a child process that is
  SIGSTOPped, so that only the acquisition lock (``group.share.record.lock.duration.ms``) gives them back to
  another consumer: AcquisitionLockTimeoutPerSec of that share-partition counts the 4 records;
* both brokers serve the same metric names and label sets for a share-partition (InFlightMessageCount,
  InFlightBatchCount, AcquisitionLockTimeoutPerSec with group, topic, partition) and PartitionLoadTimeMs.
"""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

import kafkalab
from tests.helpers.cluster_helpers import wait_until
from test_share_groups import CHILD, KAFKA_CONFIGS, LOCK_MS, consumer, poll_until, setup_topic

ACCEPT, RELEASE, REJECT = 1, 2, 3
SG, SP = "kafka_server_sharegroupmetrics_", "kafka_server_sharepartitionmetrics_"


@pytest.fixture(scope="module", params=["mini", pytest.param("kafka-4.4", marks=pytest.mark.cluster)])
def broker(request, tmp_path_factory):
    if request.param == "mini":
        with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("sgm")), **KAFKA_CONFIGS) as b:
            yield request.param, b
        return
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.jmx_agent import fetch_jmx_exporter
    from kafkalab.cluster.kraft_config import KRaftBackend
    fetch_jmx_exporter()
    with kafkalab.cluster(brokers=1, dir=str(tmp_path_factory.mktemp("sgmkraft") / "cluster"),
                          backend=KRaftBackend(str(fetch_kafka("4")), metrics=True), mode="kraft", combined=True,
                          **KAFKA_CONFIGS) as c:
        yield request.param, c


def share_metrics(handle, group: str | None = None):
    df = handle.metrics([SG, SP])
    if group is not None:
        df = df[df["labels"].map(lambda labels: labels.get("group") == group)]
    return df


def ack_counts(handle) -> dict[str, float]:
    df = share_metrics(handle)
    df = df[df["metric"] == SG + "recordacknowledgements_total"]
    return {r.labels["ackType"]: r.value for r in df.itertuples()}


def test_record_acknowledgements_are_counted_per_record_and_type(broker):
    _, handle = broker
    bs = handle.bootstrap_servers
    before = ack_counts(handle)   # (none before the broker's first share group on the mini broker; 0s on Kafka's)
    topic, group = setup_topic(bs, 10)
    c = consumer(bs, group, topic)
    seen = []

    def on_message(_name, c, m):
        seen.append((m.offset(), m.delivery_count()))
        kind = RELEASE if (m.offset() == 3 and m.delivery_count() == 1) else REJECT if m.offset() == 5 else ACCEPT
        c.acknowledge(m, kind)
    poll_until({"c": c}, on_message, lambda: len(seen) >= 11)
    c.close()
    expected = {"Accept": 9, "Release": 1, "Reject": 1, "Renew": 0}
    got = wait_until(lambda: (d := {k: v - before.get(k, 0) for k, v in ack_counts(handle).items()}) == expected and d,
                     f"the acknowledgement counts to be {expected}", timeout=30)
    assert got == expected


def test_an_expired_acquisition_lock_is_counted_on_its_share_partition(broker):
    kind, handle = broker
    bs = handle.bootstrap_servers
    topic, group = setup_topic(bs, 4)
    holder = subprocess.Popen([sys.executable, "-c", CHILD, bs, group, topic], stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline()
        assert line.startswith("HOLDING"), line
        held = sorted(int(o) for o in line.split()[1:])
        holder.send_signal(signal.SIGSTOP)     # alive, its connection open: only the lock gives them back
        c = consumer(bs, group, topic)
        got = []
        poll_until({"c": c}, lambda _n, c, m: (got.append(m.offset()), c.acknowledge(m, ACCEPT)),
                   lambda: len(got) >= len(held), timeout=LOCK_MS / 1000 + 40)
        c.close()
    finally:
        holder.kill()
        holder.wait(10)
    assert sorted(got) == held

    def timeouts():
        df = share_metrics(handle, group)
        df = df[df["metric"] == SP + "acquisitionlocktimeout_total"]
        return [df] if df["value"].sum() == len(held) else None
    [df] = wait_until(timeouts, f"AcquisitionLockTimeoutPerSec of {group} to count {len(held)}", timeout=30)
    [labels] = df["labels"].tolist()
    assert labels == {"group": group, "topic": topic, "partition": "0"}, (kind, labels)


def test_the_share_partition_metrics_names_and_labels(broker):
    kind, handle = broker
    bs = handle.bootstrap_servers
    topic, group = setup_topic(bs, 3)
    c = consumer(bs, group, topic)
    got = []
    poll_until({"c": c}, lambda _n, c, m: got.append(m.offset()), lambda: len(got) >= 3)   # held, not acked
    try:
        [df] = wait_until(lambda: [d] if (d := share_metrics(handle, group)).shape[0] >= 3 else None,
                          "the share-partition's metrics", timeout=30)
        names = {(r.metric, tuple(sorted(r.labels))) for r in df.itertuples()}
        assert names == {(SP + m, ("group", "partition", "topic")) for m in
                         ("inflightmessagecount", "inflightbatchcount", "acquisitionlocktimeout_total")}, (kind, names)
        in_flight = df[df["metric"] == SP + "inflightmessagecount"]["value"].tolist()
        assert in_flight == [3.0], (kind, in_flight)          # the 3 acquired records
        load = share_metrics(handle)
        assert (load["metric"] == SG + "partitionloadtimems_count").any(), (kind, sorted(set(load["metric"])))
    finally:
        c.close()
