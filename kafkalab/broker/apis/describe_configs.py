"""DescribeConfigs (key 32), versions 1-4: the configs of topics and brokers.

For each config: its effective value, whether it is read-only, and where the
value comes from (``config_source``, KIP-226):

  DYNAMIC_TOPIC_CONFIG (1)  the topic has an override (CreateTopics, AlterConfigs)
  STATIC_BROKER_CONFIG (4)  the broker was started with a non-default value
                            (``kafkalab.mini(**{"log.retention.ms": ...})``, ``--config``)
  DEFAULT_CONFIG (5)        Kafka's built-in default

``synonyms`` (when asked) list every place the value could come from, most
specific first: ``retention.ms`` (the topic override), ``log.retention.ms``,
``log.retention.minutes``, ``log.retention.hours`` (the broker's). This is what
``kafka-configs --describe --all`` prints and what confluent-kafka's
``AdminClient.describe_configs`` / kafka-python's ``KafkaAdminClient.describe_configs``
return.

v0   not served (it had is_default instead of config_source)
v1   + include_synonyms, config_source, synonyms (KIP-226)
v2   same as v1
v3   + include_documentation, config_type, documentation (KIP-569)
v4   flexible
Resources: TOPIC (2) by name, BROKER (4) by this broker's id ("" = the cluster-wide
dynamic defaults, which the mini broker does not have: an empty list). BROKER_LOGGER
(8), CLIENT_METRICS (16) and GROUP (32) get INVALID_REQUEST. All broker configs
are read-only here: no dynamic broker configs.
"""
from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse

from ..server.admin_manager import ConfigResourceType
from ..server.config import BROKER_CONFIGS, ConfigDescription, topic_configs
from ..server.metadata_mode import MetadataMode
from ..common.errors import ErrorCode, KafkaError
from ..coordinator.group.group_config import GROUP_CONFIGS
from ..security.auth_helper import AclOperation, ResourceType, authorize, authorize_cluster
from . import api

#: the documentation of the group configs that override no broker config
GROUP_CONFIG_DOCS = {
    "share.auto.offset.reset": "KIP-932: where a share group starts reading a partition it has not read yet "
                               "(earliest, latest or by_duration:<PnDTnHnMn.nS>)",
    "share.isolation.level": "KIP-932: whether a share group reads aborted transactional records (read_uncommitted)",
}


def config_entry(desc: ConfigDescription, include_synonyms: bool = False,
                 include_documentation: bool = False) -> dict:
    """One DescribeConfigsResourceResult."""
    sensitive = desc.definition.type == "password"   # Kafka's PASSWORD configs (ssl.key.password, ...): value null
    return {
        "name": desc.name,
        "value": None if sensitive else desc.value,
        "read_only": desc.read_only,
        "config_source": int(desc.source),
        "is_default": desc.is_default,
        "is_sensitive": sensitive,
        "synonyms": [{"name": s.name, "value": None if sensitive else s.value, "source": int(s.source)}
                     for s in desc.synonyms] if include_synonyms else [],
        "config_type": desc.definition.type_id,
        "documentation": desc.definition.doc if include_documentation else None,
    }


def topic_config_descriptions(broker, log_config, keys=None) -> list[ConfigDescription]:
    """Every topic config of the broker's mode (Kafka 3.9's in ZooKeeper mode and standalone, 4.x's in KRaft), or
    the asked ``keys`` that exist, sorted by name."""
    known = topic_configs(broker.metadata_mode is MetadataMode.KRAFT)
    names = sorted(known) if keys is None else [k for k in dict.fromkeys(keys) if k in known]
    return [log_config.describe(name) for name in names]


def broker_id_of(resource_name: str) -> int:
    try:
        return int(resource_name)
    except (TypeError, ValueError):
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Broker id must be an integer, but it is: {resource_name}") from None


