"""``FeatureControlManager``: the cluster's finalized feature levels (KIP-584, KIP-778).

The most important one is ``metadata.version``: it says which record versions the controller may
write (a cluster is upgraded by raising it). A new KRaft cluster gets its levels from
``kafka-storage format``: the bootstrap metadata in ``bootstrap.checkpoint``, which the first active
controller writes to the empty metadata log as FeatureLevelRecords. The levels below are what Kafka
4.4's ``kafka-storage format`` picks by default (read from its ``Bootstrap metadata:`` line) where the
mini cluster implements them: ``metadata.version`` 33 (4.4-IV2), ``group.version`` 1,
``eligible.leader.replicas.version`` 1 and ``share.version`` 1. Kafka 4.4 also finalizes
``transaction.version`` 2, ``share.version`` 2 and ``streams.version`` 1
(:data:`KAFKA_BOOTSTRAP_FEATURE_LEVELS`), protocols the mini brokers do not serve: a cluster finalizes only
what its brokers implement (:data:`~kafkalab.broker.server.broker_features.SUPPORTED_FEATURES`), so a
Kafka 4.x client never turns on a protocol the mini cluster would then refuse.

What the level changes here: from level 7 (3.3-IV2) on, a broker is fenced and unfenced with
BrokerRegistrationChangeRecord instead of FenceBrokerRecord / UnfenceBrokerRecord
(``MetadataVersion.isBrokerRegistrationChangeRecordSupported``); the records' versions
(PartitionRecord v2, RegisterBrokerRecord v3) are those of 3.9+ levels.
"""
from __future__ import annotations

from ..broker.server.broker_features import MINIMUM_BOOTSTRAP_LEVEL, METADATA_VERSION, unsupported_levels
from ..metadata.api_message_and_version import ApiMessageAndVersion

__all__ = ["BOOTSTRAP_FEATURE_LEVELS", "KAFKA_BOOTSTRAP_FEATURE_LEVELS", "FeatureControlManager", "METADATA_VERSION",
           "MINIMUM_BOOTSTRAP_LEVEL"]

#: Kafka 4.4's ``kafka-storage format`` default bootstrap levels, in the order it writes them
KAFKA_BOOTSTRAP_FEATURE_LEVELS = [(METADATA_VERSION, 33), ("eligible.leader.replicas.version", 1),
                                  ("group.version", 1), ("share.version", 2), ("streams.version", 1),
                                  ("transaction.version", 2)]
#: the mini cluster's: Kafka 4.4's, less the levels its brokers do not implement (no transaction.version 2, no
#: streams.version, share.version 1)
BOOTSTRAP_FEATURE_LEVELS = [(METADATA_VERSION, 33), ("eligible.leader.replicas.version", 1), ("group.version", 1),
                            ("share.version", 1)]
#: MetadataVersion IBP_3_3_IV2: BrokerRegistrationChangeRecord fences and unfences
BROKER_REGISTRATION_CHANGE_RECORD_LEVEL = 7


class FeatureControlManager:
    def __init__(self):
        self.finalized: dict[str, int] = {}

    @property
    def metadata_version(self) -> int:
        """The finalized ``metadata.version`` level, 0 before the bootstrap records are replayed."""
        return self.finalized.get(METADATA_VERSION, 0)

    @property
    def bootstrapped(self) -> bool:
        return METADATA_VERSION in self.finalized

    def bootstrap_records(self, levels=None) -> list[ApiMessageAndVersion]:
        """What the first active controller writes to an empty log (``metadata.version`` first)."""
        levels = list(levels or BOOTSTRAP_FEATURE_LEVELS)
        mv = dict(levels).get(METADATA_VERSION, 0)
        if mv < MINIMUM_BOOTSTRAP_LEVEL:
            raise ValueError(f"metadata.version {mv} is below the minimum bootstrap level {MINIMUM_BOOTSTRAP_LEVEL}")
        refused = unsupported_levels(levels)
        if refused:
            raise ValueError("the mini cluster cannot finalize these feature levels: " + "; ".join(refused))
        return [ApiMessageAndVersion("FeatureLevelRecord", 0, {"name": name, "feature_level": level})
                for name, level in levels]

    def uses_broker_registration_change_record(self) -> bool:
        return self.metadata_version >= BROKER_REGISTRATION_CHANGE_RECORD_LEVEL

    def replay_feature_level(self, data: dict) -> None:
        if data["featureLevel"] == 0:
            self.finalized.pop(data["name"], None)
        else:
            self.finalized[data["name"]] = data["featureLevel"]
