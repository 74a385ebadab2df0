"""Lab 03 (replication and failure): the failure drill ``run_drill(...)`` and its check ``check_03(...)``.

The drill is the same sequence of failures for everyone: payments are written
while all is well, while one follower is stopped for maintenance, and while
the other follower has crashed too; then the leader crashes, the two
followers come back without it, and the operator forces an **unclean leader
election** (ElectLeaders with type UNCLEAN, what ``kafka-leader-election.sh
--election-type unclean`` sends) to get the partition back online. Finally the
old leader returns. What survives depends on the topic and producer configs
the student chose.

The check looks at the cluster itself — the topic's assignment and configs
(DescribeConfigs, in either mode), and the records it reads back with its own consumer — and at the
student's counts, and prints a ✓/✗ checklist (:class:`kafkalab.checks.Report`).
"""
from __future__ import annotations

import time

import pandas as pd
from confluent_kafka import ElectionType, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from kafkalab.checks import Report, as_text, read_partition, unfilled, unfilled_detail
from kafkalab.drills import check_stored, drill_partition, quiet_client_log, wait_for_partition

PAYMENTS_PER_PHASE = 10
PHASES = ("calm", "maintenance", "outage")
#: How long the drill gives each payment to be acknowledged (``message.timeout.ms``; it overrides yours)
MESSAGE_TIMEOUT_MS = 6000
_client_log = quiet_client_log("lab-03-clients")   # librdkafka's own log lines: brokers die on purpose here


def payments(phase: str) -> list[str]:
    """The payments the drill writes in ``phase``: ``calm-01`` ... ``outage-10``."""
    return [f"{phase}-{i:02d}" for i in range(1, PAYMENTS_PER_PHASE + 1)]


def _produce(kafka, topic: str, producer_config: dict, values: list[str]) -> dict[str, str | None]:
    """Write ``values`` with the student's producer config; value -> None (acknowledged) or the error's name."""
    config = {**kafka.client_config(), **dict(producer_config), "message.timeout.ms": MESSAGE_TIMEOUT_MS}
    results: dict[str, str | None] = {}
    producer = Producer(config, logger=_client_log)
    try:
        for value in values:
            producer.produce(topic, value=value, partition=0,
                             on_delivery=lambda err, msg: results.__setitem__(msg.value().decode(),
                                                                              err.name() if err else None))
        producer.flush(MESSAGE_TIMEOUT_MS / 1000 + 10)
    finally:
        producer.close()
    return {value: results.get(value, "NO_ANSWER") for value in values}


def _elect_unclean(kafka, topic: str) -> dict:
    admin = AdminClient(kafka.client_config(), logger=_client_log)   # a fresh client: it finds the controller of now
    return admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(topic, 0)]).result(30)


