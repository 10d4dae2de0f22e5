"""(Helpers, no tests.) A small customer-memory landing world for the profile and memory tests.

Customers at AS_OF = 2024-07-01:
- c1: questionnaire C2 (an older C4, a future C5), says "aggressive" (confidence 0.99, one
  piece of evidence), bought R2 and R4 in the last 30 days, an older sell.
- c2: questionnaire C3, a one-off asset-class statement (evidence 1, confidence 0.8), a horizon
  backed by two pieces of evidence, a non-profile fact, one recent R3 buy and an old R1 buy.
- c3: no questionnaire, an asset-class unit with conflicting evidence.
- c4: nothing but the customers row (every field null except identity/trading_frequency 0).
Sessions: s1 (c1) active; s2 (c2) idle 60 min; s3 (c3) older than 24 h; s4 only after as_of.
KB: one public document, one internal (the anti-money-laundering manual).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import polars as pl

from tests.world import World
from tradingmem_assets.defs.landing.invariants import LANDING_TABLES

AS_OF = "2024-07-01T00:00:00Z"
AS_OF_TS = datetime(2024, 7, 1, tzinfo=UTC)

PROFILE_LANDING = [
    "raw/customers",
    "raw/questionnaire_results",
    "raw/customer_transactions",
    "raw/memory_unit",
    "raw/memory_evidence",
    "raw/conversation_message",
    "raw/kb_documents",
]
PROFILE_ASSETS = [
    "session_contexts",
    "memory_promotions",
    "user_facts",
    "fin_customer_profile",
    "profile_snapshots",
    "advisor_customer_view",
    "customer_kb",
]
ALL = PROFILE_LANDING + PROFILE_ASSETS
# what the profile needs, without sessions, the knowledge base and the advisor view
PROFILE_CORE = PROFILE_LANDING[:5] + [
    "memory_promotions",
    "user_facts",
    "fin_customer_profile",
    "profile_snapshots",
]


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def customer(cid: str, **kw) -> dict:
    row = {
        "customer_id": cid,
        "real_name": f"Name {cid}",
        "birth_date": date(1980, 1, 1),
        "occupation": "engineer",
        "mobile": "13812345678",
        "opened_at": ts("2020-01-01"),
    }
    row.update(kw)
    return row


def unit(
    uid: str,
    cid: str,
    key: str,
    value: str,
    *,
    confidence: float,
    evidence: int,
    conflicts: int = 0,
    updated: str = "2024-06-01",
    valid_from: str = "2024-01-01",
    valid_until: str | None = None,
    created: str = "2024-01-01",
) -> dict:
    return {
        "unit_id": uid,
        "customer_id": cid,
        "fact_key": key,
        "fact_value": value,
        "confidence": confidence,
        "evidence_count": evidence,
        "conflict_count": conflicts,
        "recall_count": 0,
        "valid_from": ts(valid_from),
        "valid_until": ts(valid_until) if valid_until else None,
        "source_portal": "app",
        "source_episode_id": f"ep_{uid}",
        "created_at": ts(created),
        "updated_at": ts(updated),
    }


def txn(tid: str, cid: str, when: str, level: str, side: str = "buy", balance: float | None = 1000.0) -> dict:
    return {
        "txn_id": tid,
        "customer_id": cid,
        "ts": ts(when),
        "product_id": f"p_{level}",
        "product_risk_level": level,
        "side": side,
        "amount": 100.0,
        "balance_after": balance,
    }


def msg(mid: str, sid: str, cid: str, when: str, content: str, role: str = "user") -> dict:
    return {
        "message_id": mid,
        "session_id": sid,
        "customer_id": cid,
        "role": role,
        "content": content,
        "created_at": ts(when),
    }


BASE: dict[str, list[dict]] = {
    "customers": [
        customer("c1", mobile="138 1234 5678"),
        customer("c2"),
        customer("c3"),
        customer("c4", real_name=None, birth_date=None, occupation=None, mobile=None),
    ],
    "questionnaire_results": [
        {"assessment_id": "q1", "customer_id": "c1", "investor_type": "C4", "assessed_at": ts("2023-01-01")},
        {"assessment_id": "q2", "customer_id": "c1", "investor_type": "C2", "assessed_at": ts("2024-01-01")},
        {"assessment_id": "q3", "customer_id": "c1", "investor_type": "C5", "assessed_at": ts("2024-08-01")},
        {"assessment_id": "q4", "customer_id": "c2", "investor_type": "C3", "assessed_at": ts("2024-02-01")},
    ],
    "customer_transactions": [
        txn("t1", "c1", "2024-06-20", "R2", balance=1000.0),
        txn("t2", "c1", "2024-06-25", "R4", balance=500.0),
        txn("t3", "c1", "2024-03-01", "R1", side="sell", balance=800.0),
        txn("t4", "c2", "2024-06-10", "R3", balance=2000.0),
        txn("t5", "c2", "2024-02-01", "R1", balance=2500.0),
    ],
    "memory_unit": [
        unit("u1", "c1", "preference:risk_level", "aggressive", confidence=0.99, evidence=1),
        unit("u2", "c2", "preference:asset_class", "equity", confidence=0.8, evidence=1),
        unit("u3", "c2", "profile:investment_horizon", "long_term", confidence=0.7, evidence=2),
        unit("u4", "c3", "preference:asset_class", "bonds", confidence=0.95, evidence=3, conflicts=1),
        unit("u5", "c2", "family:children", "2", confidence=0.95, evidence=1),
    ],
    "memory_evidence": [
        {
            "evidence_id": "e1",
            "unit_id": "u1",
            "excerpt": "I am aggressive",
            "message_id": "m1",
            "created_at": ts("2024-06-01"),
        },
        {
            "evidence_id": "e2",
            "unit_id": "u3",
            "excerpt": "for the long run",
            "message_id": "m2",
            "created_at": ts("2024-05-01"),
        },
        {
            "evidence_id": "e3",
            "unit_id": "u3",
            "excerpt": "ten years at least",
            "message_id": "m3",
            "created_at": ts("2024-06-01"),
        },
    ],
    "conversation_message": [
        msg("m10", "s1", "c1", "2024-06-30 23:40", "我是激进型投资者"),
        msg("m11", "s1", "c1", "2024-06-30 23:50", "Noted, thank you.", role="assistant"),
        msg("m20", "s2", "c2", "2024-06-30 23:00", "what about bonds?"),
        msg("m30", "s3", "c3", "2024-06-29 20:00", "hello"),
        msg("m31", "s3", "c3", "2024-06-30 23:55", "still there?"),
        msg("m40", "s4", "c1", "2024-07-01 00:05", "from the future"),
    ],
    "kb_documents": [
        {"doc_id": "k1", "title": "What is a bond fund", "visibility": "public", "body": "A bond fund ..."},
        {
            "doc_id": "k2",
            "title": "反洗钱手册 (AML manual)",
            "visibility": "internal",
            "body": "internal only",
        },
    ],
}


def write_base(world: World, **overrides: list[dict]) -> None:
    for table, rows in {**BASE, **overrides}.items():
        world.write(table, rows)


def frame(table: str, rows: list[dict]) -> pl.DataFrame:
    """Rows as a frame typed like the landing table (for core tests)."""
    spec = LANDING_TABLES[table]
    if not rows:
        return spec.empty()
    return pl.DataFrame(
        [{c: r.get(c) for c in spec.column_names} for r in rows], schema=spec.polars_schema(), orient="row"
    )
