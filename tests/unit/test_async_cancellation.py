"""A broker's stop must never hang on a task that lost its cancellation (kafkalab.broker.utils.async_util).

On Python < 3.12 ``asyncio.wait_for`` returns normally when the future it waits for completes in
the same loop step as the cancellation of the waiting task (CPython #86296). A broker met that race
at controlled shutdown: the LeaderAndIsr that moved its partitions away woke the waiting Fetches and
Produces just as ``SocketServer.stop`` cancelled their connections, and ``Cluster.stop`` waited 30 s.
Each test below makes the two happen in the same loop step, deterministically.
"""
from __future__ import annotations

import asyncio

import pytest
from kafka.protocol.consumer.fetch import FetchRequest

from kafkalab.broker.utils import async_util
from kafkalab.broker.common.message.codec import build
from kafkalab.broker.server.config import BrokerConfig
from kafkalab.broker.server.delayed_produce import DelayedProduce, ProducePurgatory
from kafkalab.broker.kafka_server import KafkaServer
from kafkalab.broker.network.network_client import NetworkClient
from kafkalab.broker.server.replica_manager import ReplicaManager


async def cancelled_while_completing(waiting, complete) -> str:
    """Start ``waiting`` (a coroutine), let it block, then in one loop step complete what it waits
    for and cancel it; 'cancelled' if the cancellation came through, else what it returned."""
    task = asyncio.ensure_future(waiting)
    for _ in range(3):
        await asyncio.sleep(0)
    assert not task.done()
    complete()
    task.cancel()
    try:
        return f"returned {await task!r}"
    except asyncio.CancelledError:
        return "cancelled"


def test_the_python_race_exists_or_is_fixed():
    """What the helpers are for: on 3.10/3.11 asyncio.wait_for loses this cancellation."""
    async def scenario():
        fut = asyncio.get_running_loop().create_future()
        return await cancelled_while_completing(asyncio.wait_for(fut, 10), lambda: fut.set_result(1))
    import sys
    assert asyncio.run(scenario()) == ("cancelled" if sys.version_info >= (3, 12) else "returned 1")


def test_wait_done_and_wait_for_never_lose_a_cancellation():
    async def scenario():
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        a = await cancelled_while_completing(async_util.wait_done(fut, 10), lambda: fut.set_result(1))
        fut2 = loop.create_future()
        b = await cancelled_while_completing(async_util.wait_for(fut2, 10), lambda: fut2.set_result(2))
        # and they still do their job
        fut3 = loop.create_future()
        loop.call_later(0.01, fut3.set_result, 3)
        assert await async_util.wait_for(fut3, 5) == 3
        assert await async_util.wait_done(loop.create_future(), 0.01) is False
        with pytest.raises(asyncio.TimeoutError):
            await async_util.wait_for(asyncio.sleep(10), 0.01)
        return a, b
    assert asyncio.run(scenario()) == ("cancelled", "cancelled")


def test_cancel_and_wait_cancels_again_a_task_that_carried_on():
    async def stubborn(log):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            log.append("swallowed")    # a handler that loses its first cancellation
        await asyncio.sleep(10)

    async def scenario():
        log = []
        task = asyncio.ensure_future(stubborn(log))
        await asyncio.sleep(0)
        await asyncio.wait_for(async_util.cancel_and_wait([task], recancel_s=0.05), 2)
        return log, task.cancelled()
    assert asyncio.run(scenario()) == (["swallowed"], True)


def test_a_waiting_fetch_woken_as_it_is_cancelled_ends():
    """ReplicaManager's fetch purgatory (a long-poll Fetch waiting for data)."""
    async def scenario():
        rm = ReplicaManager(1)
        return await cancelled_while_completing(rm.wait_for_data([("t", 0)], 10),
                                                lambda: rm.notify_data_arrived("t", 0))
    assert asyncio.run(scenario()) == "cancelled"


def test_a_waiting_acks_all_produce_woken_as_it_is_cancelled_ends():
    """The produce purgatory: the partition moved away (NOT_LEADER_OR_FOLLOWER) as the broker stops."""
    class MovedAway:   # the one thing DelayedProduce asks a partition
        def __init__(self):
            self.is_leader = True

        def check_enough_replicas_reach_offset(self, offset):
            return (True, 6) if not self.is_leader else (False, 0)

    async def scenario():
        partition = MovedAway()
        purgatory = ProducePurgatory({("t", 0): partition})

        def leadership_moves():
            partition.is_leader = False
            purgatory.check_and_complete(("t", 0))
        return await cancelled_while_completing(DelayedProduce(purgatory, {("t", 0): 5}).wait(10_000),
                                                leadership_moves)
    assert asyncio.run(scenario()) == "cancelled"


def test_a_network_client_send_cancelled_as_its_answer_arrives_is_cancelled():
    """A replica fetcher (or the controller's channel) stopped just as a response comes in."""
    async def scenario():
        client = NetworkClient("127.0.0.1", 9, timeout_s=5)
        answer = asyncio.get_running_loop().create_future()

        async def exchange(request):   # the request/response round trip, its response about to arrive
            return await answer
        client._exchange = exchange
        return await cancelled_while_completing(client.send(object()), lambda: answer.set_result("response"))
    assert asyncio.run(scenario()) == "cancelled"


def test_a_broker_stops_while_a_woken_fetch_is_being_cancelled(tmp_path):
    """The race on a real broker: a consumer's long-poll Fetch waits in the purgatory; the broker starts
    stopping and, in the same loop step, data arrives for the Fetch. The stop must end in well under
    a second (it used to wait for the client to hang up)."""
    async def scenario():
        server = KafkaServer(BrokerConfig({"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0"}))
        await server.start()
        client = NetworkClient("127.0.0.1", server.port, timeout_s=30)
        stopping = None
        try:
            server.admin_manager.create_topic("t", 1, 1)
            request = build(FetchRequest, 12, {
                "replica_id": -1, "max_wait_ms": 20_000, "min_bytes": 1, "max_bytes": 1 << 20,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": "t", "partitions": [{
                    "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                    "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
                "forgotten_topics_data": [], "rack_id": ""})
            fetch = asyncio.ensure_future(client.send(request))
            for _ in range(200):
                if server.replica_manager._fetch_waiters:
                    break
                await asyncio.sleep(0.01)
            assert server.replica_manager._fetch_waiters, "the Fetch never waited in the purgatory"
            stopping = asyncio.ensure_future(server.stop())         # its first step is queued now...
            server.replica_manager.notify_data_arrived("t", 0)    # ...before the waiting Fetch's wake-up
            done, _ = await asyncio.wait({stopping}, timeout=5)
            fetch.cancel()
            return bool(done)
        finally:
            await client.close()
            if stopping is not None and not stopping.done():
                await asyncio.wait({stopping}, timeout=30)
    assert asyncio.run(scenario()) is True
