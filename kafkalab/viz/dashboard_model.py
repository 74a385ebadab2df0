"""What the dashboard shows for a given cluster state: pure functions of a :class:`~.cluster_state.Snapshot`.

No widgets here, so each decision can be tested with a hand-made snapshot:

* :func:`broker_rows` — each broker's status (``up``, ``down``, ``frozen``,
  ``starting``), whether it is the controller, and which buttons are enabled;
  a disabled button carries the reason (its tooltip): an embedded broker lives
  inside the kernel, an external cluster is not ours to stop;
* :func:`partition_rows` — leader, replicas, ISR, and per replica its log end
  offset against the high watermark (the bars), with under-replicated and
  offline partitions flagged;
* :func:`group_rows` — consumer groups: state, members, who owns which
  partition, and the lag on each;
* the HTML of the three tables (:func:`brokers_html`, :func:`partitions_html`,
  :func:`groups_html`).
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from .cluster_state import CLUSTER, EMBEDDED, EXTERNAL, Snapshot

ACTIONS = ("kill", "stop", "restart", "pause", "resume")
ACTION_HELP = {
    "kill": "SIGKILL: a crash, no controlled shutdown",
    "stop": "SIGTERM: a controlled shutdown (leadership moves away first)",
    "restart": "start it again: same id, port and data",
    "pause": "SIGSTOP: frozen, alive but silent",
    "resume": "SIGCONT: run again",
}
EMBEDDED_REASON = ("the embedded broker runs inside this notebook's kernel: it stops with kafka.close() or a kernel "
                   "restart. For brokers to break, use kafkalab.connect(brokers=3) or `kafkalab up`")
EXTERNAL_REASON = ("an external cluster (KAFKALAB_BOOTSTRAP_SERVERS) is only watched: kafkalab does not own its "
                   "processes. Start one with `kafkalab up` and export the two lines it prints, or use "
                   "kafkalab.connect(brokers=3)")

STATUS = {   # Cluster's process states -> (what the dashboard says, its colour class)
    "running": ("up", "up"), "up": ("up", "up"), "starting": ("starting", "starting"),
    "paused": ("frozen (paused)", "frozen"), "stopped": ("down (stopped)", "down"),
    "killed": ("down (killed)", "down"), "exited": ("down (exited)", "down"),
}
COLOURS = {"up": "#2ca02c", "down": "#d62728", "frozen": "#1f77b4", "starting": "#ff7f0e"}


@dataclass
class Button:
    action: str
    enabled: bool
    reason: str      # the tooltip: what it does, or why it is greyed out


@dataclass
class BrokerRow:
    id: int
    address: str
    pid: str
    status: str
    status_class: str
    controller: bool
    registered: str
    buttons: list[Button]


def _buttons(kind: str, state: str) -> list[Button]:
    if kind == EMBEDDED:
        return [Button(a, False, EMBEDDED_REASON) for a in ACTIONS]
    if kind == EXTERNAL:
        return [Button(a, False, EXTERNAL_REASON) for a in ACTIONS]
    allowed = {
        "running": {"kill", "stop", "restart", "pause"},
        "starting": {"kill", "stop"},
        "paused": {"kill", "stop", "restart", "resume"},
        "stopped": {"restart"}, "killed": {"restart"}, "exited": {"restart"},
    }.get(state, set())
    out = []
    for a in ACTIONS:
        if a in allowed:
            out.append(Button(a, True, ACTION_HELP[a]))
        else:
            why = "it is not paused" if a == "resume" else f"it is {state}"
            out.append(Button(a, False, f"{ACTION_HELP[a]} — not now: {why}"))
    return out


def broker_rows(snap: Snapshot) -> list[BrokerRow]:
    rows = []
    for b in snap.brokers:
        status, css = STATUS.get(b.state, (b.state, "down"))
        registered = "" if b.registered is None else ("yes" if b.registered else "no")
        if snap.kind == CLUSTER and b.registered and css == "down":
            status += ", still registered"   # its ZooKeeper session has not expired yet
        rows.append(BrokerRow(b.id, f"{b.host}:{b.port}", "" if b.pid is None else str(b.pid), status, css,
                              b.is_controller or b.id == snap.controller, registered, _buttons(snap.kind, b.state)))
    return rows


@dataclass
class ReplicaBar:
    broker: int
    leo: int | None
    fraction: float          # leo / the partition's largest offset (the bar's length, 0..1)
    is_leader: bool
    in_isr: bool
    behind: int | None       # high watermark - leo, for a follower below it (None: unknown)


@dataclass
class PartitionRow:
    topic: str
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]
    high_watermark: int | None
    hw_fraction: float
    bars: list[ReplicaBar]
    flag: str                # "offline", "under-replicated" or ""


def partition_rows(snap: Snapshot) -> list[PartitionRow]:
    rows = []
    for p in snap.partitions:
        known = [v for v in list(p.leo.values()) + [p.high_watermark] if v is not None]
        top = max(known) if known and max(known) > 0 else 1
        bars = []
        for r in p.replicas:
            leo = p.leo.get(r)
            behind = None if leo is None or p.high_watermark is None else max(0, p.high_watermark - leo)
            bars.append(ReplicaBar(r, leo, 0.0 if leo is None else min(1.0, leo / top), r == p.leader,
                                   r in p.isr, behind))
        flag = "offline" if p.offline else ("under-replicated" if p.under_replicated else "")
        hw = p.high_watermark
        rows.append(PartitionRow(p.topic, p.partition, p.leader, list(p.replicas), list(p.isr), hw,
                                 0.0 if hw is None else min(1.0, hw / top), bars, flag))
    return rows


@dataclass
class GroupRow:
    group: str
    state: str
    members: int
    topic: str
    partition: int | None
    owner: str
    committed: int | None
    end: int | None
    lag: int | None


def group_rows(snap: Snapshot) -> list[GroupRow]:
    rows = []
    for g in snap.groups:
        owner = {tp: (m.client_id or m.member_id) + (f"@{m.host}" if m.host else "")
                 for m in g.members for tp in m.assignment}
        if not g.offsets:
            rows.append(GroupRow(g.group_id, g.state, len(g.members), "", None, "", None, None, None))
        for o in g.offsets:
            rows.append(GroupRow(g.group_id, g.state, len(g.members), o.topic, o.partition,
                                 owner.get((o.topic, o.partition), ""), o.committed, o.end, o.lag))
    return rows


# -- HTML -----------------------------------------------------------------------------------------------------

def _e(value) -> str:
    return "–" if value is None else html.escape(str(value))


TABLE = 'style="border-collapse:collapse;font-size:12px;font-family:var(--jp-code-font-family,monospace)"'
TH = 'style="text-align:left;padding:2px 8px;border-bottom:1px solid #999"'
TD = 'style="padding:2px 8px;border-bottom:1px solid #eee;vertical-align:middle"'


def status_html(row: BrokerRow) -> str:
    colour = COLOURS.get(row.status_class, "#777")
    crown = ' <span title="the controller (/controller in ZooKeeper)">★ controller</span>' if row.controller else ""
    return (f'<span class="kafkalab-broker-{row.id}-status kafkalab-status-{row.status_class}" '
            f'style="color:{colour};font-weight:bold">● {html.escape(row.status)}</span>{crown}')


def brokers_html(rows: list[BrokerRow]) -> str:
    """The brokers as a table without buttons (the text fallback, and ``kafkalab status``-like)."""
    body = "".join(f"<tr><td {TD}>{r.id}</td><td {TD}>{_e(r.address)}</td><td {TD}>{_e(r.pid)}</td>"
                   f"<td {TD}>{status_html(r)}</td><td {TD}>{_e(r.registered)}</td></tr>" for r in rows)
    return (f"<table {TABLE}><tr><th {TH}>broker</th><th {TH}>address</th><th {TH}>pid</th><th {TH}>status</th>"
            f"<th {TH}>registered</th></tr>{body}</table>")


def _bar(b: ReplicaBar, hw_fraction: float) -> str:
    colour = "#2ca02c" if b.in_isr else "#d62728"
    width = 160
    fill = int(round(b.fraction * width))
    mark = int(round(hw_fraction * width))
    label = f"{b.broker}{'*' if b.is_leader else ''}: {_e(b.leo)}"
    title = (f"broker {b.broker}{' (leader)' if b.is_leader else ''}: log end offset {_e(b.leo)}"
             f"{'' if b.in_isr else ', NOT in the ISR'}"
             + (f", {b.behind} behind the high watermark" if b.behind else ""))
    return (f'<div title="{html.escape(title)}" style="display:flex;align-items:center;gap:6px;height:14px">'
            f'<span style="width:64px">{label}</span>'
            f'<span style="position:relative;display:inline-block;width:{width}px;height:10px;background:#eee">'
            f'<span style="position:absolute;left:0;top:0;height:10px;width:{fill}px;background:{colour}"></span>'
            f'<span style="position:absolute;left:{max(0, mark - 1)}px;top:-2px;height:14px;width:2px;'
            f'background:#000"></span></span></div>')


def partitions_html(rows: list[PartitionRow]) -> str:
    if not rows:
        return "<i>no partitions to show (no topic chosen, or none created yet)</i>"
    body = []
    for r in rows:
        bg = {"offline": "#f8d0d0", "under-replicated": "#fdebc8"}.get(r.flag, "")
        style = f' style="background:{bg}"' if bg else ""
        bars = "".join(_bar(b, r.hw_fraction) for b in r.bars)
        flag = f'<b class="kafkalab-flag">{r.flag}</b>' if r.flag else ""
        body.append(f'<tr{style} class="kafkalab-partition"><td {TD}>{_e(r.topic)}</td><td {TD}>{r.partition}</td>'
                    f"<td {TD}>{_e(r.leader)}</td><td {TD}>{_e(','.join(map(str, r.replicas)))}</td>"
                    f"<td {TD}>{_e(','.join(map(str, r.isr)))}</td><td {TD}>{_e(r.high_watermark)}</td>"
                    f"<td {TD}>{bars}</td><td {TD}>{flag}</td></tr>")
    return (f"<table {TABLE}><tr><th {TH}>topic</th><th {TH}>partition</th><th {TH}>leader</th>"
            f"<th {TH}>replicas</th><th {TH}>ISR</th><th {TH}>high watermark</th>"
            f"<th {TH}>log end offset per replica (bar; black line: high watermark; red: out of ISR)</th>"
            f"<th {TH}></th></tr>{''.join(body)}</table>")


def groups_html(rows: list[GroupRow]) -> str:
    if not rows:
        return "<i>no consumer groups</i>"
    body = "".join(
        f"<tr><td {TD}>{_e(r.group)}</td><td {TD}>{_e(r.state)}</td><td {TD}>{r.members}</td>"
        f"<td {TD}>{_e(r.topic)}</td><td {TD}>{_e(r.partition)}</td><td {TD}>{_e(r.owner)}</td>"
        f"<td {TD}>{_e(r.committed)}</td><td {TD}>{_e(r.end)}</td>"
        f"<td {TD}><b>{_e(r.lag)}</b></td></tr>" for r in rows)
    return (f"<table {TABLE}><tr><th {TH}>group</th><th {TH}>state</th><th {TH}>members</th><th {TH}>topic</th>"
            f"<th {TH}>partition</th><th {TH}>owner</th><th {TH}>committed</th><th {TH}>end offset</th>"
            f"<th {TH}>lag</th></tr>{body}</table>")


def header_html(snap: Snapshot) -> str:
    what = {EMBEDDED: "embedded mini broker (inside this kernel)", CLUSTER: f"local {snap.backend} cluster",
            EXTERNAL: "external cluster"}[snap.kind]
    head = (f"<b>kafkalab dashboard</b> — {what}, bootstrap servers <code>{html.escape(snap.bootstrap_servers)}"
            f"</code>, controller {_e(snap.controller)}")
    return head + metrics_html(snap)


def metrics_html(snap: Snapshot) -> str:
    """A line of Kafka's own metrics (summed over the brokers) and the groups' total lag; a non-zero
    under-replicated, under-min-ISR or offline count, or an active controller count other than 1, in red."""
    parts = []
    for name, value in snap.metrics.items():
        bad = value != 1 if name == "ActiveControllerCount" else value > 0
        text = f"{html.escape(name)} {int(value)}"
        parts.append(f"<b style='color:{COLOURS['down']}'>{text}</b>" if bad else text)
    lags = [g.total_lag for g in snap.groups if g.total_lag is not None]
    if lags:
        parts.append(f"consumer lag {sum(lags)}")
    return f"<br><small>{' · '.join(parts)}</small>" if parts else ""
