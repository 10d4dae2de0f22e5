"""Value shapes: whether a value can be a secret, and whether it looks like random key material.

Under a secret-like key a string is replaced whole when it has a plausible secret shape, but
booleans, numbers, file paths, environment references, URLs without credentials and (under ``token``
/ ``key``) ticker symbols and public addresses are kept. Entropy: tokens of 16+ characters that look
random (detect-secrets' Shannon entropy over its base64 and hex charsets, plus checks on character
classes and word shape so identifiers such as ``get_price_history`` survive), and, for whole
argument values, symbol-rich passwords. Placeholders (``[REDACTED:<kind>]``) are never secrets, so
redaction is idempotent.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

from tradingmem_assets.defs.safety.secret_keys import NUMERIC_SECRET_WORDS, WEAK_KEY_WORDS

PLACEHOLDER = "[REDACTED:{kind}]"
PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z_]+\]")

_NON_SECRET_WORDS = frozenset(
    {
        "true",
        "false",
        "yes",
        "no",
        "none",
        "null",
        "nil",
        "n/a",
        "na",
        "on",
        "off",
        "enabled",
        "disabled",
        "required",
        "optional",
        "unset",
        "empty",
        "redacted",
        "masked",
        "hidden",
        "default",
    }
)
NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:[.,]\d+)*|\.\d+)(?:[eE][+-]?\d+)?%?")
_PATH_RE = re.compile(
    r"(?:~|\.{1,2})?/[\w.\-/ ~@+]*|[A-Za-z]:\\[\w.\-\\ ]*|[\w.\-]+(?:/[\w.\-]+)+\.[A-Za-z0-9]{1,6}"
)
_ENV_REF_RE = re.compile(
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%|(?:env|vault|secretsmanager|ssm|op|keychain)"
    r":[\w./:-]+|arn:aws:[\w-]+:[\w-]*:\d*:[\w/+=,.@:-]+"
)
_URL_RE = re.compile(r"[a-z][a-z0-9+.\-]{1,30}://\S*", re.I)
_SYMBOL_RE = re.compile(r"[A-Z]{2,10}(?:[/\-:][A-Z]{2,10})?")
_ETH_ADDRESS = r"0x[0-9a-fA-F]{40}"
_ETH_ADDRESS_RE = re.compile(_ETH_ADDRESS)
# what may be shown under a key-like name: public addresses and public keys, never secrets
PUBLIC_ADDRESS_RE = re.compile(
    "|".join(
        (
            _ETH_ADDRESS,
            r"(?:bc1|tb1)[02-9ac-hj-np-z]{11,71}",  # Bitcoin bech32
            r"[13][1-9A-HJ-NP-Za-km-z]{25,34}",  # Bitcoin legacy (base58)
            r"[1-9A-HJ-NP-Za-km-z]{32,44}",  # base58 addresses (e.g. Solana)
            r"0[23][0-9a-fA-F]{64}",  # compressed public key
            r"04[0-9a-fA-F]{128}",  # uncompressed public key
        )
    )
)
_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ISO_TIME_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)
_MASKED_CHARS = frozenset("*x•#._-X ")


def plausible_secret(value: str, words: list[str]) -> bool:
    """Whether a string under a secret-like key can be the secret itself (not a flag, number, path,
    reference, URL without credentials, or - under token/key/auth - a symbol or public address)."""
    s = value.strip().strip("\"'")
    if not s or PLACEHOLDER_RE.fullmatch(s):
        return False
    if s.lower() in _NON_SECRET_WORDS or set(s) <= _MASKED_CHARS:
        return False
    if NUMBER_RE.fullmatch(s):
        return bool(NUMERIC_SECRET_WORDS & set(words))
    if _ENV_REF_RE.fullmatch(s) or (_URL_RE.fullmatch(s) and "@" not in s):
        return False
    if _PATH_RE.fullmatch(s) and not any(looks_random(seg) for seg in re.split(r"[/\\]", s)):
        return False
    weak = bool(words) and set(words) <= WEAK_KEY_WORDS | {"api", "access", "the", "my"}
    if weak and (_SYMBOL_RE.fullmatch(s) or _ETH_ADDRESS_RE.fullmatch(s)):
        return False
    return True


def shaped_secret(value: str) -> bool:
    """A stricter test for values named only loosely in free text ("the token is USDC", "the secret
    is patience"): digits, symbols or mixed case, or long, and not a plain word or a symbol."""
    s = value.strip().strip("\"'")
    if not plausible_secret(s, ["token"]) or len(s) < 4:
        return False
    if re.fullmatch(r"[a-z]+|[A-Z][a-z]+", s) and len(s) < 16:
        return False
    return True


# ------------------------------------------------------------------------------------ entropy


@lru_cache(maxsize=1)
def _entropy_plugins() -> tuple[Any, Any]:
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )

    return Base64HighEntropyString(limit=4.5), HexHighEntropyString(limit=3.0)


