"""``KafkaRaftClient``: one KRaft replica's event loop (Kafka's ``org.apache.kafka.raft.KafkaRaftClient``).

Each controller runs one. It owns the replica's :class:`~kafkalab.raft.quorum_state.QuorumState` and
its ``__cluster_metadata-0`` log, answers the quorum's requests (:mod:`kafkalab.raft.raft_apis`) and
sends its own, over the mini broker's :class:`~kafkalab.broker.network.network_client.NetworkClient`:

* **timers** (:meth:`_poll`, every ``POLL_S``): an Unattached or Voted voter whose election timeout
  (``controller.quorum.election.timeout.ms`` plus a random part) passes, or a Follower that has not
  heard from its leader for ``controller.quorum.fetch.timeout.ms``, becomes Prospective (KIP-996,
  :mod:`kafkalab.raft.prospective_state`); a Candidate that did not win in its election timeout
  becomes Prospective again; a Resigned leader, after its election timeout, Unattached in the next
  epoch (all as Kafka 4.0+);
* **Vote**: a Prospective asks every voter for a *pre-vote* (Vote v2, ``PreVote=true``, its current
  epoch); with a majority it becomes a Candidate, which asks for real votes in the bumped epoch, both
  with the (epoch, end offset) of its log's end;
* **BeginQuorumEpoch**: a new leader appends a LeaderChange control record at its epoch start
  offset, then tells every voter until each has acknowledged (or fetched);
* **Fetch**: a Follower (or an observer) fetches from the leader at its log end offset with the epoch
  of its last batch; the leader answers with records, its high watermark, or a *diverging epoch* —
  then the follower truncates and fetches again;
* **EndQuorumEpoch**: :meth:`resign` (a graceful shutdown of the leader) asks the voters to elect
  another now, the most up-to-date first, instead of waiting for a fetch timeout.

* **FetchSnapshot**: a Fetch answered with a snapshot id (the fetch offset was below the leader's
  log start offset) is followed by FetchSnapshot requests until the snapshot is whole, then it is
  installed (:mod:`kafkalab.raft.fetch_snapshot`).

Not implemented: KIP-853's dynamic voters (the voter set is ``controller.quorum.voters``, fixed).

**Check-quorum** (as Kafka 3.7+): a leader that has had no Fetch from a majority of the voters for
1.5 × ``controller.quorum.fetch.timeout.ms`` (:meth:`LeaderState.time_until_check_quorum_expires`) resigns
by itself — Resigned, EndQuorumEpoch to the others, Unattached in the next epoch after its election timeout
(then Prospective: alone, it never gets the pre-votes to stand) — so a
leader on the minority side of a partition stops answering as leader (and its QuorumController stops
answering as the active controller) instead of accepting writes it can never commit.
"""
from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field

from ..broker.common.message.codec import build
from ..broker.network.client_security import ClientSecurity
from ..broker.network.network_client import NetworkClient
from ..broker.utils.async_util import cancel_and_wait
from .epoch_state import CandidateState, FollowerState, ResignedState, UnattachedState, VotedState
from .prospective_state import ProspectiveState
from .snapshot.snapshots import OffsetAndEpochId
from .fetch_snapshot import fetch_snapshot
from .file_quorum_state_store import FileQuorumStateStore
from .kafka_metadata_log import KafkaMetadataLog, OffsetAndEpoch
from .leader_state import LeaderState
from .quorum_state import QuorumState
from .raft_messages import (BEGIN_QUORUM_EPOCH_VERSION, END_QUORUM_EPOCH_VERSION, FETCH_VERSION, METADATA_PARTITION,
                            METADATA_TOPIC, METADATA_TOPIC_ID, VOTE_VERSION, BeginQuorumEpochRequest,
                            EndQuorumEpochRequest, FetchRequest, VoteRequest, single_partition)
from ..metadata.metadata_record_serde import LEADER_CHANGE, control_key, encode_leader_change

log = logging.getLogger(__name__)
POLL_S = 0.02
RETRY_BACKOFF_S = 0.05
FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER = 74, 75, 6


