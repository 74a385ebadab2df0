"""TLS for a lesson: a certificate authority, broker and client certificates, and the configs that use them.

Made with the ``cryptography`` library's X.509 builder (no hand-rolled encoding); keys are PKCS#8, the only
form Kafka's PEM key store (``ssl.keystore.type=PEM``) reads. Three lines give a broker an SSL listener and a
client that trusts it::

    ca = kafkalab.security.CertificateAuthority()
    broker = kafkalab.mini(listeners="PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", **ca.broker_configs())
    producer = Producer({"bootstrap.servers": broker.listeners["SSL"], **ca.client_configs()})

Mutual TLS: ``alice = ca.issue("CN=alice,OU=payments,O=kafkalab")`` and ``ca.broker_configs(client_auth="required")``
with ``ca.client_configs(alice)``; the broker's principal for her is ``User:CN=alice,OU=payments,O=kafkalab``
(or what ``ssl.principal.mapping.rules`` make of it). The files are in ``ca.directory`` (a temporary
directory unless one is given): ``ca.pem``, and per certificate ``<name>.pem`` (certificate and CA),
``<name>.key`` (PKCS#8) and ``<name>.keystore.pem`` (both: an ``ssl.keystore.location``).
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import re
import shutil
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: the host names a broker certificate is for unless told otherwise (what the lab's brokers listen on)
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


def _private_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())   # fast to make; Java, OpenSSL and librdkafka all read it


def _pkcs8(key, password: str | None = None) -> str:
    encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                  else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption).decode()


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _name(subject: str) -> x509.Name:
    """``CN=alice,OU=payments`` (RFC 4514) as an X.509 name; a bare word is a common name."""
    return x509.Name.from_rfc4514_string(subject) if "=" in subject else x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, subject)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


@dataclass
class Certificate:
    """A certificate the CA issued, with its private key and where they were written."""
    name: str
    #: the subject as the broker sees it, RFC 2253 (Java's ``X500Principal.getName()``): the principal's name
    subject: str
    cert_pem: str
    #: PKCS#8, encrypted with ``key_password`` if one was given
    key_pem: str
    #: this certificate and then the CA's (what a key store's certificate chain holds)
    chain_pem: str
    key_password: str | None
    cert_path: str
    key_path: str
    #: the key and the chain in one file: an ``ssl.keystore.location`` with ``ssl.keystore.type=PEM``
    keystore_path: str
    hosts: tuple[str, ...] = ()


class CertificateAuthority:
    """A CA for a lesson, its certificate in ``<directory>/ca.pem``."""

    def __init__(self, name: str = "kafkalab CA", directory: str | None = None, days: int = 30):
        self._temp = directory is None
        self.directory = directory or tempfile.mkdtemp(prefix="kafkalab-tls-")
        os.makedirs(self.directory, exist_ok=True)
        self.days = days
        self._key = _private_key()
        now = datetime.datetime.now(datetime.timezone.utc)
        subject = _name(f"CN={name},O=kafkalab")
        self.certificate = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256()))
        self.cert_pem = _pem(self.certificate)
        self.ca_path = self._write("ca.pem", self.cert_pem)
        self._broker: Certificate | None = None

    def _write(self, filename: str, text: str) -> str:
        path = os.path.join(self.directory, filename)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def issue(self, subject: str, hosts: tuple[str, ...] | list[str] = (), key_password: str | None = None,
              name: str | None = None) -> Certificate:
        """A certificate signed by this CA for ``subject`` (``CN=alice,OU=payments`` or a bare common name), valid
        for the host names and addresses ``hosts`` (its subject alternative names: what a client checks with
        ``ssl.endpoint.identification.algorithm=https``), for servers and clients alike."""
        key = _private_key()
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(self.certificate.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=self.days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                           critical=False))
        if hosts:
            builder = builder.add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        from .broker.common.security.ssl_principal_mapper import rfc2253_name
        common_names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        name = name or re.sub(r"[^A-Za-z0-9_.-]+", "_", str(common_names[0].value) if common_names else subject)
        cert_pem, key_pem = _pem(cert), _pkcs8(key, key_password)
        chain = cert_pem + self.cert_pem
        return Certificate(
            name, rfc2253_name(cert.public_bytes(serialization.Encoding.DER)), cert_pem, key_pem, chain, key_password,
            self._write(f"{name}.pem", chain), self._write(f"{name}.key", key_pem),
            self._write(f"{name}.keystore.pem", key_pem + chain), tuple(hosts))

    @property
    def broker_certificate(self) -> Certificate:
        """The certificate :meth:`broker_configs` uses unless given one: ``CN=localhost`` for ``LOCAL_HOSTS``."""
        if self._broker is None:
            self._broker = self.issue("CN=localhost,OU=broker,O=kafkalab", LOCAL_HOSTS, name="broker")
        return self._broker

    def broker_configs(self, certificate: Certificate | None = None, client_auth: str = "none",
                       listener: str | None = None, inline: bool = False) -> dict[str, str]:
        """The broker's ``ssl.*`` configs: its key store (``certificate``, by default :attr:`broker_certificate`)
        and this CA as its trust store, ``ssl.client.auth``; for one listener only (``listener.name.<l>.``) if
        ``listener`` is given; ``inline``: the PEM text in the configs (KIP-651) instead of file names."""
        cert = certificate or self.broker_certificate
        if inline:
            out = {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": cert.chain_pem,
                   "ssl.keystore.key": cert.key_pem, "ssl.truststore.type": "PEM",
                   "ssl.truststore.certificates": self.cert_pem}
        else:
            out = {"ssl.keystore.type": "PEM", "ssl.keystore.location": cert.keystore_path,
                   "ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca_path}
        if cert.key_password:
            out["ssl.key.password"] = cert.key_password
        out["ssl.client.auth"] = client_auth
        if listener is not None:
            prefix = f"listener.name.{listener.lower()}."
            out = {prefix + k: v for k, v in out.items()}
        return out

    def client_configs(self, certificate: Certificate | None = None, endpoint_identification: bool = True,
                       inline: bool = False) -> dict[str, str]:
        """A confluent-kafka (librdkafka) client's configs for an SSL listener: trust this CA, present
        ``certificate`` if given (mutual TLS), check the broker's host name against its certificate unless
        ``endpoint_identification`` is False; ``inline``: PEM strings instead of file names."""
        out = {"security.protocol": "SSL",
               "ssl.endpoint.identification.algorithm": "https" if endpoint_identification else "none"}
        if inline:
            out["ssl.ca.pem"] = self.cert_pem
            if certificate is not None:
                out["ssl.certificate.pem"] = certificate.chain_pem
                out["ssl.key.pem"] = certificate.key_pem
        else:
            out["ssl.ca.location"] = self.ca_path
            if certificate is not None:
                out["ssl.certificate.location"] = certificate.cert_path
                out["ssl.key.location"] = certificate.key_path
        if certificate is not None and certificate.key_password:
            out["ssl.key.password"] = certificate.key_password
        return out

    def kafka_python_configs(self, certificate: Certificate | None = None, check_hostname: bool = True) -> dict:
        """The same for kafka-python (``KafkaProducer(**configs)``)."""
        out: dict = {"security_protocol": "SSL", "ssl_cafile": self.ca_path, "ssl_check_hostname": check_hostname}
        if certificate is not None:
            out.update(ssl_certfile=certificate.cert_path, ssl_keyfile=certificate.key_path)
            if certificate.key_password:
                out["ssl_password"] = certificate.key_password
        return out

    def java_client_configs(self, certificate: Certificate | None = None) -> dict[str, str]:
        """The same for Kafka's Java client (PEM stores, KIP-651)."""
        out = {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca_path}
        if certificate is not None:
            out.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": certificate.keystore_path})
            if certificate.key_password:
                out["ssl.key.password"] = certificate.key_password
        return out

    def close(self) -> None:
        """Remove the files (only a temporary directory this CA made)."""
        if self._temp:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> "CertificateAuthority":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["CertificateAuthority", "Certificate", "LOCAL_HOSTS"]
