"""Who stops consuming when a group changes: the same three members under each group protocol.

Lesson 05 and ``benchmarks/rebalance_protocols.py`` run this scenario on one topic, one group per protocol:

1. member ``a`` joins, then ``b``, then ``k`` (``k`` runs in a process of its own);
2. ``b`` leaves (``close()``: LeaveGroup in the classic protocol, a heartbeat with member epoch -1 in the
   consumer protocol);
3. ``k`` is SIGKILLed: nothing tells the coordinator, which notices when ``k``'s session times out.

Every member logs its rebalance callbacks (``on_assign``, ``on_revoke``, ``on_lost``) with wall-clock
times (``k`` prints them on its stdout), so the run gives each member's partitions over time, and from
them, for each step, how long the member ``a`` that stays throughout **owned nothing** (it could not
consume at all) and how long the partitions that moved **had no owner**. The protocols:

``classic eager``
    ``group.protocol=classic`` with the ``range`` assignor: every member revokes every partition at
    the start of each rebalance (JoinGroup/SyncGroup) and gets its new share at the end;
``classic cooperative``
    ``cooperative-sticky`` (KIP-429): only the partitions that move are revoked, and assigned to their
    new owner in a second rebalance;
``consumer (KIP-848)``
    ``group.protocol=consumer``: no group-wide barrier; the coordinator computes the assignment and
    each member, in its heartbeats, revokes what it must give up and gets what was released.

The classic protocols take ``session.timeout.ms`` from the client; the consumer protocol's session
timeout is the broker's (``group.consumer.session.timeout.ms``, and since Kafka 4.0 a per-group config),
so pass the broker's value as ``session_ms`` to compare like with like.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field

PROTOCOLS = {
    "classic eager": {"group.protocol": "classic", "partition.assignment.strategy": "range"},
    "classic cooperative": {"group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky"},
    "consumer (KIP-848)": {"group.protocol": "consumer"},
}
STEPS = ("k joins", "b leaves", "k killed")

# member k: the same consumer in a child process, printing its callbacks ("<time> assign|revoke|lost 0,3")
CHILD = textwrap.dedent("""
    import json, sys, time
    from confluent_kafka import Consumer
    config = json.loads(sys.argv[1])
    c = Consumer(config)
    log = lambda what: lambda _c, ps: print(time.time(), what, ",".join(str(p.partition) for p in ps), flush=True)
    c.subscribe([sys.argv[2]], on_assign=log("assign"), on_revoke=log("revoke"), on_lost=log("lost"))
    while True:
        c.poll(0.05)
""")


@dataclass
class Run:
    """One protocol's run: the callbacks, the step times and what they cost."""
    protocol: str
    start: float
    events: list = field(default_factory=list)          # (time, member, "assign"/"revoke"/"lost", [partitions])
    steps: dict = field(default_factory=dict)           # step -> wall-clock time it began
    described: object = None                             # the admin API's description with three members
    stop: float | None = None                            # when the scenario ended (before the members close)

    def owned(self, member: str, until: float | None = None) -> set[int]:
        parts: set[int] = set()
        for t, m, what, ps in sorted(self.events, key=lambda e: e[0]):
            if m != member or (until is not None and t > until):
                continue
            parts = parts | set(ps) if what == "assign" else parts - set(ps)
        return parts

    def timeline(self) -> list[tuple[float, str, list[int]]]:
        """(seconds since start, member, partitions owned from then on): what plot_group_timeline draws."""
        out, now = [], {}
        for t, m, what, ps in sorted(self.events, key=lambda e: e[0]):
            cur = now.get(m, set())
            now[m] = cur | set(ps) if what == "assign" else cur - set(ps)
            out.append((t - self.start, m, sorted(now[m])))
        return out

    def _intervals(self, member: str):
        """[(from, to, partitions)] of a member's ownership, ending at the run's last event."""
        out, cur, since = [], set(), None
        for t, m, what, ps in sorted(self.events, key=lambda e: e[0]):
            if m != member:
                continue
            if since is not None:
                out.append((since, t, cur))
            cur = cur | set(ps) if what == "assign" else cur - set(ps)
            since = t
        if since is not None:
            out.append((since, self.end, cur))
        return out

    @property
    def end(self) -> float:
        return self.stop if self.stop is not None else max(t for t, *_ in self.events)

    def window(self, step: str) -> tuple[float, float]:
        i = STEPS.index(step)
        t0 = self.steps[step]
        t1 = self.steps[STEPS[i + 1]] if i + 1 < len(STEPS) else self.end + 1e-6
        return t0, t1

    def idle_s(self, member: str, step: str) -> float:
        """Seconds within the step during which ``member`` owned no partition (it consumed nothing)."""
        t0, t1 = self.window(step)
        return sum(min(b, t1) - max(a, t0) for a, b, ps in self._intervals(member) if not ps and b > t0 and a < t1)

    def revoked(self, member: str, step: str) -> int:
        t0, t1 = self.window(step)
        return sum(len(ps) for t, m, what, ps in self.events if m == member and what != "assign" and t0 <= t < t1)

    def unowned_s(self, step: str, partitions: int) -> float:
        """The longest time within the step that one partition had no owner (nobody could read it)."""
        t0, t1 = self.window(step)
        owners = {m for _, m, *_ in self.events}
        worst = 0.0
        for p in range(partitions):
            held = sorted((a, b) for m in owners for a, b, ps in self._intervals(m) if p in ps and b > t0 and a < t1)
            cursor, gap = t0, 0.0
            for a, b in held:
                gap = max(gap, a - cursor)
                cursor = max(cursor, b)
            worst = max(worst, gap, 0.0 if cursor >= t1 else t1 - cursor)
        return worst