@dataclass
class RaftConfig:
    """The quorum's configs, by Kafka's names (defaults: Kafka's)."""

    node_id: int
    voters: dict[int, tuple[str, int]]                 # controller.quorum.voters: id -> (host, port)
    election_timeout_ms: int = 1000                    # controller.quorum.election.timeout.ms
    fetch_timeout_ms: int = 2000                       # controller.quorum.fetch.timeout.ms
    election_backoff_max_ms: int = 1000                # controller.quorum.election.backoff.max.ms
    request_timeout_ms: int = 2000                     # controller.quorum.request.timeout.ms
    fetch_max_wait_ms: int = 500                       # KafkaRaftClient's fetch max wait
    cluster_id: str | None = None
    extra: dict = field(default_factory=dict)
    #: how this replica connects to the other controllers' listener (Kafka's ``RaftManager`` channel builder:
    #: ``controller.listener.names``' first, ``sasl.mechanism.controller.protocol``); None: PLAINTEXT
    security: ClientSecurity | None = None


class KafkaRaftClient:
    def __init__(self, config: RaftConfig, metadata_log_dir: str, rng: random.Random | None = None):
        self.config = config
        self.node_id = config.node_id
        self.rng = rng or random.Random()
        self.log = KafkaMetadataLog(metadata_log_dir, config.extra.get("metadata.log.segment.bytes"))
        self.quorum = QuorumState(config.node_id, list(config.voters), FileQuorumStateStore(self.log.dir),
                                  election_timeout_ms=config.election_timeout_ms,
                                  fetch_timeout_ms=config.fetch_timeout_ms, rng=self.rng)
        #: the high watermark this replica knows (the leader's own, or the last a fetch brought); None: unknown
        self.high_watermark: int | None = None
        self._changed = asyncio.Event()     # log appended, high watermark moved, or state changed
        self._tasks: set[asyncio.Task] = set()
        self._clients: dict[tuple[int, str], NetworkClient] = {}
        self._running = False
        self._shutting_down = False    # resigned to shut down: stay Resigned, never stand again
        #: (diverging epoch, its end offset, log end before, after) for each truncation a leader asked for
        self.truncations: list[tuple[int, int, int, int]] = []
        self.elections: list[dict] = []     # {"epoch", "won_at" (monotonic), "granted"}, for tests and benchmarks
        #: {"epoch", "at" (monotonic), "won", "granted", "rejected"} for each pre-vote (KIP-996) that ended
        self.pre_votes: list[dict] = []
        #: {"epoch", "at" (monotonic), "fetched"} for each leadership given up by check-quorum
        self.check_quorum_resignations: list[dict] = []
        self.snapshot_fetches: list[dict] = []   # snapshots fetched and installed (fetch_snapshot.py)
        #: Kafka's KafkaRaftMetrics, when the node keeps metrics (:meth:`enable_metrics`)
        self.metrics = None
        self.snapshot_chunks_served = 0          # FetchSnapshot chunks this node answered as leader

    # -- life cycle ------------------------------------------------------------------------------

    def enable_metrics(self, registry) -> None:
        """Keep Kafka's raft-metrics in ``registry`` (a MetricsRegistry)."""
        from .kafka_raft_metrics import KafkaRaftMetrics
        self.metrics = KafkaRaftMetrics(registry, self)

    async def start(self) -> None:
        self.quorum.initialize()
        self._running = True
        self._spawn(self._poll_loop())
        self._spawn(self._fetch_loop())
        if isinstance(self.quorum.state, CandidateState):   # restarted as a candidate: ask again
            self._start_election_requests(pre_vote=False)

    async def close(self) -> None:
        self._running = False
        await cancel_and_wait(list(self._tasks))
        for client in self._clients.values():
            await client.close()
        self.log.close()

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _client(self, node_id: int, purpose: str) -> NetworkClient:
        key = (node_id, purpose)   # a long-poll Fetch must not hold up a Vote to the same node
        if key not in self._clients:
            host, port = self.config.voters[node_id]
            self._clients[key] = NetworkClient(host, port, client_id=f"raft-client-{self.node_id}-{purpose}",
                                               timeout_s=self.config.request_timeout_ms / 1000,
                                               security=self.config.security)
        return self._clients[key]

    def notify(self) -> None:
        """Wake whatever waits for a change (long-poll fetches, the poll loop)."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for_change(self, timeout_s: float) -> None:
        event = self._changed
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    # -- appending (the leader) ---------------------------------------------------------------------

    def append(self, values: list[bytes]) -> int:
        """Append metadata records (their values) as one batch in the leader's epoch; returns the offset
        of the last. Raises NotLeaderError when this replica does not lead."""
        state = self.quorum.state
        if not isinstance(state, LeaderState):
            raise NotLeaderError(f"node {self.node_id} is {state.name} in epoch {state.epoch}, not the leader")
        base = self.log.append_as_leader([(None, v) for v in values], state.epoch)
        if self.metrics is not None:
            self.metrics.on_leader_append(base + len(values) - 1, len(values), self.now_ms())
        self._on_leader_append(state)
        return base + len(values) - 1

    def _on_leader_append(self, state: LeaderState) -> None:
        if state.update_local_end_offset(self.log.end_offset, self.now_ms()):
            self.update_leader_high_watermark(state)
        else:
            self.notify()

    def update_leader_high_watermark(self, state: LeaderState) -> None:
        self.high_watermark = state.high_watermark
        if self.metrics is not None and self.high_watermark is not None:
            self.metrics.on_high_watermark(self.high_watermark, self.now_ms())
        self.notify()

    # -- state changes -------------------------------------------------------------------------------

    def maybe_transition(self, epoch: int, leader_id: int) -> None:
        """A request or response showed ``epoch`` (and maybe its leader): catch up with it (Kafka's
        ``maybeTransition``). A leader that sees a higher epoch has been fenced and steps down."""
        quorum = self.quorum
        if epoch > quorum.epoch:
            if leader_id >= 0 and leader_id != self.node_id:
                quorum.transition_to_follower(epoch, leader_id)
                if self.metrics is not None:
                    self.metrics.on_leader_known(self.now_ms())
            else:
                quorum.transition_to_unattached(epoch)
            self.notify()
        elif (epoch == quorum.epoch and leader_id >= 0 and leader_id != self.node_id
              and (isinstance(quorum.state, (UnattachedState, VotedState, CandidateState))
                   or (isinstance(quorum.state, ProspectiveState) and quorum.state.leader < 0))):
            quorum.transition_to_follower(epoch, leader_id)
            if self.metrics is not None:
                self.metrics.on_leader_known(self.now_ms())
            self.notify()

    def become_prospective(self) -> None:
        """Ask for pre-votes before standing (Kafka's ``transitionToProspective``); alone, stand at once."""
        state = self.quorum.transition_to_prospective()
        log.info("node %d: prospective in epoch %d (leader %d, voted %d)", self.node_id, state.epoch, state.leader,
                 state.voted)
        self.notify()
        if state.won:   # a quorum of one
            self.become_candidate()
            return
        self._start_election_requests(pre_vote=True)

    def _end_pre_vote(self, state: ProspectiveState) -> None:
        self.pre_votes.append({"epoch": state.epoch, "at": time.monotonic(), "won": state.won,
                               "granted": sorted(state.granted), "rejected": sorted(state.rejected)})

    def _prospective_after_election_loss(self, state: ProspectiveState) -> None:
        """Kafka's ``prospectiveTransitionAfterElectionLoss``: back to the leader it knew, else Unattached (same
        epoch either way: a lost pre-vote leaves no trace in the quorum)."""
        self._end_pre_vote(state)
        log.info("node %d: pre-vote in epoch %d lost (granted %s, rejected %s)", self.node_id, state.epoch,
                 sorted(state.granted), sorted(state.rejected))
        if state.leader >= 0:
            self.quorum.transition_to_follower(state.epoch, state.leader)
        else:
            self.quorum.transition_to_unattached(state.epoch)
        self.notify()

    def become_candidate(self) -> None:
        if isinstance(self.quorum.state, ProspectiveState):
            self._end_pre_vote(self.quorum.state)
        self.quorum.transition_to_candidate()
        if self.metrics is not None:
            self.metrics.on_election_start(self.now_ms())
        log.info("node %d: candidate in epoch %d", self.node_id, self.quorum.epoch)
        self.notify()
        self._start_election_requests(pre_vote=False)
        self._maybe_become_leader()   # a quorum of one elects itself

    def _maybe_become_leader(self) -> None:
        state = self.quorum.state
        if not (isinstance(state, CandidateState) and state.won):
            return
        leader = self.quorum.transition_to_leader(self.log.end_offset)
        if self.metrics is not None:
            self.metrics.on_leader_known(self.now_ms())
        # the first record of the epoch: LeaderChange (control), who leads and who voted for it
        self.log.append_as_leader([(control_key(LEADER_CHANGE), encode_leader_change(
            self.node_id, sorted(leader.voters), sorted(leader.granting_voters)))], leader.epoch, control=True)
        self.elections.append({"epoch": leader.epoch, "won_at": time.monotonic(), "granted": sorted(state.granted)})
        log.info("node %d: leader in epoch %d (votes of %s)", self.node_id, leader.epoch, sorted(state.granted))
        self._on_leader_append(leader)
        for voter in leader.non_acknowledging_voters():
            self._spawn(self._begin_quorum_epoch(voter, leader.epoch))

    # -- the poll loop: timers ---------------------------------------------------------------------------

    async def _poll_loop(self) -> None:
        while self._running:
            try:
                self._poll(time.monotonic())
            except Exception:   # a bug: say so loudly, keep the replica alive
                log.exception("node %d: poll failed", self.node_id)
            await self.wait_for_change(POLL_S)

    def _poll(self, now: float) -> None:
        state = self.quorum.state
        if self.quorum.is_observer:
            if isinstance(state, FollowerState) and now >= state.fetch_deadline:
                self.quorum.state = UnattachedState(state.epoch)   # look for the leader again (not persisted)
            return
        if isinstance(state, LeaderState):
            if state.time_until_check_quorum_expires(now) == 0:
                self._resign_for_check_quorum(state)
            return
        if isinstance(state, ResignedState) and self._shutting_down:
            return    # as Kafka's graceful shutdown: Resigned until an election bumps the epoch
        if isinstance(state, ResignedState) and now >= state.election_deadline:
            self.quorum.transition_to_unattached(state.epoch + 1)   # Kafka 4.0+'s pollResigned; then Prospective
            self.notify()
        elif isinstance(state, (UnattachedState, VotedState)) and now >= state.election_deadline:
            self.become_prospective()
        elif isinstance(state, FollowerState) and now >= state.fetch_deadline:
            log.info("node %d: no fetch answer from leader %d for %d ms", self.node_id, state.leader,
                     self.config.fetch_timeout_ms)
            self.become_prospective()
        elif isinstance(state, ProspectiveState) and (now >= state.election_deadline or state.lost):
            self._prospective_after_election_loss(state)
        elif isinstance(state, CandidateState) and now >= state.election_deadline:
            self.become_prospective()     # not won in its election timeout (lost or not): pre-vote again

    # -- Vote ----------------------------------------------------------------------------------------------

    def _start_election_requests(self, pre_vote: bool) -> None:
        state = self.quorum.state
        for voter in state.unrecorded():
            self._spawn(self._request_vote(voter, state, pre_vote))

    async def _request_vote(self, voter: int, nominee, pre_vote: bool) -> None:
        """A (pre-)vote request to one voter: a Candidate's in its bumped epoch, a Prospective's (``PreVote``) in
        its current one, for as long as that very state lasts (a Prospective may come back in the same epoch:
        its requests are its own). A pre-vote's answer that shows a leader this replica did not know makes it
        follow."""
        end = self.log.end_offset_and_epoch()
        epoch = nominee.epoch
        request = build(VoteRequest, VOTE_VERSION, {"cluster_id": self.config.cluster_id, "voter_id": voter, "topics": [
            {"topic_name": METADATA_TOPIC, "partitions": [
                {"partition_index": METADATA_PARTITION, "replica_epoch": epoch, "replica_id": self.node_id,
                 "last_offset_epoch": end.epoch, "last_offset": end.offset, "pre_vote": pre_vote}]}]})
        while self._running and self.quorum.state is nominee:
            try:
                response = await self._client(voter, "rpc").send(request)
            except (OSError, asyncio.TimeoutError, ConnectionError, EOFError, asyncio.IncompleteReadError):
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            p = single_partition(response)
            if response.error_code or p is None:
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            state = self.quorum.state
            if p.leader_epoch > epoch or (p.leader_epoch == epoch and p.leader_id >= 0
                                          and p.leader_id != state.leader_id):
                self.maybe_transition(p.leader_epoch, p.leader_id)
                return
            if not self._running or state is not nominee:
                return
            (state.granted if p.vote_granted else state.rejected).add(voter)
            if pre_vote and state.won:
                self.become_candidate()
            elif pre_vote and state.lost:
                self._prospective_after_election_loss(state)
            else:
                self._maybe_become_leader()
            self.notify()
            return

    def _still(self, cls, epoch: int) -> bool:
        return self._running and isinstance(self.quorum.state, cls) and self.quorum.epoch == epoch

    # -- BeginQuorumEpoch, EndQuorumEpoch ---------------------------------------------------------------

    async def _begin_quorum_epoch(self, voter: int, epoch: int) -> None:
        request = build(BeginQuorumEpochRequest, BEGIN_QUORUM_EPOCH_VERSION, {"cluster_id": self.config.cluster_id,
                        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [
                            {"partition_index": METADATA_PARTITION, "leader_id": self.node_id,
                             "leader_epoch": epoch}]}]})
        while self._still(LeaderState, epoch) and voter not in self.quorum.state.acknowledged:
            try:
                response = await self._client(voter, "rpc").send(request)
            except (OSError, asyncio.TimeoutError, ConnectionError, EOFError, asyncio.IncompleteReadError):
                await asyncio.sleep(RETRY_BACKOFF_S * 4)
                continue
            p = single_partition(response)
            if p is not None and p.leader_epoch > epoch:
                self.maybe_transition(p.leader_epoch, p.leader_id)
                return
            if p is not None and not p.error_code and self._still(LeaderState, epoch):
                self.quorum.state.acknowledged.add(voter)
                return
            await asyncio.sleep(RETRY_BACKOFF_S * 4)

    async def resign(self, timeout_s: float = 1.0) -> bool:
        """A leader's graceful step-down (Kafka's ``resign`` on shutdown): Resigned, then EndQuorumEpoch to every
        voter, preferred successors ordered by how far their logs go. Returns whether it led."""
        state = self.quorum.state
        if not isinstance(state, LeaderState):
            return False
        self._shutting_down = True
        successors = self._resign(state)
        await self._end_quorum_epoch(state.epoch, successors, timeout_s)
        return True

    def _resign(self, state: LeaderState) -> list[int]:
        """Leader -> Resigned; returns the preferred successors, the most up-to-date voters first."""
        others = sorted((r for r in state.replicas.values() if r.node_id != self.node_id),
                        key=lambda r: (-r.end_offset, r.node_id))
        successors = [r.node_id for r in others]
        self.quorum.transition_to_resigned(successors)
        self.notify()
        return successors

    def _resign_for_check_quorum(self, state: LeaderState) -> None:
        heard = sorted(state.fetched_voters)
        log.warning("node %d: resigning the leadership of epoch %d: no Fetch from a majority of the voters %s "
                    "within %d ms (1.5 x controller.quorum.fetch.timeout.ms; heard from %s)", self.node_id,
                    state.epoch, sorted(state.voters), int(state.check_quorum_timeout_s * 1000), heard)
        self.check_quorum_resignations.append({"epoch": state.epoch, "at": time.monotonic(), "fetched": heard})
        successors = self._resign(state)
        self._spawn(self._end_quorum_epoch(state.epoch, successors, self.config.request_timeout_ms / 1000))

    async def _end_quorum_epoch(self, epoch: int, successors: list[int], timeout_s: float) -> None:
        request = build(EndQuorumEpochRequest, END_QUORUM_EPOCH_VERSION, {"cluster_id": self.config.cluster_id,
                        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [
                            {"partition_index": METADATA_PARTITION, "leader_id": self.node_id,
                             "leader_epoch": epoch, "preferred_successors": successors}]}]})

        async def tell(voter: int) -> None:
            try:
                response = await self._client(voter, "rpc").send(request, timeout_s)
            except (OSError, asyncio.TimeoutError, ConnectionError, EOFError, asyncio.IncompleteReadError):
                return
            p = single_partition(response)
            if p is not None and p.leader_epoch > epoch:     # the voter knows a newer leader: follow it
                self.maybe_transition(p.leader_epoch, p.leader_id)
            elif self._still(ResignedState, epoch):
                self.quorum.state.acknowledged.add(voter)

        await asyncio.gather(*(tell(v) for v in successors))

    # -- Fetch (followers and observers) ---------------------------------------------------------------------

    async def _fetch_loop(self) -> None:
        while self._running:
            state = self.quorum.state
            if isinstance(state, FollowerState):
                target = state.leader
            elif self.quorum.is_observer and isinstance(state, UnattachedState):
                target = self.rng.choice(sorted(self.config.voters))   # ask any voter who leads
            else:
                await self.wait_for_change(POLL_S * 5)
                continue
            try:
                await self._fetch_once(target, state)
            except (OSError, asyncio.TimeoutError, ConnectionError, EOFError, asyncio.IncompleteReadError):
                await asyncio.sleep(RETRY_BACKOFF_S)
            except Exception:
                log.exception("node %d: fetch from %d failed", self.node_id, target)
                await asyncio.sleep(RETRY_BACKOFF_S)

    async def _fetch_once(self, target: int, state) -> None:
        end = self.log.end_offset_and_epoch()
        request = build(FetchRequest, FETCH_VERSION, {
            "cluster_id": self.config.cluster_id,
            "replica_state": {"replica_id": self.node_id, "replica_epoch": -1},
            "max_wait_ms": self.config.fetch_max_wait_ms, "min_bytes": 0, "max_bytes": 8 * 1024 * 1024,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic_id": METADATA_TOPIC_ID, "partitions": [
                {"partition": METADATA_PARTITION, "current_leader_epoch": state.epoch, "fetch_offset": end.offset,
                 "last_fetched_epoch": end.epoch, "log_start_offset": self.log.log.log_start_offset,
                 "partition_max_bytes": 8 * 1024 * 1024}]}],
            "forgotten_topics_data": [], "rack_id": ""})
        timeout = (self.config.fetch_max_wait_ms + self.config.request_timeout_ms) / 1000
        response = await self._client(target, "fetch").send(request, timeout)
        if self.quorum.state is not state:
            return   # the state changed while the fetch was out: its answer is stale
        p = single_partition(response, "responses")
        if response.error_code or p is None:
            await asyncio.sleep(RETRY_BACKOFF_S)
            return
        leader = p.current_leader
        if p.error_code:
            if leader is not None and leader.leader_epoch >= 0:
                self.maybe_transition(leader.leader_epoch, leader.leader_id)
            if self.quorum.state is state:
                await asyncio.sleep(RETRY_BACKOFF_S)
            return
        if isinstance(state, UnattachedState):   # an observer asked a voter that turns out to lead
            if leader is not None and leader.leader_id >= 0:
                self.maybe_transition(leader.leader_epoch, leader.leader_id)
            return
        state.fetch_deadline = time.monotonic() + self.config.fetch_timeout_ms / 1000   # heard from the leader
        state.has_fetched_from_leader = True     # from now on it refuses pre-votes (KIP-996)
        diverging = p.diverging_epoch
        if diverging is not None and diverging.epoch >= 0 and diverging.end_offset >= 0:
            before = self.log.end_offset
            after = self.log.truncate_to_end_offset(OffsetAndEpoch(diverging.epoch, diverging.end_offset))
            log.info("node %d: log diverged from leader %d's (epoch %d ends at %d): truncated from %d to %d",
                     self.node_id, target, diverging.epoch, diverging.end_offset, before, after)
            self.truncations.append((diverging.epoch, diverging.end_offset, before, after))
            return
        snapshot = p.snapshot_id
        if snapshot is not None and snapshot.end_offset >= 0 and snapshot.epoch >= 0:
            # below the leader's log start offset: get its snapshot (KIP-630), then fetch from its end offset
            if await fetch_snapshot(self, target, state, OffsetAndEpochId(snapshot.end_offset, snapshot.epoch)):
                self.high_watermark = max(self.high_watermark or 0, snapshot.end_offset)
            return
        if p.records:
            before = self.log.end_offset
            self.log.append_as_follower(bytes(p.records))
            if self.metrics is not None:
                self.metrics.on_fetched(self.log.end_offset - before, self.now_ms())
        if p.high_watermark is not None and p.high_watermark >= 0:
            hw = min(p.high_watermark, self.log.end_offset)
            if self.high_watermark is None or hw > self.high_watermark:
                self.high_watermark = hw
        self.notify()


class NotLeaderError(RuntimeError):
    """An append asked of a replica that does not lead (Kafka's NotLeaderException)."""
