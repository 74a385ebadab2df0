"""``ssl.SSLContext`` for an SSL listener from Kafka's ``ssl.*`` configs (Kafka's ``SslFactory`` and
``DefaultSslEngineFactory``, over Python's :mod:`ssl`, i.e. OpenSSL, instead of Java's JSSE).

* key store: ``ssl.keystore.type=PEM`` with ``ssl.keystore.location`` (one file: the private key and the
  certificate chain) or ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key`` (PEM text in the config,
  KIP-651); ``ssl.key.password`` for an encrypted key. As Kafka's PEM key store, the key must be PKCS#8
  (``BEGIN PRIVATE KEY`` / ``BEGIN ENCRYPTED PRIVATE KEY``): OpenSSL's traditional ``BEGIN RSA PRIVATE KEY``
  is refused as Kafka refuses it. ``PKCS12`` key stores are read with ``cryptography``; Java's ``JKS`` cannot
  be read here.
* trust store: ``ssl.truststore.type=PEM`` with ``ssl.truststore.location`` or ``ssl.truststore.certificates``,
  or ``PKCS12``; none: the system's CAs (Java: the JVM's ``cacerts``).
* ``ssl.client.auth``: ``required`` (``CERT_REQUIRED``), ``requested`` (``CERT_OPTIONAL``: a certificate is asked
  for, none is accepted, a bad one fails the handshake), ``none``.
* ``ssl.enabled.protocols``: OpenSSL takes a range, so the oldest to the newest one named are enabled.

A broker is also a TLS *client*, of the other brokers' inter-broker listener (and of the controllers' listener):
:func:`create_client_context` makes that context from the same listener's configs, as Kafka's channel builder in
client mode: the trust store checks the other broker's certificate, the key store (if any) is presented when
asked (mutual TLS: the other broker's principal is this broker's certificate's name), and with
``ssl.endpoint.identification.algorithm=https`` (Kafka's default since 2.0) the certificate must be for the
host connected to.

Every mistake is a :class:`~kafkalab.broker.common.endpoint.ConfigException` with Kafka's message (its
``InvalidConfigurationException``), raised when the broker starts.
"""
from __future__ import annotations

import os
import re
import ssl
import tempfile
from typing import Any

from ..endpoint import ConfigException

_TLS_VERSIONS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
                 "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_SSL_PROTOCOLS = ("TLS", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3", "SSL", "SSLv3")
_CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
#: Kafka's ``PemParser("PRIVATE KEY")``: also finds OpenSSL's ``BEGIN RSA PRIVATE KEY``, which it then cannot read
_PRIVATE_KEY = re.compile(r"-+BEGIN\s*(.*)PRIVATE\s+KEY[^-]*-+\s+")
_CERTIFICATE = re.compile(r"-+BEGIN\s*.*CERTIFICATE[^-]*-+\s+")


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _check_pkcs8(pem: str, key_password: str | None, where: str) -> None:
    """Kafka's ``PemStore.privateKey``: one private key, PKCS#8 (encrypted if and only if a password is given)."""
    keys = _PRIVATE_KEY.findall(pem)
    if not keys:
        raise ConfigException(f"Invalid PEM keystore configs ({where}): No matching PRIVATE KEY entries in PEM file")
    if len(keys) != 1:
        raise ConfigException(f"Invalid PEM keystore configs ({where}): Expected one private key, but found "
                              f"{len(keys)}")
    label = keys[0].strip()
    if label not in ("", "ENCRYPTED"):
        raise ConfigException(
            f"Invalid PEM keystore configs ({where}): Private key could not be loaded: a '{label} PRIVATE KEY' is "
            "not PKCS#8; Kafka's PEM key store reads PKCS#8 keys only ('BEGIN PRIVATE KEY' or 'BEGIN ENCRYPTED "
            "PRIVATE KEY'): convert it, e.g. openssl pkcs8 -topk8 -nocrypt")
    if label == "ENCRYPTED" and key_password is None:
        raise ConfigException(f"Invalid PEM keystore configs ({where}): Private key could not be loaded: the key "
                              "is encrypted and ssl.key.password is not set")
    if not _CERTIFICATE.search(pem):
        raise ConfigException(f"Invalid PEM keystore configs ({where}): At least one certificate expected, but none "
                              "found")


