"""The automatic check of lab 09 (share groups): ``check_09(...)``.

It does not trust the student's tables: it reads the broker's share-group configs itself (DescribeConfigs on the
broker) and replays the experiments on topics and share groups of its own. Step 1 runs the student's
``acknowledgement(value, delivery_count)`` on the lab's eight tasks and holds the deliveries against the goal;
step 2 releases a poison record until the broker archives it and compares the count with the student's;
step 3 holds the student's redelivery measurements against the SIGSTOPped child's held offsets and the lock.
"""
from __future__ import annotations

import time
import uuid

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                   ResourceType)

from kafkalab.checks import Report, shown, unfilled, unfilled_detail

TASKS = ["ok", "ok", "retry", "ok", "corrupt", "ok", "retry", "ok"]
CAUSES = ("connection closed", "lock expired", "session timeout")
QUIET = 4   # the check's own clients log warnings and errors only (not librdkafka's purge-on-destroy notes)


def broker_configs(bootstrap: str) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": QUIET})
    brokers = admin.list_topics(timeout=15).brokers
    [future] = admin.describe_configs([ConfigResource(ResourceType.BROKER, str(min(brokers)))]).values()
    entries = future.result(30)
    return {name: entries[name].value for name in entries}


def replay(bootstrap: str, values: list[str], decide, quiet_s: float, timeout: float = 40.0) -> list[dict]:
    """Produce ``values`` to a new topic, read it with a new share group (from the earliest) acknowledging with
    ``decide(value, delivery_count)``, until nothing has come for ``quiet_s``; every delivery, in order."""
    topic, group = f"check09-{uuid.uuid4().hex[:8]}", f"check09-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": QUIET})
    for f in admin.create_topics([NewTopic(topic, 1, -1)]).values():
        f.result(30)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": QUIET})
    for v in values:
        producer.produce(topic, value=v.encode())
    producer.flush(30)
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit", "log_level": 3})   # (not its "Preview" warning)
    consumer.subscribe([topic])
    deliveries, last = [], time.monotonic()
    deadline = last + timeout
    try:
        while time.monotonic() < deadline and not (deliveries and time.monotonic() - last > quiet_s):
            for m in consumer.poll(0.2):
                if m.error() is not None:
                    continue
                kind = decide(m.value().decode(), m.delivery_count())
                deliveries.append({"offset": m.offset(), "value": m.value().decode(),
                                   "delivery count": m.delivery_count(), "ack": AcknowledgeType(kind).name})
                consumer.acknowledge(m, kind)
                last = time.monotonic()
            consumer.commit_sync(10)
    finally:
        consumer.close()
    return deliveries


def _counts(deliveries, offset):
    return [d["delivery count"] for d in deliveries if d["offset"] == offset]


