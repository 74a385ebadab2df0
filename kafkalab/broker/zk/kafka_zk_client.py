"""``KafkaZkClient``: every read and write a broker makes in ZooKeeper (Kafka's ``kafka.zk.KafkaZkClient``).

Kafka keeps a ZooKeeper-mode cluster's metadata in znodes (paths and JSON in
:mod:`.zk_data`). This client wraps a kazoo session and offers one method per
thing Kafka does with them: register a broker, elect the controller, read the
topics and their partition states, write partition states *conditionally*,
hand out producer id blocks, and so on.

Two ideas matter, as in Kafka:

* **Conditional writes.** A partition state znode is only updated if its
  version is still the one read before (``zk_version``, the *partition
  epoch*); a stale writer gets a :class:`BadVersionError` for that partition
  instead of overwriting newer state.
* **Controller epoch fencing.** The controller's writes are ZooKeeper
  transactions that also *check* the version of ``/controller_epoch``
  (``expected_controller_epoch_zk_version``): once another broker became
  controller (and bumped that znode), a deposed controller's writes all fail
  with :class:`ControllerMovedError`.

The calls are synchronous kazoo calls: on a loopback ZooKeeper they take well
under a millisecond, so the broker's asyncio loop calls them directly. Watch
callbacks and session listeners run on kazoo's thread: callers hand them to
their loop with ``loop.call_soon_threadsafe``.

Simplified: no ACLs, no chroot handling beyond what kazoo does, no retries of
connection loss inside a call (kazoo raises; the caller's event fails).
"""
from __future__ import annotations

import logging
import uuid
from typing import Callable, Iterable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError, RolledBackError
from kazoo.protocol.states import EventType

from . import zk_data as zd
from .zk_data import BrokerInfo, LeaderIsrAndControllerEpoch, TopicAssignment

log = logging.getLogger(__name__)

__all__ = ["KafkaZkClient", "ControllerMovedError", "BadVersionError", "NodeExistsError", "NoNodeError",
           "KazooState", "EventType"]

INITIAL_CONTROLLER_EPOCH = 0          # KafkaController.InitialControllerEpoch
INITIAL_CONTROLLER_EPOCH_ZK_VERSION = 0

TopicPartition = tuple  # (topic, partition)


class ControllerMovedError(Exception):
    """Kafka's ``ControllerMovedException``: another broker is (now) the controller."""


