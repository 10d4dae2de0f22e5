"""Agent turns and learning feedback: recurring tasks in varied phrasings, tool-call sequences (some
failing, some leaking a secret the learning loop must redact), and feedback on the learnings they teach.

learning_id = "l_" + first 16 hex of sha256(normalized trigger + "|" + ",".join(tool names in call
order)), normalized trigger = user_message stripped and lower-cased (learning_id_for). Feedback
references the learning id of the earliest learnable turn of each task (whose message is forced to the
task's canonical phrasing), plus two unknown ids (UNKNOWN_LEARNING_IDS).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from mnemonic import Mnemonic

from tradingmem_assets.demo.clock import _t
from tradingmem_assets.demo.frames import _choice, _dt, _ids, _pick, _rng
from tradingmem_assets.demo.tables import _count


@dataclass(frozen=True)
class _Task:
    name: str
    route: str
    symbols: tuple[str, ...]
    phrasings: tuple[str, ...]
    calls: tuple[tuple[str, dict[str, Any]], ...]


# fmt: off
_TASKS = (
    _Task("funding_long", "trading", ("BTC", "ETH", "SOL"),
          ("check {s} funding then size a long", "Check {s} funding, then size a long",
           "check the {s} funding rate and then size a long",
           "pls check {s} funding then size a long position"),
          (("get_funding_rate", {"symbol": "{s}USD"}), ("get_order_book", {"symbol": "{s}USD", "depth": 20}),
           ("get_balance", {"account_id": "acct_007"}), ("risk_check", {"symbol": "{s}USD", "side": "buy"}),
           ("create_trade_preview", {"symbol": "{s}USD", "side": "buy", "notional": 2500}))),
    _Task("earnings_research", "research", ("AAPLX", "MSFTX", "GOOG"),
          ("research {s} fundamentals before earnings", "Research {s} fundamentals ahead of earnings",
           "do a fundamentals review of {s} before earnings"),
          (("get_fundamentals", {"symbol": "{s}"}), ("get_news", {"symbol": "{s}", "days": 7}),
           ("get_price_history", {"symbol": "{s}", "days": 90}),
           ("compute_indicator", {"symbol": "{s}", "name": "rsi", "period": 14}))),
    _Task("exposure", "advice", ("ETH", "BTC"),
          ("what is my exposure to {s}", "What's my exposure to {s}?", "how much {s} exposure do I have"),
          (("get_positions", {"account_id": "acct_012"}), ("get_quote", {"symbol": "{s}USD"}),
           ("risk_check", {"account_id": "acct_012", "symbol": "{s}USD"}))),
    _Task("rebalance", "advice", ("60/40",),
          ("rebalance my portfolio to {s}", "Rebalance my portfolio to {s} please",
           "can you rebalance the portfolio to {s}"),
          (("get_positions", {"account_id": "acct_003"}), ("get_balance", {"account_id": "acct_003"}),
           ("simulate_order", {"target": "{s}"}), ("create_trade_preview", {"target": "{s}"}))),
    _Task("support_levels", "research", ("SOL", "BTC"),
          ("find support levels for {s}", "Find the support levels for {s}",
           "where are the support levels on {s}"),
          (("get_price_history", {"symbol": "{s}USD", "days": 180}),
           ("compute_indicator", {"symbol": "{s}USD", "name": "pivot_points"}),
           ("compute_indicator", {"symbol": "{s}USD", "name": "volume_profile"}))),
    _Task("macro_outlook", "research", ("EURUSD",),
          ("summarize the rate differential outlook for {s}",
           "Summarize the rate-differential outlook for {s}", "give me the rate differential outlook on {s}"),
          (("get_news", {"symbol": "{s}", "days": 14}), ("search_kb", {"query": "rate differential {s}"}),
           ("get_quote", {"symbol": "{s}"}), ("get_price_history", {"symbol": "{s}", "days": 60}))),
    _Task("quote", "trading", ("BTC", "AAPLX"), ("quote {s}", "Quote {s} please"),
          (("get_quote", {"symbol": "{s}"}),)),
    _Task("cancel_orders", "trading", ("ETH",),
          ("cancel my open orders on {s}", "Cancel all my open {s} orders"),
          (("get_positions", {"account_id": "acct_021"}),
           ("cancel_order", {"symbol": "{s}USD", "all": True}))),
    _Task("transfer", "trading", ("500",),
          ("move {s} USDT to my savings account", "Move {s} USDT into savings",
           "transfer {s} USDT to savings"),
          (("get_balance", {"account_id": "acct_009"}), ("risk_check", {"account_id": "acct_009"}),
           ("transfer_funds", {"amount": "{s}", "asset": "USDT", "to": "savings"}))),
    _Task("limit_buy", "trading", ("ETH", "SOL"),
          ("place a limit buy for {s} below the market", "Place a limit buy on {s} under the market",
           "put a limit buy for {s} below market"),
          (("get_quote", {"symbol": "{s}USD"}), ("risk_check", {"symbol": "{s}USD", "side": "buy"}),
           ("create_trade_preview", {"symbol": "{s}USD", "side": "buy", "type": "limit"}),
           ("place_order", {"symbol": "{s}USD", "side": "buy", "type": "limit"}))),
    # fetch_social_sentiment is deliberately not in tools.yaml (an unknown tool)
    _Task("sentiment_check", "research", ("BTC",),
          ("check social sentiment on {s} before sizing", "Check {s} social sentiment before sizing"),
          (("get_news", {"symbol": "{s}USD"}), ("fetch_social_sentiment", {"symbol": "{s}USD"}),
           ("get_quote", {"symbol": "{s}USD"}))),
)
# fmt: on
_TASK_P = (0.16, 0.12, 0.1, 0.08, 0.1, 0.08, 0.08, 0.06, 0.06, 0.1, 0.06)
_SECRET_KINDS = ("api_key", "token", "password", "jwt", "private_key", "seed_phrase")
# the first words of the BIP39 English list, which secret redaction knows (defs/safety/secret_formats.py)
_SEED_WORDS = tuple(Mnemonic("english").wordlist[:20])
UNKNOWN_LEARNING_IDS = (
    "l_" + hashlib.sha256(b"no-such-learning-1").hexdigest()[:16],
    "l_" + hashlib.sha256(b"no-such-learning-2").hexdigest()[:16],
)


def learning_id_for(user_message: str, tool_names: Sequence[str]) -> str:
    """The demo's learning id: "l_" + first 16 hex of sha256(normalized trigger | tool names)."""
    raw = user_message.strip().lower() + "|" + ",".join(tool_names)
    return "l_" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def _secrets(seed: int) -> dict[str, dict[str, str]]:
    rng = _rng(seed, "secrets")
    alnum = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"))
    hexd = np.array(list("0123456789abcdef"))

    def draw(alpha: np.ndarray, k: int) -> str:
        return "".join(alpha[rng.integers(0, len(alpha), k)])

    payload = base64.urlsafe_b64encode(b'{"sub":"acct_007","scope":"trade"}').decode().rstrip("=")
    return {
        "api_key": {"api_key": "sk-live-" + draw(alnum, 32)},
        "token": {"token": "ghp_" + draw(alnum, 36)},
        "password": {"password": "Tr0ub4dor&3-" + draw(alnum, 6)},
        "jwt": {
            "authorization": "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + payload + "." + draw(alnum, 43)
        },
        "private_key": {"private_key": "0x" + draw(hexd, 64)},
        "seed_phrase": {"note": "backup words: " + " ".join(np.array(_SEED_WORDS)[rng.permutation(20)[:12]])},
    }