def check_09(kafka, acknowledgement, poison_deliveries, held, redelivered_offsets, redelivered_count, back_after_s,
             cause) -> None:
    """Check lab 09 (``labs/09_share_groups``); the arguments are the variables the lab asks for."""
    report = Report("Lab 09 — share groups: acknowledgements, the delivery count limit, redelivery")
    configs = broker_configs(kafka.bootstrap_servers)
    limit = int(configs["group.share.delivery.count.limit"])
    lock_s = int(configs["group.share.record.lock.duration.ms"]) / 1000

    # step 1: an acknowledgement per record, replayed on a topic of the check's own
    name = "acknowledgement(value, delivery_count): each 'ok' and 'retry' done, 'retry' on its 2nd delivery, " \
           "'corrupt' delivered once and never again"
    with report.answer(name, "acknowledgement"):
        if unfilled(acknowledgement) or not callable(acknowledgement):
            report.step(name, False, unfilled_detail("acknowledgement", acknowledgement,
                                                     "a function (value, delivery_count) -> AcknowledgeType"))
        else:
            deliveries = replay(kafka.bootstrap_servers, TASKS, acknowledgement, quiet_s=1.5)
            wrong = []
            for offset, value in enumerate(TASKS):
                counts = _counts(deliveries, offset)
                acks = [d["ack"] for d in deliveries if d["offset"] == offset]
                want = {"ok": ([1], ["ACCEPT"]), "retry": ([1, 2], ["RELEASE", "ACCEPT"]),
                        "corrupt": ([1], ["REJECT"])}[value]
                if (counts, acks) != want:
                    hint = (" — a RELEASEd record comes back: REJECT archives it" if value == "corrupt" and len(counts) > 1
                            else " — RELEASE it the first time (delivery_count 1), ACCEPT the second"
                            if value == "retry" else "")
                    wrong.append(f"offset {offset} ({value!r}): delivered with counts {counts}, acknowledged {acks}, "
                                 f"wanted {want[0]} / {want[1]}{hint}")
            report.step(name, not wrong, "; ".join(wrong[:3]))

    # step 2: the delivery count limit
    name = "poison_deliveries is how often a record released at every delivery is delivered"
    with report.answer(name, "poison_deliveries"):
        if unfilled(poison_deliveries):
            report.step(name, False, unfilled_detail("poison_deliveries", poison_deliveries,
                                                     "count the rows of the poison record in `attempts`"))
        else:
            seen = replay(kafka.bootstrap_servers, ["poison"], lambda v, c: AcknowledgeType.RELEASE, quiet_s=1.5)
            measured = len(seen)
            report.step(name, int(poison_deliveries) == measured == limit,
                        f"got {shown(poison_deliveries)}; the check's own poison record was delivered {measured} times "
                        f"(group.share.delivery.count.limit = {limit})"
                        + (" — the limit counts deliveries, not redeliveries" if int(poison_deliveries) == limit - 1
                           else ""))

    # step 3: a stuck consumer's records
    name = "redelivered_offsets are the offsets the SIGSTOPped child held"
    with report.answer(name, "redelivered_offsets"):
        if unfilled(redelivered_offsets):
            report.step(name, False, unfilled_detail("redelivered_offsets", redelivered_offsets,
                                                     "the offsets the other member got with delivery count 2"))
        else:
            report.step(name, sorted(int(o) for o in redelivered_offsets) == sorted(held),
                        f"got {sorted(redelivered_offsets)}, the child held {sorted(held)}")
    name = "redelivered_count is the delivery count they came back with"
    with report.answer(name, "redelivered_count"):
        if unfilled(redelivered_count):
            report.step(name, False, unfilled_detail("redelivered_count", redelivered_count))
        else:
            report.step(name, int(redelivered_count) == 2,
                        f"got {redelivered_count}: the child's delivery was the first, this is the second")
    name = f"back_after_s is at least the acquisition lock ({lock_s:g} s): no record came back sooner"
    with report.answer(name, "back_after_s"):
        if unfilled(back_after_s):
            report.step(name, False, unfilled_detail("back_after_s", back_after_s,
                                                     "seconds from the SIGSTOP to the last held record's redelivery"))
        else:
            report.step(name, 0.9 * lock_s <= float(back_after_s) < 10 * lock_s,
                        f"got {back_after_s}; group.share.record.lock.duration.ms is {lock_s:g} s"
                        + (" — was the child SIGKILLed instead of SIGSTOPped?" if float(back_after_s) < 0.9 * lock_s
                           else ""))
    name = f"cause names why they came back, one of {CAUSES}"
    with report.answer(name, "cause"):
        if unfilled(cause):
            report.step(name, False, unfilled_detail("cause", cause))
        else:
            report.step(name, cause == "lock expired",
                        f"got {cause!r}" + (" — a stopped process keeps its sockets open" if cause == "connection closed"
                                            else " — the member left nothing: its heartbeats stopped, but "
                                                 f"the records came back before a session timeout"
                                            if cause == "session timeout" else f"; choose one of {CAUSES}"))
    report.finish()
