"""Memory layers, pure logic: token estimate, session windows and budget, promotion to user_facts."""

from __future__ import annotations

import json
from datetime import timedelta

import duckdb
import polars as pl
import pytest

from tests.profile.world import AS_OF_TS, frame, msg, unit
from tradingmem_assets.defs.memory import promotion, sessions
from tradingmem_assets.defs.memory.facts import hashed_ids

AS_OF = AS_OF_TS


def at(delta: timedelta) -> str:
    return (AS_OF - delta).strftime("%Y-%m-%d %H:%M:%S")


def contexts(rows: list[dict], **kw) -> sessions.SessionContexts:
    return sessions.session_contexts(frame("conversation_message", rows), AS_OF, **kw)


# --- token estimate ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        (None, 0),
        ("abcd", 1),
        ("abcde", 2),
        ("我是激进型", 5),  # one token per CJK character
        ("我是 aggressive", 2 + 3),  # 2 CJK + ceil(11 / 4)
        ("カタカナ한국어，。", 9),  # kana, Hangul and CJK punctuation count 1 each
    ],
)
def test_token_estimate_counts_cjk_characters_as_one_and_other_text_as_four_per_token(text, tokens):
    assert sessions.estimate_tokens(text) == tokens


# --- session windows -----------------------------------------------------------------------------


def test_session_is_active_when_its_last_message_is_at_most_30_minutes_old():
    rows = [
        msg("a1", "sa", "c1", at(timedelta(minutes=30)), "exactly 30 minutes"),
        msg("b1", "sb", "c1", at(timedelta(minutes=30, seconds=1)), "one second too old"),
    ]
    assert contexts(rows).contexts.get_column("session_id").to_list() == ["sa"]


def test_session_older_than_24_hours_has_no_context_even_if_it_is_still_talking():
    rows = [
        msg("a1", "sa", "c1", at(timedelta(hours=24)), "started exactly 24 h ago"),
        msg("a2", "sa", "c1", at(timedelta(minutes=1)), "and still here"),
        msg("b1", "sb", "c1", at(timedelta(hours=24, seconds=1)), "started 24 h + 1 s ago"),
        msg("b2", "sb", "c1", at(timedelta(minutes=1)), "and still here"),
    ]
    assert contexts(rows).contexts.get_column("session_id").to_list() == ["sa"]


def test_messages_after_as_of_do_not_exist_yet():
    rows = [
        msg("a1", "sa", "c1", at(timedelta(hours=2)), "idle for two hours"),
        msg("a2", "sa", "c1", at(-timedelta(minutes=5)), "after as_of"),
        msg("b1", "sb", "c1", at(timedelta(minutes=5)), "active"),
        msg("b2", "sb", "c1", at(-timedelta(minutes=1)), "after as_of"),
    ]
    result = contexts(rows).contexts
    assert result.get_column("session_id").to_list() == ["sb"]
    assert [m["message_id"] for m in json.loads(result.get_column("messages")[0])] == ["b1"]


def test_context_keeps_the_newest_messages_within_4096_tokens_oldest_first():
    # 10 messages of 1000 tokens each: only the newest 4 fit in 4096
    rows = [msg(f"m{i}", "s", "c1", at(timedelta(minutes=20 - i)), "x" * 4000) for i in range(10)]
    row = contexts(rows).contexts.row(0, named=True)
    kept = json.loads(row["messages"])
    assert [m["message_id"] for m in kept] == ["m6", "m7", "m8", "m9"]
    assert row["token_estimate"] == 4000 and row["message_count"] == 4
    assert row["last_message_at"] == AS_OF - timedelta(minutes=11)
    assert row["started_at"] == AS_OF - timedelta(minutes=20)


def test_an_oversized_newest_message_is_cut_to_the_budget_and_marked_truncated():
    rows = [
        msg("old", "s", "c1", at(timedelta(minutes=10)), "earlier"),
        msg("big", "s", "c1", at(timedelta(minutes=5)), "字" * 5000),
    ]
    row = contexts(rows).contexts.row(0, named=True)
    kept = json.loads(row["messages"])
    assert [m["message_id"] for m in kept] == ["big"]
    assert kept[0]["truncated"] is True and kept[0]["content"] == "字" * 4096
    assert row["token_estimate"] == 4096