def _shannon(data: str) -> float:
    if not data:
        return 0.0
    counts: dict[str, int] = {}
    for ch in data:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_ALPHA_SEG_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_DIGIT_RUN_RE = re.compile(r"\d+")
_HEX_RE = re.compile(r"[0-9a-fA-F]+")


def _wordy(tok: str) -> bool:
    """Identifier-like: made of word-sized alphabetic segments (``get_price_history``,
    ``getPriceHistoryV2``, ``Relative_strength_index``), not a random jumble."""
    segs = _ALPHA_SEG_RE.findall(tok)
    if not segs:
        return False
    if len(_DIGIT_RUN_RE.findall(tok)) > 2:
        return False
    letters = sum(len(s) for s in segs)
    if letters / len(segs) < 4:
        return False
    for seg in segs:
        low = seg.lower()
        if len(low) >= 4 and not re.search(r"[aeiouy]", low):
            return False
        if re.search(r"[^aeiouy]{5,}", low):
            return False
    return True


def looks_random(tok: str) -> bool:
    """A 16+ character token that looks like key material rather than a word, id or hash-like id."""
    n = len(tok)
    if n < 16:
        return False
    if _ETH_ADDRESS_RE.fullmatch(tok) or _UUID_RE.fullmatch(tok) or _ISO_TIME_RE.fullmatch(tok):
        return False
    b64, hexp = _entropy_plugins()
    if _HEX_RE.fullmatch(tok):
        if n < 32 or tok.isdigit() or tok.isalpha():
            return False
        return hexp.calculate_shannon_entropy(tok) > hexp.entropy_limit
    if _wordy(tok):
        return False
    classes = sum(
        (any(c.islower() for c in tok), any(c.isupper() for c in tok), any(c.isdigit() for c in tok))
    )
    entropy = b64.calculate_shannon_entropy(tok)
    if n >= 20 and entropy > b64.entropy_limit:
        return True
    if classes == 3 and entropy >= 3.6:
        return True
    digit_runs = len(_DIGIT_RUN_RE.findall(tok))
    return classes >= 2 and n >= 24 and entropy >= 4.2 and digit_runs >= 3


def looks_random_value(value: str) -> bool:
    """A whole argument value (no spaces) that looks like a generated password or key."""
    s = value.strip()
    if " " in s or len(s) < 10 or len(s) > 4096:
        return False
    if _URL_RE.fullmatch(s) or _ISO_TIME_RE.fullmatch(s) or _UUID_RE.fullmatch(s):
        return False
    if looks_random(s):
        return True
    lower = any(c.islower() for c in s)
    upper = any(c.isupper() for c in s)
    digit = any(c.isdigit() for c in s)
    symbol = any(not c.isalnum() for c in s)
    if not (lower and upper and digit):
        return False
    if not symbol and (len(s) < 12 or _wordy(s)):
        return False
    if symbol and _wordy(re.sub(r"[^A-Za-z0-9]", "", s)) and len(_DIGIT_RUN_RE.findall(s)) <= 1:
        return False
    return _shannon(s) >= 3.2
