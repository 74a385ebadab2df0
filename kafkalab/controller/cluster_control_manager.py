"""``ClusterControlManager`` and ``BrokerHeartbeatManager``: the brokers a KRaft controller knows.

A broker in KRaft mode has no ZooKeeper session. Instead (KIP-631):

1. it **registers** (BrokerRegistration) with the active controller, which appends a
   RegisterBrokerRecord; the record's offset becomes the **broker epoch**, and the broker starts
   *fenced* (it may not lead partitions, clients are not sent to it);
2. it **heartbeats** (BrokerHeartbeat, every ``broker.heartbeat.interval.ms``) with how far it has
   read the metadata log; once that is at least the offset of its RegisterBrokerRecord, the
   controller **unfences** it (a BrokerRegistrationChangeRecord with fenced=-1, or UnfenceBrokerRecord
   before metadata.version 3.3-IV2);
3. when its heartbeats stop for ``broker.session.timeout.ms``, the active controller **fences** it
   (fenced=1 / FenceBrokerRecord) and moves partition leadership off it
   (:class:`~kafkalab.controller.replication_control_manager.ReplicationControlManager`);
4. a broker that shuts down asks for it in its heartbeat (``WantShutDown``): a **controlled
   shutdown** (InControlledShutdown=1, leaders moved away), then ShouldShutDown once it leads nothing.

The registrations are state replayed from records on every controller; the heartbeat times are
not (Kafka's ``BrokerHeartbeatManager`` lives only on the active controller, and a newly active
controller gives every broker a fresh session).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..broker.common.errors import ErrorCode, KafkaError
from ..broker.server.broker_features import METADATA_VERSION
from ..metadata.api_message_and_version import ApiMessageAndVersion, uuid_of

#: RegisterBrokerRecord version for metadata.version 3.7-IV2 and later (log dirs in the record)
REGISTER_BROKER_RECORD_VERSION = 3
#: MetadataVersion IBP_3_7_IV2: brokers must name their log directories (KIP-858)
DIRECTORY_ASSIGNMENT_LEVEL = 19
#: MetadataVersion.MINIMUM_KRAFT_VERSION (IBP_3_0_IV1): what a broker naming no metadata.version range supports
MINIMUM_KRAFT_VERSION = 1
FENCE, UNFENCE, IN_CONTROLLED_SHUTDOWN = 1, -1, 1


@dataclass
class BrokerRegistration:
    id: int
    epoch: int
    incarnation_id: str
    listeners: list = field(default_factory=list)     # [{"name", "host", "port", "securityProtocol"}]
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    register_offset: int = -1                          # where its RegisterBrokerRecord is in the log
    log_dirs: list = field(default_factory=list)       # uuid.UUID of each of its log.dirs
    features: list = field(default_factory=list)       # [{"name", "minSupportedVersion", "maxSupportedVersion"}]

    def endpoint(self, listener: str | None = None) -> tuple[str, int] | None:
        for e in self.listeners:
            if listener is None or e["name"] == listener:
                return e["host"], e["port"]
        return None


@dataclass
class BrokerHeartbeatState:
    last_contact: float                                # time.monotonic() of its last heartbeat
    metadata_offset: int = -1
    controlled_shutdown_offset: int = -1


class BrokerHeartbeatManager:
    """The active controller's view of brokers' liveness (not replicated)."""

    def __init__(self, session_timeout_ms: int):
        self.session_timeout_s = session_timeout_ms / 1000
        self.brokers: dict[int, BrokerHeartbeatState] = {}

    def touch(self, broker_id: int, metadata_offset: int = -1, now: float | None = None) -> None:
        state = self.brokers.setdefault(broker_id, BrokerHeartbeatState(0.0))
        state.last_contact = time.monotonic() if now is None else now
        state.metadata_offset = max(state.metadata_offset, metadata_offset)

    def has_valid_session(self, broker_id: int, now: float | None = None) -> bool:
        state = self.brokers.get(broker_id)
        now = time.monotonic() if now is None else now
        return state is not None and now - state.last_contact < self.session_timeout_s

    def remove(self, broker_id: int) -> None:
        self.brokers.pop(broker_id, None)

    def expired(self, candidates, now: float | None = None) -> list[int]:
        """The brokers among ``candidates`` (unfenced ones) whose session has timed out."""
        now = time.monotonic() if now is None else now
        return [b for b in sorted(candidates)
                if b in self.brokers and now - self.brokers[b].last_contact >= self.session_timeout_s]


class ClusterControlManager:
    def __init__(self, cluster_id: str | None, features, session_timeout_ms: int = 9000):
        self.cluster_id = cluster_id
        self.features = features
        self.registrations: dict[int, BrokerRegistration] = {}
        self.session_timeout_ms = session_timeout_ms
        #: set while this controller is active (Kafka's ``activate``), None on a standby
        self.heartbeat_manager: BrokerHeartbeatManager | None = None

    # -- active or not ------------------------------------------------------------------------

    def activate(self) -> None:
        """Become active: every registered broker gets a fresh session (its last heartbeat went to the old leader)."""
        self.heartbeat_manager = BrokerHeartbeatManager(self.session_timeout_ms)
        for broker_id in self.registrations:
            self.heartbeat_manager.touch(broker_id)

    def deactivate(self) -> None:
        self.heartbeat_manager = None

    # -- generating records (the active controller) -----------------------------------------------

    def register_broker(self, request, new_broker_epoch: int) -> tuple[list[ApiMessageAndVersion], int]:
        """BrokerRegistration -> ([RegisterBrokerRecord], the broker epoch). KafkaError with Kafka's code if refused."""
        if self.cluster_id is not None and request.cluster_id != self.cluster_id:
            raise KafkaError(ErrorCode.INCONSISTENT_CLUSTER_ID,
                             f"Expected cluster ID {self.cluster_id}, but got cluster ID {request.cluster_id}")
        broker_id = request.broker_id
        incarnation = str(request.incarnation_id)
        existing = self.registrations.get(broker_id)
        if existing is not None and self.heartbeat_manager.has_valid_session(broker_id) \
                and existing.incarnation_id != incarnation:
            raise KafkaError(ErrorCode.DUPLICATE_BROKER_REGISTRATION,
                             "Another broker is registered with that broker id.")
        if getattr(request, "is_migrating_zk_broker", False):
            raise KafkaError(ErrorCode.BROKER_ID_NOT_REGISTERED, "Controller does not support registering ZK brokers.")
        log_dirs = list(getattr(request, "log_dirs", None) or [])
        if self.features.metadata_version >= DIRECTORY_ASSIGNMENT_LEVEL:
            if not log_dirs:
                raise KafkaError(ErrorCode.INVALID_REGISTRATION, "No directories specified in request")
            if len(set(log_dirs)) != len(log_dirs):
                raise KafkaError(ErrorCode.INVALID_REGISTRATION, "Duplicate directory ID in request")
        self._check_features(request.features or [])
        data = {"broker_id": broker_id, "is_migrating_zk_broker": False, "incarnation_id": request.incarnation_id,
                "end_points": [{"name": e.name, "host": e.host, "port": e.port,
                                "security_protocol": e.security_protocol} for e in request.listeners or []],
                "features": [{"name": f.name, "min_supported_version": f.min_supported_version,
                              "max_supported_version": f.max_supported_version} for f in request.features or []],
                "rack": request.rack, "log_dirs": log_dirs}
        if existing is not None and existing.incarnation_id == incarnation:
            # the same process registering again (its answer was lost): the same epoch, its state kept
            data.update(broker_epoch=existing.epoch, fenced=existing.fenced,
                        in_controlled_shutdown=existing.in_controlled_shutdown)
        else:
            data.update(broker_epoch=new_broker_epoch, fenced=True, in_controlled_shutdown=False)
            self.heartbeat_manager.remove(broker_id)
        self.heartbeat_manager.touch(broker_id)
        return ([ApiMessageAndVersion("RegisterBrokerRecord", REGISTER_BROKER_RECORD_VERSION, data)],
                data["broker_epoch"])

    def _check_features(self, features) -> None:
        """Kafka's ``processRegistrationFeature``: every finalized feature must be within the broker's supported
        range (a broker naming no ``metadata.version`` supports only level 1, a finalized feature it does not name
        only level 0); else UNSUPPORTED_VERSION, and the broker does not join."""
        supported = {f.name: (f.min_supported_version, f.max_supported_version) for f in features}
        supported.setdefault(METADATA_VERSION, (MINIMUM_KRAFT_VERSION, MINIMUM_KRAFT_VERSION))
        finalized = dict(self.features.finalized)
        for name, (low, high) in supported.items():
            level = finalized.pop(name, MINIMUM_KRAFT_VERSION if name == METADATA_VERSION else 0)
            if not low <= level <= high:
                raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, self._unsupported(name, level, low, high))
        for name, level in finalized.items():
            if level != 0:
                raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, self._unsupported(name, level, 0, 0))

    @staticmethod
    def _unsupported(name: str, level: int, low: int, high: int) -> str:
        return (f"Unable to register because the broker does not support finalized version {level} of {name}. "
                f"The broker wants a version between {low} and {high}, inclusive.")

    def check_broker_epoch(self, broker_id: int, broker_epoch: int) -> BrokerRegistration:
        registration = self.registrations.get(broker_id)
        if registration is None:
            raise KafkaError(ErrorCode.BROKER_ID_NOT_REGISTERED, f"Broker {broker_id} is not registered.")
        if registration.epoch != broker_epoch:
            raise KafkaError(ErrorCode.STALE_BROKER_EPOCH, f"Expected broker epoch {registration.epoch}, but got "
                                                           f"broker epoch {broker_epoch}")
        return registration

    def fence_record(self, broker_id: int) -> ApiMessageAndVersion:
        epoch = self.registrations[broker_id].epoch
        if self.features.uses_broker_registration_change_record():
            return ApiMessageAndVersion("BrokerRegistrationChangeRecord", 0,
                                        {"broker_id": broker_id, "broker_epoch": epoch, "fenced": FENCE})
        return ApiMessageAndVersion("FenceBrokerRecord", 0, {"id": broker_id, "epoch": epoch})

    def unfence_record(self, broker_id: int) -> ApiMessageAndVersion:
        epoch = self.registrations[broker_id].epoch
        if self.features.uses_broker_registration_change_record():
            return ApiMessageAndVersion("BrokerRegistrationChangeRecord", 0,
                                        {"broker_id": broker_id, "broker_epoch": epoch, "fenced": UNFENCE})
        return ApiMessageAndVersion("UnfenceBrokerRecord", 0, {"id": broker_id, "epoch": epoch})

    def controlled_shutdown_record(self, broker_id: int) -> ApiMessageAndVersion:
        return ApiMessageAndVersion("BrokerRegistrationChangeRecord", 1, {
            "broker_id": broker_id, "broker_epoch": self.registrations[broker_id].epoch,
            "in_controlled_shutdown": IN_CONTROLLED_SHUTDOWN})

    # -- looking ------------------------------------------------------------------------------------

    def unfenced(self) -> list[int]:
        return sorted(b for b, r in self.registrations.items() if not r.fenced)

    def usable(self) -> list[int]:
        """Brokers that may take new replicas and leadership: unfenced and not shutting down."""
        return sorted(b for b, r in self.registrations.items() if not r.fenced and not r.in_controlled_shutdown)

    # -- replaying records (every controller) ------------------------------------------------------

    def replay_register_broker(self, offset: int, data: dict) -> None:
        self.registrations[data["brokerId"]] = BrokerRegistration(
            id=data["brokerId"], epoch=data["brokerEpoch"], incarnation_id=str(uuid_of(data["incarnationId"])),
            listeners=[dict(e) for e in data["endPoints"]], rack=data.get("rack"), fenced=data.get("fenced", True),
            in_controlled_shutdown=data.get("inControlledShutdown", False), register_offset=offset,
            log_dirs=[uuid_of(d) for d in data.get("logDirs") or []], features=[dict(f) for f in data["features"]])

    def replay_fence(self, data: dict, fenced: bool) -> None:   # FenceBrokerRecord, UnfenceBrokerRecord
        registration = self.registrations.get(data["id"])
        if registration is not None and registration.epoch == data["epoch"]:
            registration.fenced = fenced
            if not fenced:
                registration.in_controlled_shutdown = False

    def replay_registration_change(self, data: dict) -> None:
        registration = self.registrations.get(data["brokerId"])
        if registration is None or registration.epoch != data["brokerEpoch"]:
            return
        change = data.get("fenced", 0)
        if change == FENCE:
            registration.fenced = True
        elif change == UNFENCE:
            registration.fenced = False
        if data.get("inControlledShutdown", 0) == IN_CONTROLLED_SHUTDOWN:
            registration.in_controlled_shutdown = True

    def replay_unregister(self, data: dict) -> None:
        registration = self.registrations.get(data["brokerId"])
        if registration is not None and registration.epoch == data["brokerEpoch"]:
            del self.registrations[data["brokerId"]]
