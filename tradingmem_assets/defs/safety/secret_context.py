"""Secrets known by their context: credentials inside URLs, DSNs, connection strings, argv and names.

``scheme://user:password@host`` and ``?api_key=...`` in URLs and DSNs; connection strings
(``AccountKey=``, ``Password=``, ``pwd=``); argv pairs (``--password X``, ``--token X``, ``-p X``,
``mysql -pX``); ``name: value`` / ``name=value`` where the name says secret (``api_key: x``,
``"password": "x"``, ``DB_PASSWORD=x``) and English (``my password is X``). The value must have a
plausible secret shape for its name (``secret_shapes``): ``-p 8080`` is a port, "the token is USDC"
names a ticker.
"""

from __future__ import annotations

import re

from tradingmem_assets.defs.safety.secret_formats import Rule
from tradingmem_assets.defs.safety.secret_keys import WEAK_KEY_WORDS, key_words, secret_key_words
from tradingmem_assets.defs.safety.secret_shapes import NUMBER_RE, plausible_secret, shaped_secret


def _flag_value_ok(value: str, m: re.Match[str]) -> bool:
    flag = m.group("flag").lstrip("-").lower()
    words = key_words(flag) or [flag]
    if flag in {"p", "k", "t", "s"}:
        s = value.strip("\"'")
        if NUMBER_RE.fullmatch(s) or re.fullmatch(r"\d+(?::\d+)*(?:/\w+)?", s):
            return False
        words = ["password"]
    return plausible_secret(value, words)


def _named_value_ok(value: str, m: re.Match[str]) -> bool:
    words = key_words(m.group("name"))
    if not secret_key_words(words):
        return False
    if set(words) <= WEAK_KEY_WORDS | {"secret", "the", "my", "a", "your"} or m.group("sep").strip() in {
        "is",
        "was",
    }:
        return shaped_secret(value)
    return plausible_secret(value, words)


def _english_value_ok(value: str, m: re.Match[str]) -> bool:
    words = key_words(m.group("name"))
    if set(words) & {"password", "passphrase", "passcode", "passwd", "pwd", "mnemonic"}:
        return plausible_secret(value, words) and len(value.strip("\"'")) >= 3
    return shaped_secret(value)


_VALUE = r"(?P<value>\"(?:[^\"\\\n]|\\.){1,512}\"|'[^'\n]{1,512}'|[^\s,;\"'<>(){}\[\]]{1,512})"

CONTEXT_RULES: tuple[Rule, ...] = (
    # credentials inside URLs and DSNs
    Rule(
        "url_userinfo",
        "url_credential",
        re.compile(r"(?i)\b[a-z][a-z0-9+.\-]{1,30}://[^\s:/?#@\[\]\"'<>]*:(?P<v>[^\s@/?#\"'<>\[\]]+)@"),
        "v",
    ),
    Rule(
        "url_query",
        "url_credential",
        re.compile(
            r"(?i)[?&](?P<name>api[_-]?key|apikey|key|access[_-]?token|token|auth|auth[_-]?token|secret|"
            r"client[_-]?secret|password|passwd|pwd|pass|signature|x-amz-signature|x-amz-credential|"
            r"private[_-]?token|session(?:id)?)=(?P<v>[^&#\s\"'<>]+)"
        ),
        "v",
        lambda v, m: (
            shaped_secret(v)
            or plausible_secret(v, key_words(m.group("name")) + ["password"])
            and m.group("name").lower() not in {"key", "token", "auth", "session", "signature"}
        ),
    ),
    # connection strings: AccountKey=...; Password=...; pwd=...
    Rule(
        "connection_string",
        "connection_string",
        re.compile(
            r"(?i)(?:^|(?<=[;\s\"']))(?P<name>AccountKey|SharedAccessKey|SharedAccessSignature|SharedSecret|"
            r"Password|Pwd|Passwd|User\s?Password|ClientSecret|Client_Secret|AccessKey|SecretKey|AuthToken|"
            r"ApiKey|Api_Key|PrivateKey|Token)\s*=\s*(?P<v>\"[^\"]*\"|'[^']*'|\{[^}]*\}|(?:[^;\"'\s&]|"
            r"&(?!\w+=))+)"
        ),
        "v",
        lambda v, m: (
            plausible_secret(v, ["password"]) if m.group("name").lower() != "token" else shaped_secret(v)
        ),
    ),
    # argv pairs: --password X, --token=X, -p X
    Rule(
        "argv",
        "argv_secret",
        re.compile(
            r"(?i)(?<![\w-])(?P<flag>--?(?:password|passwd|pass|pwd|passphrase|token|api[-_]?key|apikey|"
            r"secret|client[-_]?secret|access[-_]?token|auth[-_]?token|refresh[-_]?token|private[-_]?key|"
            r"key|mnemonic|seed|otp|auth|credentials?|db[-_]?password|store[-_]?pass|key[-_]?pass|"
            r"storepass|keypass|ssh[-_]?pass|p|k))(?:[ \t]*=[ \t]*|[ \t]+)"
            r"(?P<v>\"[^\"]*\"|'[^']*'|[^\s\"'-][^\s\"']*)"
        ),
        "v",
        _flag_value_ok,
    ),
    Rule(
        "mysql_p",
        "argv_secret",
        re.compile(r"\b(?:mysql|mysqldump|mariadb)\b[^\n]*?\s-p(?P<v>[^\s-]\S+)"),
        "v",
    ),
    # name: value / name=value where the name says secret (api_key: x, "password": "x", DB_PASSWORD=x)
    Rule(
        "named_value",
        "credential",
        re.compile(
            r"(?<![\w.-])[\"']?(?P<name>[A-Za-z][A-Za-z0-9_.-]{0,60}?)[\"']?(?P<sep>\s*(?::=|=>|==|=|:)\s*)"
            + _VALUE
        ),
        "value",
        _named_value_ok,
    ),
    # English: "my password is X", "the api key was X"
    Rule(
        "english",
        "credential",
        re.compile(
            r"(?i)\b(?P<name>(?:api|access|auth|secret|private|client|account|recovery|master)[ _-]?"
            r"(?:key|token|secret|phrase)|password|passphrase|passcode|passwd|pwd|pin|seed[ _-]?phrase|"
            r"mnemonic|secret|token)(?P<sep>\s+(?:is|was|reads|=)\s*:?\s+)" + _VALUE
        ),
        "value",
        _english_value_ok,
    ),
)
# an argv flag whose next list item is a secret
ARGV_FLAG_RE = re.compile(
    r"(?i)--?(?:password|passwd|pass|pwd|passphrase|token|api[-_]?key|apikey|secret|client[-_]?secret|"
    r"access[-_]?token|auth[-_]?token|refresh[-_]?token|private[-_]?key|key|mnemonic|seed|otp|auth|"
    r"credentials?|db[-_]?password|store[-_]?pass|key[-_]?pass|storepass|keypass|ssh[-_]?pass|p|k)"
)
