"""ssl.principal.mapping.rules as Kafka's SslPrincipalMapper applies them (its own test cases), and a certificate's
subject as Java's X500Principal.getName() writes it (RFC 2253)."""
from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography import x509

from kafkalab.broker.common.security.kafka_principal import ANONYMOUS, KafkaPrincipal
from kafkalab.broker.common.security.ssl_principal_mapper import (
    NoMatchingRule, SslPrincipalMapper, rfc2253_name, ssl_principal)
from kafkalab.security import CertificateAuthority


def test_default_keeps_the_distinguished_name():
    assert SslPrincipalMapper("DEFAULT").get_name("CN=alice,O=kafkalab") == "CN=alice,O=kafkalab"
    assert SslPrincipalMapper(None).get_name("CN=a") == "CN=a"


def test_kafka_rules():   # SslPrincipalMapperTest.testRulesSplitting / testCommaWithWhitespace and the docs' rules
    rules = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
             "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,DEFAULT")
    mapper = SslPrincipalMapper(rules)
    assert mapper.get_name("CN=kafka-server1,OU=ServiceUsers,O=Org,C=US") == "kafka-server1"
    assert mapper.get_name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.get_name("OU=JavaSoft,O=Sun Microsystems,CN=Duke.Hello,C=US") == "DUKE.HELLO"
    assert mapper.get_name("O=nobody") == "O=nobody"
    assert SslPrincipalMapper("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT").get_name(
        "CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


def test_a_literal_back_reference_beyond_the_groups():
    assert SslPrincipalMapper("RULE:^CN=(.*),O=.*$/$1@$4/").get_name("CN=a,O=b") == "a@$4"


def test_no_rule_matching_and_invalid_rules():
    with pytest.raises(NoMatchingRule, match="No rules apply to O=x, rules"):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/").get_name("O=x")
    with pytest.raises(ValueError, match=r"Invalid rule: `RULE:a/b/Lx`, unmatched substring: `x`"):
        SslPrincipalMapper("RULE:a/b/Lx")
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper("RULE:a/b")


def der(cert_pem: str) -> bytes:
    return x509.load_pem_x509_certificate(cert_pem.encode()).public_bytes(serialization.Encoding.DER)


def test_rfc2253_name_is_reversed_with_keywords_and_hex_for_other_attributes(tmp_path):
    ca = CertificateAuthority(directory=str(tmp_path))
    cert = ca.issue("CN=alice,OU=payments,O=kafkalab,L=Munich,ST=Bavaria,C=DE")   # RFC 4514: the last RDN first
    subject = x509.load_pem_x509_certificate(cert.cert_pem.encode()).subject
    assert [rdn.rfc4514_string() for rdn in subject.rdns][:2] == ["C=DE", "ST=Bavaria"]   # the certificate's order
    assert rfc2253_name(der(cert.cert_pem)) == "CN=alice,OU=payments,O=kafkalab,L=Munich,ST=Bavaria,C=DE"
    assert cert.subject == "CN=alice,OU=payments,O=kafkalab,L=Munich,ST=Bavaria,C=DE"
    # emailAddress has no RFC 2253 keyword: Java writes its OID and the DER of its value (an IA5String)
    mail = ca.issue("1.2.840.113549.1.9.1=a@b,CN=bob")
    assert rfc2253_name(der(mail.cert_pem)) == "1.2.840.113549.1.9.1=#1603614062,CN=bob"
    special = ca.issue("CN=Smith\\, John")
    assert rfc2253_name(der(special.cert_pem)) == "CN=Smith\\, John"


def test_ssl_principal(tmp_path):
    ca = CertificateAuthority(directory=str(tmp_path))
    cert = ca.issue("CN=alice,OU=payments,O=kafkalab")
    assert ssl_principal(None, SslPrincipalMapper()) == ANONYMOUS
    assert ssl_principal(der(cert.cert_pem), SslPrincipalMapper()) == KafkaPrincipal(
        "User", "CN=alice,OU=payments,O=kafkalab")
    assert str(ssl_principal(der(cert.cert_pem), SslPrincipalMapper("RULE:^CN=([^,]*),.*$/$1/U"))) == "User:ALICE"
