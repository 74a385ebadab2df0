"""An SSL listener's SSLContext from Kafka's ssl.* configs: PEM key stores from a file or from the configs
(KIP-651), encrypted keys, PKCS#8 only, PKCS12, trust stores, ssl.client.auth, and Kafka's messages for mistakes."""
from __future__ import annotations

import ssl

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from kafkalab.broker.common.security.ssl_factory import create_server_context
from kafkalab.broker.server.config import BrokerConfig
from kafkalab.security import CertificateAuthority


@pytest.fixture
def ca(tmp_path):
    return CertificateAuthority(directory=str(tmp_path))


def ssl_configs(**overrides) -> dict:
    config = BrokerConfig({"listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL", **overrides})
    return config.listener_configs.ssl_configs("SSL")


def context(**overrides) -> ssl.SSLContext:
    return create_server_context(ssl_configs(**overrides))


def test_pem_keystore_file_and_truststore(ca):
    ctx = context(**ca.broker_configs(client_auth="required"))
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2 and ctx.maximum_version == ssl.TLSVersion.TLSv1_3
    assert len(ctx.get_ca_certs()) == 1


def test_pem_in_the_configs_and_client_auth_requested(ca):
    ctx = context(**ca.broker_configs(client_auth="requested", inline=True))
    assert ctx.verify_mode == ssl.CERT_OPTIONAL
    assert context(**ca.broker_configs(inline=True)).verify_mode == ssl.CERT_NONE


def test_encrypted_pkcs8_key_needs_ssl_key_password(ca):
    cert = ca.issue("CN=broker", ["localhost"], key_password="s3cret")
    assert "BEGIN ENCRYPTED PRIVATE KEY" in cert.key_pem
    context(**ca.broker_configs(cert))
    configs = ca.broker_configs(cert)
    del configs["ssl.key.password"]
    with pytest.raises(ValueError, match="the key is encrypted and ssl.key.password is not set"):
        context(**configs)
    with pytest.raises(ValueError, match="Failed to load PEM SSL keystore"):
        context(**{**ca.broker_configs(cert), "ssl.key.password": "wrong"})


def test_a_traditional_openssl_key_is_refused_as_kafka_refuses_it(ca, tmp_path):
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    traditional = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                    serialization.NoEncryption()).decode()
    assert traditional.startswith("-----BEGIN RSA PRIVATE KEY-----")
    cert = ca.broker_certificate
    with pytest.raises(ValueError, match="Private key could not be loaded: a 'RSA PRIVATE KEY' is not PKCS#8"):
        context(**{**ca.broker_configs(inline=True), "ssl.keystore.key": traditional,
                   "ssl.keystore.certificate.chain": cert.chain_pem})


def test_pkcs12_keystore(ca, tmp_path):
    cert = ca.broker_certificate
    key = serialization.load_pem_private_key(cert.key_pem.encode(), None)
    from cryptography import x509
    leaf = x509.load_pem_x509_certificate(cert.cert_pem.encode())
    path = tmp_path / "broker.p12"
    path.write_bytes(pkcs12.serialize_key_and_certificates(
        b"broker", key, leaf, [ca.certificate], serialization.BestAvailableEncryption(b"storepass")))
    context(**{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(path),
               "ssl.keystore.password": "storepass"})
    with pytest.raises(ValueError, match="Failed to load SSL keystore .* of type JKS: the mini broker reads PEM and "
                                         "PKCS12"):
        context(**{"ssl.keystore.location": str(path), "ssl.keystore.password": "storepass"})


@pytest.mark.parametrize("overrides, message", [
    ({}, "An SSL listener needs a key store"),
    ({"ssl.keystore.key": "k"}, "SSL private key can be specified only for PEM, but key store type is JKS."),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.key": "k"},
     "SSL private key is specified, but certificate chain is not specified."),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": "c"},
     "SSL certificate chain is specified, but private key is not specified"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/x.pem", "ssl.keystore.password": "p"},
     "SSL key store password cannot be specified with PEM format, only key password may be specified"),
    ({"ssl.keystore.location": "/x.jks"}, "SSL key store is specified, but key store password is not specified."),
    ({"ssl.keystore.password": "p"}, "SSL key store is not specified, but key store password is specified."),
    ({"ssl.enabled.protocols": "TLSv1.2,SSLv2"}, "unsupported protocol\\(s\\) SSLv2"),
])
def test_kafka_messages_for_keystore_mistakes(overrides, message):
    with pytest.raises(ValueError, match=message):
        context(**overrides)


def test_truststore_mistakes(ca):
    base = ca.broker_configs(client_auth="required")
    with pytest.raises(ValueError, match="Both SSL trust store location and separate trust certificates are "
                                         "specified."):
        context(**{**base, "ssl.truststore.certificates": ca.cert_pem})
    with pytest.raises(ValueError, match="SSL trust store password cannot be specified for PEM format."):
        context(**{**base, "ssl.truststore.password": "p"})


def test_enabled_protocols_are_a_range():
    # one protocol only: TLSv1.3
    configs = CertificateAuthority().broker_configs()
    ctx = context(**configs, **{"ssl.enabled.protocols": "TLSv1.3"})
    assert ctx.minimum_version == ctx.maximum_version == ssl.TLSVersion.TLSv1_3
