"""``ConfigurationControlManager``: dynamic configs as ConfigRecords (Kafka's
``org.apache.kafka.controller.ConfigurationControlManager``).

In ZooKeeper mode a topic's overrides were the znode ``/config/topics/<t>`` plus a change notification;
in KRaft mode each change is a **ConfigRecord** (resource type, resource name, config name, value; a
null value deletes the override). Every controller and every broker replays them; a broker applies a
topic's new overrides to its live logs (:class:`~kafkalab.kraft.broker_metadata_publisher.BrokerMetadataPublisher`).

* **IncrementalAlterConfigs** (KIP-339): per resource, each operation is applied to the current value
  of its config: SET, DELETE (null), APPEND / SUBTRACT (list configs only, else INVALID_CONFIG "Can't
  APPEND to key x because its type is not LIST."; without an override they start from the built-in
  default). A record is made only for a value that changes (for BROKER resources always, as Kafka does
  so that brokers reload).
* **AlterConfigs** (legacy): the configs sent replace the resource's whole set: a record per changed
  value, and a null record for every current override not sent.
* **validation**, on the resource's complete new set, before anything is written (all or nothing per
  resource): TOPIC: a legal, non-empty name (INVALID_REQUEST "Default topic resources are not
  allowed."), known configs with valid values (INVALID_CONFIG), then the topic must exist
  (UNKNOWN_TOPIC_OR_PARTITION); BROKER: the name is "" (the cluster-wide default) or a broker id
  (INVALID_REQUEST otherwise); GROUP (KIP-932): a non-empty name, known group configs with valid
  values; any other type: INVALID_REQUEST "Unknown resource type ...".

Topic overrides are kept where the topic is (``TopicControlInfo.configs`` of the
:class:`ReplicationControlManager`); BROKER and GROUP configs here.

Simplified: BROKER configs are recorded and replayed, but a mini broker has no dynamic broker configs
(KIP-226) and does not apply them; Kafka's brokers first check them (``ConfigAdminManager``) and
BROKER_LOGGER resources are handled by the broker itself (here: INVALID_REQUEST).
"""
from __future__ import annotations

from ..broker.common.errors import ErrorCode, KafkaError
from ..broker.server.admin_manager import AlterConfigOp, ConfigResourceType
from ..broker.server.config import TOPIC_CONFIGS, LogConfig, to_string
from ..broker.common.topic import validate_topic_name
from ..broker.coordinator.group.group_config import validate as validate_group_config
from ..metadata.api_message_and_version import ApiMessageAndVersion

TOPIC, BROKER, GROUP = int(ConfigResourceType.TOPIC), int(ConfigResourceType.BROKER), int(ConfigResourceType.GROUP)


def _each(resources, records_of) -> tuple[list[ApiMessageAndVersion], list[dict]]:
    """Each resource's records, or its error: one resource's bad config does not stop the others'."""
    records, results = [], []
    for r in resources:
        try:
            records += records_of(r)
            results.append(_result(r))
        except KafkaError as exc:
            results.append(_result(r, exc))
    return records, results


