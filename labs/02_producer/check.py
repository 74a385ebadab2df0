"""Lab 02 (producer acks, retries and idempotence): the drill ``run_drill(...)`` and its check ``check_02(...)``.

The drill sends a stream of 60 payments to partition 0 of the payments topic
with **one producer**, built from the student's settings, and breaks things on
the way, the same way for everyone:

1. *lost answers*: the leader writes two of the produce requests but loses their
   responses (the fault ``drop_response``: it closes the connection instead of
   answering), and fails one with ``NOT_LEADER_OR_FOLLOWER``. The producer
   cannot tell "not written" from "written, answer lost": it retries;
2. *leader crash*: both followers stop copying for a moment (the fault
   ``pause_replication``), a burst of payments reaches the leader, and the
   leader is killed (SIGKILL) before the followers copied them;
3. *failover*: the stream goes on while the controller notices the crash (in
   ZooKeeper mode the leader's ZooKeeper session expires after 6 s; in KRaft mode
   the controller fences it after 3 s without a heartbeat) and elects a follower.

Then the old leader comes back as a follower. What is stored depends on the
producer settings the student chose: ``acks``, ``enable.idempotence``,
``max.in.flight.requests.per.connection`` and ``delivery.timeout.ms``.

On Apache Kafka's own brokers (``KAFKALAB_BACKEND=kafka``) the faults, which only
kafkalab's brokers take, are left out and the drill says so: the answers are not
lost and the followers keep copying, but the leader is still SIGKILLed in the
middle of the stream and the stream still goes on through the failover.

The check reads the partition back with its own consumer and compares it with
the payments sent and with the student's counts, and prints a ✓/✗ checklist
(:class:`kafkalab.checks.Report`).
"""
from __future__ import annotations

import time

import pandas as pd
from confluent_kafka import KafkaException, Producer

from kafkalab.checks import Report, as_text, read_partition, unfilled, unfilled_detail
from kafkalab.drills import check_stored, drill_partition, quiet_client_log, wait_for_partition

PHASES = ("lost answers", "leader crash", "failover")
PAYMENTS_PER_PHASE = 20
#: every payment of the drill, in the order it is sent
PAYMENTS = [f"payment-{i:03d}" for i in range(1, len(PHASES) * PAYMENTS_PER_PHASE + 1)]
#: how long the drill waits for the last delivery reports before it gives up on the rest
FLUSH_S = 40

_client_log = quiet_client_log("lab-02-clients")   # librdkafka's own log lines: a broker dies on purpose here


