"""CreateTopics (key 19), versions 2-7: create topics, with partitions, replicas and configs.

Per topic: ``num_partitions`` and ``replication_factor`` (-1: the broker's
``num.partitions`` / ``default.replication.factor``, KIP-464), or explicit
replica ``assignments`` (partition -> broker ids) instead of both; config
overrides (``configs``), checked like Kafka: an unknown name or a bad value is
INVALID_CONFIG naming the config. ``validate_only`` checks everything and
creates nothing. Errors per topic: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION
(illegal name, or a name that collides with an existing one once '.' and '_'
are treated alike), INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR (more
replicas than live brokers), INVALID_REPLICA_ASSIGNMENT, INVALID_REQUEST
(a topic twice in one request; counts and assignments both given).

v0-v1 not served (Kafka 4 dropped them too)
v2   + throttle_time_ms (v1 added validate_only and error messages)
v3   same as v2
v4   num_partitions/replication_factor may be -1 (KIP-464)
v5   flexible; the result carries the created topic's partition count,
     replication factor and every config with its source (KIP-525)
v6   same as v5 (quota violation errors, KIP-599: no quotas here)
v7   + topic id in the result (KIP-516)
``timeout_ms`` is ignored by a standalone broker: it creates the topic before it answers.
In cluster mode the topic is written to ZooKeeper and the controller creates
its partitions; as Kafka's ``DelayedCreatePartitions``, the answer waits up to
``timeout_ms`` until this broker's metadata shows a leader for every new
partition, and says REQUEST_TIMED_OUT for a topic still without them (the topic
exists all the same). ``timeout_ms`` <= 0 answers at once.
"""
from collections import Counter

from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse

from ..server.metadata_cache import NULL_UUID
from ..server.config import LogConfig
from ..common.errors import ErrorCode, KafkaError
from ..security.auth_helper import AclOperation, ResourceType, authorize_cluster, filter_by_authorized
from . import api
from .describe_configs import topic_config_descriptions

def _created(ctx, topic) -> dict:
    entry = {"name": topic.name, "topic_id": topic.topic_id, "error_code": 0, "error_message": None}
    if ctx.api_version >= 5:
        registered = ctx.broker.metadata_cache.get(topic.name) is topic
        log_config = (ctx.broker.admin_manager.log_config(topic) if registered
                      else LogConfig(ctx.broker.config, topic.configs))
        entry.update(num_partitions=topic.num_partitions, replication_factor=topic.replication_factor,
                     configs=[{"name": d.name, "value": d.value, "read_only": d.read_only,
                               "config_source": int(d.source), "is_sensitive": False}
                              for d in topic_config_descriptions(ctx.broker, log_config)])
    return entry


def _failed(name, exc: KafkaError) -> dict:
    return {"name": name, "topic_id": NULL_UUID, "error_code": exc.code, "error_message": exc.message}


@api(CreateTopicsRequest, CreateTopicsResponse, versions=(2, 7))
async def handle_create_topics(ctx, request):
    admin = ctx.broker.admin_manager
    counts = Counter(t.name for t in request.topics)
    results = []
    request_state = {}   # partitions this request added so far (max.partitions.per.request)
    # Kafka 3.9: CREATE on the cluster, else on each topic; DESCRIBE_CONFIGS to be shown the configs
    names = list(counts)
    allowed = (set(names) if authorize_cluster(ctx, AclOperation.CREATE, log_if_denied=False)
               else filter_by_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, names))
    shown = filter_by_authorized(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names, log_if_denied=False)
    for t in request.topics:
        if counts[t.name] > 1:
            results.append(_failed(t.name, KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Create topics request from client `{ctx.client_id}` contains multiple entries for the "
                f"following topics: {t.name}")))
            continue
        if t.name not in allowed:
            results.append(dict(_failed(t.name, KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                           "Authorization failed.")),
                                topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED if t.name not in shown
                                else 0))
            continue
        try:
            assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments or []}
            if len(assignments) != len(t.assignments or []):
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate partition index in replica assignments.")
            topic = await admin.create_topic_async(t.name, t.num_partitions, t.replication_factor,
                                                   {c.name: c.value for c in t.configs or []},
                                                   validate_only=bool(request.validate_only),
                                                   assignments=assignments, request_state=request_state)
            created = _created(ctx, topic)
            if t.name not in shown and ctx.api_version >= 5:   # KIP-525: the configs only with DESCRIBE_CONFIGS
                created.update(topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, configs=[],
                               num_partitions=-1, replication_factor=-1)
            results.append(created)
        except KafkaError as exc:
            results.append(_failed(t.name, exc))
    broker = ctx.broker
    if broker.in_cluster and not request.validate_only and request.timeout_ms > 0:
        created = [r["name"] for r in results if r["error_code"] == 0]
        admin = broker.admin_manager
        done = await admin.wait_for_metadata(lambda: all(admin.partitions_have_leaders(n) for n in created),
                                             request.timeout_ms)
        if not done:
            for r in results:
                if r["name"] in created and not admin.partitions_have_leaders(r["name"]):
                    r.update(error_code=ErrorCode.REQUEST_TIMED_OUT,
                             error_message=f"Timed out waiting for the partitions of {r['name']} to get leaders.")
    return {"throttle_time_ms": 0, "topics": results}
