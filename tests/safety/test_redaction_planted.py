"""Redaction by value: planted secrets of many formats in nested args, lists, argv lists and notes
never survive, a detect-secrets scan of the redacted output finds nothing, non-secrets survive."""

import json
from pathlib import Path

import pytest
from detect_secrets import SecretsCollection
from detect_secrets.settings import default_settings

from tests.safety.planted import held_out, planted
from tradingmem_assets.defs.safety.redaction import (
    find_secrets,
    is_secret_key,
    redact_text,
    redact_value,
    secret_kinds_in_text,
    secret_kinds_in_value,
)

PLANTED = planted()
HELD_OUT = held_out()


def detect_secrets_findings(values: list, tmp_path: Path) -> list[tuple[str, str]]:
    """What detect-secrets (all default plugins and filters) reports for values written as JSON lines."""
    path = tmp_path / "values.json"
    path.write_text("\n".join(json.dumps(v, indent=1) for v in values) + "\n")
    with default_settings():
        secrets = SecretsCollection()
        secrets.scan_file(str(path))
        return [(s.type, s.secret_value) for _, s in secrets]


def test_at_least_40_formats_are_planted():
    assert len(PLANTED) >= 40 and len({p.name for p in PLANTED}) == len(PLANTED)


@pytest.mark.parametrize("case", PLANTED + HELD_OUT, ids=lambda p: p.name)
def test_no_planted_secret_survives_redaction(case):
    redacted, kinds = redact_value(case.value)
    text = json.dumps(redacted, ensure_ascii=False)
    for secret in case.secrets:
        assert secret not in text, (case.name, secret)
        assert secret[:12] not in text or len(secret) < 16, (case.name, secret[:12])
    assert kinds
    assert secret_kinds_in_value(redacted) == []  # what the stored-learning check sees
    assert redact_value(redacted) == (redacted, [])  # idempotent: placeholders are never matched again


def test_a_detect_secrets_scan_of_the_redacted_output_finds_nothing(tmp_path):
    raw = detect_secrets_findings([p.value for p in PLANTED], tmp_path)
    assert len(raw) >= 25  # the scanner itself sees the planted secrets
    redacted = [redact_value(p.value)[0] for p in PLANTED + HELD_OUT]
    assert detect_secrets_findings(redacted, tmp_path) == []


def test_formats_that_leaked_before_are_redacted():
    pypi = "pypi-AgEIcHlwaS5vcmc" + "Q2xlYXJseU5vdEFSZWFsVG9rZW5CdXRTaGFwZWRMaWtlT25lRm9yVGVzdHMx" * 2
    account_key = "bm90LWEtcmVhbC1rZXktYnV0LTY0LWJ5dGVzLWxvbmctZW5vdWdoLWZvci10aGUtdGVzdC1vZi1henVyZQ=="
    bare = "Zq8Rt2Lw9Xy4Vb7Nm3Kd6Hs1Pf5Gj0Tc"
    args = {
        "dsn": "postgresql://user:password@host/db",
        "url": "https://user:hunter2pass@files.example.org/eod.csv",
        "argv": ["--password", pypi],
        "connection_string": f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={account_key};"
        "EndpointSuffix=core.windows.net",
        "headers": [{"name": "X-Token", "value": bare}],
    }
    redacted, _ = redact_value(args)
    text = json.dumps(redacted)
    for secret in ("password@", "hunter2pass", pypi, account_key, bare):
        assert secret not in text
    assert (
        redacted["dsn"] == "postgresql://user:[REDACTED:url_credential]@host/db"
    )  # user, host and db survive
    assert redacted["argv"][0] == "--password" and "AccountName=acct" in redacted["connection_string"]


NON_SECRETS = {
    "key_file": "/etc/ssl/private/server.key",
    "private_key_path": "~/.ssh/id_ed25519",
    "passphrase_used": False,
    "max_tokens": 512,
    "symbol": "BTCUSD",
    "token": "USDC",
    "token_address": "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
    "address": "0x52908400098527886E0F7030069857D2E4169EE7",
    "mint": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
    "wallet_address": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
    "api_key_name": "prod-readonly",
    "password_min_length": 12,
    "auth_type": "oauth",
    "auth": {"type": "oauth2", "scopes": ["read"]},
    "timeframe": "4h",
    "indicators": ["EMA200", "RSI14", "MACD(12,26,9)"],
    "order_id": "3f2b9c1e-7d4a-4f8e-9b2c-1a2b3c4d5e6f",
    "as_of": "2024-06-01T10:00:00Z",
    "note": "ignore the first 30 minutes after the open",
    "threshold": 0.55,
    "seed": 42,
    "enabled": True,
    "url": "https://api.example.com/v1/quotes?symbol=BTCUSD&limit=50",
    "dsn": "postgresql://readonly@db.internal:5432/market",
    "token_env": "BINANCE_API_KEY",
    "secret_ref": "${BINANCE_SECRET}",
    "password": "",
    "api_key": None,
    "masked": "********",
    "args": ["--symbol", "ETHUSD", "-p", "8080", "--timeframe", "1h"],
    "ssh": ["ssh", "-p", "2222", "host"],
    "path": "data/landing/prices_2024.parquet",
    "tool": "get_price_history",
    "account_id": "acct_007",
    "query": "rate differential EURUSD",
}


def test_values_that_cannot_be_secrets_are_kept_even_under_secret_like_keys():
    assert redact_value(NON_SECRETS) == (NON_SECRETS, [])


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        ({"password": "hunter2"}, False),
        ({"token": "ghp_not_a_symbol_but_a_token_123"}, False),
        ({"api_key": "plain-looking-value-123"}, False),
        ({"pin": 1234}, False),
        ({"pin": "0042"}, False),
        ({"credentials": {"user": "desk", "pass": "s3cret"}}, False),
        ({"keypair": list(range(64))}, False),
        ({"password": True}, True),
        ({"token": "USDC"}, True),
        ({"api_key": "${API_KEY}"}, True),
        ({"token_count": 12}, True),
        ({"secret_name": "prod/binance"}, True),
    ],
)
def test_secret_like_keys_redact_plausible_secret_values_only(args, kept):
    redacted, kinds = redact_value(args)
    assert (redacted == args) is kept and (not kinds) is kept


def test_free_text_keeps_its_words_around_the_secret():
    text, kinds = redact_text("rotate it monthly: my password is Xy9#kq2Lm, then log in as desk")
    assert text == "rotate it monthly: my password is [REDACTED:credential], then log in as desk"
    assert kinds == ["credential"] and secret_kinds_in_text(text) == []
    assert redact_text("the token is USDC and the secret is patience") == (
        "the token is USDC and the secret is patience",
        [],
    )


def test_find_secrets_names_the_detector():
    bot = "M" + "a1B2c3D4e5F6g7H8i9J0k1L2" + "." + "Xy12Ab" + "." + "z" * 10 + "Q1w2E3r4T5y6U7i8I9"
    spans = find_secrets(f"bot token {bot} and hash {'ab' * 32}")
    assert [s.detector for s in spans] == ["detect-secrets:DiscordBotTokenDetector", "rule:hex64"]
    assert [s.kind for s in spans] == ["token", "private_key"]


def test_key_names_are_split_into_words_and_metadata_words_are_not_secrets():
    assert (
        is_secret_key("AWS_SECRET_ACCESS_KEY") and is_secret_key("X-Api-Key") and is_secret_key("sessionId")
    )
    assert not is_secret_key("passphrase_used") and not is_secret_key("private_key_path")
    assert (
        not is_secret_key("token_count")
        and not is_secret_key("api_key_name")
        and not is_secret_key("keyword")
    )