def describe_resource(broker, resource_type: int, name: str, keys) -> list[ConfigDescription]:
    if resource_type == ConfigResourceType.TOPIC:
        topic = broker.admin_manager.topic_for_configs(name)
        return topic_config_descriptions(broker, broker.admin_manager.log_config(topic), keys)
    if resource_type == ConfigResourceType.BROKER:
        if name in (None, ""):
            return []  # cluster-wide dynamic defaults: none on the mini broker
        if broker_id_of(name) != broker.broker_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unexpected broker id, expected {broker.broker_id} or empty string, but received {name}")
        names = sorted(BROKER_CONFIGS) if keys is None else [k for k in dict.fromkeys(keys) if k in BROKER_CONFIGS]
        return [broker.config.describe(n) for n in names]
    try:
        kind = ConfigResourceType(resource_type).name
    except ValueError:
        kind = str(resource_type)
    raise KafkaError(ErrorCode.INVALID_REQUEST,
                     f"Unsupported resource type: {kind} (the mini broker describes TOPIC and BROKER configs)")


def group_config_entries(broker, group_id: str, keys, include_docs: bool) -> list[dict]:
    """A GROUP resource's configs (Kafka 4.x's GroupConfig): source GROUP_CONFIG (8) when the group sets it,
    STATIC_BROKER_CONFIG (4) when the broker config it overrides was set at start-up, DEFAULT_CONFIG (5) else."""
    if not group_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    out = []
    for c in broker.share_partition_manager.describe_group_configs(group_id):
        if keys is not None and c["name"] not in keys:
            continue
        doc = GROUP_CONFIGS[c["name"]].broker_config
        out.append({"name": c["name"], "value": c["value"], "read_only": False,
                    "config_source": {"group": 8, "broker": 4, "default": 5}[c["source"]],
                    "is_default": c["is_default"], "is_sensitive": False, "synonyms": [],
                    "config_type": 3 if c["type"] == "int" else 2,
                    "documentation": (f"this group's {doc}" if doc else GROUP_CONFIG_DOCS[c["name"]])
                    if include_docs else None})
    return out


def config_refusal(ctx, operation: AclOperation, resource_type: int, name: str) -> KafkaError | None:
    """Kafka 3.9's checks of the config APIs (``ConfigHelper``): DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster
    for a broker's configs, on the topic for a topic's, on the group for a group's (Kafka 4)."""
    if resource_type == ConfigResourceType.TOPIC:
        if not authorize(ctx, operation, ResourceType.TOPIC, name):
            return KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
    elif resource_type == ConfigResourceType.GROUP:
        if not authorize(ctx, operation, ResourceType.GROUP, name):
            return KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    elif not authorize_cluster(ctx, operation):
        return KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    return None


@api(DescribeConfigsRequest, DescribeConfigsResponse, versions=(1, 4))
async def handle_describe_configs(ctx, request):
    include_synonyms = bool(request.include_synonyms)
    include_docs = ctx.api_version >= 3 and bool(request.include_documentation)
    results = []
    for r in request.resources:
        try:
            refused = config_refusal(ctx, AclOperation.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
            if refused is not None:
                raise refused
            if r.resource_type == ConfigResourceType.GROUP:   # KIP-932 group configs (share.auto.offset.reset)
                results.append({"error_code": 0, "error_message": None, "resource_type": r.resource_type,
                                "resource_name": r.resource_name, "configs": group_config_entries(
                                    ctx.broker, r.resource_name, r.configuration_keys, include_docs)})
                continue
            descs = describe_resource(ctx.broker, r.resource_type, r.resource_name, r.configuration_keys)
            results.append({"error_code": 0, "error_message": None, "resource_type": r.resource_type,
                            "resource_name": r.resource_name,
                            "configs": [config_entry(d, include_synonyms, include_docs) for d in descs]})
        except KafkaError as exc:
            results.append({"error_code": exc.code, "error_message": exc.message, "resource_type": r.resource_type,
                            "resource_name": r.resource_name, "configs": []})
    return {"throttle_time_ms": 0, "results": results}
