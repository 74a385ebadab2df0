"""ClientQuotaManager on its own: Kafka's sampled rate, throttle time, precedence and filters."""
import math
import time

import pytest

from kafkalab.broker.server.client_quota_manager import (Avg, ClientQuotaManager, Rate, entity_of, PRODUCER_BYTE_RATE,
                                                         REQUEST_PERCENTAGE)


def test_rate_assumes_at_least_n_minus_1_full_windows():
    r = Rate(samples=11, window_ms=1000)
    r.record(1000, now_ms=0)
    assert r.window_size(500) == 10_500          # 0.5 s elapsed + 10 windows assumed
    assert r.measure(500) == pytest.approx(1000 / 10.5)


def test_rate_forgets_samples_older_than_all_windows():
    r = Rate(samples=2, window_ms=1000)
    r.record(500, 0)
    r.record(500, 1500)
    assert r.measure(1500) == pytest.approx(1000 / 1.5)
    assert r.measure(2100) == pytest.approx(500 / 1.6)   # the first sample (started at 0) has expired


def test_throttle_time_is_kafkas_formula(tmp_path):
    m = ClientQuotaManager(samples=11, window_s=1, log_dir=str(tmp_path))
    m._set(entity_of([("client-id", "p")]), {PRODUCER_BYTE_RATE: 1000})
    assert m.record_and_get_throttle_ms(PRODUCER_BYTE_RATE, "p", 5000, now_ms=0) == 0     # 5000/10 s = 500 B/s
    # 25000 B over 10 s = 2500 B/s: X = (2500 - 1000) / 1000 * 10000 ms
    assert m.record_and_get_throttle_ms(PRODUCER_BYTE_RATE, "p", 20000, now_ms=0) == 15_000
    assert m.record_and_get_throttle_ms(PRODUCER_BYTE_RATE, "other", 10**9, now_ms=0) == 0   # no quota


def test_request_percentage_throttle_is_capped_at_one_window(tmp_path):
    m = ClientQuotaManager(samples=11, window_s=1, log_dir=str(tmp_path))
    m._set(entity_of([("client-id", None)]), {REQUEST_PERCENTAGE: 1})
    assert m.record_and_get_throttle_ms(REQUEST_PERCENTAGE, "x", 1000, now_ms=0) == 1000


def test_precedence_most_specific_first(tmp_path):
    m = ClientQuotaManager(log_dir=str(tmp_path))
    for entity, value in [([("client-id", None)], 1), ([("client-id", "c")], 2), ([("user", None)], 3),
                          ([("user", None), ("client-id", "c")], 4), ([("user", "ANONYMOUS")], 5),
                          ([("user", "ANONYMOUS"), ("client-id", "c")], 6)]:
        m._set(entity_of(entity), {PRODUCER_BYTE_RATE: value})
        assert m.find_quota(PRODUCER_BYTE_RATE, "ANONYMOUS", "c")[0] == value
    assert m.find_quota(PRODUCER_BYTE_RATE, "ANONYMOUS", "d") == (5, ("ANONYMOUS", ""))
    assert m.find_quota(PRODUCER_BYTE_RATE, "bob", "d") == (3, ("bob", ""))


def test_shared_client_id_quota_is_measured_together(tmp_path):
    m = ClientQuotaManager(log_dir=str(tmp_path))
    m._set(entity_of([("client-id", None)]), {PRODUCER_BYTE_RATE: 100})
    m.record_and_get_throttle_ms(PRODUCER_BYTE_RATE, "a", 900, 0)
    assert m.record_and_get_throttle_ms(PRODUCER_BYTE_RATE, "b", 900, 0) == 0     # each client id its own sensor
    m._set(entity_of([("client-id", None)]), {PRODUCER_BYTE_RATE: 100})
    m._set(entity_of([("user", "ANONYMOUS")]), {PRODUCER_BYTE_RATE: 100})
    m.record_and_get_throttle_ms(PRODUCER_BYTE_RATE, "a", 900, 0)
    assert m.record_and_get_throttle_ms(PRODUCER_BYTE_RATE, "b", 900, 0) > 0      # the user's quota is shared


