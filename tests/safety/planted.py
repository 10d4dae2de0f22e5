"""Planted secrets for the redaction tests, generated from a seeded RNG at test time (no real-looking
credential is stored in the repository). Each entry says where the secret sits (nested args, lists,
argv lists, free-text notes) and which exact strings must not survive redaction."""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from typing import Any

from mnemonic import Mnemonic

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
B64 = ALNUM + "+/"
BIP39 = list(Mnemonic("english").wordlist)


@dataclass(frozen=True)
class Planted:
    name: str  # the format
    value: Any  # the tool args (or text) carrying it
    secrets: tuple[str, ...]  # strings that must not appear in the redacted output


def _draw(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _pem(rng: random.Random, label: str) -> tuple[str, str]:
    body = "\n".join(_draw(rng, B64, 64) for _ in range(6))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----", body.splitlines()[2]


def planted(seed: int = 7) -> list[Planted]:
    """Secrets of many formats in nested args, lists, argv lists and free-text notes."""
    r = random.Random(seed)
    d = lambda alphabet, n: _draw(r, alphabet, n)  # noqa: E731
    out: list[Planted] = []

    def add(name: str, value: Any, *secrets: str) -> None:
        out.append(Planted(name, value, secrets))

    aws_id = "AKIA" + d(UPPER_DIGITS, 16)
    aws_secret = d(ALNUM + "/+", 40)
    add(
        "aws_key_pair",
        {"client": {"region": "eu-west-1", "aws_access_key_id": aws_id, "aws_secret_access_key": aws_secret}},
        aws_id,
        aws_secret,
    )
    aws_secret2 = d(ALNUM + "/+", 40)
    add("aws_secret_in_text", {"note": f"set aws secret key = {aws_secret2} on the runner"}, aws_secret2)
    gcp = "AIza" + d(ALNUM + "_-", 35)
    add("gcp_api_key", {"params": [{"provider": "maps", "credentials": {"kind": "api", "value": gcp}}]}, gcp)
    ya29 = "ya29." + d(ALNUM + "_-", 60)
    add("gcp_oauth", {"headers": {"x-goog-token": ya29}}, ya29)
    account_key = base64.b64encode(r.randbytes(64)).decode()
    add(
        "azure_connection_string",
        {
            "connection_string": "DefaultEndpointsProtocol=https;AccountName=mktdata;"
            f"AccountKey={account_key};EndpointSuffix=core.windows.net"
        },
        account_key,
    )
    sig = d(ALNUM + "%", 43)
    add(
        "azure_sas_url",
        {"blob_url": f"https://mktdata.blob.core.windows.net/c/f.csv?sv=2022-11-02&sp=r&sig={sig}"},
        sig,
    )
    do = "dop_v1_" + d(HEX, 64)
    add("digitalocean", {"env": ["REGION=fra1", f"DO_TOKEN={do}"]}, do)
    ghp = "ghp_" + d(ALNUM, 36)
    add("github_classic", {"repo": "desk/strategies", "auth": ghp}, ghp)
    ghpat = "github_pat_" + d(ALNUM, 22) + "_" + d(ALNUM, 59)
    add("github_fine_grained", {"note": f"clone with {ghpat} then run the backtest"}, ghpat)
    glpat = "glpat-" + d(ALNUM + "_-", 20)
    add("gitlab", {"ci": {"vars": [{"k": "GL", "v": glpat}]}}, glpat)
    atbb = "ATBB" + d(ALNUM, 32)
    add("bitbucket", {"steps": ["checkout", {"app_password": atbb}]}, atbb)
    xoxb = "xoxb-" + d("0123456789", 12) + "-" + d("0123456789", 12) + "-" + d(ALNUM, 24)
    add("slack_bot", {"notify": {"channel": "#desk", "bot": xoxb}}, xoxb)
    hook_tail = "T" + d(UPPER_DIGITS, 8) + "/B" + d(UPPER_DIGITS, 8) + "/" + d(ALNUM, 24)
    add("slack_webhook", {"webhook": f"https://hooks.slack.com/services/{hook_tail}"}, hook_tail)
    dtail = d("0123456789", 18) + "/" + d(ALNUM + "_-", 68)
    add("discord_webhook", {"note": f"alerts go to https://discord.com/api/webhooks/{dtail}"}, dtail)
    discord = "M" + d(ALNUM, 23) + "." + d(ALNUM, 6) + "." + d(ALNUM + "_-", 27)
    add("discord_bot", {"bots": [{"name": "fills", "discord": discord}]}, discord)
    tg = d("0123456789", 9) + ":AA" + d(ALNUM + "_-", 33)
    add("telegram", {"alerts": {"telegram": tg, "chat": -1001}}, tg)
    stripe = "sk_live_" + d(ALNUM, 24)
    add("stripe_secret", {"billing": {"stripe": stripe}}, stripe)
    rk = "rk_live_" + d(ALNUM, 24)
    add("stripe_restricted", {"note": f"restricted key {rk} for refunds only"}, rk)
    sq = "sq0csp-" + d(ALNUM + "_-", 43)
    add("square", {"pos": [{"square_secret": sq}]}, sq)
    oai = "sk-proj-" + d(ALNUM + "_-", 48)
    add("openai", {"llm": {"provider": "openai", "api_key": oai}}, oai)
    ant = "sk-ant-api03-" + d(ALNUM + "_-", 93) + "AA"
    add("anthropic", {"note": f"summaries use {ant}"}, ant)
    hf = "hf_" + d(ALNUM, 34)
    add("huggingface", {"models": ["finbert", {"hub": hf}]}, hf)
    gsk = "gsk_" + d(ALNUM, 52)
    add("groq", {"x": [[gsk]]}, gsk)
    pypi = "pypi-AgEIcHlwaS5vcmc" + d(ALNUM + "_-", 80)
    add("pypi_argv", {"argv": ["twine", "upload", "--password", pypi, "dist/*"]}, pypi)
    npm = "npm_" + d(ALNUM, 36)
    add("npmrc", {"npmrc": f"//packages.example.org/:_authToken={npm}"}, npm)
    dckr = "dckr_pat_" + d(ALNUM + "_-", 27)
    add("docker_argv", {"cmd": f"docker login -u desk --password {dckr}"}, dckr)
    gems = "rubygems_" + d(HEX, 48)
    add("rubygems", {"publish": {"cred": gems}}, gems)
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    payload = base64.urlsafe_b64encode(json.dumps({"sub": d(ALNUM, 8)}).encode()).decode().rstrip("=")
    jwt = f"{header}.{payload}.{d(ALNUM + '_-', 43)}"
    add("jwt", {"session": {"id_token": jwt}}, jwt)
    pem, pem_line = _pem(r, "RSA PRIVATE KEY")
    add("pem_rsa", {"files": [{"path": "deploy.pem", "content": pem}]}, pem_line)
    ssh, ssh_line = _pem(r, "OPENSSH PRIVATE KEY")
    add("pem_openssh", {"note": f"key below\n{ssh}\nend"}, ssh_line)
    hexkey = "0x" + d(HEX, 64)
    add("hex_private_key", {"wallet": {"network": "base", "signer": hexkey}}, hexkey[2:])
    hexkey2 = d(HEX, 64)
    add("hex_key_in_text", {"note": f"use signer {hexkey2} for the rebalance"}, hexkey2)
    seed12 = " ".join(r.sample(BIP39, 12))
    add("bip39_12", {"note": f"backup: {seed12}"}, seed12)
    seed24 = " ".join(r.sample(BIP39, 24))
    add("bip39_24", {"recovery": [{"words": seed24}]}, seed24)
    wif = "5" + r.choice("HJK") + d(B58, 49)
    add("wif", {"cold": {"import": wif}}, wif)
    xprv = "xprv" + d(B58, 107)
    add("xprv", {"note": f"derive from {xprv} path m/44'/0'"}, xprv)
    pw = d(ALNUM, 14)
    add("dsn", {"dsn": f"postgresql://trader:{pw}@db.internal:5432/market"}, pw)
    pw2 = d(ALNUM + "!$*", 12)
    add("url_userinfo", {"url": f"https://ops:{pw2}@files.example.org/exports/eod.csv"}, pw2)
    pw3 = d(ALNUM, 16)
    add(
        "mongo_srv", {"db": {"uri": f"mongodb+srv://admin:{pw3}@cluster0.example.net/?retryWrites=true"}}, pw3
    )
    pw4 = d(ALNUM, 20)
    add("redis_empty_user", {"cache": f"redis://:{pw4}@cache.internal:6379/0"}, pw4)
    pw5 = d(ALNUM, 10) + "&" + d(ALNUM, 4)
    add(
        "mssql_connection",
        {"conn": f"Server=tcp:sql.example.net,1433;Database=risk;User ID=svc;Password={pw5};Encrypt=true"},
        pw5,
    )
    tok = d(ALNUM, 32)
    add("argv_token", {"args": ["--symbol", "BTCUSD", "--token", tok]}, tok)
    pw6 = "Hunter2!" + d(ALNUM, 6)
    add("argv_p", {"args": ["mysql", "-u", "root", "-p", pw6, "-h", "db"]}, pw6)
    pw7 = d(ALNUM, 12)
    add("mysql_inline", {"shell": f"mysql -u root -p{pw7} -e 'select 1'"}, pw7)
    bare = d(ALNUM, 40)
    add("bare_token_value", {"headers": [{"name": "X-Session", "value": bare}]}, bare)
    phrase = "correct horse battery staple 1987"
    add("password_key_phrase", {"login": {"user": "desk", "password": phrase}}, phrase)
    pw8 = d(ALNUM, 9) + "#" + d("0123456789", 3)
    add("password_in_note", {"note": f"my password is {pw8}, rotate it monthly"}, pw8)
    generic = d(ALNUM, 32)
    add("api_key_in_note", {"note": f"api_key: {generic}"}, generic)
    sg = "SG." + d(ALNUM + "_-", 22) + "." + d(ALNUM + "_-", 43)
    add("sendgrid", {"mail": {"sg": sg}}, sg)
    twilio = "SK" + d(HEX, 32)
    add("twilio", {"sms": [twilio]}, twilio)
    mailgun = "key-" + d(ALNUM, 32)
    add("mailgun", {"note": f"mailgun {mailgun}"}, mailgun)
    shopify = "shpat_" + d(HEX, 32)
    add("shopify", {"store": {"admin": shopify}}, shopify)
    bearer = d(ALNUM + "._-", 48)
    add("bearer_header", {"headers": {"Authorization": f"Bearer {bearer}"}}, bearer)
    basic = base64.b64encode(f"desk:{d(ALNUM, 12)}".encode()).decode()
    add("basic_header", {"request": "GET /v1/positions", "note": f"Authorization: Basic {basic}"}, basic)
    cookie = d(ALNUM, 32)
    add("cookie_header", {"headers": [{"Cookie": f"sessionid={cookie}; theme=dark"}]}, cookie)
    exch = d(ALNUM, 64)
    add("exchange_secret", {"exchange": {"name": "binance", "secret": exch}}, exch)
    hidden = d(ALNUM, 28)
    add("high_entropy_any_key", {"rows": [{"a": 1, "b": hidden}]}, hidden)
    env = d(ALNUM, 40)
    add("env_export", {"note": f"export BINANCE_API_SECRET={env} before the run"}, env)
    keypair = [r.randrange(256) for _ in range(64)]
    add("solana_keypair_bytes", {"keypair": keypair}, json.dumps(keypair)[1:-1])
    nsec = "nsec1" + d("023456789acdefghjklmnpqrstuvwxyz", 58)
    add("nostr", {"social": {"nsec": nsec}}, nsec)
    age = "AGE-SECRET-KEY-1" + d(UPPER_DIGITS, 58)
    add("age", {"note": f"decrypt with {age}"}, age)
    totp = d("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    add("totp_seed", {"mfa": {"totp_secret": totp}}, totp)
    return out


def held_out(seed: int = 11) -> list[Planted]:
    """A second draw placed differently: secrets inside lists of free-text notes and deeper nesting."""
    base = planted(seed)
    out = []
    for i, p in enumerate(base):
        wrapped = {"calls": [{"tool_name": f"tool_{i}", "args": {"payload": [p.value]}}], "trace": ["ok"]}
        out.append(Planted(p.name, wrapped, p.secrets))
    return out
