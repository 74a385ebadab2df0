"""``ClientQuotaManager``: client quotas as Kafka enforces them (KIP-13, KIP-55, KIP-124, KIP-219).

Three quotas, each set per *user*, per *client id*, per both, or as a default:

``producer_byte_rate``  bytes per second of Produce requests (their size on the wire);
``consumer_byte_rate``  bytes per second of Fetch responses to consumers (followers are exempt);
``request_percentage``  time spent handling the client's requests, as a percentage of one thread
                        (KIP-124: 200 means two threads' worth).

They are set and read with AlterClientQuotas and DescribeClientQuotas (KIP-546).
Which quota applies to a request is Kafka's precedence (KIP-55), most specific first::

    user + client id  >  user + default client id  >  user  >
    default user + client id  >  default user + default client id  >  default user  >
    client id  >  default client id

Clients of one entity share one measurement: e.g. every client with client id
``p1`` is measured together under a client-id quota, as in Kafka, where the
matched quota decides the metric tags of the sensor.

**Measuring.** A rate is a sum over ``quota.window.num`` samples (11) of
``quota.window.size.seconds`` (1 s) each, divided by the time they span, and, as
Kafka's ``Rate.windowSize`` does, by at least ``quota.window.num - 1`` full
windows, so a client that has just started is not measured over a few
milliseconds. A request is recorded first, then the rate is checked.

**Throttling** (Kafka's ``QuotaUtils.throttleTime``): with observed rate O over a
window W against quota T, the client must pause X so that O*W/(W+X) = T, so
``X = (O - T) / T * W``. The broker answers at once with ``throttle_time_ms = X``
(KIP-219) and then *mutes* the connection for X: it reads no further request of
that connection until X has passed (``KafkaApis`` tells the ``SocketServer``). A KIP-219 client also
holds back by itself. ``request_percentage`` throttles are capped at one window
(``quota.window.size.seconds``), as in Kafka.

**Where quotas live.** Standalone, in ``client-quotas.json`` in the log
directory. In cluster mode, in ZooKeeper as Kafka 3.x keeps them:
``/config/users/<user>``, ``/config/users/<user>/clients/<client-id>``,
``/config/clients/<client-id>`` (the default is the name ``<default>``), each
``{"version":1,"config":{"producer_byte_rate":"1024"}}``, followed by a change
notification ``{"entity_path":"clients/<client-id>"}``; every broker reloads its
quotas from ZooKeeper when one arrives (``ConfigChangeListener``).

Simplified: no authentication, so every client is the user ``ANONYMOUS``
(a quota on another user never applies; quotas on ``<default>`` users do);
no ``ip`` entities (KIP-612 connection rates), no ``controller_mutation_rate``
enforcement (KIP-599: accepted and stored, not enforced); old clients are muted
after the response like new ones, where Kafka delays the response to clients
older than KIP-219.

**Metrics** (Kafka's ``ClientQuotaManager.getOrCreateQuotaSensors``): once a quota of a kind is set anywhere
(``quotasEnabled``), every client's request of that kind is recorded on the sensors of its *quota entity*, the
tags ``user`` and ``client-id`` that :meth:`ClientQuotaManager.quota_metric_tags` picks (a client no quota
applies to is measured too, against no bound); the first record creates two metrics in the broker's registry,
as Kafka's ``JmxReporter`` names them (a tag with an empty value left out):

``kafka.server:type=Produce|Fetch|Request,user=U,client-id=C``
    ``byte-rate`` (``request-time`` for Request): the :class:`Rate` measured against the quota, per second
    (Request: percent of one thread);
    ``throttle-time``: the :class:`Avg` of the throttle times (ms) given for this quota, recorded by
    :meth:`ClientQuotaManager.throttle` only for the quota that decided a response's throttle (``KafkaApis``:
    the bandwidth quota's if its throttle is strictly longer, else the request quota's), over Kafka's default
    metric window (``metrics.num.samples=2`` × ``metrics.sample.window.ms=30000``); NaN while none was recorded.

Simplified: sensors are not expired after an hour without requests (Kafka's
``InactiveSensorExpirationTimeSeconds``), and when quotas change the rates start over (Kafka changes the bound
of a sensor in place) where ``throttle-time`` keeps its samples; user and client id go into the MBean name
unsanitized (Kafka URL-encodes the user, ``Sanitizer``, and ``JmxReporter`` quotes a value with ``,=:*?``);
a Produce with ``acks=0`` is recorded on the request quota too (Kafka skips it).

**A consumer's Fetch**, as in Kafka's ``KafkaApis.handleFetchRequest``: its size
is capped at what the quota allows at once, ``quota * (quota.window.num - 1) *
quota.window.size.seconds`` (``getMaxValueInQuotaWindow``); the response's bytes
are recorded, and if that puts the client over its quota the bytes are taken back
(``unrecordQuotaSensor``) and the response goes out *empty*, with the throttle
time. So a consumer never receives more than its quota allows, where a producer's
request, already sent, is recorded whole.
"""
from __future__ import annotations

