"""``JaasConfig``: a ``sasl.jaas.config`` value parsed as Kafka's ``org.apache.kafka.common.security.JaasConfig``.

A JAAS config is one or more login module entries, each ``<class> <flag> (<option>=<value>)* ;``::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

Kafka reads it with Java's ``StreamTokenizer`` (``//`` and ``/* */`` comments, ``'`` and ``"`` quotes, ``-``
``_`` ``$`` as word characters), and so does :func:`parse_jaas_config`, with Kafka's messages for what is wrong:
a missing control flag, an unknown flag (``required``, ``requisite``, ``sufficient``, ``optional``), an option
without a value (a bare number is not a value: quote it), an entry not ended by ``;``. On a broker the config is
set per listener and mechanism, ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (both in lower case),
and must hold exactly one login module (Kafka's ``JaasContext.loadServerContext``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

CONTROL_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
_WORD, _NUMBER, _QUOTED, _EOF = "word", "number", "quoted", "eof"
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


@dataclass(frozen=True)
class AppConfigurationEntry:
    """One login module entry (``javax.security.auth.login.AppConfigurationEntry``)."""
    login_module_name: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)


def _is_word_start(c: str) -> bool:
    return c.isascii() and c.isalpha() or c in "-_$" or ord(c) >= 160


def _tokens(text: str):
    """(kind, value) as StreamTokenizer gives them: a word or quoted string (value: its text), a number (value:
    None, as ``sval`` is), an ordinary character (kind: the character itself)."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c <= " ":
            i += 1
        elif text.startswith("//", i) or c == "/" and not text.startswith("/*", i):   # '/' is a comment character
            while i < n and text[i] not in "\r\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in "\"'":
            i += 1
            out = []
            while i < n and text[i] != c and text[i] not in "\r\n":
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                    out.append(_ESCAPES.get(text[i], text[i]))
                else:
                    out.append(text[i])
                i += 1
            i += 1
            yield _QUOTED, "".join(out)
        elif c.isdigit() or c == ".":
            while i < n and (text[i].isdigit() or text[i] == "."):
                i += 1
            yield _NUMBER, None
        elif _is_word_start(c):
            start = i
            while i < n and (_is_word_start(text[i]) or text[i].isdigit() or text[i] == "."):
                i += 1
            yield _WORD, text[start:i]
        else:
            i += 1
            yield c, None
    yield _EOF, None


def parse_jaas_config(text: str) -> list[AppConfigurationEntry]:
    """The login module entries of a ``sasl.jaas.config`` value; ValueError with Kafka's message if malformed."""
    tokens = _tokens(text)
    entries = []
    kind, value = next(tokens)
    while kind != _EOF:
        login_module = value
        kind, flag = next(tokens)
        if kind == _EOF:
            raise ValueError("Login module control flag not specified in JAAS config")
        if flag is None:
            raise ValueError("Login module control flag is not available in the JAAS config")
        if flag.upper() not in CONTROL_FLAGS:
            raise ValueError(f"Invalid login module control flag '{flag}' in JAAS config")
        options: dict[str, str] = {}
        kind, key = next(tokens)
        while kind not in (_EOF, ";"):
            eq, _ = next(tokens)
            vkind, val = (_EOF, None) if eq == _EOF else next(tokens)
            if eq != "=" or vkind == _EOF or val is None:
                raise ValueError(f"Value not specified for key '{key}' in JAAS config")
            options[str(key)] = val
            kind, key = next(tokens)
        if kind != ";":
            raise ValueError("JAAS config entry not terminated by semi-colon")
        entries.append(AppConfigurationEntry(str(login_module), flag.upper(), options))
        kind, value = next(tokens)
    if not entries:
        raise ValueError("Login module not specified in JAAS config")
    return entries


def server_login_module(text: str) -> AppConfigurationEntry:
    """The one login module of a broker's ``listener.name.<l>.<mechanism>.sasl.jaas.config`` (Kafka's
    ``JaasContext.loadServerContext``)."""
    entries = parse_jaas_config(text)
    if len(entries) != 1:
        raise ValueError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]