def _fill(obj: Any, s: str) -> Any:
    if isinstance(obj, str):
        return obj.replace("{s}", s)
    if isinstance(obj, dict):
        return {k: _fill(v, s) for k, v in obj.items()}
    return obj


def _turn_tables(seed: int) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """Message texts indexed [task offset + variant*nsym + sym] and tool-call JSON indexed by combo."""
    secrets = _secrets(seed)
    messages: list[str] = []
    msg_off = []
    calls: list[str] = []
    call_off = []
    for task in _TASKS:
        msg_off.append(len(messages))
        for phr in task.phrasings:
            messages.extend(phr.replace("{s}", s) for s in task.symbols)
        call_off.append(len(calls))
        for s in task.symbols:
            for fail in (False, True):
                for secret in (None, *_SECRET_KINDS):
                    seq = []
                    for i, (tool, args) in enumerate(task.calls):
                        a = _fill(args, s)
                        if i == 0 and secret:
                            a = {**a, **secrets[secret]}
                        ok = not (fail and i == min(1, len(task.calls) - 1))
                        seq.append({"tool_name": tool, "args": a, "ok": ok})
                    calls.append(json.dumps(seq, ensure_ascii=False))
    return messages, np.array(msg_off), calls, np.array(call_off)


def _learning(scale: float, seed: int) -> dict[str, pl.DataFrame]:
    rng = _rng(seed, "learning")
    n = _count("agent_turns", scale)
    messages, msg_off, calls, call_off = _turn_tables(seed)
    nsym = np.array([len(t.symbols) for t in _TASKS])
    nvar = np.array([len(t.phrasings) for t in _TASKS])
    ncalls = np.array([len(t.calls) for t in _TASKS])
    task = _choice(rng, n, _TASK_P)
    s = (rng.random(n) * nsym[task]).astype(np.int64)
    v = (rng.random(n) * nvar[task]).astype(np.int64)
    explicit = rng.random(n) < 0.4
    completed = rng.random(n) < 0.92
    fail = rng.random(n) < 0.08
    secret = np.where(rng.random(n) < 0.05, rng.integers(1, 7, n), 0)
    # every secret kind at least twice, always on turns that will be reviewed (so redaction matters)
    long_turns = np.flatnonzero(ncalls[task] >= 3)
    forced = rng.choice(long_turns, size=min(len(long_turns), 12), replace=False)
    secret[forced] = np.tile(np.arange(1, 7), 2)[: len(forced)]
    secret[ncalls[task] < 3] = 0
    has_secret = secret > 0
    explicit |= has_secret
    completed |= has_secret
    fail &= ~has_secret
    n_sessions = max(1, n * 2 // 5)
    session = rng.integers(0, n_sessions, n)
    sess_start = rng.integers(_t(2024, 1, 1), _t(2024, 6, 30, 20), n_sessions)
    started = sess_start[session] + rng.integers(0, 40 * 60, n)
    order = np.lexsort((np.arange(n), started))
    task, s, v, explicit, completed, fail, secret, session, started = (
        a[order] for a in (task, s, v, explicit, completed, fail, secret, session, started)
    )
    learnable = explicit & completed & ~fail & (ncalls[task] >= 3)
    # the earliest learnable turn of each task speaks the canonical phrasing: its learning id is stable
    canon: dict[int, tuple[str, int]] = {}
    for t in range(len(_TASKS)):
        idx = np.flatnonzero(learnable & (task == t))
        if len(idx):
            v[idx[0]] = 0
            msg = messages[msg_off[t] + s[idx[0]]]
            canon[t] = (learning_id_for(msg, [c[0] for c in _TASKS[t].calls]), int(idx[0]))
    msg_idx = msg_off[task] + v * nsym[task] + s
    call_idx = call_off[task] + s * 14 + fail.astype(np.int64) * 7 + secret
    turn_id = _ids("t_", n, 7)
    turns = pl.DataFrame(
        {
            "turn_id": turn_id,
            "session_id": _ids("as_", n_sessions, 6).gather(session),
            "started_at": _dt(started),
            "user_message": _pick(messages, msg_idx),
            "route": _pick([t.route for t in _TASKS], task),
            "tool_calls": _pick(calls, call_idx),
            "completed": completed,
            "explicit_learn": explicit,
        }
    )

    # feedback on the canonical learnings, always from a later turn; the last two rows name unknown ids
    nf = _count("learning_feedback", scale)
    tasks_with = sorted(canon)
    lids = [canon[t][0] for t in tasks_with]
    firsts = np.array([canon[t][1] for t in tasks_with] or [0])
    k = rng.integers(0, max(1, len(lids)), nf)
    lo = np.minimum(firsts[k] + 1, n - 1)
    fturn = lo + (rng.random(nf) * (n - lo)).astype(np.int64)
    lid_idx = (
        np.where(np.arange(nf) >= nf - 2, len(lids) + (np.arange(nf) % 2), k)
        if lids
        else len(lids) + np.arange(nf) % 2
    )
    learning = _pick(lids + list(UNKNOWN_LEARNING_IDS), lid_idx)
    fts = started[fturn] + rng.integers(5, 600, nf)
    adopted = rng.random(nf) < 0.7
    success = adopted & (rng.random(nf) < 0.75)
    fo = np.lexsort((np.arange(nf), fts))
    feedback = pl.DataFrame(
        {
            "feedback_id": _ids("fb_", nf, 7),
            "learning_id": learning.gather(fo),
            "turn_id": turn_id.gather(fturn[fo]),
            "adopted": adopted[fo],
            "success": success[fo],
            "ts": _dt(fts[fo]),
        }
    )
    return {"agent_turns": turns, "learning_feedback": feedback}