import asyncio
import logging
import math
import os
import time

from kazoo.exceptions import NoNodeError

from ..common.state_file import read_state_file, write_state_file
from ..zk import zk_data as zd

log = logging.getLogger(__name__)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
#: quota key -> (entity types it may be set on, whole numbers only)
QUOTA_KEYS = {
    PRODUCER_BYTE_RATE: ({"user", "client-id"}, True),
    CONSUMER_BYTE_RATE: ({"user", "client-id"}, True),
    REQUEST_PERCENTAGE: ({"user", "client-id"}, False),
    CONTROLLER_MUTATION_RATE: ({"user", "client-id"}, False),
}
#: quota key -> Kafka's QuotaType (the metric group) and the name of the metric it is measured by
QUOTA_METRICS = {
    PRODUCER_BYTE_RATE: ("Produce", "byte-rate"),
    CONSUMER_BYTE_RATE: ("Fetch", "byte-rate"),
    REQUEST_PERCENTAGE: ("Request", "request-time"),
}
#: Kafka's MetricConfig defaults for a sensor given no config of its own (the broker's ``metrics.num.samples``,
#: ``metrics.sample.window.ms``): the window of ``throttle-time``'s Avg
METRIC_SAMPLES, METRIC_WINDOW_MS = 2, 30_000
USER, CLIENT_ID = "user", "client-id"
ANONYMOUS = "ANONYMOUS"
DEFAULT = "<default>"          # how ZooKeeper names the default entity
QUOTA_FILE = "client-quotas.json"
#: APIs the brokers send each other: never throttled (Kafka's ClusterAction requests)
EXEMPT_APIS = {"LeaderAndIsr", "UpdateMetadata", "StopReplica", "ControlledShutdown", "AlterPartition"}

# an entity: a sorted tuple of (entity type, name or None for the default)
Entity = tuple


def entity_of(components) -> Entity:
    return tuple(sorted((t, n) for t, n in components))