def _pkcs12(path: str, password: str | None, what: str) -> tuple[bytes | None, list[bytes]]:
    """A PKCS12 store's private key (PKCS#8 PEM) and certificates (PEM), read with ``cryptography``."""
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, pkcs12
    try:
        with open(path, "rb") as f:
            key, cert, extra = pkcs12.load_key_and_certificates(f.read(), password.encode() if password else None)
    except (OSError, ValueError) as exc:
        raise ConfigException(f"Failed to load SSL {what} {path} of type PKCS12: {exc}") from exc
    certs = ([cert] if cert is not None else []) + list(extra)
    key_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()) if key is not None else None
    return key_pem, [c.public_bytes(Encoding.PEM) for c in certs]


def _load_keystore(ctx: ssl.SSLContext, c: dict[str, Any]) -> None:
    """Kafka's ``DefaultSslEngineFactory.createKeystore``, its checks and messages, then ``load_cert_chain``."""
    store_type = c["ssl.keystore.type"]
    path, password = _text(c["ssl.keystore.location"]), _text(c["ssl.keystore.password"])
    key_password = _text(c["ssl.key.password"])
    key, chain = _text(c["ssl.keystore.key"]), _text(c["ssl.keystore.certificate.chain"])
    if key is not None:
        if store_type != "PEM":
            raise ConfigException(f"SSL private key can be specified only for PEM, but key store type is "
                                  f"{store_type}.")
        if chain is None:
            raise ConfigException("SSL private key is specified, but certificate chain is not specified.")
        if path is not None:
            raise ConfigException("Both SSL key store location and separate private key are specified.")
        if password is not None:
            raise ConfigException("SSL key store password cannot be specified with PEM format, only key password "
                                  "may be specified.")
        _check_pkcs8(key + "\n" + chain, key_password, "ssl.keystore.key")
        _load_pem_chain(ctx, chain.encode(), key.encode(), key_password)
    elif chain is not None:
        raise ConfigException("SSL certificate chain is specified, but private key is not specified")
    elif store_type == "PEM" and path is not None:
        if password is not None:
            raise ConfigException("SSL key store password cannot be specified with PEM format, only key password "
                                  "may be specified")
        try:
            with open(path) as f:
                pem = f.read()
        except OSError as exc:
            raise ConfigException(f"Failed to load PEM SSL keystore {path}: {exc}") from exc
        _check_pkcs8(pem, key_password, path)
        _load_cert_chain(ctx, path, None, key_password, path)
    elif path is None and password is not None:
        raise ConfigException("SSL key store is not specified, but key store password is specified.")
    elif path is not None and password is None:
        raise ConfigException("SSL key store is specified, but key store password is not specified.")
    elif path is not None:
        if store_type != "PKCS12":
            raise ConfigException(f"Failed to load SSL keystore {path} of type {store_type}: the mini broker reads "
                                  "PEM and PKCS12 key stores (Java's JKS it cannot read)")
        key_pem, certs = _pkcs12(path, password, "keystore")
        if key_pem is None:
            raise ConfigException(f"Failed to load SSL keystore {path} of type PKCS12: it holds no private key")
        _load_pem_chain(ctx, b"".join(certs), key_pem, None)
    else:   # Kafka: a server's SSLContext without a key manager, and every handshake fails; say so at start
        raise ConfigException("An SSL listener needs a key store: set ssl.keystore.location (ssl.keystore.type=PEM "
                              "or PKCS12), or ssl.keystore.certificate.chain and ssl.keystore.key (PEM)")


def _load_cert_chain(ctx: ssl.SSLContext, certfile: str, keyfile: str | None, password: str | None,
                     where: str) -> None:
    try:
        ctx.load_cert_chain(certfile, keyfile, password=password)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigException(f"Failed to load PEM SSL keystore {where}: {exc}") from exc


def _load_pem_chain(ctx: ssl.SSLContext, chain: bytes, key: bytes, password: str | None) -> None:
    """``load_cert_chain`` reads files only: the PEM text goes to a private temporary directory for the call."""
    with tempfile.TemporaryDirectory(prefix="kafkalab-ssl-") as tmp:
        certfile, keyfile = os.path.join(tmp, "chain.pem"), os.path.join(tmp, "key.pem")
        for name, data in ((certfile, chain), (keyfile, key)):
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        _load_cert_chain(ctx, certfile, keyfile, password, "ssl.keystore.certificate.chain/ssl.keystore.key")


