"""Redaction of secrets before anything reaches a stored learning (SPEC sections 8 and 13).

Two detectors, both applied to every tool argument, recursively:
- by key: an argument whose name says it holds a secret (``api_key``, ``token``, ``password``,
  ``private_key``, ``mnemonic``, ``seed``, ``authorization``, ``secret``, ``credential``, ...) has its
  whole value replaced, whatever its type;
- by value: any string (in any argument, and in free text such as a trigger) is scanned for secret
  shapes (JWTs, bearer tokens, PEM private keys, 64-hex private keys, provider API keys, base58/WIF
  private keys, ``password=...`` pairs, and 12-24 word runs of short lower-case words that look like
  seed phrases) and only the matching span is replaced.

Replacements read ``[REDACTED:<kind>]``. We prefer over-redaction: a redacted transaction hash or
a redacted 12-word sentence costs a little reuse; a leaked key costs funds.
"""

from __future__ import annotations

import re
from typing import Any

PLACEHOLDER = "[REDACTED:{kind}]"

# Key names (split into lower-case words on _, -, space, dots and camelCase) that hold secrets.
_SECRET_KEY_WORDS = frozenset(
    {
        "secret",
        "secrets",
        "token",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "mnemonic",
        "seed",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "cookie",
        "jwt",
        "bearer",
        "apikey",
        "privkey",
        "privatekey",
        "secretkey",
        "accesskey",
        "otp",
        "totp",
        "pin",
    }
)
_SECRET_KEY_PAIRS = frozenset(
    {
        ("api", "key"),
        ("private", "key"),
        ("secret", "key"),
        ("access", "key"),
        ("signing", "key"),
        ("client", "secret"),
        ("seed", "phrase"),
        ("recovery", "phrase"),
        ("session", "id"),
    }
)

# (kind, pattern, group to replace or 0 for the whole match). Order matters: PEM before hex, etc.
_VALUE_PATTERNS: tuple[tuple[str, re.Pattern[str], int], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)", re.S
        ),
        0,
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}"), 0),
    ("token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), 0),
    ("api_key", re.compile(r"\b(?:sk|rk)[-_](?:live|test|proj|ant)?[-_]?[A-Za-z0-9_-]{16,}"), 0),
    ("api_key", re.compile(r"\bAKIA[0-9A-Z]{16}\b"), 0),
    ("api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), 0),
    ("token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b"), 0),
    ("token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"), 0),
    ("token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"), 0),
    ("private_key", re.compile(r"\b(?:0x)?[0-9a-fA-F]{64}\b"), 0),
    ("private_key", re.compile(r"\b[1-9A-HJ-NP-Za-km-z]{80,90}\b"), 0),  # base58 (e.g. Solana) secret key
    ("private_key", re.compile(r"\b[5KL][1-9A-HJ-NP-Za-km-z]{50,51}\b"), 0),  # WIF
    (
        "credential",
        re.compile(
            r"(?i)\b(?:api[_ -]?key|apikey|access[_ -]?token|auth[_ -]?token|token|secret|client[_ -]?secret|"
            r"password|passwd|pwd|passphrase|private[_ -]?key|mnemonic|seed[_ -]?phrase)\b"
            r"\s*(?:[:=]|\bis\b)\s*"
            r"(?!\[REDACTED:)(\"[^\"]+\"|'[^']+'|[^\s&,;\"']+)"
        ),
        1,
    ),
    ("seed_phrase", re.compile(r"\b(?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8}\b"), 0),
)


def _key_words(key: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_key(key: str) -> bool:
    """Whether an argument name says its value is a secret."""
    words = _key_words(str(key))
    if not words:
        return False
    if words == ["key"] or any(w in _SECRET_KEY_WORDS for w in words):
        return True
    return any(pair in _SECRET_KEY_PAIRS for pair in zip(words, words[1:], strict=False))


def redact_text(text: str) -> tuple[str, list[str]]:
    """``text`` with every secret-shaped span replaced, and the kinds found (in pattern order)."""
    kinds: list[str] = []
    for kind, pattern, group in _VALUE_PATTERNS:
        placeholder = PLACEHOLDER.format(kind=kind)

        def _sub(m: re.Match[str], group: int = group, placeholder: str = placeholder) -> str:
            if group == 0:
                return placeholder
            start, end = m.span(group)
            return m.group(0)[: start - m.start()] + placeholder + m.group(0)[end - m.start() :]

        text, n = pattern.subn(_sub, text)
        if n:
            kinds.append(kind)
    return text, kinds


def redact_value(value: Any) -> tuple[Any, list[str]]:
    """A JSON-like value (dict/list/str/number) with secrets redacted, and the kinds found."""
    kinds: list[str] = []
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if is_secret_key(str(k)) and v not in (None, "", [], {}):
                out[k] = PLACEHOLDER.format(kind="secret_arg")
                kinds.append("secret_arg")
            else:
                out[k], found = redact_value(v)
                kinds.extend(found)
        return out, kinds
    if isinstance(value, list | tuple):
        items = []
        for v in value:
            red, found = redact_value(v)
            items.append(red)
            kinds.extend(found)
        return items, kinds
    if isinstance(value, str):
        return redact_text(value)
    return value, kinds


def secret_kinds_in_text(text: str | None) -> list[str]:
    """Kinds of secret shapes still present in ``text`` (placeholders do not count)."""
    if not text:
        return []
    kinds: list[str] = []
    for kind, pattern, _group in _VALUE_PATTERNS:
        if any("[REDACTED:" not in m.group(0) for m in pattern.finditer(text)):
            kinds.append(kind)
    return kinds


def secret_kinds_in_value(value: Any) -> list[str]:
    """Kinds of secrets still present in a JSON-like value: secret-named keys with a real value too."""
    kinds: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if (
                is_secret_key(str(k))
                and v not in (None, "", [], {})
                and not (isinstance(v, str) and v.startswith("[REDACTED:"))
            ):
                kinds.append("secret_arg")
            kinds.extend(secret_kinds_in_text(str(k)))
            kinds.extend(secret_kinds_in_value(v))
    elif isinstance(value, list | tuple):
        for v in value:
            kinds.extend(secret_kinds_in_value(v))
    elif isinstance(value, str):
        kinds.extend(secret_kinds_in_text(value))
    return kinds
