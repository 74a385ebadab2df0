"""``ConfigAdminManager``: what a KRaft broker checks itself in AlterConfigs and IncrementalAlterConfigs before it
forwards the rest to the controller (Kafka's ``kafka.server.ConfigAdminManager.preprocess``).

Per resource of the request, answered by the broker (the resource is then left out of the forwarded request, and
the two answers are put back together in the request's order):

* a resource named twice: INVALID_REQUEST "Each resource must appear at most once." (both);
* a config named twice: INVALID_REQUEST "Error due to duplicate config keys";
* a null value (other than IncrementalAlterConfigs' DELETE): INVALID_REQUEST "Null value not supported for : x";
* BROKER with a name: it must be this broker's id ("Node id must be an integer, but it is: x",
  "Unexpected broker id, expected 1, but received 2"), since a client sends a broker's own configs to it;
* BROKER_LOGGER and BROKER configs: Kafka's broker changes its log levels itself, and checks dynamic broker configs
  (KIP-226) before forwarding them. A mini broker has neither: INVALID_REQUEST naming that (as in ZooKeeper mode);
* a resource type other than TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP: INVALID_REQUEST.
"""
from __future__ import annotations

from collections import Counter

from ..broker.apis.alter_configs import DYNAMIC_BROKER_CONFIGS_UNSUPPORTED
from ..broker.common.errors import ErrorCode

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
DELETE = 1


class ConfigAdminManager:
    def __init__(self, node_id: int):
        self.node_id = node_id

    def preprocess(self, resources, incremental: bool) -> dict[int, tuple[int, str]]:
        """The resources the broker answers itself: index in the request -> (error code, message)."""
        answered: dict[int, tuple[int, str]] = {}
        seen: dict[tuple[int, str], int] = {}
        for i, r in enumerate(resources):
            key = (r.resource_type, r.resource_name)
            if key in seen:
                for j in (seen[key], i):
                    answered[j] = (int(ErrorCode.INVALID_REQUEST), "Each resource must appear at most once.")
            seen[key] = i
        for i, r in enumerate(resources):
            if i in answered:
                continue
            error = self._check(r, incremental)
            if error is not None:
                answered[i] = (int(ErrorCode.INVALID_REQUEST), error)
        return answered

    def _check(self, r, incremental: bool) -> str | None:
        names = Counter(c.name for c in r.configs)
        if any(n > 1 for n in names.values()):
            return "Error due to duplicate config keys"
        nulls = [c.name for c in r.configs if c.value is None and not (incremental and c.config_operation == DELETE)]
        if nulls:
            return "Null value not supported for : " + ", ".join(nulls)
        if r.resource_type == BROKER:
            if r.resource_name:
                try:
                    broker_id = int(r.resource_name)
                except ValueError:
                    return f"Node id must be an integer, but it is: {r.resource_name}"
                if broker_id != self.node_id:
                    return f"Unexpected broker id, expected {self.node_id}, but received {r.resource_name}"
            return DYNAMIC_BROKER_CONFIGS_UNSUPPORTED
        if r.resource_type == BROKER_LOGGER:
            return DYNAMIC_BROKER_CONFIGS_UNSUPPORTED
        if r.resource_type not in (TOPIC, CLIENT_METRICS, GROUP):
            return f"Unknown resource type {r.resource_type}"
        return None
