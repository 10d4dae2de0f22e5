"""Secrets in tool args are redacted before anything is stored; ordinary arguments survive."""

import json

import pytest

from tradingmem_assets.defs.safety.redaction import (
    is_secret_key,
    redact_text,
    redact_value,
    secret_kinds_in_text,
    secret_kinds_in_value,
)

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhY2N0XzAwNyIsInNjb3BlIjoidHJhZGUifQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
HEX_KEY = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
SEED = "abandon ability able about above absent absorb abstract absurd abuse access accident"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7xyz\n-----END RSA PRIVATE KEY-----"
SECRETS = {
    "api_key": "sk-live-4f9Qz7XbT2mLk8Rv1Nw3Yp6Hs0Jd5Ge9",
    "token": "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "password": "Tr0ub4dor&3-hunter",
    "jwt": JWT,
    "private_key": HEX_KEY,
    "seed_phrase": SEED,
}


@pytest.mark.parametrize(("kind", "secret"), list(SECRETS.items()))
def test_every_secret_kind_is_redacted_under_an_innocent_key(kind, secret):
    # the key says nothing: only the value's shape can give it away (passwords excepted: no shape)
    args = {"note": f"use {secret} now" if kind != "password" else f"password={secret}"}
    redacted, kinds = redact_value(args)
    assert secret not in json.dumps(redacted)
    assert kinds


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apiKey",
        "X-Api-Key",
        "token",
        "access_token",
        "password",
        "private_key",
        "privateKey",
        "mnemonic",
        "seed_phrase",
        "authorization",
        "client_secret",
        "secret",
    ],
)
def test_secret_named_arguments_lose_their_whole_value(key):
    redacted, kinds = redact_value({key: "plain-looking-value-123", "symbol": "BTCUSD"})
    assert redacted == {key: "[REDACTED:secret_arg]", "symbol": "BTCUSD"}
    assert kinds == ["secret_arg"]


def test_nested_args_and_lists_are_redacted_recursively():
    args = {"orders": [{"auth": {"bearer": "abc"}, "memo": f"Bearer {JWT}"}], "pem": PEM}
    redacted, _ = redact_value(args)
    text = json.dumps(redacted)
    assert JWT not in text and "MIIEpAIBAAKCAQEA7xyz" not in text and "abc" not in text


def test_ordinary_arguments_are_kept():
    args = {
        "symbol": "BTCUSD",
        "account_id": "acct_007",
        "depth": 20,
        "side": "buy",
        "author": "Reuters",
        "max_tokens": 512,
        "address": "0x52908400098527886E0F7030069857D2E4169EE7",
        "query": "rate differential EURUSD",
    }
    assert redact_value(args) == (args, [])


def test_free_text_keeps_its_words_around_a_redacted_secret():
    text, kinds = redact_text(f"my api key is {SECRETS['api_key']} thanks")
    assert text == "my api key is [REDACTED:api_key] thanks" and kinds == ["api_key"]


def test_detector_sees_unredacted_secrets_and_accepts_placeholders():
    assert secret_kinds_in_text(f"x {JWT}") == ["jwt"]
    assert secret_kinds_in_value({"password": "hunter2"}) == ["secret_arg"]
    redacted, _ = redact_value({"password": "hunter2", "memo": SEED})
    assert secret_kinds_in_value(redacted) == []


def test_secret_key_names_are_recognised_by_words_not_substrings():
    assert is_secret_key("apiKey") and is_secret_key("seed") and is_secret_key("key")
    assert not is_secret_key("author") and not is_secret_key("max_tokens") and not is_secret_key("keyword")


@pytest.mark.parametrize(
    "args",
    [
        {"passphrase_used": False},
        {"private_key_path": "/home/desk/.ssh/id_ed25519"},
        {"api_key": "${EXCHANGE_API_KEY}"},
        {"token": "USDC"},
        {"password": ""},
        {"max_tokens": 512},
    ],
)
def test_secret_named_arguments_keep_values_that_cannot_be_secrets(args):
    # redaction goes by value: a flag, a path, a reference, a symbol or a number is not a secret
    assert redact_value(args) == (args, [])