def _send(producer: Producer, topic: str, values: list[str], on_delivery, pause_s: float = 0.01) -> None:
    """Send ``values`` one after another, a little apart (a stream, not one big batch)."""
    for value in values:
        while True:
            try:
                producer.produce(topic, value=value, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
        time.sleep(pause_s)


def run_drill(kafka, topic: str, producer_config: dict) -> pd.DataFrame:
    """Send the 60 payments of :data:`PAYMENTS` to partition 0 of ``topic`` with one producer built from
    ``producer_config``, while answers get lost and the leader crashes (see the module's docstring).

    Returns one row per payment: ``payment``, ``phase``, ``acknowledged`` (its delivery report came
    back without an error), ``error`` (None or the error's name).
    """
    columns = ["payment", "phase", "acknowledged", "error"]
    cluster = kafka.cluster
    if cluster is None:
        raise RuntimeError("the drill kills a broker: start the cluster with kafkalab.connect(brokers=3)")
    state = drill_partition(cluster, topic)
    if state is None:
        return pd.DataFrame([], columns=columns)
    leader = state["leader"]
    followers = [r for r in state["replicas"] if r != leader]
    faults = cluster.backend.name == "mini"     # Apache Kafka's brokers take no injected faults
    if not faults:
        print("Apache Kafka's brokers: the drill's faults (lost answers, paused followers) are kafkalab's own and "
              "are left out; the leader is still killed mid-stream")

    results: dict[str, str | None] = {}

    def on_delivery(err, msg):
        value = msg.value().decode()
        # a payment the producer sent twice (a retry the client could not tell from a first try) still
        # gets one delivery report; keep the first error, if any
        results.setdefault(value, err.name() if err else None)

    config = {**kafka.client_config(), **dict(producer_config)}
    try:
        producer = Producer(config, logger=_client_log)
    except (KafkaException, TypeError, ValueError) as exc:
        print(f"the producer config {producer_config!r} is refused by the client: {exc}; nothing was run")
        return pd.DataFrame([], columns=columns)

    def phase(i):
        return PAYMENTS[i * PAYMENTS_PER_PHASE:(i + 1) * PAYMENTS_PER_PHASE]

    def acknowledged(i):
        return sum(results.get(p, "") is None for p in phase(i))

    try:
        producer.poll(0)
        # 1. lost answers: two requests written but unanswered, one refused as if the leader had moved
        if faults:
            cluster.inject_fault(leader, "drop_response", api="Produce", topic=topic, count=2)
            cluster.inject_fault(leader, "fail", api="Produce", topic=topic, error="NOT_LEADER_OR_FOLLOWER", count=1)
        _send(producer, topic, phase(0), on_delivery)
        producer.flush(FLUSH_S)
        if faults:
            cluster.clear_faults(leader)
            print(f"lost answers: the leader dropped its connection twice instead of answering, and refused one "
                  f"request; "
                  f"{acknowledged(0)} of {PAYMENTS_PER_PHASE} payments acknowledged")
        else:
            print(f"no lost answers (no faults on Kafka's brokers); "
                  f"{acknowledged(0)} of {PAYMENTS_PER_PHASE} payments acknowledged")

        # 2. leader crash: the followers stop copying, a burst reaches the leader alone, the leader dies
        for follower in followers if faults else []:
            cluster.inject_fault(follower, "pause_replication", topic=topic, duration_s=30)
        _send(producer, topic, phase(1), on_delivery)
        time.sleep(1.0)
        cluster.kill(leader)
        if faults:
            cluster.clear_faults()                    # the followers copy again (from whoever leads next)

        # 3. failover: the stream goes on while the controller has not noticed yet
        _send(producer, topic, phase(2), on_delivery, pause_s=0.05)
        producer.flush(FLUSH_S)
    finally:
        left = len(producer)
        if left:
            producer.purge()
            producer.flush(5)
        producer.close()
    state = wait_for_partition(cluster, topic, lambda s: s["leader"] not in (None, leader), "a new leader")
    print((f"leader crash: the leader died before its followers copied the last payments; " if faults else
           f"leader crash: the leader was SIGKILLed mid-stream; ")
          + f"{acknowledged(1)} of {PAYMENTS_PER_PHASE} payments acknowledged")
    print(f"failover: a follower took over; {acknowledged(2)} of {PAYMENTS_PER_PHASE} payments acknowledged"
          + (f" ({left} still unanswered after {FLUSH_S} s, given up)" if left else ""))
    cluster.restart(leader)
    wait_for_partition(cluster, topic, lambda s: len(s["isr"]) == 3, f"broker {leader} back in sync")
    print("the old leader is back, as a follower, and in sync again")
    rows = [{"payment": p, "phase": PHASES[i // PAYMENTS_PER_PHASE], "acknowledged": results.get(p, "") is None,
             "error": results.get(p, "NO_ANSWER")} for i, p in enumerate(PAYMENTS)]
    return pd.DataFrame(rows, columns=columns)


def _setting(producer_config, *names, default=None) -> str:
    config = dict(producer_config) if isinstance(producer_config, dict) else {}
    for name in names:
        for key in (name, name.replace(".", "_")):
            if key in config:
                return str(config[key]).lower()
    return str(default).lower()


def _inversions(values: list[str]) -> list[tuple[str, str]]:
    """Neighbours stored in the wrong order (a payment stored right after a later one)."""
    numbered = [v for v in values if v in set(PAYMENTS)]
    return [(a, b) for a, b in zip(numbered, numbered[1:]) if b < a]


def _expected_duplicates(in_topic: list[str]) -> list[str]:
    return sorted({v for v in in_topic if in_topic.count(v) > 1})


def _detection(kafka) -> str:
    """When the controller notices a crashed broker, on the cluster the lab runs on (its own configs)."""
    cluster = getattr(kafka, "cluster", None)
    configs = getattr(cluster, "configs", None) or {}
    if getattr(cluster, "mode", "zookeeper") == "kraft":
        return (f"when its heartbeats have stopped for broker.session.timeout.ms "
                f"({int(configs.get('broker.session.timeout.ms', 9000)) / 1000:g} s here) and it fences the broker")
    return (f"when its ZooKeeper session expires (zookeeper.session.timeout.ms, "
            f"{int(configs.get('zookeeper.session.timeout.ms', 18000)) / 1000:g} s here)")


def check_02(kafka, topic, producer_config, drill, stored, duplicates, lost) -> None:
    """Check lab 02 (``labs/02_producer``); the arguments are the variables the lab asks for."""
    report = Report(f"Lab 02 — producer acks, retries and idempotence (topic {topic!r})")
    if kafka.cluster is None:
        report.step("the lab runs on a local cluster", False,
                    "this lab kills a broker: start it with kafkalab.connect(brokers=3), without "
                    "KAFKALAB_BOOTSTRAP_SERVERS")
        report.finish()

    acks = _setting(producer_config, "acks", "request.required.acks", default="all")
    acks = "all" if acks in ("all", "-1") else acks
    idempotent = _setting(producer_config, "enable.idempotence", default=False) in ("true", "1")
    in_flight = _setting(producer_config, "max.in.flight.requests.per.connection", "max.in.flight", default=1000000)
    timeout = _setting(producer_config, "delivery.timeout.ms", "message.timeout.ms", default=300000)

    # Step 1: what the drill did with the student's settings -- from what the partition holds.
    ran = isinstance(drill, pd.DataFrame) and len(drill) == len(PAYMENTS)
    in_topic = [as_text(m.value()) for m in read_partition(kafka.bootstrap_servers, topic)] if ran else []
    name = "step 1: the drill ran with your producer settings"
    report.step(name, ran, "the drill did not run to the end (see its output above) — is producer_config a dict "
                           "the client accepts? drill = run_drill(kafka, payments, producer_config)")

    name = "step 1: every payment was acknowledged"
    if ran:
        failed = drill[~drill["acknowledged"]]
        hint = ""
        if len(failed):
            errors = failed["error"].value_counts()
            hint = (f"{len(failed)} payment(s) failed, e.g. {failed['payment'].iloc[0]}: "
                    + ", ".join(f"{e} ×{n}" for e, n in errors.items()) + ". ")
            if "_MSG_TIMED_OUT" in errors:
                hint += (f"delivery.timeout.ms={timeout} gave up before the failover was over: the controller "
                         f"notices a crashed leader only {_detection(kafka)}, then "
                         f"elects a new one. Retries are bounded by time — give them enough. ")
        report.step(name, failed.empty, hint)

    counts = pd.Series(in_topic, dtype=object).value_counts()
    name = "step 1: no payment is stored twice"
    if ran:
        twice = sorted(counts[counts > 1].index)
        hint = ""
        if twice:
            hint = (f"{len(twice)} payment(s) are stored more than once, e.g. {twice[:3]}. When an answer is lost, "
                    f"the producer cannot know the payment was written, so it sends it again")
            hint += (" — and the broker cannot tell a retry from a new payment unless the producer numbers its "
                     "batches (enable.idempotence)." if not idempotent else ".")
            if len(twice) == len(PAYMENTS):
                hint += (" Every payment is there more than once: did the drill run more than once on this topic? "
                         "Re-run the notebook from the top (it starts a fresh cluster).")
        report.step(name, not twice, hint)

    name = "step 1: no payment is lost"
    if ran:
        missing = [p for p in PAYMENTS if p not in counts.index]
        hint = ""
        if missing:
            acked = [p for p in missing if bool(drill.set_index("payment").loc[p, "acknowledged"])]
            hint = f"{len(missing)} payment(s) are not in the partition, e.g. {missing[:3]}"
            if acked:
                hint += (f"; {len(acked)} of them were acknowledged (e.g. {acked[0]}): " +
                         ("with acks=0 the producer calls a payment delivered once it is on the wire, without "
                          "any answer from the broker." if acks == "0" else
                          f"acks={acks} lets the leader answer before its followers have a copy, and the leader "
                          f"died with it."))
                if acks != "all":
                    hint += " Which acks makes the leader wait for the in-sync replicas?"
            else:
                hint += "; none of them was acknowledged: the producer gave up on them (see the errors above)."
        report.step(name, not missing, hint)

    name = "step 1: payments are stored in the order they were sent"
    if ran:
        first_copies = list(dict.fromkeys(in_topic))
        swapped = _inversions(first_copies)
        hint = ""
        if swapped:
            a, b = swapped[0]
            hint = (f"{b} is stored after {a}. A request that is retried can land behind the requests sent after "
                    f"it while they were in flight (max.in.flight.requests.per.connection={in_flight}); ")
            hint += ("with enable.idempotence the broker refuses a batch whose sequence number is out of order, "
                     "so the producer resends in order." if not idempotent else "")
        report.step(name, not swapped, hint)

    # Step 2: reading back.
    check_stored(report, "step 2: stored lists every value the partition holds, in offset order", stored, in_topic,
                 "assign partition 0 from its low watermark and read until the high watermark")

    # Step 3: counting.
    name = "step 3: duplicates lists the payments stored more than once"
    with report.answer(name, "duplicates"):
        want = _expected_duplicates(in_topic)
        if unfilled(duplicates):
            report.step(name, False, unfilled_detail("duplicates", duplicates,
                                                     "the payments that appear more than once in stored"))
        elif isinstance(duplicates, (int, float)):
            report.step(name, False, f"duplicates is the number {duplicates!r}; the step asks for the list of "
                                     f"the payments stored more than once, each listed once (an empty list if "
                                     f"there are none)")
        else:
            got = sorted({as_text(v) for v in duplicates})
            report.step(name, got == want, f"got {got[:5]}{'...' if len(got) > 5 else ''} ({len(got)}), expected "
                                           f"{len(want)}: each payment that appears more than once in the partition")
    name = "step 3: lost lists the payments of the drill missing from the partition"
    with report.answer(name, "lost"):
        want = [p for p in PAYMENTS if p not in set(in_topic)]
        if unfilled(lost):
            report.step(name, False, unfilled_detail("lost", lost, "the payments of PAYMENTS that are not in stored"))
        elif isinstance(lost, (int, float)):
            report.step(name, False, f"lost is the number {lost!r}; the step asks for the list of payments")
        else:
            got = sorted(as_text(v) for v in lost)
            report.step(name, got == want, f"got {got[:5]}{'...' if len(got) > 5 else ''} ({len(got)}), expected "
                                           f"{len(want)}: every payment of PAYMENTS that is not in the partition")
    report.finish()
