"""Secret formats: the token formats known by their shape, wherever they sit in a text.

PEM private-key blocks, JWTs, ``Authorization`` / ``Bearer`` / ``Basic`` credentials, cookies, the
token formats of cloud providers (AWS, GCP, Azure, DigitalOcean, Alibaba), VCS (GitHub, GitLab,
Bitbucket), chat (Slack, Discord, Telegram), payment (Stripe, Square, Braintree), LLM providers
(OpenAI, Anthropic, Hugging Face, Groq, Replicate, xAI, Perplexity) and package registries (PyPI,
npm, RubyGems, Docker Hub, NuGet, Cargo) (``TOKEN_RULES``); raw private keys (64-hex, WIF, base58,
extended keys, ``RAW_KEY_RULES``); BIP39 seed phrases (12+ consecutive words of the BIP39 English
list, read from the ``mnemonic`` package); and detect-secrets' format plugins (AWS, Azure, Basic
Auth, Cloudant, Discord, GitHub, GitLab, IBM, JWT, Mailchimp, npm, OpenAI, private keys, PyPI,
SendGrid, Slack, SoftLayer, Square, Stripe, Telegram, Twilio, Artifactory). The rules and the
plugins are data, in ``secret_formats.toml`` next to this module.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class SecretSpan:
    """One secret found in a text: its kind, where it is, and which detector found it."""

    kind: str
    start: int
    end: int
    detector: str  # "rule:<name>", "detect-secrets:<plugin>", "entropy"


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str
    pattern: re.Pattern[str]
    group: int | str = 0
    check: Callable[[str, re.Match[str]], bool] | None = None


_FLAGS = {"S": re.S}


def _rule(entry: dict) -> Rule:
    flags = 0
    for letter in entry.get("flags", ""):
        flags |= _FLAGS[letter]
    return Rule(entry["name"], entry["kind"], re.compile(entry["pattern"], flags), entry.get("group", 0))


_FORMATS = tomllib.loads(
    resources.files(__package__).joinpath("secret_formats.toml").read_text(encoding="utf-8")
)
TOKEN_RULES: tuple[Rule, ...] = tuple(_rule(r) for r in _FORMATS["token_rules"])
RAW_KEY_RULES: tuple[Rule, ...] = tuple(_rule(r) for r in _FORMATS["raw_key_rules"])
# detect-secrets plugin -> (its module under detect_secrets.plugins, our kind)
_DS_PLUGINS: dict[str, tuple[str, str]] = {
    name: tuple(pair) for name, pair in _FORMATS["detect_secrets"].items()
}
DS_KINDS = {name: kind for name, (_module, kind) in _DS_PLUGINS.items()}


@lru_cache(maxsize=1)
def ds_format_plugins() -> tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]:
    """detect-secrets' format (regex) plugins: (class name, compiled denylist), imported by name so
    no global detect-secrets settings are read or changed."""
    import importlib

    out = []
    for name, (module, _kind) in sorted(_DS_PLUGINS.items()):
        cls = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        out.append((name, tuple(cls().denylist)))
    return tuple(out)


@lru_cache(maxsize=1)
def _bip39() -> frozenset[str]:
    """The BIP39 English word list (2048 words), from trezor's reference implementation."""
    from mnemonic import Mnemonic

    return frozenset(Mnemonic("english").wordlist)


_WORD_RE = re.compile(r"[A-Za-z]+")
_SEED_GAP_RE = re.compile(r"[\s,;|]*(?:\d{1,2}[.):\-]?[\s]*)?")


def seed_phrase_spans(text: str) -> Iterable[tuple[int, int]]:
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
