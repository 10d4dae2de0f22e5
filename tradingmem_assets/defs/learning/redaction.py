"""Redaction of secrets before anything reaches a stored learning (SPEC sections 8 and 13).

Secrets are found by their *value*, wherever they sit (any argument, nested dicts and lists,
free-text notes and triggers), by three detectors applied in this order of precedence:

1. the project's own rules (``_RULES``): PEM private-key blocks, JWTs, ``Authorization`` / ``Bearer``
   / ``Basic`` credentials, cookies, known token formats of cloud providers (AWS, GCP, Azure,
   DigitalOcean, Alibaba), VCS (GitHub, GitLab, Bitbucket), chat (Slack, Discord, Telegram), payment
   (Stripe, Square, Braintree), LLM providers (OpenAI, Anthropic, Hugging Face, Groq, Replicate, xAI,
   Perplexity) and package registries (PyPI, npm, RubyGems, Docker Hub, NuGet, Cargo);
   credentials inside URLs and DSNs (``scheme://user:password@host``, ``?api_key=...``), connection
   strings (``AccountKey=``, ``Password=``, ``pwd=``), argv pairs (``--password X``, ``--token X``,
   ``-p X``), ``name: value`` / ``name=value`` / ``my password is X`` where the name says secret,
   64-hex / WIF / base58 / extended private keys, and BIP39 seed phrases (12+ consecutive words of
   the BIP39 English list);
2. detect-secrets' format plugins (AWS, Azure, Basic Auth, Cloudant, Discord, GitHub, GitLab, IBM,
   JWT, Mailchimp, npm, OpenAI, private keys, PyPI, SendGrid, Slack, SoftLayer, Square, Stripe,
   Telegram, Twilio, Artifactory) on what the rules left;
3. entropy: tokens of 16+ characters that look random (detect-secrets' Shannon entropy over its
   base64 and hex charsets, plus checks on character classes and word shape so identifiers such as
   ``get_price_history`` survive), and, for whole argument values, symbol-rich passwords.

Keys only sharpen the judgement, they never redact alone: a value under a secret-like key
(``password``, ``api_key``, ``token``, ``authorization``, ``seed``, ...) is replaced whole when it is
a string of plausible secret shape, but booleans, numbers, file paths, environment references,
URLs without credentials and (under ``token`` / ``key``) ticker symbols and public addresses are
kept. A key whose last word says it is metadata (``passphrase_used``, ``private_key_path``,
``token_count``, ``api_key_name``) is not secret-like at all.

Replacements read ``[REDACTED:<kind>]``; placeholders are never matched again, so redaction is
idempotent and ``secret_kinds_in_*`` (what redaction would still find) is empty on redacted output.
We prefer over-redaction: a redacted transaction hash costs a little reuse; a leaked key costs funds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

PLACEHOLDER = "[REDACTED:{kind}]"
_PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z_]+\]")

# ------------------------------------------------------------------------------------- key names

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
_METADATA_WORDS = frozenset(
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
_NUMERIC_SECRET_WORDS = frozenset({"pin", "otp", "totp", "cvv", "cvc", "passcode"})
# Under these (alone) a ticker symbol or a public address is an ordinary value: {"token": "USDC"}.
_WEAK_KEY_WORDS = frozenset({"token", "key", "auth"})


def _key_words(key: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(key))
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def _secret_key_words(words: list[str]) -> bool:
    if not words:
        return False
    pairs = set(zip(words, words[1:], strict=False))
    if words[-2:] and tuple(words[-2:]) in _SECRET_KEY_PAIRS:
        return True
    if words[-1] in _METADATA_WORDS:
        return False
    if words == ["key"] or any(w in _SECRET_KEY_WORDS for w in words):
        return True
    return any(pair in _SECRET_KEY_PAIRS for pair in pairs)


def is_secret_key(key: str) -> bool:
    """Whether an argument name says its value is a secret (by words, not substrings: ``author``,
    ``max_tokens`` and ``keyword`` are not; ``passphrase_used`` and ``private_key_path`` name
    metadata about a secret, not the secret)."""
    return _secret_key_words(_key_words(str(key)))


# ------------------------------------------------------------------------------- value shapes

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
_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:[.,]\d+)*|\.\d+)(?:[eE][+-]?\d+)?%?")
_PATH_RE = re.compile(
    r"(?:~|\.{1,2})?/[\w.\-/ ~@+]*|[A-Za-z]:\\[\w.\-\\ ]*|[\w.\-]+(?:/[\w.\-]+)+\.[A-Za-z0-9]{1,6}"
)
_ENV_REF_RE = re.compile(
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%|(?:env|vault|secretsmanager|ssm|op|keychain)"
    r":[\w./:-]+|arn:aws:[\w-]+:[\w-]*:\d*:[\w/+=,.@:-]+"
)
_URL_RE = re.compile(r"[a-z][a-z0-9+.\-]{1,30}://\S*", re.I)
_SYMBOL_RE = re.compile(r"[A-Z]{2,10}(?:[/\-:][A-Z]{2,10})?")
_ETH_ADDRESS_RE = re.compile(r"0x[0-9a-fA-F]{40}")
_PUBLIC_ADDRESS_RE = re.compile(
    r"0x[0-9a-fA-F]{40}|(?:bc1|tb1)[02-9ac-hj-np-z]{11,71}|[13][1-9A-HJ-NP-Za-km-z]{25,34}|"
    r"[1-9A-HJ-NP-Za-km-z]{32,44}|0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128}"
)
_PUBLIC_KEY_LAST_WORDS = frozenset(
    {"address", "addr", "pubkey", "mint", "recipient", "contract", "owner", "sender"}
)
_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ISO_TIME_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)
_MASKED_CHARS = frozenset("*x•#._-X ")


def _is_public_key_name(words: list[str]) -> bool:
    return bool(words) and (
        words[-1] in _PUBLIC_KEY_LAST_WORDS or words[-2:] == ["public", "key"] or words[-1] == "pubkey"
    )


def _plausible_secret(value: str, words: list[str]) -> bool:
    """Whether a string under a secret-like key can be the secret itself (not a flag, number, path,
    reference, URL without credentials, or - under token/key/auth - a symbol or public address)."""
    s = value.strip().strip("\"'")
    if not s or _PLACEHOLDER_RE.fullmatch(s):
        return False
    if s.lower() in _NON_SECRET_WORDS or set(s) <= _MASKED_CHARS:
        return False
    if _NUMBER_RE.fullmatch(s):
        return bool(_NUMERIC_SECRET_WORDS & set(words))
    if _ENV_REF_RE.fullmatch(s) or (_URL_RE.fullmatch(s) and "@" not in s):
        return False
    if _PATH_RE.fullmatch(s) and not any(_looks_random(seg) for seg in re.split(r"[/\\]", s)):
        return False
    weak = bool(words) and set(words) <= _WEAK_KEY_WORDS | {"api", "access", "the", "my"}
    if weak and (_SYMBOL_RE.fullmatch(s) or _ETH_ADDRESS_RE.fullmatch(s)):
        return False
    return True


def _shaped_secret(value: str) -> bool:
    """A stricter test for values named only loosely in free text ("the token is USDC", "the secret
    is patience"): digits, symbols or mixed case, or long, and not a plain word or a symbol."""
    s = value.strip().strip("\"'")
    if not _plausible_secret(s, ["token"]) or len(s) < 4:
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


def _looks_random(tok: str) -> bool:
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


def _looks_random_value(value: str) -> bool:
    """A whole argument value (no spaces) that looks like a generated password or key."""
    s = value.strip()
    if " " in s or len(s) < 10 or len(s) > 4096:
        return False
    if _URL_RE.fullmatch(s) or _ISO_TIME_RE.fullmatch(s) or _UUID_RE.fullmatch(s):
        return False
    if _looks_random(s):
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


# --------------------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class SecretSpan:
    """One secret found in a text: its kind, where it is, and which detector found it."""

    kind: str
    start: int
    end: int
    detector: str  # "rule:<name>", "detect-secrets:<plugin>", "entropy"


@dataclass(frozen=True)
class _Rule:
    name: str
    kind: str
    pattern: re.Pattern[str]
    group: int | str = 0
    check: Callable[[str, re.Match[str]], bool] | None = None


def _flag_value_ok(value: str, m: re.Match[str]) -> bool:
    flag = m.group("flag").lstrip("-").lower()
    words = _key_words(flag) or [flag]
    if flag in {"p", "k", "t", "s"}:
        s = value.strip("\"'")
        if _NUMBER_RE.fullmatch(s) or re.fullmatch(r"\d+(?::\d+)*(?:/\w+)?", s):
            return False
        words = ["password"]
    return _plausible_secret(value, words)


def _named_value_ok(value: str, m: re.Match[str]) -> bool:
    words = _key_words(m.group("name"))
    if not _secret_key_words(words):
        return False
    if set(words) <= _WEAK_KEY_WORDS | {"secret", "the", "my", "a", "your"} or m.group("sep").strip() in {
        "is",
        "was",
    }:
        return _shaped_secret(value)
    return _plausible_secret(value, words)


def _english_value_ok(value: str, m: re.Match[str]) -> bool:
    words = _key_words(m.group("name"))
    if set(words) & {"password", "passphrase", "passcode", "passwd", "pwd", "mnemonic"}:
        return _plausible_secret(value, words) and len(value.strip("\"'")) >= 3
    return _shaped_secret(value)


_B58 = r"1-9A-HJ-NP-Za-km-z"
_VALUE = r"(?P<value>\"(?:[^\"\\\n]|\\.){1,512}\"|'[^'\n]{1,512}'|[^\s,;\"'<>(){}\[\]]{1,512})"

_RULES: tuple[_Rule, ...] = (
    _Rule(
        "pem",
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)",
            re.S,
        ),
    ),
    _Rule("putty", "private_key", re.compile(r"PuTTY-User-Key-File-\d:.*?(?:Private-MAC: *\S+|$)", re.S)),
    _Rule(
        "jwt",
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}"),
    ),
    _Rule(
        "authorization",
        "token",
        re.compile(
            r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?P<v>(?:[A-Za-z0-9-]+\s+)?[^\s\"',;]{6,})"
        ),
        "v",
    ),
    _Rule("bearer", "token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")),
    _Rule("basic", "token", re.compile(r"\bBasic\s+(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{12,}={0,2}")),
    _Rule("cookie", "token", re.compile(r"(?i)\b(?:set-)?cookie[\"']?\s*:\s*[\"']?(?P<v>[^\n\"']{8,})"), "v"),
    # cloud
    _Rule(
        "aws_key_id",
        "cloud_key",
        re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b"),
    ),
    _Rule(
        "aws_secret",
        "cloud_key",
        re.compile(
            r"(?i)aws.{0,30}?(?:secret|key).{0,20}?[=:]\s*[\"']?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        "v",
    ),
    _Rule("gcp_api_key", "cloud_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    _Rule("gcp_oauth", "cloud_key", re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}")),
    _Rule("digitalocean", "cloud_key", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b")),
    _Rule("alibaba", "cloud_key", re.compile(r"\bLTAI[A-Za-z0-9]{12,20}\b")),
    _Rule(
        "azure_sas",
        "cloud_key",
        re.compile(r"(?i)[?&;]sig=(?P<v>[A-Za-z0-9%+/=]{20,})"),
        "v",
    ),
    # VCS
    _Rule("github", "token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b")),
    _Rule("github_pat", "token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b")),
    _Rule(
        "gitlab",
        "token",
        re.compile(r"\b(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|gloas)-[A-Za-z0-9_-]{20,}"),
    ),
    _Rule("bitbucket", "token", re.compile(r"\bATBB[A-Za-z0-9_=.-]{20,}")),
    _Rule("atlassian", "token", re.compile(r"\bATATT3[A-Za-z0-9_=.-]{20,}")),
    # chat
    _Rule("slack", "token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    _Rule("slack_app", "token", re.compile(r"\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+")),
    _Rule("slack_webhook", "token", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]+")),
    _Rule(
        "discord_webhook",
        "token",
        re.compile(r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+"),
    ),
    _Rule("telegram", "token", re.compile(r"\b\d{8,10}:AA[0-9A-Za-z_-]{30,}")),
    # payment
    _Rule("stripe", "api_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    _Rule("stripe_webhook", "api_key", re.compile(r"\bwhsec_[A-Za-z0-9]{24,}")),
    _Rule("square", "api_key", re.compile(r"\bsq0(?:atp|csp|idp)-[0-9A-Za-z_-]{22,}")),
    _Rule(
        "braintree",
        "api_key",
        re.compile(r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}"),
    ),
    # LLM providers (and the generic sk-/rk- keys of many APIs)
    _Rule("anthropic", "api_key", re.compile(r"\bsk-ant-[A-Za-z0-9]{3,8}-[A-Za-z0-9_-]{20,}")),
    _Rule(
        "sk_key",
        "api_key",
        re.compile(r"\b(?:sk|rk)[-_](?:live|test|proj|svcacct|admin|ant)?[-_]?[A-Za-z0-9_-]{16,}"),
    ),
    _Rule("huggingface", "api_key", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    _Rule("groq", "api_key", re.compile(r"\bgsk_[A-Za-z0-9]{40,}\b")),
    _Rule("replicate", "api_key", re.compile(r"\br8_[A-Za-z0-9]{30,}\b")),
    _Rule("xai", "api_key", re.compile(r"\bxai-[A-Za-z0-9]{40,}\b")),
    _Rule("perplexity", "api_key", re.compile(r"\bpplx-[A-Za-z0-9]{40,}\b")),
    # package registries
    _Rule("pypi", "token", re.compile(r"\bpypi-[A-Za-z0-9_-]{16,}")),
    _Rule("npm", "token", re.compile(r"\bnpm_[A-Za-z0-9]{30,}\b")),
    _Rule("rubygems", "token", re.compile(r"\brubygems_[a-f0-9]{48}\b")),
    _Rule("docker", "token", re.compile(r"\bdckr_pat_[A-Za-z0-9_-]{20,}")),
    _Rule("nuget", "token", re.compile(r"\boy2[a-z0-9]{43}\b")),
    _Rule("crates", "token", re.compile(r"\bcio[a-zA-Z0-9]{32}\b")),
    # other services
    _Rule("sendgrid", "api_key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    _Rule("twilio", "api_key", re.compile(r"\bSK[0-9a-fA-F]{32}\b")),
    _Rule("mailgun", "api_key", re.compile(r"\bkey-[0-9a-zA-Z]{32}\b")),
    _Rule("shopify", "api_key", re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")),
    _Rule("linear", "api_key", re.compile(r"\blin_api_[A-Za-z0-9]{32,}\b")),
    _Rule("notion", "api_key", re.compile(r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})\b")),
    _Rule("postman", "api_key", re.compile(r"\bPMAK-[A-Za-z0-9-]{30,}")),
    _Rule("age", "private_key", re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b")),
    # credentials inside URLs and DSNs
    _Rule(
        "url_userinfo",
        "url_credential",
        re.compile(r"(?i)\b[a-z][a-z0-9+.\-]{1,30}://[^\s:/?#@\[\]\"'<>]*:(?P<v>[^\s@/?#\"'<>\[\]]+)@"),
        "v",
    ),
    _Rule(
        "url_query",
        "url_credential",
        re.compile(
            r"(?i)[?&](?P<name>api[_-]?key|apikey|key|access[_-]?token|token|auth|auth[_-]?token|secret|"
            r"client[_-]?secret|password|passwd|pwd|pass|signature|x-amz-signature|x-amz-credential|"
            r"private[_-]?token|session(?:id)?)=(?P<v>[^&#\s\"'<>]+)"
        ),
        "v",
        lambda v, m: (
            _shaped_secret(v)
            or _plausible_secret(v, _key_words(m.group("name")) + ["password"])
            and m.group("name").lower() not in {"key", "token", "auth", "session", "signature"}
        ),
    ),
    # connection strings: AccountKey=...; Password=...; pwd=...
    _Rule(
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
            _plausible_secret(v, ["password"]) if m.group("name").lower() != "token" else _shaped_secret(v)
        ),
    ),
    # argv pairs: --password X, --token=X, -p X
    _Rule(
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
    _Rule(
        "mysql_p",
        "argv_secret",
        re.compile(r"\b(?:mysql|mysqldump|mariadb)\b[^\n]*?\s-p(?P<v>[^\s-]\S+)"),
        "v",
    ),
    # name: value / name=value where the name says secret (api_key: x, "password": "x", DB_PASSWORD=x)
    _Rule(
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
    _Rule(
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
    # private keys without a PEM frame
    _Rule("hex64", "private_key", re.compile(r"(?<![0-9A-Za-z])(?:0x)?[0-9a-fA-F]{64}(?![0-9A-Za-z])")),
    _Rule("xprv", "private_key", re.compile(rf"\b[xyzt]prv[{_B58}]{{100,112}}\b")),
    _Rule("nostr", "private_key", re.compile(r"\bnsec1[02-9ac-hj-np-z]{58}\b")),
    _Rule("wif", "private_key", re.compile(rf"\b[5KLc][{_B58}]{{50,51}}\b")),
    _Rule("base58_secret", "private_key", re.compile(rf"\b[{_B58}]{{80,90}}\b")),
)

# detect-secrets plugin -> our kind
_DS_KINDS = {
    "AWSKeyDetector": "cloud_key",
    "AzureStorageKeyDetector": "cloud_key",
    "BasicAuthDetector": "url_credential",
    "CloudantDetector": "cloud_key",
    "DiscordBotTokenDetector": "token",
    "GitHubTokenDetector": "token",
    "GitLabTokenDetector": "token",
    "IbmCloudIamDetector": "cloud_key",
    "IbmCosHmacDetector": "cloud_key",
    "JwtTokenDetector": "jwt",
    "MailchimpDetector": "api_key",
    "NpmDetector": "token",
    "OpenAIDetector": "api_key",
    "PrivateKeyDetector": "private_key",
    "PypiTokenDetector": "token",
    "SendGridDetector": "api_key",
    "SlackDetector": "token",
    "SoftlayerDetector": "cloud_key",
    "SquareOAuthDetector": "api_key",
    "StripeDetector": "api_key",
    "TelegramBotTokenDetector": "token",
    "TwilioKeyDetector": "api_key",
    "ArtifactoryDetector": "token",
}


_DS_MODULES = {
    "AWSKeyDetector": "aws",
    "AzureStorageKeyDetector": "azure_storage_key",
    "BasicAuthDetector": "basic_auth",
    "CloudantDetector": "cloudant",
    "DiscordBotTokenDetector": "discord",
    "GitHubTokenDetector": "github_token",
    "GitLabTokenDetector": "gitlab_token",
    "IbmCloudIamDetector": "ibm_cloud_iam",
    "IbmCosHmacDetector": "ibm_cos_hmac",
    "JwtTokenDetector": "jwt",
    "MailchimpDetector": "mailchimp",
    "NpmDetector": "npm",
    "OpenAIDetector": "openai",
    "PrivateKeyDetector": "private_key",
    "PypiTokenDetector": "pypi_token",
    "SendGridDetector": "sendgrid",
    "SlackDetector": "slack",
    "SoftlayerDetector": "softlayer",
    "SquareOAuthDetector": "square_oauth",
    "StripeDetector": "stripe",
    "TelegramBotTokenDetector": "telegram_token",
    "TwilioKeyDetector": "twilio",
    "ArtifactoryDetector": "artifactory",
}


@lru_cache(maxsize=1)
def _ds_format_plugins() -> tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]:
    """detect-secrets' format (regex) plugins: (class name, compiled denylist), imported by name so
    no global detect-secrets settings are read or changed."""
    import importlib

    out = []
    for name, module in sorted(_DS_MODULES.items()):
        cls = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        out.append((name, tuple(cls().denylist)))
    return tuple(out)


@lru_cache(maxsize=1)
def _bip39() -> frozenset[str]:
    path = Path(__file__).with_name("bip39_english.txt")
    return frozenset(w.strip() for w in path.read_text(encoding="utf-8").split() if w.strip())


_WORD_RE = re.compile(r"[A-Za-z]+")
_SEED_GAP_RE = re.compile(r"[\s,;|]*(?:\d{1,2}[.):\-]?[\s]*)?")


def _seed_phrase_spans(text: str) -> Iterable[tuple[int, int]]:
    """Runs of 12 or more consecutive BIP39 words (separated by spaces, commas or "1." numbering)."""
    words = _bip39()
    run: list[re.Match[str]] = []
    prev_end = 0
    for m in _WORD_RE.finditer(text):
        ok = m.group(0).lower() in words
        contiguous = run and _SEED_GAP_RE.fullmatch(text, prev_end, m.start()) is not None
        if ok and (not run or contiguous):
            run.append(m)
        else:
            if len(run) >= 12:
                yield run[0].start(), run[-1].end()
            run = [m] if ok else []
        prev_end = m.end()
    if len(run) >= 12:
        yield run[0].start(), run[-1].end()


_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9+/_\-=])[A-Za-z0-9+/_\-]{16,}={0,2}(?![A-Za-z0-9+/_\-=])")


def find_secrets(text: str | None) -> list[SecretSpan]:
    """Every secret in ``text`` (placeholders excepted), non-overlapping, in text order."""
    if not text:
        return []
    taken: list[tuple[int, int]] = [m.span() for m in _PLACEHOLDER_RE.finditer(text)]
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
    for start, end in _seed_phrase_spans(text):
        add(start, end, "seed_phrase", "rule:bip39")
    for name, patterns in _ds_format_plugins():
        for pattern in patterns:
            for m in pattern.finditer(text):
                spans = [m.span(i) for i in range(1, (m.lastindex or 0) + 1) if m.group(i)]
                spans = [s for s in spans if s[1] - s[0] >= 8] or [m.span()]
                for start, end in spans:
                    add(start, end, _DS_KINDS[name], f"detect-secrets:{name}")
    for m in _TOKEN_RE.finditer(text):
        tok = m.group(0)
        if _looks_random(tok) or any(_looks_random(p) for p in re.split(r"[/_\-]", tok) if len(p) >= 16):
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

_ARGV_FLAG_RE = re.compile(
    r"(?i)--?(?:password|passwd|pass|pwd|passphrase|token|api[-_]?key|apikey|secret|client[-_]?secret|"
    r"access[-_]?token|auth[-_]?token|refresh[-_]?token|private[-_]?key|key|mnemonic|seed|otp|auth|"
    r"credentials?|db[-_]?password|store[-_]?pass|key[-_]?pass|storepass|keypass|ssh[-_]?pass|p|k)"
)


def _redact_string(value: str, words: list[str] | None, secret_context: bool) -> tuple[str, list[str]]:
    if words is not None and _is_public_key_name(words) and _PUBLIC_ADDRESS_RE.fullmatch(value.strip()):
        return value, []  # a public address under an address-like key (wallet_address, mint, pubkey)
    if secret_context and _plausible_secret(value, words or []):
        return PLACEHOLDER.format(kind="secret_arg"), ["secret_arg"]
    redacted, kinds = redact_text(value)
    if kinds:
        return redacted, kinds
    if _looks_random_value(value):
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
            kw = _key_words(str(k))
            child_secret = _secret_key_words(kw) or (
                secret_context and not (kw and kw[-1] in _METADATA_WORDS)
            )
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
            if isinstance(item, str) and _ARGV_FLAG_RE.fullmatch(item.strip()):
                flag = item.strip().lstrip("-").lower()
                flag_words = ["password"] if flag in {"p", "k"} else (_key_words(flag) or [flag])
                if flag in {"p", "k"}:
                    flag_words = ["password", "p"]
        return (items if isinstance(value, list) else type(value)(items)), kinds
    if isinstance(value, str):
        if secret_context and words and {"p"} <= set(words) and re.fullmatch(r"\d+(?::\d+)*", value.strip()):
            return value, []  # -p 8080: a port, not a password
        return _redact_string(value, words, secret_context)
    if secret_context and isinstance(value, int) and not isinstance(value, bool):
        if words and _NUMERIC_SECRET_WORDS & set(words):
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