def run_protocol(protocol: str, bootstrap: str, topic: str, group: str, partitions: int, session_ms: int,
                 heartbeat_ms: int = 500, timeout: float = 60.0, admin=None) -> Run:
    """The scenario for one protocol (see the module docstring); the Run with its callbacks and step times."""
    from confluent_kafka import Consumer

    config = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
              **PROTOCOLS[protocol]}
    if config["group.protocol"] == "classic":   # in the consumer protocol these are the broker's
        config.update({"session.timeout.ms": session_ms, "heartbeat.interval.ms": heartbeat_ms})
    run = Run(protocol, time.time())
    lock = threading.Lock()

    def record(member, what, ps, t=None):
        with lock:
            run.events.append((time.time() if t is None else t, member, what, sorted(p.partition for p in ps)))

    def member(name):
        c = Consumer({**config, "client.id": name})
        c.subscribe([topic], on_assign=lambda _c, ps: record(name, "assign", ps),
                     on_revoke=lambda _c, ps: record(name, "revoke", ps),
                     on_lost=lambda _c, ps: record(name, "lost", ps))
        return c

    consumers = {"a": member("a")}
    child = None

    def pump(done, what):
        deadline = time.time() + timeout
        while not done():
            if time.time() > deadline:
                raise TimeoutError(f"{protocol}: {what} not within {timeout:.0f} s; owned "
                                   f"{ {m: sorted(run.owned(m)) for m in ('a', 'b', 'k')} }")
            for c in list(consumers.values()):
                c.poll(0.02)

    def covered(*members):
        sets = [run.owned(m) for m in members]
        return all(sets) and sorted(p for s in sets for p in s) == list(range(partitions))

    def read_child():
        for line in child.stdout:
            t, what, ps = (line.split() + [""])[:3]
            with lock:
                run.events.append((float(t), "k", what, [int(p) for p in ps.split(",") if p]))

    try:
        pump(lambda: covered("a"), "a owns every partition")
        consumers["b"] = member("b")
        pump(lambda: covered("a", "b"), "a and b share the partitions")
        run.steps["k joins"] = time.time()
        child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps({**config, "client.id": "k"}), topic],
                                 stdout=subprocess.PIPE, text=True)
        reader = threading.Thread(target=read_child, daemon=True)
        reader.start()
        pump(lambda: covered("a", "b", "k"), "a, b and k share the partitions")
        settle(pump, 0.5)
        if admin is not None:
            run.described = admin.describe_consumer_groups([group])[group].result()
        run.steps["b leaves"] = time.time()
        consumers.pop("b").close()
        record("b", "revoke", [_P(p) for p in run.owned("b")], run.steps["b leaves"])   # b stopped when it closed
        pump(lambda: covered("a", "k"), "a and k share the partitions")
        settle(pump, 0.5)
        run.steps["k killed"] = time.time()
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        reader.join(5)
        t_kill = run.steps["k killed"]
        run.events = [e for e in run.events if not (e[1] == "k" and e[0] > t_kill)]
        record("k", "lost", [_P(p) for p in run.owned("k")], t_kill)     # k owns nothing once it is dead
        pump(lambda: covered("a"), "a owns every partition again")
        settle(pump, 0.5)
        run.stop = time.time()
        return run
    finally:
        for c in consumers.values():
            c.close()
        if run.stop is not None:   # what closing the others did is not part of the scenario
            run.events = [e for e in run.events if e[0] <= run.stop]
        if child is not None:
            if child.poll() is None:
                child.kill()
            child.wait()
            child.stdout.close()


class _P:
    """A stand-in for a TopicPartition in ``record`` (only ``.partition`` is read)."""

    def __init__(self, partition: int):
        self.partition = partition


def settle(pump, seconds: float) -> None:
    """Keep polling for ``seconds`` (late callbacks of the step just done land in its window)."""
    until = time.time() + seconds
    pump(lambda: time.time() >= until, "settling")


def run_protocols(bootstrap: str, topic: str, partitions: int, session_ms: int, group_prefix: str,
                  protocols=tuple(PROTOCOLS), admin=None, timeout: float = 60.0) -> dict[str, Run]:
    """Every protocol's scenario at once, each in a thread of its own and a group of its own."""
    runs, errors = {}, []

    def one(protocol):
        try:
            group = f"{group_prefix}-{protocol.split()[0]}-{protocol.split()[-1].strip('()').lower()}"
            runs[protocol] = run_protocol(protocol, bootstrap, topic, group, partitions, session_ms,
                                          timeout=timeout, admin=admin)
        except BaseException as exc:   # noqa: BLE001 - reported below, in the caller's thread
            errors.append(exc)
    threads = [threading.Thread(target=one, args=(p,)) for p in protocols]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return {p: runs[p] for p in protocols}


def summary(runs: dict[str, Run], partitions: int) -> list[dict]:
    """One row per protocol: per step, how long ``a`` consumed nothing and the longest a partition had no owner."""
    rows = []
    for protocol, run in runs.items():
        row = {"protocol": protocol}
        for step in STEPS:
            row[f"{step}: a idle s"] = round(run.idle_s("a", step), 2)
            row[f"{step}: a revoked"] = run.revoked("a", step)
            row[f"{step}: unowned s"] = round(run.unowned_s(step, partitions), 2)
        rows.append(row)
    return rows