def test_a_session_mixing_customers_gets_no_context_and_is_reported():
    rows = [
        msg("a1", "shared", "c1", at(timedelta(minutes=5)), "mine"),
        msg("a2", "shared", "c2", at(timedelta(minutes=4)), "someone else's"),
    ]
    result = contexts(rows)
    assert result.contexts.height == 0
    assert result.mixed_customer_sessions.rows() == [("shared", ["c1", "c2"])]


# --- promotion -----------------------------------------------------------------------------------


def classify(*units: dict, stale_days: int = 365, evidence: list[dict] | None = None) -> pl.DataFrame:
    ev = frame("memory_evidence", evidence or [])
    return promotion.classify_units(frame("memory_unit", list(units)), AS_OF, stale_days, ev)


def status_of(*units: dict, **kw) -> dict[str, str]:
    return dict(classify(*units, **kw).select("unit_id", "status").rows())


@pytest.mark.parametrize(
    ("evidence", "confidence", "status"),
    [
        (2, 0.10, "promoted"),  # evidence alone is enough
        (1, 0.90, "promoted"),  # confidence alone is enough
        (1, 0.8999, "below_threshold"),
        (1, 0.80, "below_threshold"),  # the one-off statement
        (0, 0.99, "promoted"),
    ],
)
def test_promotion_threshold_is_two_pieces_of_evidence_or_confidence_090(evidence, confidence, status):
    assert status_of(unit("u", "c", "k", "v", confidence=confidence, evidence=evidence)) == {"u": status}


def test_conflicting_unit_waits_for_adjudication_whatever_its_evidence():
    got = classify(unit("u", "c", "k", "v", confidence=0.99, evidence=5, conflicts=1))
    assert got.select("status", "reasons").row(0) == ("awaiting_adjudication", ["awaiting_adjudication"])
    assert promotion.user_facts(got).height == 0


def test_only_units_valid_at_as_of_are_promoted():
    got = status_of(
        unit("future", "c", "k", "v", confidence=0.99, evidence=3, valid_from="2024-07-02"),
        unit("expired", "c", "k", "v", confidence=0.99, evidence=3, valid_until="2024-07-01"),
        unit("open", "c", "k", "v", confidence=0.99, evidence=3, valid_until="2024-07-01 00:00:01"),
    )
    assert got == {"expired": "expired", "future": "not_yet_valid", "open": "promoted"}


def test_a_unit_without_new_evidence_for_longer_than_stale_days_is_demoted():
    fresh = (AS_OF - timedelta(days=365)).strftime("%Y-%m-%d %H:%M:%S")
    stale = (AS_OF - timedelta(days=365, seconds=1)).strftime("%Y-%m-%d %H:%M:%S")
    got = classify(
        unit("fresh", "c", "k", "v", confidence=0.99, evidence=3, updated=fresh, valid_from="2023-01-01"),
        unit("stale", "c", "k", "v", confidence=0.99, evidence=3, updated=stale, valid_from="2023-01-01"),
    )
    assert dict(got.select("unit_id", "status").rows()) == {"fresh": "promoted", "stale": "stale"}
    detail = got.filter(pl.col("unit_id") == "stale").get_column("detail")[0]
    assert "demoted" in detail and "MEMORY_STALE_DAYS=365" in detail
    assert status_of(
        unit("s", "c", "k", "v", confidence=0.99, evidence=3, updated=stale), stale_days=400
    ) == {"s": "promoted"}


def test_reasons_list_every_rule_a_unit_breaks_and_status_takes_the_first():
    got = classify(
        unit(
            "u",
            "c",
            "k",
            "v",
            confidence=0.5,
            evidence=1,
            conflicts=2,
            updated="2020-01-01",
            valid_from="2020-01-01",
        )
    )
    assert got.select("status", "reasons").row(0) == (
        "awaiting_adjudication",
        ["awaiting_adjudication", "below_threshold", "stale"],
    )


def test_units_created_after_as_of_are_not_known_yet():
    got = classify(unit("later", "c", "k", "v", confidence=0.99, evidence=3, created="2024-07-02"))
    assert got.height == 0


