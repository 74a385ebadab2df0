"""``KafkaRaftMetrics``: Kafka's ``org.apache.kafka.raft.internals.KafkaRaftMetrics``, the Raft client's metrics.

Kafka metrics (not Yammer ones): the MBean ``kafka.server:type=raft-metrics`` with one attribute each, served by
the node's :class:`~kafkalab.broker.common.metrics.MetricsRegistry` as the JMX exporter's example KRaft
configuration names them (``kafka_server_raft_metrics_current_leader``, ...):

* gauges read when scraped: ``current-state`` (leader, candidate, voted, follower, unattached, observer, and
  Kafka 4.1's prospective), ``current-leader`` and ``current-vote`` (-1: none), ``current-epoch``,
  ``high-watermark`` (-1: unknown), ``log-end-offset``, ``log-end-epoch``, ``number-unknown-voter-connections``
  (always 0 here: the voters are static);
* sensors: ``commit-latency-avg``/``-max`` (ms from a leader's append of a batch to the high watermark passing
  it), ``election-latency-avg``/``-max`` (ms from standing for election to knowing the epoch's leader),
  ``append-records-rate`` and ``fetch-records-rate`` (records per second a leader appended / a follower fetched).

A sensor's statistics are Kafka's defaults (``metrics.num.samples`` 2, ``metrics.sample.window.ms`` 30000): over
the last two 30-second windows, NaN with nothing in them. The hot path (an append, a high watermark moving) costs
one deque operation.
"""
from __future__ import annotations

import collections
import math
import time

from ..broker.common.metrics import MetricName, MetricsRegistry

GROUP, TYPE = "kafka.server", "raft-metrics"
#: Kafka's MetricConfig defaults: samples x window
NUM_SAMPLES, SAMPLE_WINDOW_MS = 2, 30_000
_STATE_NAMES = {"Leader": "leader", "Candidate": "candidate", "Voted": "voted", "Prospective": "prospective",
                "Follower": "follower"}


class WindowedStat:
    """Kafka's ``Avg``/``Max``/``Rate`` of one sensor: values kept ``NUM_SAMPLES * SAMPLE_WINDOW_MS``."""

    def __init__(self, clock=None):
        self.clock = clock or (lambda: time.time() * 1000)
        self.values: collections.deque[tuple[float, float]] = collections.deque()

    def record(self, value: float, now_ms: float | None = None) -> None:
        self.values.append((self.clock() if now_ms is None else now_ms, value))

    def _live(self, now_ms: float) -> collections.deque:
        horizon = now_ms - NUM_SAMPLES * SAMPLE_WINDOW_MS
        while self.values and self.values[0][0] < horizon:
            self.values.popleft()
        return self.values

    def avg(self) -> float:
        live = self._live(self.clock())
        return sum(v for _, v in live) / len(live) if live else math.nan

    def max(self) -> float:
        live = self._live(self.clock())
        return max(v for _, v in live) if live else math.nan

    def rate(self) -> float:
        """Per second over the elapsed windows (Kafka's ``Rate``: at least one full window less a sample)."""
        now = self.clock()
        live = self._live(now)
        if not live:
            return 0.0
        elapsed_ms = max(now - live[0][0], (NUM_SAMPLES - 1) * SAMPLE_WINDOW_MS)
        return sum(v for _, v in live) / (elapsed_ms / 1000)


class KafkaRaftMetrics:
    """The metrics of one :class:`~kafkalab.raft.kafka_raft_client.KafkaRaftClient`, in ``registry``."""

    def __init__(self, registry: MetricsRegistry, client, clock=None):
        self.registry = registry
        self.client = client
        self.commit_latency = WindowedStat(clock)
        self.election_latency = WindowedStat(clock)
        self.append_records = WindowedStat(clock)
        self.fetch_records = WindowedStat(clock)
        self._uncommitted: collections.deque[tuple[int, float]] = collections.deque()   # (last offset, append ms)
        self._election_start_ms: float | None = None
        quorum = client.quorum
        gauges = {
            "current-state": self.current_state,
            "current-leader": lambda: quorum.leader_id,
            "current-vote": self.current_vote,
            "current-epoch": lambda: quorum.epoch,
            "high-watermark": lambda: -1 if client.high_watermark is None else client.high_watermark,
            "log-end-offset": lambda: client.log.end_offset,
            "log-end-epoch": lambda: client.log.last_fetched_epoch,
            "number-unknown-voter-connections": lambda: 0,
            "commit-latency-avg": self.commit_latency.avg, "commit-latency-max": self.commit_latency.max,
            "election-latency-avg": self.election_latency.avg, "election-latency-max": self.election_latency.max,
            "append-records-rate": self.append_records.rate, "fetch-records-rate": self.fetch_records.rate,
        }
        self.names = [MetricName.of_kafka_metric(GROUP, TYPE, n) for n in gauges]
        for name, fn in zip(self.names, gauges.values()):
            registry.new_gauge(name, fn)

    def current_state(self) -> str:
        quorum = self.client.quorum
        name = _STATE_NAMES.get(quorum.state.name, "unattached")   # Resigned and Unattached: unattached, as Kafka
        return "observer" if name == "follower" and quorum.is_observer else name

    def current_vote(self) -> int:
        """Kafka's: a leader or candidate itself; an unattached replica that voted, its vote; else -1."""
        state = self.client.quorum.state
        if state.name in ("Leader", "Candidate"):
            return self.client.node_id
        return state.voted_id if state.name == "Voted" else -1

    # -- what the client tells (cheap: one deque operation each) --------------------------------------------
    def on_leader_append(self, last_offset: int, records: int, now_ms: float) -> None:
        self._uncommitted.append((last_offset, now_ms))
        self.append_records.record(records, now_ms)

    def on_high_watermark(self, high_watermark: int, now_ms: float) -> None:
        """A leader's high watermark moved: the batches below it are committed (their commit latency)."""
        pending = self._uncommitted
        while pending and pending[0][0] < high_watermark:
            self.commit_latency.record(now_ms - pending.popleft()[1], now_ms)

    def on_fetched(self, records: int, now_ms: float) -> None:
        self.fetch_records.record(records, now_ms)

    def on_election_start(self, now_ms: float) -> None:
        if self._election_start_ms is None:
            self._election_start_ms = now_ms

    def on_leader_known(self, now_ms: float) -> None:
        """Kafka's ``maybeUpdateElectionLatency``: an election this node stood in ended (it leads or follows)."""
        start, self._election_start_ms = self._election_start_ms, None
        if start is not None:
            self.election_latency.record(now_ms - start, now_ms)
        self._uncommitted.clear()   # a new epoch: what an old leadership appended is no one's commit to time

    def close(self) -> None:
        for name in self.names:
            self.registry.remove(name)