def run_drill(kafka, topic: str, producer_config: dict) -> pd.DataFrame:
    """Run the failure drill on partition 0 of ``topic`` (replicas ``[a, b, c]``, ``a`` leading).

    1. *calm*: all brokers up; 10 payments.
    2. *maintenance*: follower ``c`` is stopped (a controlled shutdown); 10 payments.
    3. *outage*: follower ``b`` crashes too (SIGKILL); once the ISR is the leader alone, 10 payments.
    4. The leader ``a`` crashes. ``b`` and ``c`` come back; ``a`` does not. The partition has no
       leader, so the operator forces an unclean election (unless the topic allows one anyway).
    5. ``a`` comes back and follows the new leader.

    Every payment gets ``message.timeout.ms`` = 6 s to be acknowledged. Returns one row per payment:
    ``payment``, ``phase``, ``acknowledged`` (bool), ``error`` (None or the error's name).
    """
    cluster = kafka.cluster
    if cluster is None:
        raise RuntimeError("the drill kills brokers: start the cluster with kafkalab.connect(brokers=3)")
    rows = []

    def record(phase, results):
        for value, error in results.items():
            rows.append({"payment": value, "phase": phase, "acknowledged": error is None, "error": error})

    state = drill_partition(cluster, topic)
    if state is None:
        return pd.DataFrame(rows, columns=["payment", "phase", "acknowledged", "error"])
    a = state["leader"]
    b, c = [r for r in state["replicas"] if r != a]
    try:
        Producer({**kafka.client_config(), **dict(producer_config)}, logger=_client_log).close()
    except (KafkaException, TypeError, ValueError) as exc:
        print(f"the producer config {producer_config!r} is refused by the client: {exc}; nothing was run")
        return pd.DataFrame(rows, columns=["payment", "phase", "acknowledged", "error"])

    def acknowledged(phase):
        return sum(r["acknowledged"] for r in rows if r["phase"] == phase)

    # what it prints names no broker: which broker leads is Kafka's (random) choice, the story is the same
    record("calm", _produce(kafka, topic, producer_config, payments("calm")))
    print(f"calm: all three brokers up; {acknowledged('calm')} of 10 payments acknowledged")

    cluster.stop(c)
    wait_for_partition(cluster, topic, lambda s: c not in s["isr"], f"broker {c} to leave the ISR")
    record("maintenance", _produce(kafka, topic, producer_config, payments("maintenance")))
    print(f"maintenance: a follower stopped; {acknowledged('maintenance')} of 10 payments acknowledged")

    cluster.kill(b)
    wait_for_partition(cluster, topic, lambda s: s["isr"] == [a], f"the ISR to shrink to broker {a}")
    time.sleep(0.5)   # the leader hears of its new ISR from the controller
    record("outage", _produce(kafka, topic, producer_config, payments("outage")))
    print(f"outage: the other follower crashed too, the ISR is the leader alone; "
          f"{acknowledged('outage')} of 10 payments acknowledged")

    cluster.kill(a)
    cluster.restart(b)
    cluster.restart(c)
    state = wait_for_partition(cluster, topic, lambda s: s["leader"] != a,
                               f"the controller to notice that broker {a} is gone")
    if state["leader"] is None:
        result = _elect_unclean(kafka, topic)
        error = next(iter(result.values()))
        print(f"the leader crashed, the followers came back without it; no replica in sync was left, so the "
              f"operator forced an unclean election: {'done' if error is None else error}")
    else:
        print("the leader crashed, the followers came back without it; the topic allowed an unclean election "
              "and the controller made one")
    state = wait_for_partition(cluster, topic, lambda s: s["leader"] is not None, "a leader")
    print("the partition is online again, led by the follower that "
          + ("crashed in the outage" if state["leader"] == b else "was stopped for maintenance"))
    cluster.restart(a)
    wait_for_partition(cluster, topic, lambda s: len(s["isr"]) == 3, f"broker {a} back in sync")
    print("the old leader is back, as a follower, and in sync again")
    return pd.DataFrame(rows, columns=["payment", "phase", "acknowledged", "error"])


def _acks(producer_config) -> str:
    """The producer's effective acks (librdkafka's default is all)."""
    config = dict(producer_config) if isinstance(producer_config, dict) else {}
    value = str(config.get("acks", config.get("request.required.acks", "all"))).lower()
    return "all" if value in ("all", "-1") else value


def _min_isr(kafka, topic: str) -> int:
    """The topic's effective ``min.insync.replicas``, as DescribeConfigs answers it (``kafka-configs.sh --describe``):
    its own override, else the broker's. The same request in both modes: the brokers answer from ZooKeeper's
    ``/config/topics/<topic>`` in ZooKeeper mode, from the metadata log's ``ConfigRecord``s in KRaft mode."""
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers, "logger": _client_log})
    try:
        described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])
        entries = next(iter(described.values())).result(timeout=15)
        return int(entries["min.insync.replicas"].value)
    except Exception:   # noqa: BLE001 -- no such topic (yet): the cluster's default
        return int(kafka.cluster.configs.get("min.insync.replicas", 1))