def test_describe_filters(tmp_path):
    m = ClientQuotaManager(log_dir=str(tmp_path))
    m._set(entity_of([("client-id", "a")]), {PRODUCER_BYTE_RATE: 1})
    m._set(entity_of([("client-id", None)]), {PRODUCER_BYTE_RATE: 2})
    m._set(entity_of([("user", "u"), ("client-id", "a")]), {PRODUCER_BYTE_RATE: 3})
    values = lambda comps, strict=False: sorted(v[PRODUCER_BYTE_RATE] for _, v in m.describe(comps, strict))  # noqa
    assert values([]) == [1, 2, 3]
    assert values([("client-id", 0, "a")]) == [1, 3]
    assert values([("client-id", 0, "a")], strict=True) == [1]
    assert values([("client-id", 1, None)]) == [2]
    assert values([("client-id", 2, None)]) == [1, 3]
    assert values([("user", 2, None)]) == [3]
    with pytest.raises(ValueError):
        m.describe([("group", 0, "x")], False)


@pytest.mark.parametrize("key, value, message", [("nope", 1, "Invalid configuration key"),
                                                 (PRODUCER_BYTE_RATE, 1.5, "Long value"),
                                                 (PRODUCER_BYTE_RATE, 0, "positive"),
                                                 (REQUEST_PERCENTAGE, -1, "positive")])
def test_bad_ops_are_refused(key, value, message):
    with pytest.raises(ValueError, match=message):
        ClientQuotaManager.validate_op((), key, value, False)


@pytest.mark.parametrize("components", [[], [("user", "a"), ("user", "b")], [("ip", "1.2.3.4")], [("group", "g")]])
def test_bad_entities_are_refused(components):
    with pytest.raises(ValueError):
        ClientQuotaManager.validate_entity(components)


async def _alter(m, entity, ops):
    await m.alter(entity, ops)


def test_standalone_quotas_survive_a_restart(tmp_path):
    import asyncio
    m = ClientQuotaManager(log_dir=str(tmp_path))
    asyncio.run(m.alter(entity_of([("client-id", "p")]), [(PRODUCER_BYTE_RATE, 500, False)]))
    assert ClientQuotaManager(log_dir=str(tmp_path)).quotas == {(("client-id", "p"),): {PRODUCER_BYTE_RATE: 500.0}}
    asyncio.run(m.alter(entity_of([("client-id", "p")]), [(PRODUCER_BYTE_RATE, 0, True)]))
    assert ClientQuotaManager(log_dir=str(tmp_path)).quotas == {}


def test_rate_keeps_a_sample_whose_last_event_is_recent():
    # Kafka's SampledStat purges a sample by its last event, not its start: one overlapping sample is kept
    r = Rate(samples=2, window_ms=1000)
    r.record(500, 0)
    r.record(500, 900)
    assert r.window_size(2100) == 2100 and r.measure(2100) == pytest.approx(1000 / 2.1)
    assert r.measure(2900) == 0          # its last event is now two windows old


def test_a_throttled_fetch_is_taken_back_and_fetches_are_capped(tmp_path):
    from kafkalab.broker.server.client_quota_manager import CONSUMER_BYTE_RATE
    m = ClientQuotaManager(samples=3, window_s=1, log_dir=str(tmp_path))
    m._set(entity_of([("client-id", "c")]), {CONSUMER_BYTE_RATE: 1000})
    # getMaxValueInQuotaWindow: quota x (samples - 1) x window
    assert m.max_value_in_quota_window(CONSUMER_BYTE_RATE, "c") == 2000
    assert m.max_value_in_quota_window(CONSUMER_BYTE_RATE, "other") is None
    assert m.throttle_for_request("Fetch", "c", 100, 1500, 0.0, False) == 0        # 1500 B / 2 s
    # 2500 B / 2 s = 1250 B/s: throttled (0.25 x 2 s), and the 1000 B of the emptied response taken back
    assert m.throttle_for_request("Fetch", "c", 100, 1000, 0.0, False) == 500
    rate = m.sensors[(CONSUMER_BYTE_RATE, "", "c")]
    assert sum(s[1] for s in rate.samples) == 1500
    assert m.throttle_for_request("Fetch", "c", 100, 10**6, 0.0, True) == 0          # a follower: exempt


# -- metrics: kafka.server:type=Produce|Fetch|Request,user=..,client-id=.. (Kafka's ClientQuotaManager sensors) ----

class _Broker:
    """What ClientQuotaManager reads of a broker, with a metrics registry."""
    in_cluster = False

    def __init__(self, log_dir, samples=11):
        from kafkalab.broker.common.metrics import MetricsRegistry
        self.config = {"quota.window.num": samples, "quota.window.size.seconds": 1}
        self.log_dir = str(log_dir)
        self.metrics = MetricsRegistry()