class ConfigurationControlManager:
    def __init__(self, replication, group_config_bounds: dict[str, int] | None = None):
        self.replication = replication
        #: the controller's group.*.min/max.* configs (Kafka's defaults where not given): a GROUP config's bounds
        self.group_config_bounds = dict(group_config_bounds or {})
        #: (resource type, resource name) -> configs, for BROKER and GROUP resources
        self.config_data: dict[tuple[int, str], dict[str, str]] = {}

    # -- state ---------------------------------------------------------------------------------------

    def configs(self, resource_type: int, name: str) -> dict[str, str]:
        if resource_type == TOPIC:
            topic_id = self.replication.topics_by_name.get(name)
            return dict(self.replication.topics[topic_id].configs) if topic_id is not None else {}
        return dict(self.config_data.get((resource_type, name), {}))

    def replay(self, data: dict) -> None:
        """A committed ConfigRecord (JSON field names). TOPIC records are the ReplicationControlManager's."""
        key = (data["resourceType"], data["resourceName"])
        if key[0] == TOPIC:
            return
        configs = self.config_data.setdefault(key, {})
        if data["value"] is None:
            configs.pop(data["name"], None)
        else:
            configs[data["name"]] = data["value"]
        if not configs:
            del self.config_data[key]

    # -- the requests ----------------------------------------------------------------------------------

    def incremental_alter_configs(self, resources) -> tuple[list[ApiMessageAndVersion], list[dict]]:
        """IncrementalAlterConfigs' resources -> (records, one result per resource)."""
        return _each(resources, self._incremental)

    def legacy_alter_configs(self, resources) -> tuple[list[ApiMessageAndVersion], list[dict]]:
        """AlterConfigs' resources -> (records, one result per resource)."""
        return _each(resources, self._legacy)

    def _incremental(self, r) -> list[ApiMessageAndVersion]:
        _check_duplicates([c.name for c in r.configs])
        current = self.configs(r.resource_type, r.resource_name)
        new = dict(current)
        changed: dict[str, str | None] = {}
        for c in r.configs:
            try:
                op = AlterConfigOp(c.config_operation)
            except ValueError:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown alter config operation {c.config_operation} "
                                 f"for {c.name}") from None
            value = new.get(c.name)
            if op == AlterConfigOp.SET:
                value = c.value
            elif op == AlterConfigOp.DELETE:
                value = None
            else:
                if not _is_list(r.resource_type, c.name):
                    raise KafkaError(ErrorCode.INVALID_CONFIG, f"Can't {op.name} to key {c.name} because its type "
                                     "is not LIST.")
                parts = [p for p in (value if value is not None else _default(r.resource_type, c.name)).split(",")
                         if p]
                for item in (c.value or "").split(","):
                    if op == AlterConfigOp.APPEND and item not in parts:
                        parts.append(item)
                    elif op == AlterConfigOp.SUBTRACT and item in parts:
                        parts.remove(item)
                value = ",".join(parts)
            if value is None:
                new.pop(c.name, None)
            else:
                new[c.name] = value
            if value != current.get(c.name) or r.resource_type == BROKER:
                changed[c.name] = value
        self._validate(r.resource_type, r.resource_name, new, changed)
        return [_record(r, name, value) for name, value in changed.items()]

    def _legacy(self, r) -> list[ApiMessageAndVersion]:
        _check_duplicates([c.name for c in r.configs])
        current = self.configs(r.resource_type, r.resource_name)
        sent = {c.name: c.value for c in r.configs}
        changed = {n: v for n, v in sent.items() if v != current.get(n) or r.resource_type == BROKER}
        deleted = {n: None for n in current if n not in sent}
        new = {n: v for n, v in sent.items() if v is not None}
        self._validate(r.resource_type, r.resource_name, new, changed)
        return [_record(r, n, v) for n, v in {**changed, **deleted}.items()]

    def _validate(self, resource_type: int, name: str, new: dict, changed: dict) -> None:
        """Kafka's ``ControllerConfigurationValidator``, then the existence check."""
        if resource_type == TOPIC:
            if not name:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
            validate_topic_name(name)
            for key in new:
                if key not in TOPIC_CONFIGS:
                    raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
            try:
                LogConfig.validate_overrides(new)
            except ValueError as exc:
                raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
            if name not in self.replication.topics_by_name:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        elif resource_type == BROKER:
            if name:
                try:
                    broker_id = int(name, 10)
                except ValueError:
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     "Unable to parse broker name as a base 10 number.") from None
                if broker_id < 0:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid negative broker ID.")
        elif resource_type == GROUP:
            if not name:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
            validate_group_config(new, self.group_config_bounds)
        else:
            try:
                kind = ConfigResourceType(resource_type).name
            except ValueError:
                kind = str(resource_type)
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")


def _check_duplicates(names: list[str]) -> None:
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys: {', '.join(dup)}")


def _is_list(resource_type: int, name: str) -> bool:
    return resource_type == TOPIC and name in TOPIC_CONFIGS and TOPIC_CONFIGS[name].type == "list"


def _default(resource_type: int, name: str) -> str:
    return to_string(TOPIC_CONFIGS[name].default) if resource_type == TOPIC else ""


def _record(r, name: str, value: str | None) -> ApiMessageAndVersion:
    return ApiMessageAndVersion("ConfigRecord", 0, {"resource_type": r.resource_type,
                                                    "resource_name": r.resource_name, "name": name, "value": value})


def _result(r, exc: KafkaError | None = None) -> dict:
    return {"error_code": int(exc.code) if exc else 0, "error_message": exc.message if exc else None,
            "resource_type": r.resource_type, "resource_name": r.resource_name}