def _load_truststore(ctx: ssl.SSLContext, c: dict[str, Any],
                     purpose: ssl.Purpose = ssl.Purpose.CLIENT_AUTH) -> None:
    """Kafka's ``createTruststore``, its checks and messages; no trust store: the system's CAs."""
    store_type = c["ssl.truststore.type"]
    path, password = _text(c["ssl.truststore.location"]), _text(c["ssl.truststore.password"])
    certs = _text(c["ssl.truststore.certificates"])
    try:
        if certs is not None:
            if store_type != "PEM":
                raise ConfigException(f"SSL trust store certs can be specified only for PEM, but trust store type "
                                      f"is {store_type}.")
            if path is not None:
                raise ConfigException("Both SSL trust store location and separate trust certificates are "
                                      "specified.")
            if password is not None:
                raise ConfigException("SSL trust store password cannot be specified for PEM format.")
            ctx.load_verify_locations(cadata=certs)
        elif store_type == "PEM" and path is not None:
            if password is not None:
                raise ConfigException("SSL trust store password cannot be specified for PEM format.")
            ctx.load_verify_locations(cafile=path)
        elif path is None and password is not None:
            raise ConfigException("SSL trust store is not specified, but trust store password is specified.")
        elif path is not None:
            if store_type != "PKCS12":
                raise ConfigException(f"Failed to load SSL truststore {path} of type {store_type}: the mini broker "
                                      "reads PEM and PKCS12 trust stores (Java's JKS it cannot read)")
            _, pems = _pkcs12(path, password, "truststore")
            ctx.load_verify_locations(cadata=b"".join(pems).decode())
        else:
            ctx.load_default_certs(purpose)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigException(f"Invalid PEM truststore configs: {exc}") from exc


def create_server_context(configs: dict[str, Any]) -> ssl.SSLContext:
    """The server-side SSLContext of one listener, from its ``ssl.*`` configs as the listener sees them."""
    protocol = configs["ssl.protocol"]
    if protocol not in _SSL_PROTOCOLS:
        raise ConfigException(f"Invalid value {protocol} for configuration ssl.protocol: {protocol} SSLContext not "
                              "available")
    enabled = [p.strip() for p in str(configs["ssl.enabled.protocols"] or "").split(",") if p.strip()]
    unknown = [p for p in enabled if p not in _TLS_VERSIONS]
    if unknown:
        raise ConfigException(f"Invalid value for configuration ssl.enabled.protocols: unsupported protocol(s) "
                              f"{', '.join(unknown)} (the mini broker knows {', '.join(_TLS_VERSIONS)})")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if enabled:
        versions = sorted(_TLS_VERSIONS[p] for p in enabled)
        ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    _load_keystore(ctx, configs)
    client_auth = configs["ssl.client.auth"]
    if client_auth not in _CLIENT_AUTH:
        raise ConfigException(f"Invalid value {client_auth} for configuration ssl.client.auth: String must be one "
                              "of: required, requested, none")
    ctx.verify_mode = _CLIENT_AUTH[client_auth]
    if ctx.verify_mode != ssl.CERT_NONE:
        _load_truststore(ctx, configs)
    return ctx


def create_client_context(configs: dict[str, Any]) -> ssl.SSLContext:
    """The client-side SSLContext a broker connects to another broker's (or a controller's) listener with, from
    that listener's ``ssl.*`` configs (Kafka's ``SslFactory`` in ``Mode.CLIENT``): the trust store (none: the
    system's CAs), the key store if one is configured, the host name checked unless
    ``ssl.endpoint.identification.algorithm`` is empty."""
    enabled = [p.strip() for p in str(configs["ssl.enabled.protocols"] or "").split(",") if p.strip()]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    known = [_TLS_VERSIONS[p] for p in enabled if p in _TLS_VERSIONS]
    if known:
        ctx.minimum_version, ctx.maximum_version = min(known), max(known)
    if any(configs.get(k) is not None for k in ("ssl.keystore.location", "ssl.keystore.key",
                                                 "ssl.keystore.certificate.chain")):
        _load_keystore(ctx, configs)
    _load_truststore(ctx, configs, ssl.Purpose.SERVER_AUTH)
    algorithm = (configs["ssl.endpoint.identification.algorithm"] or "").strip()
    if algorithm.lower() not in ("", "https"):
        raise ConfigException(f"Invalid value {algorithm} for configuration ssl.endpoint.identification.algorithm: "
                              "only https (or empty: no host name check) is supported")
    ctx.check_hostname = bool(algorithm)   # verify_mode stays CERT_REQUIRED: the chain is always checked
    return ctx