def _metric(broker, quota_type, name, **tags):
    from kafkalab.broker.common.metrics import MetricName
    tags = {k.replace("_", "-"): v for k, v in tags.items()}
    metric = broker.metrics.get(MetricName.of_kafka_metric("kafka.server", quota_type, name, tags))
    return None if metric is None else metric.value


def test_no_sensor_and_no_metric_until_a_quota_of_the_kind_is_set(tmp_path):
    broker = _Broker(tmp_path)
    m = ClientQuotaManager(broker)
    assert m.throttle_for_request("Produce", "p", 10_000, 0, 0.001, False) == 0
    assert len(broker.metrics) == 0 and m.sensors == {}              # quotasEnabled is false: nothing recorded
    m._set(entity_of([("client-id", "p")]), {PRODUCER_BYTE_RATE: 1000})
    m.throttle_for_request("Produce", "other", 500, 0, 0.001, False)
    # every client is measured once producer quotas are on, a client no quota applies to against no bound;
    # client-id quotas only: the tags are ("", client id), so the MBean has no user
    assert _metric(broker, "Produce", "byte-rate", client_id="other") == pytest.approx(500 / 10, rel=0.05)
    assert math.isnan(_metric(broker, "Produce", "throttle-time", client_id="other"))   # Avg of nothing
    assert _metric(broker, "Request", "request-time", client_id="other") is None     # no request quota is set
    assert _metric(broker, "Fetch", "byte-rate", client_id="other") is None


def test_byte_rate_and_throttle_time_are_the_quota_managers_own_rate_and_throttles(tmp_path):
    broker = _Broker(tmp_path, samples=3)
    m = ClientQuotaManager(broker)
    m._set(entity_of([("client-id", "p")]), {PRODUCER_BYTE_RATE: 1000})
    given = [m.throttle_for_request("Produce", "p", 1500, 0, 0.0, False) for _ in range(4)]
    assert given[0] == 0 and all(t > 0 for t in given[1:])           # 1500 B over >= 2 s is within; then over
    key = (PRODUCER_BYTE_RATE, "", "p")
    now_ms = time.monotonic() * 1000
    assert _metric(broker, "Produce", "byte-rate", client_id="p") == pytest.approx(m.sensors[key].measure(now_ms),
                                                                                   rel=0.05)
    assert [t for _, t in m.throttles[key]] == given[1:]               # the throttles the responses carried
    assert _metric(broker, "Produce", "throttle-time", client_id="p") == pytest.approx(sum(given[1:]) / 3)


def test_throttle_time_is_recorded_for_the_quota_that_decided(tmp_path):
    broker = _Broker(tmp_path)
    m = ClientQuotaManager(broker)
    m._set(entity_of([("client-id", "p")]), {PRODUCER_BYTE_RATE: 1000, REQUEST_PERCENTAGE: 1})
    throttle = m.throttle_for_request("Produce", "p", 100, 0, 1.0, False)    # 1 s of handler time: 100 % > 1 %
    assert throttle == 1000                                                   # capped at one window
    assert _metric(broker, "Request", "throttle-time", client_id="p") == 1000
    assert math.isnan(_metric(broker, "Produce", "throttle-time", client_id="p"))   # the byte rate was within
    assert _metric(broker, "Request", "request-time", client_id="p") == pytest.approx(100 / 10, rel=0.01)  # % / s


def test_user_quota_tags_and_the_avg_window(tmp_path):
    broker = _Broker(tmp_path)
    m = ClientQuotaManager(broker)
    m._set(entity_of([("user", "ANONYMOUS")]), {PRODUCER_BYTE_RATE: 10})
    m.throttle_for_request("Produce", "a", 1000, 0, 0.0, False)
    assert _metric(broker, "Produce", "byte-rate", user="ANONYMOUS") > 10    # shared by every client of the user
    assert _metric(broker, "Produce", "byte-rate", client_id="a") is None


def test_avg_is_kafkas_sampled_mean():
    a = Avg(samples=2, window_ms=30_000)
    assert math.isnan(a.measure(0))
    a.record(100, 0)
    a.record(300, 1_000)
    assert a.measure(1_000) == 200
    a.record(600, 40_000)                       # a second sample
    assert a.measure(40_000) == pytest.approx(1000 / 3)
    assert a.measure(61_000) == 600             # the first sample's last event is 60 s old: reset
    assert math.isnan(a.measure(100_000))