def check_03(kafka, topic, producer_config, drill, stored, acknowledged, lost) -> None:
    """Check lab 03 (``labs/03_replication``); the arguments are the variables the lab asks for."""
    report = Report(f"Lab 03 — replication and failure (topic {topic!r})")
    cluster = kafka.cluster
    if cluster is None:
        report.step("the lab runs on a local cluster", False,
                    "this lab kills brokers: start it with kafkalab.connect(brokers=3), without KAFKALAB_BOOTSTRAP_SERVERS")
        report.finish()

    # Step 1: the topic, the settings, and what the drill did with them.
    name = "step 1: payments has one partition on three brokers"
    layout = None
    try:
        layout = None if unfilled(topic) else cluster.describe(topic)
    except KeyError:
        layout = None
    if layout is None:
        report.step(name, False, f"{topic!r} is not a topic of this cluster — "
                                 "payments = kafka.create_topic('payments', partitions=1, replication_factor=3, ...)")
    else:
        report.step(name, len(layout) == 1 and len(layout["replicas"].iloc[0]) == 3,
                    f"it has {len(layout)} partition(s), partition 0 on brokers {list(layout['replicas'].iloc[0])}: "
                    f"create it with partitions=1, replication_factor=3")
    acks, min_isr = _acks(producer_config), (_min_isr(kafka, topic) if layout is not None else None)
    ran = isinstance(drill, pd.DataFrame) and len(drill) == len(PHASES) * PAYMENTS_PER_PHASE
    in_topic = [as_text(m.value()) for m in read_partition(kafka.bootstrap_servers, topic)] if layout is not None else []

    name = "step 1: writes keep working while one broker is down for maintenance"
    if not ran:
        report.step(name, False, "the drill did not run to the end (see its output above): "
                                 "drill = run_drill(kafka, payments, producer_config)")
    else:
        refused = drill[drill["phase"].isin(["calm", "maintenance"]) & ~drill["acknowledged"]]
        hint = f"{len(refused)} payment(s) were refused, e.g. {refused['payment'].iloc[0]}: {refused['error'].iloc[0]}" \
            if len(refused) else ""
        if len(refused) and min_isr is not None and min_isr >= 3:
            hint += (f" — min.insync.replicas={min_isr} on a topic with three replicas refuses acks=all writes as "
                     f"soon as one broker is down; a partition should survive one broker's maintenance")
        report.step(name, refused.empty, hint)

    name = "step 1: no acknowledged payment was lost"
    if not ran:
        report.step(name, False, "the drill did not run to the end")
    else:
        acked = list(drill[drill["acknowledged"]]["payment"])
        missing = [p for p in acked if p not in set(in_topic)]
        if not missing:
            report.step(name, True)
        else:
            hint = f"{len(missing)} acknowledged payment(s) are not in the topic, e.g. {missing[:3]}. "
            if acks != "all":
                hint += (f"With acks={acks} the leader acknowledges a payment on its own; min.insync.replicas "
                         f"applies only to acks=all. ")
            elif min_isr is not None and min_isr < 2:
                hint += (f"acks=all waits for the ISR — and during the outage the ISR was the leader alone, so "
                         f"'all' meant one copy (min.insync.replicas={min_isr}). ")
            hint += "Which payments were acknowledged by the leader alone, and then lost with it?"
            report.step(name, False, hint)

    # Step 2: reading back.
    check_stored(report, "step 2: stored lists every payment the partition holds, in offset order", stored, in_topic,
                 "assign partition 0 from offset 0 and read until the high watermark")

    # Step 3: counting.
    want_acked = list(drill[drill["acknowledged"]]["payment"]) if ran else []
    name = "step 3: acknowledged lists the payments whose delivery report had no error"
    with report.answer(name, "acknowledged"):
        if unfilled(acknowledged):
            report.step(name, False, unfilled_detail("acknowledged", acknowledged, "drill[drill['acknowledged']]"))
        else:
            got = sorted(as_text(v) for v in acknowledged)
            report.step(name, got == sorted(want_acked), f"got {len(got)} payment(s), the drill's delivery reports "
                                                          f"acknowledged {len(want_acked)}")
    name = "step 3: lost lists the acknowledged payments missing from the partition"
    with report.answer(name, "lost"):
        if unfilled(lost):
            report.step(name, False, unfilled_detail("lost", lost, "acknowledged, but not in stored"))
        else:
            want = sorted(p for p in want_acked if p not in set(in_topic))
            got = sorted(as_text(v) for v in lost)
            report.step(name, got == want, f"got {got[:5]}{'...' if len(got) > 5 else ''} ({len(got)}), expected "
                                           f"{len(want)}: every acknowledged payment that is not in the partition")
    report.finish()
