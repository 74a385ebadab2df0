"""``kafkalab.viz.dashboard(kafka)``: watch a cluster live in the notebook, and break it with buttons.

::

    kafka = kafkalab.connect(brokers=3)
    kafkalab.viz.dashboard(kafka)            # brokers, partitions, groups; refreshes every 2 s

Three panels, redrawn every ``interval_s`` seconds while the widget is shown:

* **brokers** — up, down or frozen, the controller (★), pid and port, with
  kill / stop / restart / pause / resume buttons. They work for a local cluster
  (``connect(brokers=N)``, ``kafkalab.cluster()``, or ``kafkalab up``'s, which
  the buttons control through its supervisor); for the embedded broker and an
  external cluster they are greyed out, and their tooltip says why;
* **partitions** of the chosen topics — leader, replicas, ISR, and a bar per
  replica: its log end offset, with the high watermark as a black line.
  Under-replicated partitions are shaded orange, offline ones red;
* **consumer groups** — state, members, who owns which partition, committed
  offset, end offset and lag.

What it shows is decided in :mod:`kafkalab.viz.dashboard_model` (pure functions,
unit-tested); the data comes from :mod:`kafkalab.viz.cluster_state`.

It refreshes in a background thread, only while at least one view of it is
open in the browser (ipywidgets counts them), and stops for good when it is
closed (``d.close()``, or clearing its output), when ``kafka`` is closed, or
when the kernel exits (the thread is a daemon).
"""
from __future__ import annotations

import atexit
import html
import threading
import time
import weakref

import ipywidgets as widgets

from . import dashboard_model as model
from .cluster_state import CLUSTER, Collector

_LIVE: "weakref.WeakSet[Dashboard]" = weakref.WeakSet()


