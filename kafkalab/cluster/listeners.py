"""The listeners of a lab cluster's brokers: the lab's own PLAINTEXT one, and those a lesson adds.

Every broker of a lab cluster has a PLAINTEXT listener: the lab's tooling (``bootstrap_servers``,
``describe()``, the dashboard, the lesson helpers) uses it. A lesson adds listeners with Kafka's own broker
configs, passed as every other config is; each listener's port is 0, and each broker gets a port of its own
for it (the same over restarts), which it also advertises::

    kafkalab.cluster(brokers=3, listeners="PLAINTEXT://:0,CLIENTS://:0", **{
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENTS:SASL_SSL",
        "listener.name.clients.sasl.enabled.mechanisms": "PLAIN", ...})
    cluster.listeners      # {'PLAINTEXT': '127.0.0.1:40001,...', 'CLIENTS': '127.0.0.1:40007,...'}

``inter.broker.listener.name`` (or ``security.inter.broker.protocol``, default PLAINTEXT) names the listener
the brokers use among themselves (and, in ZooKeeper mode, the controller to reach them); it may be a secured
one (``inter.broker.listener.name=INTERNAL`` with ``INTERNAL:SASL_SSL``, ``sasl.mechanism.inter.broker.protocol``
and the JAAS entry's ``username`` / ``password``), and the lab's listener is then the first PLAINTEXT one, which a
lab cluster must have. In KRaft mode the controllers' ``CONTROLLER`` listener is the lab's to place (not in
``listeners``), and a lesson secures it with Kafka's configs: ``CONTROLLER:SASL_SSL`` in
``listener.security.protocol.map``, ``sasl.mechanism.controller.protocol`` and ``listener.name.controller.*``.
Listener names are Kafka's: case-insensitive, upper-cased (``ListenerName.normalised``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

#: Kafka's default ``listener.security.protocol.map``: each security protocol is a listener name of its own
DEFAULT_PROTOCOL_MAP = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT",
                        "SASL_SSL": "SASL_SSL"}
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_ENTRY = re.compile(r"(?P<name>[A-Za-z0-9_.-]+)://(?P<host>[^:]*|\[[^\]]*\]):(?P<port>\d+)")


@dataclass(frozen=True)
class ListenerSpec:
    """The listener names every broker of the cluster has (the lab's first, then in the order given), and which is
    the lab's."""
    names: tuple[str, ...]
    #: the lab's listener: PLAINTEXT, the cluster's ``bootstrap_servers`` and the brokers' ``port``
    primary: str
    #: listener name -> security protocol
    protocols: dict[str, str]
    #: ``inter.broker.listener.name``: the listener the brokers use among themselves (the lab's unless set)
    inter_broker: str = ""
    #: the security protocol of the KRaft controllers' CONTROLLER listener (``CONTROLLER:SASL_SSL`` in
    #: ``listener.security.protocol.map``; PLAINTEXT unless mapped); ZooKeeper mode has none
    controller: str = "PLAINTEXT"

    def __post_init__(self):
        if not self.inter_broker:
            object.__setattr__(self, "inter_broker", self.primary)

    @property
    def extra(self) -> tuple[str, ...]:
        """The listeners besides the lab's own, each with a port of its own per broker."""
        return tuple(n for n in self.names if n != self.primary)

    def listeners(self, host: str, primary_port: int, ports: dict[str, int]) -> str:
        """One broker's ``listeners`` (and ``advertised.listeners``) value."""
        return ",".join(f"{n}://{host}:{primary_port if n == self.primary else ports[n]}" for n in self.names)

    def to_state(self) -> dict:
        """As ``cluster.json`` keeps it (:func:`spec_from_state` reads it back)."""
        return {"names": list(self.names), "primary": self.primary, "protocols": dict(self.protocols),
                "inter_broker": self.inter_broker, "controller": self.controller}


def spec_from_state(state: dict | None) -> ListenerSpec | None:
    return None if not state else ListenerSpec(tuple(state["names"]), state["primary"], dict(state["protocols"]),
                                               state.get("inter_broker", ""), state.get("controller", "PLAINTEXT"))


def protocol_map(configs: dict[str, str]) -> dict[str, str]:
    """``listener.security.protocol.map`` as a dict (Kafka's default when not given); ValueError if malformed."""
    value = configs.get("listener.security.protocol.map")
    if not value:
        return dict(DEFAULT_PROTOCOL_MAP)
    out = {}
    for item in value.split(","):
        name, sep, protocol = item.strip().partition(":")
        if not sep or not name or protocol.strip().upper() not in PROTOCOLS:
            raise ValueError(f"listener.security.protocol.map: {item.strip()!r} is not LISTENER_NAME:PROTOCOL with a "
                             f"protocol of {', '.join(PROTOCOLS)}")
        out[name.strip().upper()] = protocol.strip().upper()
    return out


def listener_spec(configs: dict[str, str], host: str) -> ListenerSpec | None:
    """The cluster's listeners from its ``listeners`` config (None without one: the lab's PLAINTEXT listener
    alone); a ValueError says what is wrong with it."""
    value = configs.get("listeners")
    if value is None:
        return None
    protocols = protocol_map(configs)
    names: list[str] = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        m = _ENTRY.fullmatch(entry)
        if m is None:
            raise ValueError(f"listeners: {entry!r} is not NAME://host:port")
        name = m["name"].upper()
        if int(m["port"]) != 0:
            raise ValueError(f"listeners: {entry!r}: give each listener port 0 in a lab cluster; each broker gets a "
                             f"port of its own for it (cluster.listeners says which)")
        if m["host"] not in ("", host):
            raise ValueError(f"listeners: {entry!r}: the cluster's brokers listen on {host} (the host= argument)")
        if name not in protocols:
            raise ValueError(f"listeners: {name} has no security protocol in listener.security.protocol.map "
                             f"({','.join(f'{k}:{v}' for k, v in protocols.items())})")
        if name in names:
            raise ValueError(f"listeners: {name} is given twice")
        names.append(name)
    inter = (configs.get("inter.broker.listener.name") or configs.get("security.inter.broker.protocol")
             or "PLAINTEXT").upper()
    if inter not in names:
        raise ValueError(f"listeners: the inter-broker listener {inter} (inter.broker.listener.name, or "
                         f"security.inter.broker.protocol) is not among {', '.join(names) or 'none'}")
    lab = inter if protocols[inter] == "PLAINTEXT" else next((n for n in names if protocols[n] == "PLAINTEXT"), None)
    if lab is None:
        raise ValueError(f"listeners: a lab cluster needs a PLAINTEXT listener for the lab's tooling "
                         f"(bootstrap_servers, describe(), the dashboard); the inter-broker listener {inter} is "
                         f"{protocols[inter]}: add PLAINTEXT://:0")
    names.sort(key=lambda n: n != lab)   # the lab's first: what a mini broker's ready line and port name
    return ListenerSpec(tuple(names), lab, {n: protocols[n] for n in names}, inter,
                        protocols.get("CONTROLLER", "PLAINTEXT"))


def broker_listeners(spec: ListenerSpec | None, b) -> dict[str, str]:
    """One broker's listeners (a :class:`~kafkalab.cluster.resources._Broker`): name -> host:port."""
    if spec is None:
        return {"PLAINTEXT": f"{b.host}:{b.port}"}
    return {name: f"{b.host}:{b.port if name == spec.primary else b.listener_ports.get(name)}" for name in spec.names}


def cluster_listeners(spec: ListenerSpec | None, brokers: list) -> dict[str, str]:
    """Each listener's name -> its bootstrap servers: every broker's host:port on it, in the order given."""
    names = spec.names if spec is not None else ("PLAINTEXT",)
    each = [broker_listeners(spec, b) for b in brokers]
    return {name: ",".join(listeners[name] for listeners in each) for name in names}


def controller_client_security(configs: dict[str, str], spec: ListenerSpec | None):
    """How the lab's tooling reaches the controllers' CONTROLLER listener (DescribeQuorum: ``quorum()``, the
    wait for a leader) when a lesson secured it (``CONTROLLER:SASL_SSL``): the ClientSecurity a mini node would
    make of the cluster's configs (``sasl.mechanism.controller.protocol``, ``listener.name.controller.*``), or None
    for a PLAINTEXT one. A ValueError (Kafka's message or the mini's) says what the configs lack."""
    if spec is None or spec.controller == "PLAINTEXT":
        return None
    from ..broker.server.config import BrokerConfig
    from ..broker.server.listener_config import is_security_config
    given = {k: v for k, v in configs.items() if is_security_config(k)
             and k not in ("listener.security.protocol.map", "controller.listener.names")}
    config = BrokerConfig({"process.roles": "controller", "controller.listener.names": "CONTROLLER",
                           "listeners": "CONTROLLER://127.0.0.1:0",
                           "listener.security.protocol.map": f"CONTROLLER:{spec.controller}", **given})
    return config.listener_configs.controller_client_security()
