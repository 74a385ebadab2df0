"""Listeners: ``NAME://host:port`` endpoints and their security protocols.

Kafka's ``org.apache.kafka.common.Endpoint`` (a listener's name, security protocol, host and port),
``ListenerName`` (names are upper-cased, ``ListenerName.normalised``; a listener's own configs carry the prefix
``listener.name.<name in lower case>.``), ``SecurityProtocol`` and the parsing of ``listeners`` /
``advertised.listeners`` and ``listener.security.protocol.map`` (``SocketServerConfigs.listenerListToEndPoints``,
``CoreUtils.listenerListToEndPoints``, ``KafkaConfig.effectiveListenerSecurityProtocolMap``), with Kafka's
messages. Shared by the configs (:mod:`kafkalab.broker.server.config`), the socket servers, the ZooKeeper
registration (``/brokers/ids/<id>``) and the metadata cache.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

#: Kafka's ``SecurityProtocol`` names, in Kafka's order
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: ``SecurityProtocol.id``: what UpdateMetadata and BrokerRegistration carry
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
#: ``listener.security.protocol.map``'s default in Kafka 3.9 (``SocketServerConfigs``: a HashMap's order)
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
#: ``SocketServerConfigs.URI_PARSE_REGEXP``
_URI = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


class ConfigException(ValueError):
    """Kafka's ``ConfigException`` / the ``IllegalArgumentException`` of ``require``: a config that cannot work."""


def normalised(name: str) -> str:
    """``ListenerName.normalised``: listener names are case-insensitive, kept upper case."""
    return name.upper()


def config_prefix(listener_name: str) -> str:
    """``ListenerName.configPrefix``: ``listener.name.<name in lower case>.``"""
    return f"listener.name.{listener_name.lower()}."


@dataclass(frozen=True)
class Endpoint:
    listener_name: str
    security_protocol: str
    #: None: the wildcard address (``PLAINTEXT://:9092``)
    host: str | None
    port: int

    @property
    def connection_string(self) -> str:
        """``EndPoint.connectionString``: ``NAME://host:port`` (IPv6 hosts in brackets)."""
        host = self.host or ""
        if ":" in host:
            host = f"[{host}]"
        return f"{self.listener_name}://{host}:{self.port}"


def security_protocol(name: str, config_name: str) -> str:
    """``KafkaConfig.getSecurityProtocol``: ``SecurityProtocol.forName`` (upper case only, as Java's enum)."""
    if name not in SECURITY_PROTOCOLS:
        raise ConfigException(f"Invalid security protocol `{name}` defined in {config_name}")
    return name


def parse_protocol_map(value: str, config_name: str = "listener.security.protocol.map") -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL,...`` (Kafka's ``CoreUtils.parseCsvMap``)."""
    out: dict[str, str] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        name, sep, protocol = entry.rpartition(":")
        if not sep or not name:
            raise ConfigException(f"Error parsing configuration property '{config_name}': "
                                  f"{entry!r} is not NAME:PROTOCOL")
        out[normalised(name.strip())] = security_protocol(protocol.strip(), config_name)
    return out


def _is_ip(host: str | None, version: int | None = None) -> bool:
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return version is None or address.version == version


def parse_endpoints(listeners: str, protocol_map: dict[str, str], require_distinct_ports: bool = True
                    ) -> list[Endpoint]:
    """``CoreUtils.listenerListToEndPoints``: each entry ``NAME://host:port``; names distinct; ports distinct
    (port 0 excepted) unless one listener is IPv4 and the other IPv6. ValueError with Kafka's message."""
    endpoints = []
    try:
        for entry in (e.strip() for e in listeners.strip().split(",")):
            if not entry:
                continue
            m = _URI.fullmatch(entry)
            if not m:
                raise ConfigException(f"Unable to parse {entry} to a broker endpoint")
            name = normalised(m.group(1))
            if name not in protocol_map:
                raise ConfigException(f"No security protocol defined for listener {name}")
            endpoints.append(Endpoint(name, protocol_map[name], m.group(2) or None, int(m.group(3))))
    except ConfigException as exc:
        raise ConfigException(f"Error creating broker listeners from '{listeners}': {exc}") from None
    if len({e.listener_name for e in endpoints}) != len(endpoints):
        raise ConfigException(f"requirement failed: Each listener must have a different name, listeners: {listeners}")
    by_port: dict[int, list[Endpoint]] = {}
    for e in endpoints:
        if e.port != 0:
            by_port.setdefault(e.port, []).append(e)
    for port, group in by_port.items():
        if len(group) < 2 or not require_distinct_ports:
            continue
        with_ip = [e for e in group if _is_ip(e.host)]
        without_ip = [e for e in group if not _is_ip(e.host)]
        if len(without_ip) > 1:
            raise ConfigException(f"requirement failed: Each listener must have a different port, "
                                  f"listeners: {listeners}")
        if len(with_ip) == 2:
            message = ("If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, "
                       f"listeners: {listeners}, port: {port}")
            versions = {4 if _is_ip(e.host, 4) else 6 for e in with_ip}
            if versions != {4, 6} or without_ip:
                raise ConfigException(f"requirement failed: {message}" if versions != {4, 6} else message)
        elif with_ip:   # one listener with an IP host and one without, or more than two with IP hosts
            raise ConfigException("Each listener must have a different port unless exactly one listener has an "
                                  f"IPv4 address and the other IPv6 address, listeners: {listeners}, port: {port}")
    return endpoints
