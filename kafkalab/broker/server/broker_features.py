"""``BrokerFeatures`` and ``FinalizedFeatures``: feature versioning (KIP-584), as a broker reports it.

A *feature* is a named, versioned capability of the whole cluster (``metadata.version``,
``group.version``, ``transaction.version``, ...). Each broker **supports** a range of levels of each
feature (Kafka's ``BrokerFeatures.supportedFeatures``: what its code implements) and sends that range
when it registers; the controller **finalizes** one level per feature for the cluster (a KRaft cluster
gets them from ``kafka-storage format``, written to the metadata log as FeatureLevelRecords, and raises
them with ``kafka-features upgrade``). Only a finalized level switches a protocol on: a Kafka 4.x Java
producer uses transactions v2 only if ``transaction.version`` is finalized at 2, a KIP-848 consumer is
served only if ``group.version`` is at least 1.

Clients read both from ApiVersions v3+ (tagged fields): ``SupportedFeatures`` (v3 omits a feature
whose minimum is 0, KAFKA-17492), ``FinalizedFeatures`` (level 0, "off", is not listed) and
``FinalizedFeaturesEpoch`` (in KRaft the offset of the metadata the broker has applied, Kafka's
``KRaftMetadataCache.features``; ``-1``, unknown, where nothing is finalized).

What a Kafka node answers, measured here: a Kafka 4.4 combined node supports ``metadata.version``
7-33, ``kraft.version``, ``group.version`` 0-1, ``share.version`` 0-2, ``streams.version`` 0-1,
``transaction.version`` 0-2 and ``eligible.leader.replicas.version`` 0-1, and finalizes each at its
top level; a Kafka 3.9 ZooKeeper-mode broker lists no feature at all (epoch 0, its ``/feature``
znode's version). A mini KRaft broker supports, and its cluster finalizes, only what the mini broker
implements (:data:`SUPPORTED_FEATURES`); the ZooKeeper-mode and standalone mini brokers list none.
"""
from __future__ import annotations

from dataclasses import dataclass, field

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
#: the lowest metadata.version a KRaft cluster can bootstrap with (MetadataVersion.IBP_3_3_IV0)
MINIMUM_BOOTSTRAP_LEVEL = 4
#: ApiVersionsResponse.UNKNOWN_FINALIZED_FEATURES_EPOCH
UNKNOWN_FINALIZED_FEATURES_EPOCH = -1

#: what a mini KRaft broker implements of each feature, ``name -> (min, max)``:
#:   metadata.version up to 33 (4.4-IV2), the record versions it writes;
#:   kraft.version 0 only: a static controller quorum (``controller.quorum.voters``), no KIP-853 voter changes;
#:   group.version 1: KIP-848's consumer group protocol (ConsumerGroupHeartbeat);
#:   share.version 1: KIP-932's share groups (Kafka 4.4's level 2 adds what the mini broker does not serve);
#:   eligible.leader.replicas.version 1: the controller keeps KIP-966's ELR in its partition records;
#:   transaction.version 0: transactions v1 only (no KIP-890 part 2, no flexible ``__transaction_state`` records);
#:   streams.version 0: no KIP-1071 Streams group protocol.
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (MINIMUM_BOOTSTRAP_LEVEL, 33),
    KRAFT_VERSION: (0, 0),
    "group.version": (0, 1),
    "share.version": (0, 1),
    "eligible.leader.replicas.version": (0, 1),
    "transaction.version": (0, 0),
    "streams.version": (0, 0),
}


@dataclass(frozen=True)
class FinalizedFeatures:
    """The cluster's finalized levels as this broker last applied them (Kafka's ``FinalizedFeatures``)."""

    levels: dict[str, int] = field(default_factory=dict)
    epoch: int = UNKNOWN_FINALIZED_FEATURES_EPOCH


def registration_features(supported: dict[str, tuple[int, int]] = SUPPORTED_FEATURES) -> list[dict]:
    """BrokerRegistration's ``Features``: the range of each feature this broker supports."""
    return [{"name": name, "min_supported_version": low, "max_supported_version": high}
            for name, (low, high) in supported.items()]


def unsupported_levels(levels, supported: dict[str, tuple[int, int]] = SUPPORTED_FEATURES) -> list[str]:
    """Why each of ``levels`` (``(name, level)`` pairs) cannot be finalized here: an unknown feature or a level
    outside the supported range (Kafka's ``BrokerFeatures.incompatibleFeatures``)."""
    out = []
    for name, level in levels:
        if name not in supported:
            out.append(f"{name} is not a feature this broker knows (it knows {', '.join(sorted(supported))})")
        elif not supported[name][0] <= level <= supported[name][1] and level != 0:
            low, high = supported[name]
            out.append(f"{name} {level} is not supported (this broker implements {low}-{high})")
    return out


def api_versions_features(supported: dict[str, tuple[int, int]], finalized: FinalizedFeatures,
                          version: int) -> dict:
    """ApiVersionsResponse's feature fields (v3+) for ``version`` (Kafka's
    ``ApiVersionsResponse.createApiVersionsResponse``); empty before v3."""
    if version < 3:
        return {}
    return {
        "supported_features": [{"name": name, "min_version": low, "max_version": high}
                               for name, (low, high) in supported.items() if version >= 4 or low != 0],
        "finalized_features_epoch": finalized.epoch,
        "finalized_features": [{"name": name, "max_version_level": level, "min_version_level": level}
                               for name, level in finalized.levels.items() if level != 0],
    }