class Dashboard(widgets.VBox):
    """The widget :func:`dashboard` returns; ``refresh()`` redraws now, ``close()`` stops it."""

    def __init__(self, kafka, topics=None, interval_s: float = 2.0, internal: bool = False, groups: bool = True):
        self._collector = Collector(kafka)
        self._kafka = kafka
        self.interval_s = interval_s
        self._internal = internal
        self._groups = groups
        self._auto_topics = topics is None
        self._updating = False
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._broker_widgets: dict[int, dict] = {}
        self.snapshot = None
        self.header = widgets.HTML()
        self.message = widgets.HTML()
        self.brokers_box = widgets.VBox()
        self.topic_picker = widgets.SelectMultiple(description="topics", rows=3,
                                                   layout=widgets.Layout(width="360px"))
        self.partitions = widgets.HTML()
        self.groups_html = widgets.HTML()
        self.pause_button = widgets.ToggleButton(value=False, description="pause refresh", icon="pause",
                                                 tooltip="stop/start redrawing (the cluster keeps running)")
        if topics is not None:
            chosen = [topics] if isinstance(topics, str) else list(topics)
            self.topic_picker.options = chosen
            self.topic_picker.value = tuple(chosen)
        super().__init__([
            self.header,
            widgets.HTML("<b>brokers</b>"), self.brokers_box,
            widgets.HBox([widgets.HTML("<b>partitions</b>"), self.topic_picker]), self.partitions,
            widgets.HTML("<b>consumer groups</b>"), self.groups_html,
            widgets.HBox([self.pause_button, self.message]),
        ])
        self.add_class("kafkalab-dashboard")
        self._view_count = 0          # ipywidgets counts the views shown in the browser
        self.topic_picker.observe(self._topics_changed, names="value")
        self.refresh()
        self._thread = threading.Thread(target=self._loop, name="kafkalab-dashboard", daemon=True)
        self._thread.start()
        _LIVE.add(self)

    # -- refreshing ------------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return not self._stop.is_set()

    def _shown(self) -> bool:
        return self._view_count is None or self._view_count > 0

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            if getattr(self._kafka, "closed", False):
                self.message.value = "<i>the connection is closed: the dashboard stopped</i>"
                self._stop.set()
                break
            if self._shown() and not self.pause_button.value:
                try:
                    self.refresh()
                except Exception as exc:   # noqa: BLE001 -- keep refreshing; say what went wrong
                    self.message.value = f"<span style='color:#d62728'>{html.escape(str(exc))}</span>"

    def _set_picker(self, options, value) -> None:
        self._updating = True
        try:
            self.topic_picker.value = ()
            self.topic_picker.options = list(options)
            self.topic_picker.value = tuple(v for v in value if v in options)
        finally:
            self._updating = False

    def _topics_changed(self, change) -> None:
        if not self._updating and change.get("new") != change.get("old"):
            self._auto_topics = False
            self.refresh()

    def refresh(self) -> None:
        """Take a snapshot and redraw (the background thread calls this every ``interval_s``)."""
        with self._lock:
            topics = None if self._auto_topics else list(self.topic_picker.value)
            snap = self._collector.snapshot(topics, self._internal, self._groups)
            self.snapshot = snap
            names = [t for t in snap.topics if self._internal or not t.startswith("__")]
            if self._auto_topics and tuple(self.topic_picker.options) != tuple(names):
                self._set_picker(names, names)
            elif not self._auto_topics and set(names) - set(self.topic_picker.options):
                self._set_picker(sorted(set(names) | set(self.topic_picker.options)), self.topic_picker.value)
            self.header.value = model.header_html(snap)
            self._draw_brokers(model.broker_rows(snap))
            self.partitions.value = model.partitions_html(model.partition_rows(snap))
            self.groups_html.value = model.groups_html(model.group_rows(snap))
            notes = "; ".join(html.escape(e) for e in snap.errors[:3])
            stamp = time.strftime("%H:%M:%S", time.localtime(snap.taken_at))
            if not self.message.value.startswith("<b>"):   # keep an action's result until the next one
                self.message.value = f"<small>updated {stamp}{' — ' + notes if notes else ''}</small>"

    def _draw_brokers(self, rows: list[model.BrokerRow]) -> None:
        if sorted(self._broker_widgets) != [r.id for r in rows]:
            self._broker_widgets = {}
            lines = []
            for r in rows:
                cells = {"id": widgets.HTML(layout=widgets.Layout(width="70px")),
                         "address": widgets.HTML(layout=widgets.Layout(width="150px")),
                         "pid": widgets.HTML(layout=widgets.Layout(width="80px")),
                         "status": widgets.HTML(layout=widgets.Layout(width="260px"))}
                buttons = {}
                for action in model.ACTIONS:
                    b = widgets.Button(description=action, layout=widgets.Layout(width="72px"),
                                       button_style="danger" if action == "kill" else "")
                    b.add_class(f"kafkalab-{action}-{r.id}")
                    b.on_click(lambda _b, a=action, i=r.id: self._act(a, i))
                    buttons[action] = b
                self._broker_widgets[r.id] = {**cells, "buttons": buttons}
                line = widgets.HBox([cells["id"], cells["address"], cells["pid"], cells["status"],
                                     *buttons.values()])
                line.add_class(f"kafkalab-broker-{r.id}")
                lines.append(line)
            self.brokers_box.children = lines
        for r in rows:
            w = self._broker_widgets[r.id]
            w["id"].value = f"<b>broker {r.id}</b>"
            w["address"].value = html.escape(r.address)
            w["pid"].value = f"pid {html.escape(r.pid)}" if r.pid else ""
            w["status"].value = model.status_html(r)
            for button in r.buttons:
                b = w["buttons"][button.action]
                b.disabled = not button.enabled
                b.tooltip = button.reason

    def _act(self, action: str, broker_id: int) -> None:
        """A button: run the action on the cluster (in the kernel), then redraw at once."""
        cluster = self._collector.cluster
        if cluster is None:
            return
        self.message.value = f"<b>{action} broker {broker_id} ...</b>"
        try:
            getattr(cluster, action)(broker_id)
            self.message.value = f"<b>broker {broker_id}: {action} done</b> ({time.strftime('%H:%M:%S')})"
        except Exception as exc:   # noqa: BLE001 -- shown under the dashboard, not as a traceback
            self.message.value = f"<b style='color:#d62728'>{action} broker {broker_id}: {html.escape(str(exc))}</b>"
        try:
            self.refresh()
        except Exception:   # noqa: BLE001
            pass

    # -- stopping --------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop refreshing (the widget stays as it was last drawn)."""
        self._stop.set()

    def close(self) -> None:
        self.stop()
        self._collector.close()
        for w in self._broker_widgets.values():
            for b in w["buttons"].values():
                b.close()
        super().close()

    def __repr__(self) -> str:
        state = "refreshing" if self.running else "stopped"
        return f"<kafkalab dashboard ({state}) of {self._collector.bootstrap_servers}>"


def dashboard(kafka, topics=None, interval_s: float = 2.0, internal: bool = False, groups: bool = True) -> Dashboard:
    """A live dashboard of ``kafka`` (what ``kafkalab.connect()`` returned, or a ``Cluster``); see the module
    docstring. ``topics``: the topics to show (default: every topic, and new ones as they appear);
    ``internal=True`` also offers ``__consumer_offsets``; ``groups=False`` leaves consumer groups out."""
    return Dashboard(kafka, topics=topics, interval_s=interval_s, internal=internal, groups=groups)


@atexit.register
def _stop_all() -> None:
    for d in list(_LIVE):
        d.stop()


__all__ = ["dashboard", "Dashboard", "CLUSTER"]
