"""Secret formats: the token formats known by their shape, wherever they sit in a text.

PEM private-key blocks, JWTs, ``Authorization`` / ``Bearer`` / ``Basic`` credentials, cookies, the
token formats of cloud providers (AWS, GCP, Azure, DigitalOcean, Alibaba), VCS (GitHub, GitLab,
Bitbucket), chat (Slack, Discord, Telegram), payment (Stripe, Square, Braintree), LLM providers
(OpenAI, Anthropic, Hugging Face, Groq, Replicate, xAI, Perplexity) and package registries (PyPI,
npm, RubyGems, Docker Hub, NuGet, Cargo) (``TOKEN_RULES``); raw private keys (64-hex, WIF, base58,
extended keys, ``RAW_KEY_RULES``); BIP39 seed phrases (12+ consecutive words of the BIP39 English
list, read from the ``mnemonic`` package); and detect-secrets' format plugins (AWS, Azure, Basic
Auth, Cloudant, Discord, GitHub, GitLab, IBM, JWT, Mailchimp, npm, OpenAI, private keys, PyPI,
SendGrid, Slack, SoftLayer, Square, Stripe, Telegram, Twilio, Artifactory).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache


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


_B58 = r"1-9A-HJ-NP-Za-km-z"

TOKEN_RULES: tuple[Rule, ...] = (
    Rule(
        "pem",
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)",
            re.S,
        ),
    ),
    Rule("putty", "private_key", re.compile(r"PuTTY-User-Key-File-\d:.*?(?:Private-MAC: *\S+|$)", re.S)),
    Rule(
        "jwt",
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}"),
    ),
    Rule(
        "authorization",
        "token",
        re.compile(
            r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?P<v>(?:[A-Za-z0-9-]+\s+)?[^\s\"',;]{6,})"
        ),
        "v",
    ),
    Rule("bearer", "token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")),
    Rule("basic", "token", re.compile(r"\bBasic\s+(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{12,}={0,2}")),
    Rule("cookie", "token", re.compile(r"(?i)\b(?:set-)?cookie[\"']?\s*:\s*[\"']?(?P<v>[^\n\"']{8,})"), "v"),
    # cloud
    Rule(
        "aws_key_id",
        "cloud_key",
        re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b"),
    ),
    Rule(
        "aws_secret",
        "cloud_key",
        re.compile(
            r"(?i)aws.{0,30}?(?:secret|key).{0,20}?[=:]\s*[\"']?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        "v",
    ),
    Rule("gcp_api_key", "cloud_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    Rule("gcp_oauth", "cloud_key", re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}")),
    Rule("digitalocean", "cloud_key", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b")),
    Rule("alibaba", "cloud_key", re.compile(r"\bLTAI[A-Za-z0-9]{12,20}\b")),
    Rule(
        "azure_sas",
        "cloud_key",
        re.compile(r"(?i)[?&;]sig=(?P<v>[A-Za-z0-9%+/=]{20,})"),
        "v",
    ),
    # VCS
    Rule("github", "token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b")),
    Rule("github_pat", "token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b")),
    Rule(
        "gitlab",
        "token",
        re.compile(r"\b(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|gloas)-[A-Za-z0-9_-]{20,}"),
    ),
    Rule("bitbucket", "token", re.compile(r"\bATBB[A-Za-z0-9_=.-]{20,}")),
    Rule("atlassian", "token", re.compile(r"\bATATT3[A-Za-z0-9_=.-]{20,}")),
    # chat
    Rule("slack", "token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    Rule("slack_app", "token", re.compile(r"\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+")),
    Rule("slack_webhook", "token", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]+")),
    Rule(
        "discord_webhook",
        "token",
        re.compile(r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+"),
    ),
    Rule("telegram", "token", re.compile(r"\b\d{8,10}:AA[0-9A-Za-z_-]{30,}")),
    # payment
    Rule("stripe", "api_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    Rule("stripe_webhook", "api_key", re.compile(r"\bwhsec_[A-Za-z0-9]{24,}")),
    Rule("square", "api_key", re.compile(r"\bsq0(?:atp|csp|idp)-[0-9A-Za-z_-]{22,}")),
    Rule(
        "braintree",
        "api_key",
        re.compile(r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}"),
    ),
    # LLM providers (and the generic sk-/rk- keys of many APIs)
    Rule("anthropic", "api_key", re.compile(r"\bsk-ant-[A-Za-z0-9]{3,8}-[A-Za-z0-9_-]{20,}")),
    Rule(
        "sk_key",
        "api_key",
        re.compile(r"\b(?:sk|rk)[-_](?:live|test|proj|svcacct|admin|ant)?[-_]?[A-Za-z0-9_-]{16,}"),
    ),
    Rule("huggingface", "api_key", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    Rule("groq", "api_key", re.compile(r"\bgsk_[A-Za-z0-9]{40,}\b")),
    Rule("replicate", "api_key", re.compile(r"\br8_[A-Za-z0-9]{30,}\b")),
    Rule("xai", "api_key", re.compile(r"\bxai-[A-Za-z0-9]{40,}\b")),
    Rule("perplexity", "api_key", re.compile(r"\bpplx-[A-Za-z0-9]{40,}\b")),
    # package registries
    Rule("pypi", "token", re.compile(r"\bpypi-[A-Za-z0-9_-]{16,}")),
    Rule("npm", "token", re.compile(r"\bnpm_[A-Za-z0-9]{30,}\b")),
    Rule("rubygems", "token", re.compile(r"\brubygems_[a-f0-9]{48}\b")),
    Rule("docker", "token", re.compile(r"\bdckr_pat_[A-Za-z0-9_-]{20,}")),
    Rule("nuget", "token", re.compile(r"\boy2[a-z0-9]{43}\b")),
    Rule("crates", "token", re.compile(r"\bcio[a-zA-Z0-9]{32}\b")),
    # other services
    Rule("sendgrid", "api_key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    Rule("twilio", "api_key", re.compile(r"\bSK[0-9a-fA-F]{32}\b")),
    Rule("mailgun", "api_key", re.compile(r"\bkey-[0-9a-zA-Z]{32}\b")),
    Rule("shopify", "api_key", re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")),
    Rule("linear", "api_key", re.compile(r"\blin_api_[A-Za-z0-9]{32,}\b")),
    Rule("notion", "api_key", re.compile(r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})\b")),
    Rule("postman", "api_key", re.compile(r"\bPMAK-[A-Za-z0-9-]{30,}")),
    Rule("age", "private_key", re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b")),
)
RAW_KEY_RULES: tuple[Rule, ...] = (
    Rule("hex64", "private_key", re.compile(r"(?<![0-9A-Za-z])(?:0x)?[0-9a-fA-F]{64}(?![0-9A-Za-z])")),
    Rule("xprv", "private_key", re.compile(rf"\b[xyzt]prv[{_B58}]{{100,112}}\b")),
    Rule("nostr", "private_key", re.compile(r"\bnsec1[02-9ac-hj-np-z]{58}\b")),
    Rule("wif", "private_key", re.compile(rf"\b[5KLc][{_B58}]{{50,51}}\b")),
    Rule("base58_secret", "private_key", re.compile(rf"\b[{_B58}]{{80,90}}\b")),
)

# detect-secrets plugin -> our kind
DS_KINDS = {
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
def ds_format_plugins() -> tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]:
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
