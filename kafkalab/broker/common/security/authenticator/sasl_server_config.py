"""What a SASL listener serves, read from the broker's configs as Kafka reads them.

* ``sasl.enabled.mechanisms`` (Kafka's default ``GSSAPI``), or ``listener.name.<listener>.sasl.enabled.mechanisms``
  for one listener: the mechanisms SaslHandshake accepts. The mini broker serves ``PLAIN``, ``SCRAM-SHA-256`` and
  ``SCRAM-SHA-512``; ``GSSAPI`` (Kerberos: a KDC and keytabs) and ``OAUTHBEARER`` are not served, and a listener
  enabling them fails the broker's start with a message naming the fix (Kafka fails too when GSSAPI has no
  ``KafkaServer`` JAAS entry, which is the case unless Kerberos is set up).
* ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (listener and mechanism in lower case): each enabled
  mechanism's JAAS entry, one login module (Kafka's ``JaasContext.loadServerContext``; the static JAAS file of
  ``java.security.auth.login.config`` is not read). PLAIN's ``PlainLoginModule`` lists its users as
  ``user_<name>="<password>"``; SCRAM's is ``org.apache.kafka.common.security.scram.ScramLoginModule required;``,
  its users are the SCRAM credentials of AlterUserScramCredentials.
* ``connections.max.reauth.ms`` (default 0: no re-authentication), or
  ``listener.name.<listener>.<mechanism>.connections.max.reauth.ms``: a session's lifetime (KIP-368).
* ``connection.failed.authentication.delay.ms`` (default 100): how long a failed authentication's response and
  close are held back (KIP-306, against clients retrying in a tight loop).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..jaas_config import AppConfigurationEntry, server_login_module
from ..plain.plain_sasl_server import PLAIN_LOGIN_MODULE, PLAIN_MECHANISM
from ..scram.scram_mechanism import MECHANISMS as SCRAM_MECHANISMS

GSSAPI_MECHANISM = "GSSAPI"
OAUTHBEARER_MECHANISM = "OAUTHBEARER"
SERVED_MECHANISMS = (PLAIN_MECHANISM, *SCRAM_MECHANISMS)
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
SASL_ENABLED_MECHANISMS = "sasl.enabled.mechanisms"
SASL_JAAS_CONFIG = "sasl.jaas.config"
CONNECTIONS_MAX_REAUTH_MS = "connections.max.reauth.ms"
CONNECTION_FAILED_AUTHENTICATION_DELAY_MS = "connection.failed.authentication.delay.ms"


def listener_prefix(listener_name: str) -> str:
    """``listener.name.sasl_plaintext.`` (Kafka's ``ListenerName.configPrefix``)."""
    return f"listener.name.{listener_name.lower()}."


def mechanism_prefix(listener_name: str, mechanism: str) -> str:
    """``listener.name.sasl_plaintext.scram-sha-256.`` (Kafka's ``ListenerName.saslMechanismConfigPrefix``)."""
    return f"{listener_prefix(listener_name)}{mechanism.lower()}."


@dataclass(frozen=True)
class SaslServerConfig:
    listener_name: str
    enabled_mechanisms: tuple[str, ...]
    #: mechanism -> its JAAS login module entry
    jaas_entries: dict[str, AppConfigurationEntry] = field(default_factory=dict)
    #: mechanism -> connections.max.reauth.ms (0: sessions do not expire)
    connections_max_reauth_ms: dict[str, int] = field(default_factory=dict)
    failed_authentication_delay_ms: int = 100
    #: SCRAM's client-final nonce checked as Kafka 3.9 does (``endsWith`` the combined nonce: a ZooKeeper-mode
    #: broker), not as Kafka 4 (``equals``)
    scram_nonce_ends_with: bool = False

    def plain_users(self) -> dict[str, str]:
        """The options of the PLAIN entry (``user_<name>`` -> password among them)."""
        entry = self.jaas_entries.get(PLAIN_MECHANISM)
        return dict(entry.options) if entry is not None and entry.login_module_name == PLAIN_LOGIN_MODULE else {}


def sasl_server_config(listener_name: str, get: Callable[[str], Any]) -> SaslServerConfig:
    """The SASL configs of ``listener_name``; ``get(name)`` is a broker config's value (None if unset). ValueError
    naming the config for what the mini broker cannot serve or Kafka would refuse."""
    prefix = listener_prefix(listener_name)
    mechanisms_text = get(prefix + SASL_ENABLED_MECHANISMS) or get(SASL_ENABLED_MECHANISMS) or ""
    mechanisms = tuple(dict.fromkeys(m.strip() for m in str(mechanisms_text).split(",") if m.strip()))
    if not mechanisms:
        raise ValueError(f"No SASL mechanisms are enabled (sasl.enabled.mechanisms) for listener {listener_name}")
    not_served = [m for m in mechanisms if m not in SERVED_MECHANISMS]
    if not_served:
        raise ValueError(
            f"listener {listener_name}: the mini broker does not serve SASL mechanism(s) {', '.join(not_served)} "
            f"(sasl.enabled.mechanisms={','.join(mechanisms)}, Kafka's default is GSSAPI); it serves "
            f"{', '.join(SERVED_MECHANISMS)}: set sasl.enabled.mechanisms (or "
            f"{prefix}{SASL_ENABLED_MECHANISMS}) to those")
    entries = {}
    for mechanism in mechanisms:
        name = mechanism_prefix(listener_name, mechanism) + SASL_JAAS_CONFIG
        text = get(name)
        if not text:
            example = (f'{PLAIN_LOGIN_MODULE} required user_alice="alice-secret";' if mechanism == PLAIN_MECHANISM
                       else f"{SCRAM_LOGIN_MODULE} required;")
            raise ValueError(f"Could not find a 'KafkaServer' or '{listener_name.lower()}.KafkaServer' entry in the "
                             f"JAAS configuration: set {name} (e.g. {example})")
        try:
            entries[mechanism] = server_login_module(str(text))
        except ValueError as exc:
            raise ValueError(f"Invalid value for configuration {name}: {exc}") from None
    reauth = {}
    for mechanism in mechanisms:
        value = get(mechanism_prefix(listener_name, mechanism) + CONNECTIONS_MAX_REAUTH_MS)
        if value is None:
            value = get(prefix + CONNECTIONS_MAX_REAUTH_MS)
        if value is None:
            value = get(CONNECTIONS_MAX_REAUTH_MS)
        reauth[mechanism] = int(value or 0)
    delay = get(CONNECTION_FAILED_AUTHENTICATION_DELAY_MS)
    return SaslServerConfig(listener_name, mechanisms, entries, reauth, 100 if delay is None else int(delay))
