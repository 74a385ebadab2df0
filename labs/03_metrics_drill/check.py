"""Lab 03 · metrics drill: three incidents on a cluster, seen only through Kafka's own metrics, and the check.

``run_incidents(kafka)`` causes three incidents, one after the other, in an order the student does not know:

* a **stuck follower**: one broker's replica fetchers stop (kafkalab's ``pause_replication`` fault), so the
  partitions it follows fall behind and their leaders drop it from the ISR after ``replica.lag.time.max.ms``;
* a **quota**: a client id gets a ``producer_byte_rate`` quota (AlterClientQuotas) and writes faster than it, so the
  leader throttles it;
* a **dead controller**: the active controller's process is SIGKILLed; once its ZooKeeper session expires, another
  broker wins the election of ``/controller`` and moves the dead broker's leaderships.

Before each incident and while it lasts, every running broker's metrics are scraped (``Cluster.metrics``): that is
all the student gets, as :meth:`Drill.table` (one row per phase and broker) and :attr:`Drill.metrics` (every sample).
``check_metrics_drill`` compares the student's diagnosis with what the drill really did, and names the metric that
tells each incident apart when an answer is wrong.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

import pandas as pd
from confluent_kafka import ElectionType, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalab.checks import Report, unfilled, unfilled_detail
from kafkalab.drills import quiet_client_log
from kafkalab.tools.client_quotas import alter_client_quotas

KINDS = ("stuck follower", "quota", "dead controller")
NAMES = ("A", "B", "C")
QUOTA_CLIENT = "reports"
QUOTA_BYTES_PER_S = 50_000
WAIT_S = 45
_client_log = quiet_client_log("lab-03-metrics-clients")

#: The metrics the drill keeps (the JMX exporter's names) and the column each gives in Drill.table: summed over a
#: broker's samples, except the throttle time, the largest of the broker's clients
SIGNALS = {
    "kafka_controller_kafkacontroller_activecontrollercount": "ActiveControllerCount",
    "kafka_controller_kafkacontroller_offlinepartitionscount": "OfflinePartitionsCount",
    "kafka_server_replicamanager_underreplicatedpartitions": "UnderReplicatedPartitions",
    "kafka_server_replicamanager_isrshrinks_total": "IsrShrinks (count)",
    "kafka_server_replicamanager_leadercount": "LeaderCount",
    "kafka_server_produce_throttle_time": "Produce throttle-time (ms, largest client)",
    "kafka_server_produce_byte_rate": "Produce byte-rate (B/s, largest client)",
}
THROTTLE = "kafka_server_produce_throttle_time"
#: per client: the largest over a broker's clients, 0 where none is measured (Kafka creates a client's quota sensors at
#: its first request once a quota is set) or none was throttled in the window (Kafka's Avg is NaN then)
PER_CLIENT = (THROTTLE, "kafka_server_produce_byte_rate")


@dataclass
class Drill:
    """What the student sees of the incidents: :meth:`table` and :attr:`metrics`; the truth stays in ``_truth``."""
    brokers: list[int]
    metrics: dict[str, pd.DataFrame] = field(default_factory=dict)   # incident -> every sample, with a phase column
    _truth: dict[str, tuple[str, int | None]] = field(default_factory=dict, repr=False)

    @property
    def incidents(self) -> list[str]:
        return list(self.metrics)

    def table(self, incident: str) -> pd.DataFrame:
        """One row per (phase, broker): ``serving metrics`` (False: the broker's metrics could not be read: it is not
        running) and one column per :data:`SIGNALS` name."""
        if incident not in self.metrics:
            raise KeyError(f"no incident {incident!r}: the drill ran {', '.join(self.metrics) or 'none'}")
        frame = self.metrics[incident]
        rows = []
        for phase in ("before", "during"):
            part = frame[frame["phase"] == phase]
            for broker in self.brokers:
                mine = part[part["broker"] == broker]
                row = {"phase": phase, "broker": broker, "serving metrics": not mine.empty}
                for metric, column in SIGNALS.items():
                    values = mine[mine["metric"] == metric]["value"]
                    if mine.empty:
                        row[column] = None
                    elif metric in PER_CLIENT:
                        row[column] = float(values.fillna(0).max()) if not values.empty else 0.0
                    else:
                        row[column] = values.sum()
                rows.append(row)
        return pd.DataFrame(rows).set_index(["phase", "broker"])


def _snapshot(cluster, phase: str) -> pd.DataFrame:
    frame = cluster.metrics(list(SIGNALS))
    frame = frame[frame["metric"].isin(SIGNALS)].copy()
    frame.insert(0, "phase", phase)
    return frame


def _wait(condition, what: str, timeout_s: float = WAIT_S):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"the drill waited {timeout_s:.0f} s for {what}")
        time.sleep(0.2)


def _partitions(cluster, topic: str) -> list[dict]:
    return cluster.describe(topic).to_dict("records")


def _controller(cluster) -> int | None:
    brokers = cluster.brokers
    ids = list(brokers[brokers["is_controller"] & (brokers["alive"] == "running")]["id"])
    return int(ids[0]) if len(ids) == 1 else None


def _in_sync(cluster, topic: str) -> bool:
    return _controller(cluster) is not None and all(
        r["leader"] == r["leader"] and r["leader"] is not None and len(r["isr"]) == len(r["replicas"])
        for r in _partitions(cluster, topic))


def _preferred(cluster, topic: str) -> bool:
    return all(r["leader"] == r["replicas"][0] for r in _partitions(cluster, topic))


def _settle(kafka, cluster, topic: str) -> None:
    """Every partition in sync and led by its preferred replica (each broker leads one), one active controller. A
    broker back from the dead leads nothing until a preferred leader election, which the drill asks for at once
    (ElectLeaders PREFERRED, as ``kafka-leader-election.sh --election-type preferred``) instead of waiting for the
    controller's own check (``leader.imbalance.check.interval.seconds``)."""
    _wait(lambda: _in_sync(cluster, topic), "every partition back in sync and one active controller")
    if not _preferred(cluster, topic):
        admin = AdminClient(kafka.client_config(), logger=_client_log)
        try:
            admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, r["partition"])
                                                         for r in _partitions(cluster, topic)]).result(30)
        except KafkaException:
            pass   # ELECTION_NOT_NEEDED for the partitions already led by their preferred replica
        _wait(lambda: _preferred(cluster, topic) and _in_sync(cluster, topic), "the preferred leaders back")
    time.sleep(1.0)   # the leaders' gauges and the followers' high watermarks settle


