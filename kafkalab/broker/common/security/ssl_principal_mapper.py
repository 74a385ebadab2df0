"""An SSL client's principal: its certificate's subject, mapped by ``ssl.principal.mapping.rules``.

* :func:`rfc2253_name`: the subject distinguished name as Java's ``X500Principal.getName()`` prints it (RFC 2253:
  the last RDN first, ``CN``/``L``/``ST``/``O``/``OU``/``C``/``STREET``/``DC``/``UID`` by keyword, any other
  attribute as ``<oid>=#<hex of its DER value>``), e.g. ``CN=alice,OU=payments,O=kafkalab``.
* :class:`SslPrincipalMapper` (Kafka's ``org.apache.kafka.common.security.ssl.SslPrincipalMapper``): rules
  ``RULE:pattern/replacement/[LU]`` and ``DEFAULT``, the first rule whose pattern matches the whole name wins;
  ``L``/``U`` lower- or upper-case the result; none matching is an error (the connection is closed).
* :func:`ssl_principal` (Kafka's ``DefaultKafkaPrincipalBuilder`` for an SSL connection): ``User:<mapped name>``,
  or ``User:ANONYMOUS`` without a client certificate.
"""
from __future__ import annotations

import re

from .kafka_principal import ANONYMOUS, USER_TYPE, KafkaPrincipal

_RULE_PATTERN = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE_PATTERN)
_BACK_REFERENCE = re.compile(r"\$(\d+)")

#: RFC 2253's keywords (what ``X500Principal.getName()`` writes by name), by OID
_KEYWORDS = {"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
             "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID"}


class NoMatchingRule(ValueError):
    """Kafka's ``SslPrincipalMapper.NoMatchingRule``."""


class _Rule:
    def __init__(self, pattern: str | None = None, replacement: str | None = None, lower: bool = False,
                 upper: bool = False):
        self.is_default = pattern is None
        self.pattern = re.compile(pattern) if pattern is not None else None
        self.replacement, self.lower, self.upper = replacement, lower, upper

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if not self.pattern.fullmatch(dn):
            return None
        parts = _replacement_parts(self.replacement or "", self.pattern.groups)
        result = self.pattern.sub(lambda m: "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts),
                                  dn)
        if self.lower:
            return result.lower()
        return result.upper() if self.upper else result

    def __repr__(self) -> str:
        if self.is_default:
            return "DEFAULT"
        assert self.pattern is not None
        return (f"RULE:{self.pattern.pattern}/{self.replacement}" + ("/L" if self.lower else "/U" if self.upper
                                                                     else ""))


def _replacement_parts(replacement: str, groups: int) -> list[str | int]:
    """Java's ``Matcher.replaceAll`` replacement: ``$n`` a group, ``\\x`` a literal x; a back reference beyond
    the pattern's groups is a literal (Kafka's ``escapeLiteralBackReferences``)."""
    parts: list[str | int] = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            parts.append(replacement[i + 1])
            i += 2
            continue
        m = _BACK_REFERENCE.match(replacement, i)
        if m:
            digits = m.group(1)
            index = int(digits)
            while index > groups and index >= 10:
                index //= 10
            if index > groups:
                parts.append(m.group(0))   # a literal "$4"
                i = m.end()
                continue
            used = len(str(index))
            parts.append(index)
            parts.append(digits[used:])
            i = m.end()
            continue
        parts.append(c)
        i += 1
    return parts


class SslPrincipalMapper:
    def __init__(self, rules: str | None = "DEFAULT"):
        text = "DEFAULT" if rules is None else rules
        parsed = [_parse_rule(m.group(1)) for m in _RULE_SPLITTER.finditer(text.strip())]
        self.rules: list[_Rule] = [r for r in parsed if r is not None]

    def get_name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {distinguished_name}, rules {self.rules}")

    def __repr__(self) -> str:
        return f"SslPrincipalMapper(rules = {self.rules})"


def _parse_rule(rule: str) -> _Rule | None:
    m = _RULE_PARSER.match(rule)
    if m is None:
        raise ValueError(f"Invalid rule: {rule}")
    if m.end() != len(rule):
        raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rule[m.end():]}`")
    if m.group(1) is not None:
        return _Rule()
    if m.group(2) is not None:
        return _Rule(m.group(2), m.group(4), m.group(6) == "L", m.group(6) == "U")
    return None   # empty rules are ignored


def _escape(value: str) -> str:
    out = "".join("\\" + c if c in ',+"\\<>;' else c for c in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _der_value_hex(attribute) -> str:
    """The DER of an attribute value (its string type's tag, length, bytes), as RFC 2253's ``#hex`` form."""
    asn1_type = getattr(attribute, "_type", None)
    tag = int(getattr(asn1_type, "value", 12))   # UTF8String unless cryptography says otherwise
    body = attribute.value if isinstance(attribute.value, bytes) else str(attribute.value).encode(
        "utf-16-be" if tag == 30 else "utf-8")
    n = len(body)
    length = bytes([n]) if n < 128 else (lambda b: bytes([0x80 | len(b)]) + b)(n.to_bytes((n.bit_length() + 7) // 8,
                                                                                          "big"))
    return (bytes([tag]) + length + body).hex()


def rfc2253_name(der_certificate: bytes) -> str:
    """The subject of a DER certificate as ``X500Principal.getName()`` (RFC 2253) writes it."""
    from cryptography import x509   # imported only once an SSL client presents a certificate
    subject = x509.load_der_x509_certificate(der_certificate).subject
    rdns = []
    for rdn in reversed(list(subject.rdns)):
        avas = []
        for attribute in rdn:
            keyword = _KEYWORDS.get(attribute.oid.dotted_string)
            if keyword is not None:
                avas.append(f"{keyword}={_escape(str(attribute.value))}")
            else:
                avas.append(f"{attribute.oid.dotted_string}=#{_der_value_hex(attribute)}")
        rdns.append("+".join(avas))
    return ",".join(rdns)


def ssl_principal(der_certificate: bytes | None, mapper: SslPrincipalMapper) -> KafkaPrincipal:
    """An SSL connection's principal: ``User:ANONYMOUS`` without a client certificate, else its mapped name."""
    if not der_certificate:
        return ANONYMOUS
    return KafkaPrincipal(USER_TYPE, mapper.get_name(rfc2253_name(der_certificate)))
