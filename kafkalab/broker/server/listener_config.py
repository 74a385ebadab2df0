"""The listeners of a broker and their security configs, as Kafka's ``KafkaConfig`` reads them.

* ``listeners`` / ``advertised.listeners`` / ``listener.security.protocol.map`` / ``inter.broker.listener.name`` /
  ``security.inter.broker.protocol``: :class:`ListenerConfigs` parses them and checks them with Kafka's
  messages (``KafkaConfig.listeners``, ``effectiveListenerSecurityProtocolMap``,
  ``getInterBrokerListenerNameAndSecurityProtocol`` and the requirements of ``KafkaConfig.validateValues``).
* the ``ssl.*`` configs (:data:`SSL_CONFIGS`, Kafka's ``SslConfigs`` / ``BrokerSecurityConfigs`` with their
  defaults) and the SASL ones (:data:`SASL_CONFIGS`), and a listener's own value of one:
  ``listener.name.<listener in lower case>.<config>`` wins over ``<config>`` (Kafka's
  ``valuesWithPrefixOverride(listenerName.configPrefix)``); a SASL mechanism's own configs carry the prefix
  ``listener.name.<listener>.<mechanism in lower case>.`` (``ListenerName.saslMechanismConfigPrefix``:
  ``listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config``). One mechanism for all of them: the listener-prefixed
  names are checked by :func:`listener_override_def` and read through ``BrokerConfig.get`` / ``listener_value``.
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from ..common.endpoint import (
    ConfigException, Endpoint, config_prefix, normalised, parse_endpoints, parse_protocol_map, security_protocol)
from ..common.security.authenticator.sasl_server_config import (
    SERVED_MECHANISMS as CLIENT_MECHANISMS, SaslServerConfig, mechanism_prefix, sasl_server_config)
from ..common.security.jaas_config import server_login_module
from ..common.security.ssl_factory import create_client_context, create_server_context
from ..network.client_security import PLAINTEXT, ClientSecurity
from ..common.security.ssl_principal_mapper import SslPrincipalMapper
from ..log.log_config import ConfigDef, _d, _nonneg

_CLIENT_AUTH = ("required", "requested", "none")

#: Kafka's SSL configs of a broker (``SslConfigs.addClientSslSupport`` + ``BrokerSecurityConfigs``), its
#: defaults; ``password`` ones are hidden in DescribeConfigs as Kafka's PASSWORD type. Each may be set for one
#: listener with the prefix ``listener.name.<listener>.``.
SSL_CONFIGS: list[ConfigDef] = [
    _d("ssl.keystore.type", "string", "JKS", "The file format of the key store file. The mini broker reads PEM "
       "(Kafka's KIP-651) and PKCS12; Java's JKS it cannot read"),
    _d("ssl.keystore.location", "string", None, "The location of the key store file (type PEM: the private key, "
       "PKCS#8, and the certificate chain in one file)"),
    _d("ssl.keystore.password", "password", None, "The store password for the key store file (not with PEM)"),
    _d("ssl.key.password", "password", None, "The password of the private key in the key store file or the PEM "
       "key specified in ssl.keystore.key"),
    _d("ssl.keystore.certificate.chain", "password", None, "Certificate chain in the format specified by "
       "ssl.keystore.type (PEM: a list of X.509 certificates)"),
    _d("ssl.keystore.key", "password", None, "Private key in the format specified by ssl.keystore.type (PEM: "
       "PKCS#8, encrypted with ssl.key.password if it is set)"),
    _d("ssl.truststore.type", "string", "JKS", "The file format of the trust store file (PEM or PKCS12 here)"),
    _d("ssl.truststore.location", "string", None, "The location of the trust store file"),
    _d("ssl.truststore.password", "password", None, "The password for the trust store file (not with PEM)"),
    _d("ssl.truststore.certificates", "password", None, "Trusted certificates in the format specified by "
       "ssl.truststore.type (PEM: X.509 certificates)"),
    _d("ssl.client.auth", "string", "none", "Configures kafka broker to request client authentication: required "
       "(client authentication is required), requested (optional: a client can choose not to provide a "
       "certificate), none (not needed)", valid_values=_CLIENT_AUTH),
    _d("ssl.enabled.protocols", "list", "TLSv1.2,TLSv1.3", "The list of protocols enabled for SSL connections "
       "(the mini broker enables the range from the oldest to the newest of them)"),
    _d("ssl.protocol", "string", "TLSv1.3", "The SSL protocol used to generate the SSLContext (TLS, TLSv1.2, "
       "TLSv1.3)"),
    _d("ssl.principal.mapping.rules", "string", "DEFAULT", "A list of rules for mapping from distinguished name "
       "from the client certificate to short name (RULE:pattern/replacement/[LU],...,DEFAULT). The rules are "
       "evaluated in order and the first rule that matches a principal name is used to map it to a short name. "
       "By default, distinguished name of the X.500 certificate will be the principal"),
    _d("ssl.endpoint.identification.algorithm", "string", "https", "The endpoint identification algorithm to "
       "validate server hostname using server certificate (a client's check; empty: none)"),
]

SSL_CONFIG_NAMES = frozenset(d.name for d in SSL_CONFIGS)

#: Kafka's SASL configs of a broker (``BrokerSecurityConfigs`` / ``SocketServerConfigs``), read by
#: :func:`kafkalab.broker.common.security.authenticator.sasl_server_config.sasl_server_config` for each SASL
#: listener. A broker reads ``sasl.jaas.config`` only with a listener's and a mechanism's prefix, as Kafka's
#: ``JaasContext.loadServerContext``.
SASL_CONFIGS: list[ConfigDef] = [
    _d("sasl.enabled.mechanisms", "list", "GSSAPI", "The list of SASL mechanisms enabled in the Kafka server "
       "(the mini broker serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; Kafka's default GSSAPI fails the start)"),
    _d("sasl.jaas.config", "password", None, "JAAS login context parameters for SASL connections in the format used "
       "by JAAS configuration files; a broker reads it per listener and mechanism: "
       "listener.name.<listener>.<mechanism>.sasl.jaas.config"),
    _d("connections.max.reauth.ms", "long", 0, "When explicitly set to a positive number (the default is 0), a "
       "session lifetime that will not exceed the configured value is communicated to v2.2.0 or later clients when "
       "they authenticate (KIP-368); the broker disconnects a client that does not re-authenticate in time",
       _nonneg),
    _d("sasl.mechanism.inter.broker.protocol", "string", "GSSAPI", "SASL mechanism used for inter-broker "
       "communication (the mini broker's own connections log in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, with the "
       "username and password of that mechanism's JAAS entry on the inter-broker listener)"),
    _d("sasl.mechanism.controller.protocol", "string", "GSSAPI", "SASL mechanism used for communication with "
       "controllers. Default is GSSAPI (the mini nodes' connections to the controllers log in with PLAIN, "
       "SCRAM-SHA-256 or SCRAM-SHA-512, with the username and password of that mechanism's JAAS entry on the "
       "controller listener)"),
    _d("connection.failed.authentication.delay.ms", "int", 100, "Connection close delay on failed authentication: "
       "the time (in milliseconds) by which connection close will be delayed on authentication failure (KIP-306)",
       _nonneg),
]

#: the configs a listener may set for itself (``listener.name.<listener>.<config>``) and those a listener may set
#: for one SASL mechanism (``listener.name.<listener>.<mechanism>.<config>``): the security configs Kafka's
#: channel builders read with those prefixes
LISTENER_CONFIG_NAMES = SSL_CONFIG_NAMES | {"sasl.enabled.mechanisms", "sasl.jaas.config", "connections.max.reauth.ms"}
MECHANISM_CONFIG_NAMES = frozenset({"sasl.jaas.config", "connections.max.reauth.ms"})


def is_security_config(name: str) -> bool:
    """Whether ``name`` is one of the configs that secure a controller's listener and its connections to the
    others (``listener.security.protocol.map``, ``controller.listener.names``, ``sasl.mechanism.controller.protocol``,
    the ``ssl.*`` / ``sasl.*`` ones and their ``listener.name.<listener>.`` forms): what a mini
    controller is given as text (:func:`kafkalab.controller.controller_node.controller_listener_security`)."""
    return (name in ("listener.security.protocol.map", "controller.listener.names",
                     "connections.max.reauth.ms", "connection.failed.authentication.delay.ms")
            or name.startswith(("ssl.", "sasl.", "listener.name.")))


def listener_override_def(name: str, known: dict[str, ConfigDef]) -> ConfigDef | None:
    """The definition of ``listener.name.<listener>.<config>`` or ``listener.name.<listener>.<mechanism>.<config>``
    (named in full, so that a bad value names it), or None if ``name`` is not a listener's own config: ``<config>``
    must be one of :data:`LISTENER_CONFIG_NAMES` (with a mechanism: :data:`MECHANISM_CONFIG_NAMES`), as
    ``listener.name.sasl_ssl.ssl.client.auth`` or ``listener.name.sasl_ssl.plain.sasl.jaas.config``."""
    if not name.startswith("listener.name."):
        return None
    listener, _, rest = name[len("listener.name."):].partition(".")
    if not listener or not rest:
        return None
    base = known.get(rest) if rest in LISTENER_CONFIG_NAMES else None
    if base is None:
        mechanism, _, config = rest.partition(".")
        base = known.get(config) if mechanism and config in MECHANISM_CONFIG_NAMES else None
    if base is None:
        return None
    return ConfigDef(name, base.type, base.default, base.doc, base.validator, base.valid_values)


class ListenerConfigs:
    """The endpoints of a broker's configs, checked as Kafka's ``KafkaConfig`` does (ValueError with its
    messages; ``requirement failed: ...`` where Kafka's Scala ``require`` fails)."""

    def __init__(self, config: Any):   # a BrokerConfig (config.py imports this module)
        self._config = config
        overrides = config.overrides
        #: listener name -> security protocol (KRaft: controller listeners PLAINTEXT unless mapped explicitly)
        self.protocol_map = parse_protocol_map(config["listener.security.protocol.map"])
        self.controller_listener_names = [normalised(n.strip()) for n in
                                          (config["controller.listener.names"] or "").split(",") if n.strip()]
        if config["process.roles"] and "listener.security.protocol.map" not in overrides:
            uses_security = any(p != "PLAINTEXT" for n, p in self.protocol_map.items()
                                if n in self.controller_listener_names or n in self._listener_names())
            if not uses_security:
                for name in self.controller_listener_names:
                    self.protocol_map.setdefault(name, "PLAINTEXT")
        if (config["process.roles"] or "").strip() == "broker":   # Kafka's KafkaConfig.validateValues, broker-only
            for name in self.controller_listener_names:
                if name not in self.protocol_map:
                    raise ConfigException(
                        f"Controller listener with name {name} defined in controller.listener.names not found in "
                        "listener.security.protocol.map  (an explicit security mapping for each controller listener "
                        "is required if listener.security.protocol.map is non-empty, or if there are security "
                        "protocols other than PLAINTEXT in use)")
        self.listeners: list[Endpoint] = parse_endpoints(config["listeners"], self.protocol_map)
        advertised = config["advertised.listeners"]
        all_advertised = (parse_endpoints(advertised, self.protocol_map, require_distinct_ports=False)
                          if advertised else list(self.listeners))
        #: Kafka's ``effectiveAdvertisedBrokerListeners``: the advertised listeners, less the controller's
        self.advertised_listeners = [e for e in all_advertised
                                     if e.listener_name not in self.controller_listener_names]
        name = config["inter.broker.listener.name"]
        if name is not None:
            if "security.inter.broker.protocol" in overrides:
                raise ConfigException("Only one of inter.broker.listener.name and security.inter.broker.protocol "
                                      "should be set.")
            self.inter_broker_listener_name = normalised(name)
            if self.inter_broker_listener_name not in self.protocol_map:
                raise ConfigException(f"Listener with name {self.inter_broker_listener_name} defined in "
                                      "inter.broker.listener.name not found in listener.security.protocol.map.")
            self.inter_broker_security_protocol = self.protocol_map[self.inter_broker_listener_name]
        else:
            protocol = security_protocol(config["security.inter.broker.protocol"], "security.inter.broker.protocol")
            self.inter_broker_listener_name = self.inter_broker_security_protocol = protocol
        self._validate(all_advertised)
        self._inter_broker_client: ClientSecurity | None = None
        self._controller_client: ClientSecurity | None = None

    def _listener_names(self) -> list[str]:
        return [normalised(e.split("://")[0].strip()) for e in self._config["listeners"].split(",") if "://" in e]

    def _validate(self, all_advertised: list[Endpoint]) -> None:
        roles = [r.strip() for r in (self._config["process.roles"] or "").split(",") if r.strip()]
        advertised_names = [e.listener_name for e in self.advertised_listeners]
        listener_names = [e.listener_name for e in self.listeners]
        if not roles or "broker" in roles:
            if not advertised_names:
                raise ConfigException("requirement failed: There must be at least one broker advertised listener."
                                      + (" Perhaps all listeners appear in controller.listener.names?"
                                         if "broker" in roles else ""))
            if self.inter_broker_listener_name not in advertised_names:
                raise ConfigException(
                    "requirement failed: inter.broker.listener.name must be a listener name defined in "
                    "advertised.listeners. The valid options based on currently configured listeners are "
                    f"{','.join(advertised_names)}")
            if not set(advertised_names) <= set(listener_names):
                raise ConfigException(
                    "requirement failed: advertised.listeners listener names must be equal to or a subset of the "
                    f"ones defined in listeners. Found {','.join(advertised_names)}. The valid options based on the "
                    f"current configuration are {','.join(listener_names)}")
        if any(e.host == "0.0.0.0" for e in all_advertised):
            raise ConfigException("requirement failed: advertised.listeners cannot use the nonroutable "
                                  "meta-address 0.0.0.0. Use a routable IP address.")

    # -- what the broker reads ---------------------------------------------------------------------------

    def endpoint(self, listener_name: str) -> Endpoint:
        return next(e for e in self.listeners if e.listener_name == listener_name)

    def advertised(self, listener_name: str) -> Endpoint | None:
        return next((e for e in self.advertised_listeners if e.listener_name == listener_name), None)

    def listener_value(self, listener_name: str, name: str) -> Any:
        """A config as the listener sees it: ``listener.name.<listener>.<name>`` if set, else ``<name>``."""
        prefixed = config_prefix(listener_name) + name
        overrides = self._config.overrides
        return overrides[prefixed] if prefixed in overrides else self._config[name]

    def ssl_configs(self, listener_name: str) -> dict[str, Any]:
        """Every ``ssl.*`` config as the listener sees it (Kafka's ``valuesWithPrefixOverride``)."""
        return {name: self.listener_value(listener_name, name) for name in SSL_CONFIG_NAMES}

    # -- what each listener's connections need (Kafka's ChannelBuilders.serverChannelBuilder, per listener) ------

    def ssl_contexts(self) -> tuple[dict[str, ssl.SSLContext], dict[str, SslPrincipalMapper]]:
        """The SSLContext of each SSL and SASL_SSL listener, from its ``ssl.*`` configs (``listener.name.<l>.``
        first), and each listener's ``ssl.principal.mapping.rules``; a mistake is a ValueError with Kafka's
        message, naming the listener."""
        contexts, mappers = {}, {}
        for endpoint in self.listeners:
            name = endpoint.listener_name
            try:
                mappers[name] = SslPrincipalMapper(self.listener_value(name, "ssl.principal.mapping.rules"))
                if endpoint.security_protocol in ("SSL", "SASL_SSL"):
                    contexts[name] = create_server_context(self.ssl_configs(name))
            except ValueError as exc:
                raise ValueError(f"listener {name}: {exc}") from exc
        return contexts, mappers

    def sasl_server_configs(self) -> dict[str, SaslServerConfig]:
        """Each SASL_PLAINTEXT and SASL_SSL listener's mechanisms, JAAS entries and re-authentication, by listener
        name, from its ``listener.name.<l>.`` configs first (ValueError naming the config for a mistake)."""
        return {e.listener_name: sasl_server_config(e.listener_name, self._config.get)
                for e in self.listeners if e.security_protocol.startswith("SASL_")}

    # -- this broker as a client of the others (Kafka's ChannelBuilders.clientChannelBuilder) ------------------

    def inter_broker_client_security(self) -> ClientSecurity:
        """How this broker connects to the other brokers' inter-broker listener (made once; ValueError naming the
        config for a mistake): that listener's security protocol, its ``ssl.*`` configs in client mode, and for
        SASL ``sasl.mechanism.inter.broker.protocol`` with its JAAS entry's ``username`` and ``password``."""
        if self._inter_broker_client is None:
            self._inter_broker_client = self.client_security(
                self.inter_broker_listener_name, self._config["sasl.mechanism.inter.broker.protocol"],
                "sasl.mechanism.inter.broker.protocol")
        return self._inter_broker_client

    def controller_client_security(self) -> ClientSecurity:
        """How this node connects to the controllers' listener (the first of ``controller.listener.names``, as
        Kafka's ``RaftManager`` and ``NodeToControllerChannelManager``): its security protocol, its ``ssl.*`` configs
        in client mode and, for SASL, ``sasl.mechanism.controller.protocol`` with the user name and password of that
        mechanism's JAAS entry on that listener (made once; ValueError naming the config for a mistake)."""
        if self._controller_client is None:
            name = self.controller_listener_name
            if name is None:
                self._controller_client = PLAINTEXT
            else:
                self._controller_client = self.client_security(
                    name, self._config["sasl.mechanism.controller.protocol"], "sasl.mechanism.controller.protocol",
                    enabled_check=False)
        return self._controller_client

    @property
    def controller_listener_name(self) -> str | None:
        """The first of ``controller.listener.names`` (the one a KRaft node's clients connect to), or None."""
        return self.controller_listener_names[0] if self.controller_listener_names else None

    def controller_server_security(self) -> ServerListenerSecurity:
        """What a KRaft controller's listener (the first of ``controller.listener.names``) needs to serve: its
        security protocol, its SSLContext (``ssl.*`` configs, ``listener.name.<controller>.`` first), its
        ``ssl.principal.mapping.rules`` and, for SASL, its mechanisms and JAAS entries (ValueError naming the
        listener or the config for a mistake)."""
        name = self.controller_listener_name or "CONTROLLER"
        protocol = self.protocol_map.get(name, "PLAINTEXT")
        try:
            mapper = SslPrincipalMapper(self.listener_value(name, "ssl.principal.mapping.rules"))
            context = create_server_context(self.ssl_configs(name)) if protocol in ("SSL", "SASL_SSL") else None
        except ValueError as exc:
            raise ValueError(f"listener {name}: {exc}") from exc
        sasl = sasl_server_config(name, self._config.get) if protocol.startswith("SASL_") else None
        return ServerListenerSecurity(name, protocol, context, mapper, sasl)

    def client_security(self, listener_name: str, mechanism: str, mechanism_config: str,
                        enabled_check: bool = True) -> ClientSecurity:
        """``enabled_check``: refuse, as Kafka's ``KafkaConfig.validateValues`` does for the inter-broker listener,
        a mechanism that listener does not enable (Kafka checks nothing of the kind for the controller's)."""
        # (a combined mini node's controller listener is not among its listeners: unmapped, it is PLAINTEXT)
        protocol = self.protocol_map.get(listener_name, "PLAINTEXT")
        if protocol == "PLAINTEXT":
            return PLAINTEXT if listener_name == "PLAINTEXT" else ClientSecurity(listener_name, protocol)
        to_controllers = mechanism_config == "sasl.mechanism.controller.protocol"
        peers = "controllers'" if to_controllers else "other brokers'"
        try:
            context = create_client_context(self.ssl_configs(listener_name)) if protocol.endswith("SSL") else None
        except ValueError as exc:
            whose = ("this node's connections to the controllers" if to_controllers
                     else "this broker's connections to the others")
            raise ValueError(f"listener {listener_name} ({whose}): {exc}") from exc
        if not protocol.startswith("SASL_"):
            return ClientSecurity(listener_name, protocol, context)
        if enabled_check:
            sasl = sasl_server_config(listener_name, self._config.get)
            if mechanism not in sasl.enabled_mechanisms:   # Kafka's KafkaConfig.validateValues
                raise ConfigException(f"requirement failed: {mechanism_config} must be included in "
                                      "sasl.enabled.mechanisms when SASL is used for inter-broker communication")
        if mechanism not in CLIENT_MECHANISMS:
            raise ConfigException(
                f"{mechanism_config}={mechanism}: the mini broker logs in to the {peers} {listener_name} listener "
                f"with {', '.join(CLIENT_MECHANISMS)} only (Kafka's default GSSAPI needs Kerberos): set "
                f"{mechanism_config}")
        jaas_name = mechanism_prefix(listener_name, mechanism) + "sasl.jaas.config"
        text = self._config.get(jaas_name)
        try:
            options = server_login_module(str(text)).options if text else {}
        except ValueError as exc:
            raise ConfigException(f"Invalid value for configuration {jaas_name}: {exc}") from None
        if not options.get("username") or "password" not in options:
            raise ConfigException(
                f"{jaas_name}: the {'node' if to_controllers else 'broker'} connects to the {peers} {listener_name} "
                f"listener with SASL/{mechanism} "
                f"({mechanism_config}) and logs in with its JAAS entry's username and password: add "
                f"username=\"...\" password=\"...\"")
        return ClientSecurity(listener_name, protocol, context, mechanism, options["username"], options["password"])


@dataclass(frozen=True)
class ServerListenerSecurity:
    """One listener as its server side needs it (a KRaft controller's listener:
    :class:`~kafkalab.raft.raft_server.RaftServer`)."""
    listener_name: str
    security_protocol: str
    ssl_context: ssl.SSLContext | None
    principal_mapper: SslPrincipalMapper
    #: a SASL listener's mechanisms and JAAS entries (None: no SASL)
    sasl_config: SaslServerConfig | None = None