class _Writer:
    """Writes to every partition of ``topic`` (acks=1) in a thread, so that followers have something to fall behind on."""

    def __init__(self, kafka, topic: str, partitions: int):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(kafka, topic, partitions), daemon=True)

    def _run(self, kafka, topic, partitions):
        producer = Producer(kafka.client_config(acks=1, linger_ms=5), logger=_client_log)
        i = 0
        while not self._stop.is_set():
            producer.produce(topic, f"order-{i}".encode(), partition=i % partitions)
            producer.poll(0.02)
            i += 1
        producer.flush(10)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(20)


def _stuck_follower(kafka, cluster, topic, rng):
    broker = rng.choice(sorted(cluster.brokers["id"]))
    cluster.inject_fault(broker, "pause_replication", duration_s=WAIT_S)
    followed = [r["partition"] for r in _partitions(cluster, topic) if r["leader"] != broker]
    try:
        with _Writer(kafka, topic, len(_partitions(cluster, topic))):
            _wait(lambda: all(broker not in r["isr"] for r in _partitions(cluster, topic) if r["partition"] in followed),
                  f"the leaders to drop broker {broker} from the ISR (replica.lag.time.max.ms)")
            yield broker
    finally:
        cluster.clear_faults(broker)


def _quota(kafka, cluster, topic, rng):
    alter_client_quotas(kafka.bootstrap_servers, {"client-id": QUOTA_CLIENT}, {"producer_byte_rate": QUOTA_BYTES_PER_S})
    throttled = []
    config = kafka.client_config(client_id=QUOTA_CLIENT, linger_ms=5)
    config["throttle_cb"] = lambda event: event.throttle_time > 0 and throttled.append(event.throttle_time)
    producer = Producer(config, logger=_client_log)
    try:
        deadline = time.monotonic() + WAIT_S
        while len(throttled) < 2:   # the brokers apply the quota when ZooKeeper notifies them, a moment later
            if time.monotonic() > deadline:
                raise TimeoutError(f"the drill waited {WAIT_S} s for a broker to throttle client id {QUOTA_CLIENT!r}")
            for _ in range(100):
                producer.produce(topic, b"r" * 1000, partition=0)
            producer.flush(30)
        yield None
    finally:
        producer.flush(30)
        alter_client_quotas(kafka.bootstrap_servers, {"client-id": QUOTA_CLIENT}, {"producer_byte_rate": None})


