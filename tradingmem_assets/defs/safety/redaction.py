"""Redaction of secrets before anything reaches a stored learning (SPEC sections 8 and 13): the API.

Secrets are found by their *value*, wherever they sit (any argument, nested dicts and lists,
free-text notes and triggers), by three detectors applied in this order of precedence:

1. the project's own rules: token formats (``secret_formats.TOKEN_RULES``), credentials known by
   their context (``secret_context``: URLs and DSNs, connection strings, argv pairs, ``name: value``
   where the name says secret, "my password is X"), raw private keys and BIP39 seed phrases;
2. detect-secrets' format plugins on what the rules left;
3. entropy: tokens of 16+ characters that look random (``secret_shapes``).

Keys only sharpen the judgement, they never redact alone (``secret_keys``): a value under a
secret-like key is replaced whole when it is a string of plausible secret shape.

Replacements read ``[REDACTED:<kind>]``; placeholders are never matched again, so redaction is
idempotent and ``secret_kinds_in_*`` (what redaction would still find) is empty on redacted output.
We prefer over-redaction: a redacted transaction hash costs a little reuse; a leaked key costs funds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from tradingmem_assets.defs.safety.secret_context import ARGV_FLAG_RE, CONTEXT_RULES
from tradingmem_assets.defs.safety.secret_formats import (
    DS_KINDS,
    RAW_KEY_RULES,
    TOKEN_RULES,
    SecretSpan,
    ds_format_plugins,
    seed_phrase_spans,
)
from tradingmem_assets.defs.safety.secret_keys import (
    METADATA_WORDS,
    NUMERIC_SECRET_WORDS,
    is_public_key_name,
    is_secret_key,
    key_words,
    secret_key_words,
)
from tradingmem_assets.defs.safety.secret_shapes import (
    PLACEHOLDER,
    PLACEHOLDER_RE,
    PUBLIC_ADDRESS_RE,
    looks_random,
    looks_random_value,
    plausible_secret,
)

__all__ = [
    "PLACEHOLDER",
    "SecretSpan",
    "find_secrets",
    "is_secret_key",
    "redact_text",
    "redact_value",
    "secret_kinds_in_text",
    "secret_kinds_in_value",
]

# precedence: where spans overlap, the earlier rule keeps its span
_RULES = TOKEN_RULES + CONTEXT_RULES + RAW_KEY_RULES

_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9+/_\-=])[A-Za-z0-9+/_\-]{16,}={0,2}(?![A-Za-z0-9+/_\-=])")


def find_secrets(text: str | None) -> list[SecretSpan]:
    """Every secret in ``text`` (placeholders excepted), non-overlapping, in text order."""
    if not text:
        return []
    taken: list[tuple[int, int]] = [m.span() for m in PLACEHOLDER_RE.finditer(text)]
    found: list[SecretSpan] = []

    def add(start: int, end: int, kind: str, detector: str) -> None:
        while start < end and text[start] in " \t\r\n\"'=:":
            start += 1
        while end > start and text[end - 1] in " \t\r\n\"'":
            end -= 1
        if end <= start:
            return
        for s, e in taken:
            if start < e and s < end:
                return
        taken.append((start, end))
        found.append(SecretSpan(kind, start, end, detector))

    for rule in _RULES:
        pos = 0
        while pos <= len(text):
            m = rule.pattern.search(text, pos)
            if m is None:
                break
            pos = m.end() if m.end() > m.start() else m.start() + 1
            start, end = m.span(rule.group)
            if start < 0:
                continue
            value = m.group(rule.group)
            if rule.check is not None and not rule.check(value, m):
                # look again inside the rejected value: {"note": "password: x"} holds a pair of its own
                pos = max(m.start() + 1, start + (1 if value[:1] in "\"'" else 0))
                continue
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                start, end = start + 1, end - 1
            add(start, end, rule.kind, f"rule:{rule.name}")
    for start, end in seed_phrase_spans(text):
        add(start, end, "seed_phrase", "rule:bip39")
    for name, patterns in ds_format_plugins():
        for pattern in patterns:
            for m in pattern.finditer(text):
                spans = [m.span(i) for i in range(1, (m.lastindex or 0) + 1) if m.group(i)]
                spans = [s for s in spans if s[1] - s[0] >= 8] or [m.span()]
                for start, end in spans:
                    add(start, end, DS_KINDS[name], f"detect-secrets:{name}")
    for m in _TOKEN_RE.finditer(text):
        tok = m.group(0)
        if looks_random(tok) or any(looks_random(p) for p in re.split(r"[/_\-]", tok) if len(p) >= 16):
            add(m.start(), m.end(), "high_entropy", "entropy")
    return sorted(found, key=lambda s: s.start)


def _apply(text: str, spans: list[SecretSpan]) -> str:
    out, pos = [], 0
    for s in spans:
        out.append(text[pos : s.start])
        out.append(PLACEHOLDER.format(kind=s.kind))
        pos = s.end
    out.append(text[pos:])
    return "".join(out)


def _unique(kinds: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(kinds))


def redact_text(text: str) -> tuple[str, list[str]]:
    """``text`` with every secret span replaced by ``[REDACTED:<kind>]``, and the kinds found (in text
    order, each once)."""
    if not text:
        return text, []
    spans = find_secrets(text)
    if not spans:
        return text, []
    return _apply(text, spans), _unique(s.kind for s in spans)


# ------------------------------------------------------------------------------------- values


def _redact_string(value: str, words: list[str] | None, secret_context: bool) -> tuple[str, list[str]]:
    if words is not None and is_public_key_name(words) and PUBLIC_ADDRESS_RE.fullmatch(value.strip()):
        return value, []  # a public address under an address-like key (wallet_address, mint, pubkey)
    if secret_context and plausible_secret(value, words or []):
        return PLACEHOLDER.format(kind="secret_arg"), ["secret_arg"]
    redacted, kinds = redact_text(value)
    if kinds:
        return redacted, kinds
    if looks_random_value(value):
        return PLACEHOLDER.format(kind="high_entropy"), ["high_entropy"]
    return value, []


def _byte_array(value: list[Any]) -> bool:
    return len(value) in (32, 64) and all(
        isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 255 for x in value
    )


def _redact(value: Any, words: list[str] | None, secret_context: bool) -> tuple[Any, list[str]]:
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        kinds: list[str] = []
        for k, v in value.items():
            key = k
            if isinstance(k, str):
                key, found = redact_text(k)
                kinds.extend(found)
            kw = key_words(str(k))
            child_secret = secret_key_words(kw) or (secret_context and not (kw and kw[-1] in METADATA_WORDS))
            out[key], found = _redact(v, kw, child_secret)
            kinds.extend(found)
        return out, kinds
    if isinstance(value, list | tuple):
        if secret_context and _byte_array(list(value)):
            return PLACEHOLDER.format(kind="private_key"), ["private_key"]
        items: list[Any] = []
        kinds = []
        flag_words: list[str] | None = None
        for item in value:
            if flag_words is not None and isinstance(item, str) and not item.startswith("-"):
                red, found = _redact_string(item, flag_words, True)
                if found == ["secret_arg"]:
                    red, found = PLACEHOLDER.format(kind="argv_secret"), ["argv_secret"]
            else:
                red, found = _redact(item, words, secret_context)
            items.append(red)
            kinds.extend(found)
            flag_words = None
            if isinstance(item, str) and ARGV_FLAG_RE.fullmatch(item.strip()):
                flag = item.strip().lstrip("-").lower()
                flag_words = ["password"] if flag in {"p", "k"} else (key_words(flag) or [flag])
                if flag in {"p", "k"}:
                    flag_words = ["password", "p"]
        return (items if isinstance(value, list) else type(value)(items)), kinds
    if isinstance(value, str):
        if secret_context and words and {"p"} <= set(words) and re.fullmatch(r"\d+(?::\d+)*", value.strip()):
            return value, []  # -p 8080: a port, not a password
        return _redact_string(value, words, secret_context)
    if secret_context and isinstance(value, int) and not isinstance(value, bool):
        if words and NUMERIC_SECRET_WORDS & set(words):
            return PLACEHOLDER.format(kind="secret_arg"), ["secret_arg"]
    return value, []


def redact_value(value: Any) -> tuple[Any, list[str]]:
    """A JSON-like value (dict/list/str/number) with secrets redacted, and the kinds found.

    Recursive over dicts and lists; in a list, the item after an argv flag (``--password``,
    ``--token``, ``-p``) is judged as a secret; under a secret-like key a plausible string is
    replaced whole (``secret_arg``); any other string is redacted span by span (``redact_text``) and,
    if it is one random-looking token, whole (``high_entropy``).
    """
    return _redact(value, None, False)


def secret_kinds_in_text(text: str | None) -> list[str]:
    """Kinds of secrets still present in ``text`` (placeholders do not count)."""
    if not text:
        return []
    return _unique(s.kind for s in find_secrets(text))


def secret_kinds_in_value(value: Any) -> list[str]:
    """Kinds of secrets still present in a JSON-like value (what ``redact_value`` would still redact)."""
    return redact_value(value)[1]