class KafkaZkClient:
    """A broker's ZooKeeper session and Kafka's znode operations on it.

    ``KafkaZkClient(connect_string, session_timeout_ms=18000).start()``;
    ``close()`` ends the session (its ephemeral znodes disappear at once).
    """

    def __init__(self, connect_string: str, session_timeout_ms: int = 18_000,
                 connection_timeout_ms: int | None = None):
        self.connect_string = connect_string
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        self.zk = KazooClient(hosts=connect_string, timeout=session_timeout_ms / 1000.0,
                              connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1.0})
        self._state_listeners: list[Callable[[str], None]] = []
        self._last_broker_info: BrokerInfo | None = None   # what register_broker wrote last
        self._session_lost = False
        self.zk.add_listener(self._on_state)

    # -- session ------------------------------------------------------------------

    def start(self) -> None:
        """Connect (waits up to ``zookeeper.connection.timeout.ms``)."""
        self.zk.start(timeout=self.connection_timeout_ms / 1000.0)

    def close(self) -> None:
        try:
            self.zk.stop()
        finally:
            self.zk.close()

    @property
    def connected(self) -> bool:
        return self.zk.connected

    @property
    def session_id(self) -> int | None:
        sid = self.zk.client_id
        return sid[0] if sid else None

    def add_state_listener(self, listener: Callable[[str], None]) -> None:
        """``listener(state)`` on kazoo's thread, state one of:

        * ``"SUSPENDED"``    the connection dropped; the session may still be alive
        * ``"CONNECTED"``    reconnected within the same session (ephemerals and watches kept)
        * ``"EXPIRED"``      the session is gone: its ephemeral znodes (``/brokers/ids/<id>``,
                              ``/controller``) are deleted and its watches lost (kazoo's LOST)
        * ``"NEW_SESSION"``  connected again after an expiry, with a new session: the owner must
                              register again (Kafka's ``afterInitializingSession``)
        """
        self._state_listeners.append(listener)

    def remove_state_listener(self, listener: Callable[[str], None]) -> None:
        if listener in self._state_listeners:
            self._state_listeners.remove(listener)

    def _on_state(self, state) -> None:
        if state == KazooState.LOST:
            self._session_lost = True
            name = "EXPIRED"
        elif state == KazooState.SUSPENDED:
            name = "SUSPENDED"
        else:
            name = "NEW_SESSION" if self._session_lost else "CONNECTED"
            self._session_lost = False
        for listener in list(self._state_listeners):
            try:
                listener(name)
            except Exception:  # a listener must not break kazoo's thread
                log.exception("ZooKeeper state listener failed")

    # -- generic helpers ----------------------------------------------------------

    def _get(self, path: str, watch=None):
        """(data, stat) or (None, None) if the znode does not exist."""
        try:
            return self.zk.get(path, watch=watch)
        except NoNodeError:
            return None, None

    def _children(self, path: str, watch=None) -> list[str]:
        try:
            return self.zk.get_children(path, watch=watch)
        except NoNodeError:
            return []

    def _create_recursive(self, path: str, data: bytes = b"") -> None:
        try:
            self.zk.create(path, data, makepath=True)
        except NodeExistsError:
            pass

    def _commit(self, tx, what: str):
        """Commit a transaction that starts with a controller-epoch check; return the op results."""
        results = tx.commit()
        if results and isinstance(results[0], BadVersionError):
            raise ControllerMovedError(f"{what}: /controller_epoch changed (another controller)")
        if results and isinstance(results[0], NoNodeError):
            raise ControllerMovedError(f"{what}: /controller_epoch is missing")
        return results

    def _fenced_tx(self, expected_controller_epoch_zk_version: int | None):
        tx = self.zk.transaction()
        if expected_controller_epoch_zk_version is not None:
            tx.check(zd.CONTROLLER_EPOCH, expected_controller_epoch_zk_version)
        return tx

    @staticmethod
    def _first_error(results, skip: int):
        for r in results[skip:]:
            if isinstance(r, Exception) and not isinstance(r, RolledBackError):
                return r
        return None

    # -- watches (one-shot, as ZooKeeper's; re-register when handling the event) --------

    def get_children_and_watch(self, path: str, callback: Callable) -> list[str]:
        """Children of ``path`` (``[]`` if it does not exist); ``callback(event)`` once when they change.

        If ``path`` does not exist yet, an existence watch fires when it is created.
        """
        try:
            return self.zk.get_children(path, watch=callback)
        except NoNodeError:
            if self.zk.exists(path, watch=callback) is not None:   # created in between
                return self.get_children_and_watch(path, callback)
            return []

    def exists_and_watch(self, path: str, callback: Callable) -> bool:
        """Whether ``path`` exists; ``callback(event)`` once when it is created, changed or deleted."""
        return self.zk.exists(path, watch=callback) is not None

    def get_data_and_watch(self, path: str, callback: Callable) -> bytes | None:
        """The data of ``path`` (None if absent); ``callback(event)`` once on change/deletion/creation."""
        data, _ = self._get(path, watch=callback)
        if data is None:
            if self.zk.exists(path, watch=callback) is not None:
                return self.get_data_and_watch(path, callback)
        return data

    # -- start-up: top-level paths and the cluster id ------------------------------------

    def create_top_level_paths(self) -> None:
        """Kafka's ``createTopLevelPaths``: the persistent paths every broker expects."""
        for path in zd.PERSISTENT_PATHS:
            if self.zk.exists(path) is None:
                self._create_recursive(path)

    def get_cluster_id(self) -> str | None:
        data, _ = self._get(zd.CLUSTER_ID)
        return zd.decode_cluster_id(data) if data else None

    def get_or_create_cluster_id(self, proposed: str) -> str:
        """The cluster id in ``/cluster/id``; the first broker writes ``proposed`` there."""
        existing = self.get_cluster_id()
        if existing is not None:
            return existing
        try:
            self.zk.create(zd.CLUSTER_ID, zd.encode_cluster_id(proposed), makepath=True)
            return proposed
        except NodeExistsError:   # another broker won the race
            return self.get_cluster_id()

    # -- brokers ----------------------------------------------------------------------

    def register_broker(self, info: BrokerInfo) -> int:
        """Create the ephemeral ``/brokers/ids/<id>``; return the broker epoch (the znode's czxid).

        If the znode exists and belongs to this session (a retry), its czxid is
        returned; if it belongs to another session, ``NodeExistsError`` is
        raised (Kafka: "Error while creating ephemeral ... already exists").
        """
        path = zd.broker_path(info.id)
        self._last_broker_info = info
        try:
            self.zk.create(path, zd.encode_broker(info), ephemeral=True, makepath=True)
        except NodeExistsError:
            _, stat = self._get(path)
            if stat is None or stat.ephemeralOwner != self.session_id:
                raise
            return stat.czxid
        _, stat = self._get(path)
        return stat.czxid

    @property
    def last_broker_info(self) -> BrokerInfo | None:
        """What :meth:`register_broker` registered last (to register again after a session expiry)."""
        return self._last_broker_info

    def get_broker_epoch(self, broker_id: int) -> int | None:
        _, stat = self._get(zd.broker_path(broker_id))
        return stat.czxid if stat else None

    def get_sorted_broker_list(self) -> list[int]:
        return sorted(int(c) for c in self._children(zd.BROKER_IDS))

    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        data, _ = self._get(zd.broker_path(broker_id))
        return zd.decode_broker(broker_id, data) if data else None

    def get_all_brokers_in_cluster(self) -> dict[int, BrokerInfo]:
        return {b: info for b, (info, _) in self.get_all_broker_and_epochs_in_cluster().items()}

    def get_all_broker_and_epochs_in_cluster(self) -> dict[int, tuple[BrokerInfo, int]]:
        """id -> (BrokerInfo, broker epoch) for every registered broker."""
        out = {}
        for broker_id in self.get_sorted_broker_list():
            data, stat = self._get(zd.broker_path(broker_id))
            if data is not None:
                out[broker_id] = (zd.decode_broker(broker_id, data), stat.czxid)
        return out

    # -- the controller ----------------------------------------------------------------

    def get_controller_id(self) -> int | None:
        data, _ = self._get(zd.CONTROLLER)
        return zd.decode_controller(data) if data else None

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(controller epoch, zk version of /controller_epoch), or None before the first election."""
        data, stat = self._get(zd.CONTROLLER_EPOCH)
        return (zd.decode_controller_epoch(data), stat.version) if data is not None else None

    def register_controller_and_increment_controller_epoch(self, broker_id: int) -> tuple[int, int]:
        """Become controller: create ``/controller`` (ephemeral) and bump ``/controller_epoch``, atomically.

        Returns (new epoch, new zk version of /controller_epoch). Raises
        :class:`ControllerMovedError` if another broker holds ``/controller`` or
        bumped the epoch in between (Kafka's ``registerControllerAndIncrementControllerEpoch``).
        """
        current = self.get_controller_epoch()
        if current is None:
            try:
                self.zk.create(zd.CONTROLLER_EPOCH, zd.encode_controller_epoch(INITIAL_CONTROLLER_EPOCH))
                current = (INITIAL_CONTROLLER_EPOCH, INITIAL_CONTROLLER_EPOCH_ZK_VERSION)
            except NodeExistsError:
                current = self.get_controller_epoch()
        epoch, version = current
        new_epoch = epoch + 1
        tx = self.zk.transaction()
        tx.create(zd.CONTROLLER, zd.encode_controller(broker_id), ephemeral=True)
        tx.set_data(zd.CONTROLLER_EPOCH, zd.encode_controller_epoch(new_epoch), version=version)
        results = tx.commit()
        if isinstance(results[0], NodeExistsError):
            # a retry of our own earlier attempt (same session, same epoch) counts as success
            data, stat = self._get(zd.CONTROLLER)
            now = self.get_controller_epoch()
            if (data and zd.decode_controller(data) == broker_id and stat.ephemeralOwner == self.session_id
                    and now and now[0] == new_epoch):
                return now
            raise ControllerMovedError(f"/controller exists (controller is {self.get_controller_id()})")
        if isinstance(results[1], BadVersionError):
            raise ControllerMovedError("/controller_epoch changed while electing")
        error = self._first_error(results, 0)
        if error is not None:
            raise error
        return new_epoch, results[1].version

    def delete_controller(self, expected_controller_epoch_zk_version: int | None = None) -> None:
        """Remove ``/controller`` (a controller resigning on purpose), fenced by the epoch version."""
        tx = self._fenced_tx(expected_controller_epoch_zk_version)
        tx.delete(zd.CONTROLLER)
        self._commit(tx, "delete /controller")

    # -- topics and their assignment ------------------------------------------------------

    def get_all_topics_in_cluster(self, watch: Callable | None = None) -> set[str]:
        if watch is not None:
            return set(self.get_children_and_watch(zd.BROKER_TOPICS, watch))
        return set(self._children(zd.BROKER_TOPICS))

    def topic_exists(self, topic: str) -> bool:
        return self.zk.exists(zd.topic_path(topic)) is not None

    def get_topic_assignment(self, topic: str, watch: Callable | None = None) -> TopicAssignment | None:
        data, _ = self._get(zd.topic_path(topic), watch=watch)
        if data is None and watch is not None:
            self.zk.exists(zd.topic_path(topic), watch=watch)
        return zd.decode_topic_assignment(data) if data else None

    def get_topic_assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        out = {}
        for topic in topics:
            assignment = self.get_topic_assignment(topic)
            if assignment is not None:
                out[topic] = assignment
        return out

    def set_topic_assignment(self, topic: str, assignment: TopicAssignment,
                             expected_controller_epoch_zk_version: int | None = None) -> None:
        """Overwrite ``/brokers/topics/<t>`` (the controller uses it to add missing topic ids)."""
        tx = self._fenced_tx(expected_controller_epoch_zk_version)
        tx.set_data(zd.topic_path(topic), zd.encode_topic_assignment(assignment))
        results = self._commit(tx, f"set assignment of {topic}")
        error = self._first_error(results, 1 if expected_controller_epoch_zk_version is not None else 0)
        if error is not None:
            raise error

    # -- partition states ------------------------------------------------------------------

    def get_partition_state(self, topic: str, partition: int) -> LeaderIsrAndControllerEpoch | None:
        data, stat = self._get(zd.partition_state_path(topic, partition))
        return zd.decode_partition_state(data, stat.version) if data else None

    def get_partition_states(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition,
                                                                                  LeaderIsrAndControllerEpoch]:
        """(topic, partition) -> state (with ``zk_version``) for those that have a state znode."""
        out = {}
        for topic, partition in partitions:
            state = self.get_partition_state(topic, partition)
            if state is not None:
                out[(topic, partition)] = state
        return out

    def get_partitions_for_topic(self, topic: str) -> list[int]:
        return sorted(int(p) for p in self._children(zd.topic_partitions_path(topic)))

    def create_partition_states(self, states: dict[TopicPartition, LeaderIsrAndControllerEpoch],
                                expected_controller_epoch_zk_version: int | None = None
                                ) -> dict[TopicPartition, int | Exception]:
        """Create the state znodes of new partitions (fenced by the controller epoch).

        Returns per partition the new znode's version (0) or the exception
        (``NodeExistsError`` if the partition already has a state).
        """
        out: dict[TopicPartition, int | Exception] = {}
        for (topic, partition), state in states.items():
            for path in (zd.topic_partitions_path(topic), zd.partition_path(topic, partition)):
                if self.zk.exists(path) is None:
                    self._create_recursive(path)
            tx = self._fenced_tx(expected_controller_epoch_zk_version)
            tx.create(zd.partition_state_path(topic, partition), zd.encode_partition_state(state))
            results = self._commit(tx, f"create state of {topic}-{partition}")
            error = self._first_error(results, 1 if expected_controller_epoch_zk_version is not None else 0)
            out[(topic, partition)] = error if error is not None else 0
        return out

    def update_partition_states(self, states: dict[TopicPartition, LeaderIsrAndControllerEpoch],
                                expected_controller_epoch_zk_version: int | None = None
                                ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, Exception]]:
        """Write each state conditionally on its ``zk_version`` (Kafka's ``updateLeaderAndIsr``).

        Returns (succeeded: partition -> new zk version, failed: partition ->
        exception; ``BadVersionError`` when someone wrote the state since it was
        read). Raises :class:`ControllerMovedError` if the controller epoch moved.
        """
        ok: dict[TopicPartition, int] = {}
        failed: dict[TopicPartition, Exception] = {}
        skip = 1 if expected_controller_epoch_zk_version is not None else 0
        for (topic, partition), state in states.items():
            tx = self._fenced_tx(expected_controller_epoch_zk_version)
            tx.set_data(zd.partition_state_path(topic, partition), zd.encode_partition_state(state),
                        version=state.zk_version)
            results = self._commit(tx, f"update state of {topic}-{partition}")
            error = self._first_error(results, skip)
            if error is None:
                ok[(topic, partition)] = results[skip].version
            else:
                failed[(topic, partition)] = error
        return ok, failed

    # -- topic configs -----------------------------------------------------------------------

    def get_topic_config(self, topic: str) -> dict[str, str]:
        """The overrides in ``/config/topics/<t>`` (``{}`` if none)."""
        data, _ = self._get(zd.topic_config_path(topic))
        return zd.decode_topic_config(data)

    def get_topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        return {t: self.get_topic_config(t) for t in topics}

    # -- topic deletion -----------------------------------------------------------------------

    def get_topic_deletions(self, watch: Callable | None = None) -> set[str]:
        """Topics marked for deletion (children of ``/admin/delete_topics``)."""
        if watch is not None:
            return set(self.get_children_and_watch(zd.DELETE_TOPICS, watch))
        return set(self._children(zd.DELETE_TOPICS))

    def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return self.zk.exists(zd.delete_topic_path(topic)) is not None

    def delete_topic_deletions(self, topics: Iterable[str],
                               expected_controller_epoch_zk_version: int | None = None) -> None:
        for topic in topics:
            self._delete_fenced(zd.delete_topic_path(topic), expected_controller_epoch_zk_version)

    def delete_topic_znode(self, topic: str, expected_controller_epoch_zk_version: int | None = None) -> None:
        """Remove ``/brokers/topics/<t>`` and everything under it (its partition states)."""
        self._delete_recursive(zd.topic_path(topic), expected_controller_epoch_zk_version)

    def delete_topic_configs(self, topics: Iterable[str],
                             expected_controller_epoch_zk_version: int | None = None) -> None:
        for topic in topics:
            self._delete_fenced(zd.topic_config_path(topic), expected_controller_epoch_zk_version)

    def _delete_fenced(self, path: str, expected_controller_epoch_zk_version: int | None) -> None:
        tx = self._fenced_tx(expected_controller_epoch_zk_version)
        tx.delete(path)
        results = self._commit(tx, f"delete {path}")
        error = self._first_error(results, 1 if expected_controller_epoch_zk_version is not None else 0)
        if error is not None and not isinstance(error, NoNodeError):
            raise error

    def _delete_recursive(self, path: str, expected_controller_epoch_zk_version: int | None) -> None:
        for child in self._children(path):
            self._delete_recursive(f"{path}/{child}", expected_controller_epoch_zk_version)
        try:
            self._delete_fenced(path, expected_controller_epoch_zk_version)
        except NotEmptyError:   # a child appeared meanwhile: once more
            self._delete_recursive(path, expected_controller_epoch_zk_version)

    # -- preferred replica election -------------------------------------------------------------

    def get_preferred_replica_election(self, watch: Callable | None = None) -> list[TopicPartition] | None:
        """Partitions listed in ``/admin/preferred_replica_election``, or None if it does not exist."""
        if watch is not None:
            data = self.get_data_and_watch(zd.PREFERRED_REPLICA_ELECTION, watch)
        else:
            data, _ = self._get(zd.PREFERRED_REPLICA_ELECTION)
        return zd.decode_preferred_replica_election(data) if data is not None else None

    def create_preferred_replica_election(self, partitions: list[TopicPartition]) -> None:
        """What ``kafka-preferred-replica-election.sh`` (ZooKeeper mode) did."""
        self.zk.create(zd.PREFERRED_REPLICA_ELECTION, zd.encode_preferred_replica_election(partitions),
                       makepath=True)

    def delete_preferred_replica_election(self, expected_controller_epoch_zk_version: int | None = None) -> None:
        self._delete_fenced(zd.PREFERRED_REPLICA_ELECTION, expected_controller_epoch_zk_version)

    # -- producer ids ------------------------------------------------------------------------------

    def allocate_producer_id_block(self, broker_id: int,
                                   block_size: int = zd.PRODUCER_ID_BLOCK_SIZE) -> tuple[int, int]:
        """Claim the next block of producer ids; return (first, last) (Kafka's ``ZkProducerIdManager``).

        Read ``/latest_producer_id_block`` and its version, then write the next
        block conditionally on that version; if another broker got there first,
        read again and retry.
        """
        while True:
            data, stat = self._get(zd.PRODUCER_ID_BLOCK)
            if data:
                _, _, prev_end = zd.decode_producer_id_block(data)
                start = prev_end + 1
            else:
                start = 0
            if start + block_size - 1 > 2 ** 63 - 1:
                raise RuntimeError("producer ids exhausted")
            end = start + block_size - 1
            payload = zd.encode_producer_id_block(broker_id, start, end)
            try:
                if stat is None:
                    self.zk.create(zd.PRODUCER_ID_BLOCK, payload, makepath=True)
                else:
                    self.zk.set(zd.PRODUCER_ID_BLOCK, payload, version=stat.version)
                return start, end
            except (BadVersionError, NodeExistsError):
                continue

    # -- broker side ---------------------------------------------------------------------------------
    # (methods the broker itself uses besides registration: added by the broker-side code)
    # AdminZkClient's topic and config writes, the config change notifications every broker watches.

    def get_topic_assignment_with_version(self, topic: str) -> tuple[TopicAssignment | None, int]:
        """``/brokers/topics/<t>`` and its znode version (None, -1 if the topic does not exist)."""
        data, stat = self._get(zd.topic_path(topic))
        return (zd.decode_topic_assignment(data), stat.version) if data else (None, -1)

    def create_topic_assignment(self, topic: str, assignment: TopicAssignment) -> None:
        """Create ``/brokers/topics/<t>``, which makes the controller create the topic's partitions
        (``NodeExistsError`` if the topic exists)."""
        self.zk.create(zd.topic_path(topic), zd.encode_topic_assignment(assignment), makepath=True)

    def set_topic_assignment_if_version(self, topic: str, assignment: TopicAssignment, expected_version: int) -> None:
        """Rewrite ``/brokers/topics/<t>`` only if its version is still ``expected_version``
        (``BadVersionError`` otherwise): how AdminZkClient adds partitions."""
        self.zk.set(zd.topic_path(topic), zd.encode_topic_assignment(assignment), version=expected_version)

    def set_or_create_topic_config(self, topic: str, configs: dict[str, str]) -> None:
        """Write the overrides of ``/config/topics/<t>``."""
        self.set_or_create_entity_configs(zd.topic_config_path(topic), configs)

    def set_or_create_entity_configs(self, path: str, configs: dict[str, str]) -> None:
        """Write an entity's config znode (``/config/topics/<t>``, ``/config/clients/<id>``, ...), creating it
        if need be (Kafka's ``setOrCreateEntityConfigs``)."""
        data = zd.encode_topic_config(configs)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            try:
                self.zk.create(path, data, makepath=True)
            except NodeExistsError:
                self.zk.set(path, data)

    def create_config_change_notification(self, entity_path: str) -> str:
        """Create the sequential ``/config/changes/config_change_<seq>`` naming the changed entity."""
        return self.zk.create(f"{zd.CONFIG_CHANGES}/{zd.CONFIG_CHANGE_PREFIX}", zd.encode_config_change(entity_path),
                              sequence=True, makepath=True)

    def get_config_change_notifications(self) -> list[str]:
        """The notifications' znode names, oldest first."""
        return sorted(c for c in self._children(zd.CONFIG_CHANGES) if c.startswith(zd.CONFIG_CHANGE_PREFIX))

    def get_config_change(self, name: str) -> tuple[str | None, int]:
        """(entity path, creation time in ms) of one notification; (None, 0) once it is gone."""
        data, stat = self._get(f"{zd.CONFIG_CHANGES}/{name}")
        return (zd.decode_config_change(data), stat.ctime) if data else (None, 0)

    def delete_config_change_notification(self, name: str) -> None:
        try:
            self.zk.delete(f"{zd.CONFIG_CHANGES}/{name}")
        except NoNodeError:
            pass

    def watch_config_changes(self, callback: Callable) -> None:
        """``callback(children)`` on kazoo's thread, now and whenever the children of ``/config/changes``
        change (kazoo's ChildrenWatch sets the watch again after a reconnect or a new session)."""
        self.zk.ensure_path(zd.CONFIG_CHANGES)
        self.zk.ChildrenWatch(zd.CONFIG_CHANGES, callback)

    def create_delete_topic_path(self, topic: str) -> None:
        """Mark a topic for deletion (``NodeExistsError`` if it already is); the controller deletes it."""
        self.zk.create(zd.delete_topic_path(topic), b"", makepath=True)


def new_topic_id() -> uuid.UUID:
    return uuid.uuid4()