def _dead_controller(kafka, cluster, topic, rng):
    broker = _wait(lambda: _controller(cluster), "an active controller")
    cluster.kill(broker)
    try:
        _wait(lambda: _controller(cluster) not in (None, broker)
              and all(r["leader"] != broker and broker not in r["isr"] for r in _partitions(cluster, topic)),
              f"another broker to take over as controller and move broker {broker}'s partitions")
        yield broker
    finally:
        cluster.restart(broker)


INCIDENTS = {"stuck follower": _stuck_follower, "quota": _quota, "dead controller": _dead_controller}


def run_incidents(kafka, seed: int | None = None) -> Drill:
    """Create a topic of 3 partitions on the 3 brokers and cause the three incidents in a shuffled order
    (``seed`` fixes it), each between a ``before`` and a ``during`` scrape of every running broker."""
    cluster = kafka.cluster
    if cluster is None or len(cluster.brokers) != 3:
        raise RuntimeError("the drill breaks brokers: start three of your own with kafkalab.connect(brokers=3, local=True)")
    if getattr(cluster, "mode", "zookeeper") != "zookeeper" or getattr(cluster.backend, "name", "mini") != "mini":
        raise RuntimeError("this drill needs kafkalab's ZooKeeper-mode mini brokers: its stuck follower is kafkalab's "
                           "pause_replication fault, which Apache Kafka's brokers do not have")
    rng = random.Random(seed)
    topic = kafka.create_topic("drill-orders", partitions=3, replication_factor=3)
    drill = Drill(sorted(int(b) for b in cluster.brokers["id"]))
    kinds = list(KINDS)
    rng.shuffle(kinds)
    for name, kind in zip(NAMES, kinds):
        _settle(kafka, cluster, topic)
        before = _snapshot(cluster, "before")
        incident = INCIDENTS[kind](kafka, cluster, topic, rng)   # a generator: it yields while the incident lasts
        try:
            broker = next(incident)
            drill.metrics[name] = pd.concat([before, _snapshot(cluster, "during")], ignore_index=True)
            drill._truth[name] = (kind, broker)
        finally:
            incident.close()   # ends it: the fault cleared, the quota removed, the broker restarted
        print(f"incident {name}: over")
    _settle(kafka, cluster, topic)
    return drill


HINTS = {
    "stuck follower": "every broker still serves its metrics, and UnderReplicatedPartitions went up on the leaders of "
                      "the partitions the stuck broker follows (their IsrShrinks count too); the stuck one is the "
                      "broker whose own partitions stayed fully replicated",
    "quota": "nothing is under-replicated and every broker is there; a leader's Produce throttle-time (the average "
             "throttle it gave a client id over the last minute) rose from before to during, and that client's "
             "byte-rate is at its quota",
    "dead controller": "one broker stopped serving metrics at all, and ActiveControllerCount moved from it to another "
                       "broker (the sum stays 1: one active controller)",
}


def check_metrics_drill(drill, diagnosis) -> None:
    """Check the student's ``diagnosis``: incident name -> (kind, broker or None)."""
    report = Report("Lab 03 — metrics drill: which incident was which")
    if not isinstance(drill, Drill) or len(drill._truth) != len(KINDS):
        report.step("the drill ran", False, "drill = run_incidents(kafka) did not run to the end (see its output)")
        report.finish()
    name = "diagnosis has one answer per incident"
    if unfilled(diagnosis):
        report.step(name, False, unfilled_detail("diagnosis", diagnosis, "{'A': ('quota', None), ...}"))
        report.finish()
    with report.answer(name, "diagnosis"):
        report.step(name, set(diagnosis) == set(drill._truth),
                    f"it answers {sorted(diagnosis)}; the incidents are {sorted(drill._truth)}")
    for incident, (kind, broker) in drill._truth.items():
        name = f"incident {incident}"
        with report.answer(name, f"diagnosis[{incident!r}]"):
            answer = diagnosis.get(incident)
            if unfilled(answer) or unfilled(answer[0]):
                report.step(name, False, unfilled_detail(f"diagnosis[{incident!r}]", ..., "(kind, broker)"))
                continue
            said_kind, said_broker = answer
            if said_kind not in KINDS:
                report.step(name, False, f"{said_kind!r} is not one of {KINDS}")
            elif said_kind != kind:
                report.step(name, False, f"it was not a {said_kind}. Look again at drill.table({incident!r}): in a "
                                         f"{said_kind}, {HINTS[said_kind]}")
            elif said_broker != broker:
                want = "no broker (None): a quota is a client's" if broker is None else "a broker id"
                report.step(name, False, f"right kind; the broker is wrong: it needs {want} — {HINTS[kind]}")
            else:
                report.step(name, True)
    report.finish()
