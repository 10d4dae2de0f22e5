"""Key names that say their value is a secret (SPEC sections 8 and 13).

A name is split into lower-case words on ``_``, ``-``, spaces, dots and camelCase and judged by its
words, not by substrings: ``author``, ``max_tokens`` and ``keyword`` are not secret-like. A key whose
last word says it is metadata (``passphrase_used``, ``private_key_path``, ``token_count``,
``api_key_name``) describes a secret without holding it. Keys only sharpen the judgement of a value,
they never redact alone (``secret_shapes``).
"""

from __future__ import annotations

import re

# Key names (split into lower-case words on _, -, space, dots and camelCase) that hold secrets.
_SECRET_KEY_WORDS = frozenset(
    {
        "secret",
        "secrets",
        "token",
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "passcode",
        "mnemonic",
        "seed",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "creds",
        "cookie",
        "jwt",
        "bearer",
        "apikey",
        "privkey",
        "privatekey",
        "secretkey",
        "accesskey",
        "accountkey",
        "keypair",
        "otp",
        "totp",
        "pin",
        "cvv",
        "cvc",
    }
)
_SECRET_KEY_PAIRS = frozenset(
    {
        ("api", "key"),
        ("private", "key"),
        ("secret", "key"),
        ("access", "key"),
        ("account", "key"),
        ("signing", "key"),
        ("encryption", "key"),
        ("master", "key"),
        ("client", "secret"),
        ("seed", "phrase"),
        ("recovery", "phrase"),
        ("session", "id"),
        ("session", "key"),
        ("shared", "key"),
    }
)
# A key whose last word is one of these describes a secret without holding it.
METADATA_WORDS = frozenset(
    {
        "type",
        "kind",
        "format",
        "length",
        "len",
        "count",
        "counts",
        "limit",
        "budget",
        "max",
        "min",
        "used",
        "usage",
        "enabled",
        "disabled",
        "required",
        "present",
        "exists",
        "set",
        "configured",
        "valid",
        "expiry",
        "expires",
        "expired",
        "expiration",
        "ttl",
        "age",
        "rotated",
        "rotation",
        "created",
        "updated",
        "path",
        "file",
        "filename",
        "dir",
        "directory",
        "folder",
        "env",
        "var",
        "name",
        "label",
        "id",
        "ids",
        "hint",
        "policy",
        "mode",
        "scope",
        "scopes",
        "version",
        "provider",
        "source",
        "location",
        "header",
        "url",
        "uri",
        "endpoint",
        "symbol",
        "symbols",
        "ticker",
        "address",
        "addresses",
        "contract",
        "mint",
        "decimals",
        "amount",
        "price",
        "supply",
        "standard",
        "chain",
        "network",
        "in",
        "out",
        "status",
        "strength",
        "field",
        "fields",
    }
)
NUMERIC_SECRET_WORDS = frozenset({"pin", "otp", "totp", "cvv", "cvc", "passcode"})
# Under these (alone) a ticker symbol or a public address is an ordinary value: {"token": "USDC"}.
WEAK_KEY_WORDS = frozenset({"token", "key", "auth"})
_PUBLIC_KEY_LAST_WORDS = frozenset(
    {"address", "addr", "pubkey", "mint", "recipient", "contract", "owner", "sender"}
)


def key_words(key: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(key))
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def secret_key_words(words: list[str]) -> bool:
    if not words:
        return False
    pairs = set(zip(words, words[1:], strict=False))
    if words[-2:] and tuple(words[-2:]) in _SECRET_KEY_PAIRS:
        return True
    if words[-1] in METADATA_WORDS:
        return False
    if words == ["key"] or any(w in _SECRET_KEY_WORDS for w in words):
        return True
    return any(pair in _SECRET_KEY_PAIRS for pair in pairs)


def is_secret_key(key: str) -> bool:
    """Whether an argument name says its value is a secret (by words, not substrings: ``author``,
    ``max_tokens`` and ``keyword`` are not; ``passphrase_used`` and ``private_key_path`` name
    metadata about a secret, not the secret)."""
    return secret_key_words(key_words(str(key)))


def is_public_key_name(words: list[str]) -> bool:
    return bool(words) and (
        words[-1] in _PUBLIC_KEY_LAST_WORDS or words[-2:] == ["public", "key"] or words[-1] == "pubkey"
    )
