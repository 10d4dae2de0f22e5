"""Wealth-management customers: identities, questionnaires, transactions, conversations and the memory
units (with evidence) distilled from them.

Customers: c_000001 is C2 by questionnaire but has preference:risk_level = "aggressive" (confidence
0.99, 3 evidence, no conflict, fresh). c_000002's only session started 30 h before DEMO_AS_OF and
its last message is 10 minutes old (not active: older than 24 h); a few other sessions end minutes
before DEMO_AS_OF (active). c_000003 and c_000004 spoke only 500 days ago (stale units). Every user
message states one of the customer's facts; memory_evidence links each to its unit.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tradingmem_assets.demo.clock import _AS_OF, _DAY, _HOUR, _epoch_day, _t
from tradingmem_assets.demo.frames import (
    _cat,
    _choice,
    _cumcount,
    _dt,
    _group_cumsum,
    _ids,
    _iso,
    _pick,
    _rng,
)
from tradingmem_assets.demo.tables import _count
from tradingmem_assets.demo.texts import TEXTS

_CN_SURNAMES = tuple("王李张刘陈杨黄赵吴周徐孙马朱胡郭何林高罗")
_CN_GIVEN = tuple(
    "伟 芳 娜 敏 静 丽 强 磊 军 洋 勇 艳 杰 娟 涛 "
    "明 超 秀英 霞 平 刚 桂英 婷 浩 宇 欣怡 子涵 思远 建国 海燕".split()
)
_EN_FIRST = tuple(
    "James Mary John Patricia Robert Jennifer Michael Linda William Elizabeth David Barbara Richard Susan "
    "Joseph Jessica Thomas Sarah Emma Olivia Noah Liam Ava Sophia Lucas Mia Ethan Chloe".split()
)
_EN_LAST = tuple(
    "Smith Johnson Williams Brown Jones Garcia Miller Davis Wilson Anderson Taylor Moore Martin Lee "
    "Thompson White Harris Clark Lewis Walker Hall Allen Young King Wright Scott Green Baker".split()
)
_OCCUPATIONS = tuple(
    "software engineer|teacher|doctor|教师|工程师|个体经营|retired|lawyer|"
    "designer|会计|公务员|sales manager|nurse|企业主|student".split("|")
)
_MOBILE_PREFIX = ("138", "139", "150", "186", "135", "177", "188", "159")
# fact_key, values, two user utterances stating the value
_FACTS: tuple[tuple[str, tuple[str, ...], tuple[str, str]], ...] = (
    (
        "preference:risk_level",
        (
            "稳健型",
            "保守型",
            "平衡型",
            "成长型",
            "进取型",
            "激进型",
            "conservative",
            "aggressive",
            "balanced",
        ),
        ("As an investor I'd call myself {v}.", "Honestly, with money I'm {v}."),
    ),
    (
        "preference:asset_class",
        ("equity", "bonds", "crypto", "funds", "cash"),
        ("I'm mostly interested in {v}.", "Can you show me more {v} products?"),
    ),
    (
        "profile:investment_horizon",
        ("short", "medium", "long", "3-5 years"),
        ("My investment horizon is {v}.", "Horizon-wise I'd say {v}."),
    ),
    ("life:children", ("two kids", "none", "one daughter"), ("Children: {v}.", "About kids, {v}.")),
    ("interest:golf", ("plays weekly", "beginner"), ("Golf? I'm {v}.", "On golf: {v}.")),
    ("life:marital_status", ("married", "single"), ("I'm {v}.", "Family status: {v}.")),
    (
        "interest:travel",
        ("Japan", "Europe"),
        ("Planning a trip to {v} next year.", "We love travelling to {v}."),
    ),
)
_CN_RISK_UTTERANCES = ("我觉得自己是{v}的投资者。", "我还是偏{v}一点。")
_FACT_P = (0.9, 0.8, 0.8, 0.3, 0.2, 0.3, 0.2)
_ASSISTANT_REPLIES = tuple(TEXTS["conversations"]["assistant_replies"])
_PORTALS = ("advisor_app", "wechat", "web")


def _utterances() -> tuple[list[str], np.ndarray]:
    table: list[str] = []
    off = []
    for _key, values, templates in _FACTS:
        off.append(len(table))
        for v in values:
            tpl = _CN_RISK_UTTERANCES if not v.isascii() else templates
            table.extend(t.replace("{v}", v) for t in tpl)
    return table, np.array(off)


def _customers(scale: float, seed: int) -> dict[str, pl.DataFrame]:
    rng = _rng(seed, "customers")
    n = _count("customers", scale)
    cid = _ids("c_", n, 6)
    chinese = rng.random(n) < 0.6
    cn = _cat(
        _pick(_CN_SURNAMES, rng.integers(0, len(_CN_SURNAMES), n)), _pick(_CN_GIVEN, rng.integers(0, 30, n))
    )
    en = _cat(
        _pick(_EN_FIRST, rng.integers(0, len(_EN_FIRST), n)),
        " ",
        _pick(_EN_LAST, rng.integers(0, len(_EN_LAST), n)),
    )
    name = pl.select(pl.when(pl.lit(pl.Series(chinese))).then(pl.lit(cn)).otherwise(pl.lit(en))).to_series()
    birth = pl.Series("", rng.integers(_epoch_day(1950, 1, 1), _epoch_day(2002, 12, 31), n)).cast(pl.Date)
    opened = rng.integers(_t(2010, 1, 1), _t(2023, 6, 30), n)
    opened[:4] = np.minimum(opened[:4], _t(2020, 1, 1))
    customers = pl.DataFrame(
        {
            "customer_id": cid,
            "real_name": name,
            "birth_date": birth.dt.strftime("%Y-%m-%d"),
            "occupation": _pick(_OCCUPATIONS, rng.integers(0, len(_OCCUPATIONS), n)),
            "mobile": _cat(
                _pick(_MOBILE_PREFIX, rng.integers(0, len(_MOBILE_PREFIX), n)),
                pl.Series("", rng.integers(0, 10**8, n)).cast(pl.String).str.zfill(8),
            ),
            "opened_at": _iso(opened),
        }
    )

    # questionnaires: 1-3 per customer over time; the latest is the customer's investor type
    level = 1 + _choice(rng, n, (0.15, 0.3, 0.3, 0.15, 0.1))
    level[0] = 2  # c_000001: C2 on paper, "aggressive" in conversation
    q = 1 + _choice(rng, n, (0.5, 0.3, 0.2))
    qc = np.repeat(np.arange(n), q)
    qr = _cumcount(q)
    lo = np.maximum(opened, _t(2021, 1, 1))[qc]
    at = lo + ((_t(2024, 6, 15) - lo) * (qr + rng.random(len(qc))) / q[qc]).astype(np.int64)
    itype = np.where(qr == q[qc] - 1, level[qc], np.clip(level[qc] + rng.integers(-1, 2, len(qc)), 1, 5))
    questionnaires = pl.DataFrame(
        {
            "assessment_id": _ids("qa_", len(qc), 7),
            "customer_id": cid.gather(qc),
            "investor_type": "C" + pl.Series("", itype).cast(pl.String),
            "assessed_at": _iso(at),
        }
    )

    # transactions over the last year; most buys within the investor type's risk level
    nt = max(300, round(scale * 500_000))
    tc = rng.integers(0, n, nt)
    ts = rng.integers(_t(2023, 7, 1), _AS_OF - _HOUR, nt)
    o = np.lexsort((ts, tc))
    tc, ts = tc[o], ts[o]
    side = (rng.random(nt) < 0.4).astype(np.int64)
    prod_risk = 1 + rng.permutation(np.arange(200) % 5)
    want = np.where(
        rng.random(nt) < 0.85, 1 + (rng.random(nt) * level[tc]).astype(np.int64), rng.integers(1, 6, nt)
    )
    prod = np.zeros(nt, dtype=np.int64)
    for r in range(1, 6):
        pool = np.flatnonzero(prod_risk == r)
        m = want == r
        prod[m] = pool[rng.integers(0, len(pool), int(m.sum()))]
    amount = np.round(np.exp(rng.normal(np.log(20_000.0), 0.9, nt)), 2)
    initial = np.round(np.exp(rng.normal(np.log(200_000.0), 1.0, n)), 2)
    flow = np.where(side == 0, amount, -amount)
    balance = np.round(np.maximum(initial[tc] + _group_cumsum(flow, np.bincount(tc, minlength=n)), 0.0), 2)
    transactions = pl.DataFrame(
        {
            "txn_id": _ids("tx_", nt, 8),
            "customer_id": cid.gather(tc),
            "ts": _dt(ts),
            "product_id": _ids("prd_", 200, 4).gather(prod),
            "product_risk_level": "R" + pl.Series("", prod_risk[prod]).cast(pl.String),
            "side": _pick(("buy", "sell"), side),
            "amount": amount,
            "balance_after": balance,
        }
    )

    # memory units: distinct fact keys per customer (Gumbel top-k), about three each
    k = 1 + _choice(rng, n, (0.1, 0.25, 0.3, 0.2, 0.15))
    scores = np.log(np.array(_FACT_P)) + rng.gumbel(size=(n, len(_FACTS)))
    scores[0, 0] = np.inf
    korder = np.argsort(-scores, axis=1)
    uc = np.repeat(np.arange(n), k)
    ur = _cumcount(k)
    key = korder[uc, ur]
    nu = len(uc)
    nvals = np.array([len(f[1]) for f in _FACTS])
    val = (rng.random(nu) * nvals[key]).astype(np.int64)
    val[0] = _FACTS[0][1].index("aggressive")

    # conversations: each user message states one of the customer's facts; some get an assistant reply
    extra = _choice(rng, n, (0.5, 0.3, 0.2))
    extra[1] = max(extra[1], 1)
    um = k + extra
    mc = np.repeat(np.arange(n), um)
    j = _cumcount(um)
    unit_off = np.cumsum(k) - k
    m_unit = unit_off[mc] + j % k[mc]
    utt, utt_off = _utterances()
    u_content = utt_off[key[m_unit]] + val[m_unit] * 2 + (j >= k[mc])
    two = rng.random(n) < 0.4
    two[:4] = False
    split = np.where(two, (um + 1) // 2, um)
    u_sess = (j >= split[mc]).astype(np.int64)
    reply = rng.random(len(mc)) < 0.45
    ar = np.flatnonzero(reply)
    cust = np.r_[mc, mc[ar]]
    jj = np.r_[j, j[ar]]
    asst = np.r_[np.zeros(len(mc), dtype=np.int64), np.ones(len(ar), dtype=np.int64)]
    sess = np.r_[u_sess, u_sess[ar]]
    content_idx = np.r_[u_content, len(utt) + rng.integers(0, len(_ASSISTANT_REPLIES), len(ar))]
    mo = np.lexsort((asst, jj, cust))
    cust, asst, sess, content_idx = cust[mo], asst[mo], sess[mo], content_idx[mo]
    nm = len(mo)
    new_group = np.r_[True, (cust[1:] != cust[:-1]) | (sess[1:] != sess[:-1])]
    g = np.cumsum(new_group) - 1
    g_counts = np.bincount(g)
    gaps = rng.integers(20, 240, nm).astype(float)
    gaps[new_group] = 0
    offset = _group_cumsum(gaps, g_counts).astype(np.int64)
    g_cust = cust[new_group]
    g_sess = sess[new_group]
    g_last = np.cumsum(g_counts) - 1
    t0 = np.where(
        rng.random(n) < 0.15,
        rng.integers(_t(2022, 1, 1), _AS_OF - 380 * _DAY, n),
        _AS_OF - rng.integers(2 * _DAY, 360 * _DAY, n),
    )
    t0 = np.minimum(np.maximum(t0, opened + _DAY), _AS_OF - 2 * _DAY)
    t0[0] = _AS_OF - 20 * _DAY
    t0[2:4] = _AS_OF - 500 * _DAY  # stale: nothing said for more than a year
    t1 = t0 + rng.integers(_DAY, 60 * _DAY, n)
    late = t0 + ((_AS_OF - _DAY - t0) * rng.uniform(0.2, 0.9, n)).astype(np.int64)
    t1 = np.where(t1 > _AS_OF - _DAY, late, t1)
    g_start = np.where(g_sess == 0, t0[g_cust], t1[g_cust])
    # active sessions: the last message a few minutes before DEMO_AS_OF
    is_last = np.r_[g_cust[1:] != g_cust[:-1], True]
    pool = np.flatnonzero(is_last & (g_cust >= 4))
    active = rng.choice(pool, size=min(len(pool), max(3, round(0.003 * n))), replace=False)
    g_start[active] = _AS_OF - offset[g_last[active]] - rng.integers(60, 1500, len(active))
    # c_000002: a session that started 30 hours ago although its last message is recent (not active)
    g1 = int(np.flatnonzero(g_cust == 1)[0])
    offset[g_last[g1]] = 30 * _HOUR - 600
    g_start[g1] = _AS_OF - 30 * _HOUR
    msg_t = g_start[g] + offset
    message_id = _ids("msg_", nm, 8)
    session_id = _cat("cs_", cid.gather(cust).str.slice(2), "_", pl.Series("", sess + 1).cast(pl.String))
    contents = utt + list(_ASSISTANT_REPLIES)
    messages = pl.DataFrame(
        {
            "message_id": message_id,
            "session_id": session_id,
            "customer_id": cid.gather(cust),
            "role": _pick(("user", "assistant"), asst),
            "content": _pick(contents, content_idx),
            "created_at": _dt(msg_t),
        }
    )

    # evidence: every user message backs the unit it states
    pos = np.empty(nm, dtype=np.int64)
    pos[mo] = np.arange(nm)
    upos = pos[: len(mc)]  # ordered position of each user message
    ev_t = msg_t[upos] + rng.integers(5, 120, len(mc))
    eo = np.lexsort((np.arange(len(mc)), ev_t))
    evidence = pl.DataFrame(
        {
            "evidence_id": _ids("me_", len(mc), 8),
            "unit_id": _ids("mu_", nu, 8).gather(m_unit[eo]),
            "excerpt": _pick(utt, u_content[eo]),
            "message_id": message_id.gather(upos[eo]),
            "created_at": _dt(ev_t[eo]),
        }
    )
    created = np.full(nu, np.iinfo(np.int64).max)
    updated = np.zeros(nu, dtype=np.int64)
    np.minimum.at(created, m_unit, ev_t)
    np.maximum.at(updated, m_unit, ev_t)
    n_ev = np.bincount(m_unit, minlength=nu)
    first_msg = upos[(np.cumsum(um) - um)[uc] + ur]
    confidence = np.round(rng.uniform(0.5, 0.99, nu), 2)
    ev_count = np.clip(n_ev + rng.integers(0, 3, nu), 1, 5)
    conflict = np.where(rng.random(nu) < 0.08, rng.integers(1, 3, nu), 0)
    r = rng.random(nu)
    expired = r < 0.08
    future = (r >= 0.08) & (r < 0.15)
    until = np.where(
        expired,
        created + ((_AS_OF - created) * rng.uniform(0.1, 0.9, nu)).astype(np.int64),
        _AS_OF + rng.integers(30 * _DAY, 400 * _DAY, nu),
    )
    confidence[0], ev_count[0], conflict[0] = 0.99, 3, 0
    expired[0] = future[0] = False
    units = pl.DataFrame(
        {
            "unit_id": _ids("mu_", nu, 8),
            "customer_id": cid.gather(uc),
            "fact_key": _pick([f[0] for f in _FACTS], key),
            "fact_value": _pick(
                [v for f in _FACTS for v in f[1]], np.r_[0, np.cumsum(nvals)[:-1]][key] + val
            ),
            "confidence": confidence,
            "evidence_count": ev_count,
            "conflict_count": conflict,
            "recall_count": rng.integers(0, 21, nu),
            "valid_from": _dt(created),
            "valid_until": _dt(until, null=~(expired | future)),
            "source_portal": _pick(_PORTALS, rng.integers(0, 3, nu)),
            "source_episode_id": session_id.gather(first_msg),
            "created_at": _dt(created),
            "updated_at": _dt(updated),
        }
    )
    return {
        "customers": customers,
        "questionnaire_results": questionnaires,
        "customer_transactions": transactions,
        "memory_unit": units,
        "memory_evidence": evidence,
        "conversation_message": messages,
    }