class Rate:
    """Kafka's ``Rate`` over a ``SampledStat``: ``samples`` windows of ``window_ms`` each.

    As in Kafka, a sample is kept while its *last* event is younger than all the windows
    (``samples * window_ms``), so one more sample than ``samples`` may overlap the monitored
    span; the rate divides by the time since the oldest kept sample started."""

    def __init__(self, samples: int, window_ms: int):
        self.samples_n = samples
        self.window_ms = window_ms
        self.samples: list[list[float]] = []      # [start_ms, value, last_event_ms]

    def _purge(self, now_ms: float) -> None:
        expire = self.samples_n * self.window_ms
        self.samples = [s for s in self.samples if now_ms - s[2] < expire]

    def record(self, value: float, now_ms: float) -> None:
        self._purge(now_ms)
        if not self.samples or now_ms - self.samples[-1][0] >= self.window_ms:
            self.samples.append([now_ms, 0.0, now_ms])
            if len(self.samples) > self.samples_n + 1:    # Kafka keeps one "overlapping" sample extra
                self.samples.pop(0)
        self.samples[-1][1] += value
        self.samples[-1][2] = now_ms

    def window_size(self, now_ms: float) -> float:
        self._purge(now_ms)
        elapsed = now_ms - (self.samples[0][0] if self.samples else now_ms)
        full = int(elapsed // self.window_ms)
        if full < self.samples_n - 1:
            elapsed += (self.samples_n - 1 - full) * self.window_ms
        return max(elapsed, 1.0)

    def measure(self, now_ms: float) -> float:
        """Per second."""
        self._purge(now_ms)
        return sum(s[1] for s in self.samples) / (self.window_size(now_ms) / 1000)


class Avg:
    """Kafka's ``Avg`` over a ``SampledStat``: the mean of the values recorded in the kept samples, NaN if none.

    As Kafka's: ``samples`` + 1 samples of ``window_ms`` in a ring; a sample whose last event is as old as all the
    windows (``samples * window_ms``) is reset when measured."""

    def __init__(self, samples: int = METRIC_SAMPLES, window_ms: int = METRIC_WINDOW_MS):
        self.samples_n = samples
        self.window_ms = window_ms
        self.samples: list[list[float]] = []      # [start_ms, sum, count, last_event_ms]
        self.current = 0

    def record(self, value: float, now_ms: float) -> None:
        if not self.samples:
            self.samples.append([now_ms, 0.0, 0, now_ms])
        sample = self.samples[self.current]
        if now_ms - sample[0] >= self.window_ms:          # complete: advance in the ring
            self.current = (self.current + 1) % (self.samples_n + 1)
            if self.current >= len(self.samples):
                self.samples.append([now_ms, 0.0, 0, now_ms])
            else:
                self.samples[self.current][:] = [now_ms, 0.0, 0, now_ms]
            sample = self.samples[self.current]
        sample[1] += value
        sample[2] += 1
        sample[3] = now_ms

    def measure(self, now_ms: float) -> float:
        expire = self.samples_n * self.window_ms
        for sample in self.samples:
            if now_ms - sample[3] >= expire:
                sample[:] = [now_ms, 0.0, 0, now_ms]
        count = sum(s[2] for s in self.samples)
        return sum(s[1] for s in self.samples) / count if count else math.nan


class ClientQuotaManager:
    """Every quota of one broker, and the rates measured against them."""

    def __init__(self, broker=None, samples: int = 11, window_s: int = 1, log_dir: str | None = None):
        self.broker = broker
        if broker is not None:
            samples, window_s = broker.config["quota.window.num"], broker.config["quota.window.size.seconds"]
            log_dir = broker.log_dir
        self.samples, self.window_ms = samples, window_s * 1000
        self.log_dir = log_dir
        #: entity -> {quota key: value}
        self.quotas: dict[Entity, dict[str, float]] = {}
        #: (quota key, user tag, client tag) -> Rate
        self.sensors: dict[tuple[str, str, str], Rate] = {}
        #: (quota key, user tag, client tag) -> Avg of the throttle times given (the throttle-time metric)
        self.throttle_times: dict[tuple[str, str, str], Avg] = {}
        #: (quota key, user tag, client tag) -> [(time.time(), throttle ms)], the last ones (notebooks, tests)
        self.throttles: dict[tuple[str, str, str], list] = {}
        #: the sensors whose metrics are in the broker's registry
        self._registered: set[tuple[str, str, str]] = set()
        if log_dir is not None and not self.in_cluster:
            self._load_file()

    @property
    def in_cluster(self) -> bool:
        """The quotas live in ZooKeeper (or come with the KRaft metadata), not in a file of this broker's."""
        return self.broker is not None and self.broker.in_cluster

    @property
    def enabled(self) -> bool:
        return bool(self.quotas)

    # -- which quota applies -------------------------------------------------------------

    def find_quota(self, key: str, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """Kafka's ``DefaultQuotaCallback``: the quota of ``key`` that applies and the metric tags
        (user, client id) of the sensor it is measured on; None if none applies."""
        q = self.quotas
        order = [
            (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
            (((CLIENT_ID, None), (USER, user)), (user, client_id)),
            (((USER, user),), (user, "")),
            (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
            (((CLIENT_ID, None), (USER, None)), (user, client_id)),
            (((USER, None),), (user, "")),
            (((CLIENT_ID, client_id),), ("", client_id)),
            (((CLIENT_ID, None),), ("", client_id)),
        ]
        for entity, tags in order:
            values = q.get(entity)
            if values and key in values:
                return values[key], tags
        return None

    def quota_metric_tags(self, key: str, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """Kafka's ``DefaultQuotaCallback.quotaMetricTags`` and ``quotaLimit``: the bound (inf if no quota applies)
        and the (user, client id) tags of the sensor a client is measured on; None while no quota of ``key`` is
        set at all (Kafka's ``quotasEnabled`` is false: nothing is recorded)."""
        shapes = {frozenset(t for t, _ in entity) for entity, values in self.quotas.items() if key in values}
        if not shapes:
            return None
        found = self.find_quota(key, user, client_id)
        if found is not None:
            return found
        # quotaTypesEnabled: with quotas on one kind of entity only, the tags are that kind's
        if shapes == {frozenset({USER})}:
            return math.inf, (user, "")
        if shapes == {frozenset({USER, CLIENT_ID})}:
            return math.inf, (user, client_id)
        return math.inf, ("", client_id)

    def _sensor(self, key: str, tags: tuple[str, str]) -> Rate:
        """Kafka's ``getOrCreateQuotaSensors``: the quota sensor (its throttle-time sensor and both metrics too)."""
        sensor_key = (key, *tags)
        rate = self.sensors.get(sensor_key)
        if rate is None:
            rate = self.sensors[sensor_key] = Rate(self.samples, self.window_ms)
        if sensor_key not in self.throttle_times:
            self.throttle_times[sensor_key] = Avg()
        if sensor_key not in self._registered:
            self._register_metrics(sensor_key)
        return rate

    def _register_metrics(self, sensor_key: tuple[str, str, str]) -> None:
        registry = getattr(self.broker, "metrics", None)
        if registry is None or sensor_key[0] not in QUOTA_METRICS:
            return
        from ..common.metrics import MetricName
        quota_type, rate_name = QUOTA_METRICS[sensor_key[0]]
        tags = {USER: sensor_key[1], CLIENT_ID: sensor_key[2]}
        registry.new_gauge(MetricName.of_kafka_metric("kafka.server", quota_type, rate_name, tags),
                           lambda: self.measure(sensor_key))
        registry.new_gauge(MetricName.of_kafka_metric("kafka.server", quota_type, "throttle-time", tags),
                           lambda: self.measure_throttle_time(sensor_key))
        self._registered.add(sensor_key)

    def measure(self, sensor_key: tuple[str, str, str], now_ms: float | None = None) -> float:
        """The ``byte-rate`` (``request-time``) metric: the sensor's rate now; 0 since quotas changed."""
        rate = self.sensors.get(sensor_key)
        return 0.0 if rate is None else rate.measure(time.monotonic() * 1000 if now_ms is None else now_ms)

    def measure_throttle_time(self, sensor_key: tuple[str, str, str], now_ms: float | None = None) -> float:
        """The ``throttle-time`` metric: the mean throttle time given in its window, NaN if none."""
        avg = self.throttle_times.get(sensor_key)
        return math.nan if avg is None else avg.measure(time.monotonic() * 1000 if now_ms is None else now_ms)

    def throttle(self, key: str, client_id: str | None, throttle_ms: int, now_ms: float | None = None,
                 user: str = ANONYMOUS) -> None:
        """Kafka's ``ClientQuotaManager.throttle``: a response of the client's is throttled for ``throttle_ms`` by
        the ``key`` quota; recorded on its throttle-time sensor (the muting itself is the socket server's)."""
        if throttle_ms <= 0:
            return
        found = self.quota_metric_tags(key, user, client_id or "")
        if found is None:
            return
        self._sensor(key, found[1])
        self.throttle_times[(key, *found[1])].record(throttle_ms, time.monotonic() * 1000 if now_ms is None else now_ms)

    def record_and_get_throttle_ms(self, key: str, client_id: str | None, value: float,
                                   now_ms: float | None = None, user: str = ANONYMOUS) -> int:
        """Record ``value`` against the client's ``key`` quota; the throttle time in ms (0 within it)."""
        client_id = client_id or ""
        found = self.quota_metric_tags(key, user, client_id)
        if found is None:
            return 0
        bound, tags = found
        now_ms = time.monotonic() * 1000 if now_ms is None else now_ms
        sensor_key = (key, *tags)
        rate = self._sensor(key, tags)
        rate.record(value, now_ms)
        observed = rate.measure(now_ms)
        if observed <= bound:
            return 0
        throttle = (observed - bound) / bound * rate.window_size(now_ms)
        if key == REQUEST_PERCENTAGE:
            throttle = min(throttle, self.window_ms)
        throttle_ms = int(round(throttle))
        history = self.throttles.setdefault(sensor_key, [])
        history.append((time.time(), throttle_ms))
        del history[:-1000]
        return throttle_ms

    def throttle_for_request(self, api: str, client_id: str | None, request_bytes: int, response_bytes: int,
                             handler_s: float, from_follower: bool) -> int:
        """What ``KafkaApis`` asks after handling a request: the longest throttle of its quotas."""
        if api in EXEMPT_APIS or from_follower:
            return 0
        now_ms = time.monotonic() * 1000
        request = self.record_and_get_throttle_ms(REQUEST_PERCENTAGE, client_id, handler_s * 100, now_ms)
        bandwidth, bandwidth_key = 0, None
        if api == "Produce":
            bandwidth_key = PRODUCER_BYTE_RATE
            bandwidth = self.record_and_get_throttle_ms(PRODUCER_BYTE_RATE, client_id, request_bytes, now_ms)
        elif api == "Fetch":
            bandwidth_key = CONSUMER_BYTE_RATE
            bandwidth = self.record_and_get_throttle_ms(CONSUMER_BYTE_RATE, client_id, response_bytes, now_ms)
            if max(request, bandwidth):   # the response goes out empty (KafkaApis): its bytes were never sent
                self.unrecord(CONSUMER_BYTE_RATE, client_id, response_bytes, now_ms)   # (unrecordQuotaSensor)
        throttle = max(request, bandwidth)
        if throttle:   # KafkaApis: requestHelper.throttle(quotas.<the quota that decided>, ...)
            self.throttle(bandwidth_key if bandwidth > request else REQUEST_PERCENTAGE, client_id, throttle, now_ms)
        return throttle

    def unrecord(self, key: str, client_id: str | None, value: float, now_ms: float, user: str = ANONYMOUS) -> None:
        """Take back ``value`` recorded at ``now_ms`` (a negative record, as Kafka's ``unrecordQuotaSensor``)."""
        found = self.quota_metric_tags(key, user, client_id or "")
        rate = self.sensors.get((key, *found[1])) if found is not None else None
        if rate is not None:
            rate.record(-value, now_ms)

    def max_value_in_quota_window(self, key: str, client_id: str | None, user: str = ANONYMOUS) -> float | None:
        """Kafka's ``getMaxValueInQuotaWindow``: the most a client may take at once without a certain
        throttle, ``quota * (quota.window.num - 1) * quota.window.size.seconds``; None without a quota.
        A consumer's Fetch is capped to it."""
        found = self.find_quota(key, user, client_id or "")
        if found is None:
            return None
        return found[0] * (self.samples - 1) * self.window_ms / 1000

    # -- AlterClientQuotas / DescribeClientQuotas -------------------------------------------

    @staticmethod
    def validate_entity(components) -> Entity:
        types = [t for t, _ in components]
        if not types:
            raise ValueError("Invalid empty client quota entity")
        if len(set(types)) != len(types):
            raise ValueError(f"Duplicate entity type in client quota entity {types}")
        for t in types:
            if t == "ip":
                raise ValueError("ip quotas (KIP-612 connection rates) are not supported by the mini broker")
            if t not in (USER, CLIENT_ID):
                raise ValueError(f"Unexpected client quota entity type: {t}")
        return entity_of(components)

    @staticmethod
    def validate_op(entity: Entity, key: str, value: float, remove: bool) -> None:
        spec = QUOTA_KEYS.get(key)
        if spec is None:
            raise ValueError(f"Invalid configuration key {key}")
        if remove:
            return
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"Quota {key} must be a positive number, not {value}")
        if spec[1] and value != int(value):
            raise ValueError(f"Configuration {key} must be a Long value")

    async def alter(self, entity: Entity, ops: list[tuple[str, float, bool]]) -> None:
        """Apply validated ops to one entity and persist it (cluster mode: ZooKeeper, then a change
        notification that every broker, this one included, follows)."""
        values = dict(self.quotas.get(entity, {}))
        for key, value, remove in ops:
            if remove:
                values.pop(key, None)
            else:
                values[key] = float(value)
        if self.in_cluster:
            await asyncio.to_thread(self._write_zk, entity, values)
        self._set(entity, values)
        if not self.in_cluster:
            self._save_file()

    def _set(self, entity: Entity, values: dict[str, float]) -> None:
        if values:
            self.quotas[entity] = values
        else:
            self.quotas.pop(entity, None)
        # measurements start over when quotas change (Kafka updates the sensors' bounds in place)
        self.sensors.clear()

    def describe(self, components: list[tuple[str, int, str | None]], strict: bool) -> list[tuple[Entity, dict]]:
        """The entities matching the filter: (entity type, match type 0 exact/1 default/2 specified, name)."""
        for t, match_type, _ in components:
            if t not in (USER, CLIENT_ID, "ip"):
                raise ValueError(f"Custom entity type '{t}' not supported")
            if match_type not in (0, 1, 2):
                raise ValueError(f"Unexpected match type {match_type}")
        if len({t for t, _, _ in components}) != len(components):
            raise ValueError("Duplicate filter component entity type")
        out = []
        for entity, values in sorted(self.quotas.items(), key=lambda kv: str(kv[0])):
            names = dict(entity)
            if strict and set(names) != {t for t, _, _ in components}:
                continue
            ok = True
            for t, match_type, match in components:
                if t not in names:
                    ok = False
                elif match_type == 0:
                    ok = names[t] == match
                elif match_type == 1:
                    ok = names[t] is None
                else:
                    ok = names[t] is not None
                if not ok:
                    break
            if ok:
                out.append((entity, dict(values)))
        return out

    # -- storage -------------------------------------------------------------------------

    def _file(self) -> str:
        return os.path.join(self.log_dir, QUOTA_FILE)

    def _load_file(self) -> None:
        data = read_state_file(self._file(), "client quotas")
        if data is None:
            return
        for item in data.get("quotas", []):
            self.quotas[entity_of((t, n) for t, n in item["entity"])] = {k: float(v) for k, v in item["values"].items()}

    def _save_file(self) -> None:
        data = {"version": 1, "quotas": [{"entity": [list(c) for c in e], "values": v} for e, v in self.quotas.items()]}
        write_state_file(self._file(), data)

    @staticmethod
    def zk_entity_path(entity: Entity) -> str:
        """``clients/<c>``, ``users/<u>`` or ``users/<u>/clients/<c>`` (the default: ``<default>``)."""
        names = dict(entity)
        name = lambda n: DEFAULT if n is None else n  # noqa: E731
        if USER in names and CLIENT_ID in names:
            return f"users/{name(names[USER])}/clients/{name(names[CLIENT_ID])}"
        if USER in names:
            return f"users/{name(names[USER])}"
        return f"clients/{name(names[CLIENT_ID])}"

    def _write_zk(self, entity: Entity, values: dict[str, float]) -> None:
        zk = self.broker.zk_client
        path = "/config/" + self.zk_entity_path(entity)
        try:   # the entity's other keys stay (a user's SCRAM credentials live in the same znode)
            kept = {k: v for k, v in zd.decode_topic_config(zk.zk.get(path)[0]).items() if k not in QUOTA_KEYS}
        except NoNodeError:
            kept = {}
        zk.set_or_create_entity_configs(path, {**kept, **{k: _config_string(k, v) for k, v in values.items()}})
        zk.create_config_change_notification(self.zk_entity_path(entity))

    def load_zk(self) -> None:
        """Read every quota from ZooKeeper (at start and on each client or user change notification)."""
        kz = self.broker.zk_client.zk
        found: dict[Entity, dict[str, float]] = {}
        unname = lambda n: None if n == DEFAULT else n  # noqa: E731

        def read(path, entity):
            try:
                data, _ = kz.get(path)
            except NoNodeError:
                return
            values = {k: float(v) for k, v in zd.decode_topic_config(data).items() if k in QUOTA_KEYS}
            if values:
                found[entity] = values

        def children(path):
            try:
                return kz.get_children(path)
            except NoNodeError:
                return []

        for c in children("/config/clients"):
            read(f"/config/clients/{c}", entity_of([(CLIENT_ID, unname(c))]))
        for u in children("/config/users"):
            read(f"/config/users/{u}", entity_of([(USER, unname(u))]))
            for c in children(f"/config/users/{u}/clients"):
                read(f"/config/users/{u}/clients/{c}", entity_of([(USER, unname(u)), (CLIENT_ID, unname(c))]))
        if found != self.quotas:
            self.quotas = found
            self.sensors.clear()
            log.info("client quotas now %s", {self.zk_entity_path(e): v for e, v in found.items()})


def _config_string(key: str, value: float) -> str:
    return str(int(value)) if QUOTA_KEYS[key][1] else repr(float(value))