def test_user_facts_carry_source_and_deterministic_ids_and_mark_critical_keys():
    units = [
        unit(
            "u1",
            "c1",
            "preference:risk_level",
            "稳健型",
            confidence=0.95,
            evidence=1,
            valid_from="2024-01-01",
            updated="2024-03-01",
        ),
        unit(
            "u2",
            "c1",
            "profile:investment_horizon",
            "5y",
            confidence=0.5,
            evidence=2,
            valid_from="2024-05-01",
            updated="2024-04-01",
        ),
        unit("u3", "c1", "preference:asset_class", "equity", confidence=0.5, evidence=2),
    ]
    evidence = [
        {"evidence_id": "e1", "unit_id": "u1", "created_at": AS_OF - timedelta(days=1)},
        {"evidence_id": "e2", "unit_id": "u1", "created_at": AS_OF + timedelta(days=1)},
    ]
    promotions = classify(*units, evidence=evidence)
    assert dict(promotions.select("unit_id", "evidence_rows").rows()) == {"u1": 1, "u2": 0, "u3": 0}
    facts = promotion.user_facts(promotions)
    again = promotion.user_facts(classify(*units, evidence=evidence))
    assert facts.equals(again)
    by_unit = {r["source_unit_id"]: r for r in facts.to_dicts()}
    assert by_unit["u1"]["fact_id"] == hashed_ids("uf_", pl.Series(["u1"]))[0]
    assert by_unit["u1"]["fact_id"].startswith("uf_") and len(by_unit["u1"]["fact_id"]) == 19
    assert {u: r["is_critical"] for u, r in by_unit.items()} == {"u1": True, "u2": True, "u3": False}
    assert by_unit["u1"]["source_portal"] == "app" and by_unit["u1"]["source_episode_id"] == "ep_u1"
    # promoted_at: when the unit's current state first met the rule (not the run's as_of)
    assert by_unit["u1"]["promoted_at"].date().isoformat() == "2024-03-01"
    assert by_unit["u2"]["promoted_at"].date().isoformat() == "2024-05-01"


def test_units_awaiting_adjudication_are_conflicting_units_valid_at_as_of():
    units = frame(
        "memory_unit",
        [
            unit("waits", "c1", "k", "v", confidence=0.5, evidence=1, conflicts=1, updated="2020-01-01"),
            unit(
                "expired", "c1", "k", "v", confidence=0.99, evidence=3, conflicts=2, valid_until="2024-06-01"
            ),
            unit("clean", "c1", "k", "v", confidence=0.99, evidence=3),
        ],
    )
    assert promotion.units_awaiting_adjudication(units, AS_OF).get_column("unit_id").to_list() == ["waits"]
    con = duckdb.connect()
    try:
        assert promotion.count_units_awaiting_adjudication(con, AS_OF) == 0  # no landing table yet
        con.execute("CREATE SCHEMA raw")
        con.register("_units", units)
        con.execute("CREATE TABLE raw.memory_unit AS SELECT * FROM _units")
        assert promotion.count_units_awaiting_adjudication(con, AS_OF) == 1
    finally:
        con.close()


def test_reading_only_active_sessions_gives_the_same_contexts():
    rows = [
        msg("a1", "active", "c1", at(timedelta(hours=3)), "started 3 h ago"),
        msg("a2", "active", "c1", at(timedelta(minutes=2)), "still here"),
        msg("a3", "active", "c1", at(-timedelta(minutes=2)), "after as_of"),
        msg("o1", "old", "c2", at(timedelta(hours=30)), "started 30 h ago"),
        msg("o2", "old", "c2", at(timedelta(minutes=1)), "still here"),
        msg("i1", "idle", "c3", at(timedelta(hours=1)), "idle"),
        msg("f1", "future", "c4", at(-timedelta(minutes=1)), "not yet"),
    ]
    full = frame("conversation_message", rows)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE SCHEMA raw")
        con.register("_m", full)
        con.execute("CREATE TABLE raw.conversation_message AS SELECT * FROM _m")
        needed = con.sql(sessions.ACTIVE_SESSION_MESSAGES_SQL, params=[AS_OF]).pl()
    finally:
        con.close()
    assert sorted(needed.get_column("message_id").to_list()) == ["a1", "a2"]
    assert sessions.session_contexts(needed, AS_OF).contexts.equals(
        sessions.session_contexts(full, AS_OF).contexts
    )
