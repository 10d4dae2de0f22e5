"""Learnings: review filter, score, redaction, dedup, feedback counters, tiers, suggest, delete, switch."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from tests.world import World, ts
from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.defs.learning.learnings import LEARNING_DELETIONS_DTYPES, build_learnings
from tradingmem_assets.defs.learning.review import learning_id_for
from tradingmem_assets.defs.learning.suggest import rank_learnings, suggest
from tradingmem_assets.defs.learning.tiers import ToolTierError, load_tool_tiers, parse_tool_tiers
from tradingmem_assets.settings import SETTINGS

AS_OF = ts("2024-07-01")
TIERS = load_tool_tiers(SETTINGS.tools_file)
LEARNING = ["raw/agent_turns", "raw/learning_feedback", "learnings", "learning_reviews"]

FUNDING = [
    ("get_funding_rate", {"symbol": "BTCUSD"}),
    ("get_order_book", {"symbol": "BTCUSD", "depth": 20}),
    ("risk_check", {"symbol": "BTCUSD", "side": "buy"}),
    ("create_trade_preview", {"symbol": "BTCUSD", "side": "buy", "notional": 2500}),
]
RESEARCH = [
    ("get_fundamentals", {"symbol": "AAPLX"}),
    ("get_news", {"symbol": "AAPLX", "days": 7}),
    ("get_price_history", {"symbol": "AAPLX", "days": 90}),
]
TRADE = [
    ("get_quote", {"symbol": "ETHUSD"}),
    ("risk_check", {"symbol": "ETHUSD"}),
    ("place_order", {"side": "buy"}),
]

SECRETS = {
    "api_key": "sk-live-4f9Qz7XbT2mLk8Rv1Nw3Yp6Hs0Jd5Ge9",
    "token": "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "password": "Tr0ub4dor&3-Xq9zK",
    "authorization": "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhY2N0In0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36",
    "private_key": "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
    "note": "backup words: abandon ability able about above absent absorb abstract absurd abuse access "
    "accident",
}


def calls_json(calls, failed_at: int | None = None) -> str:
    return json.dumps(
        [{"tool_name": n, "args": a, "ok": i != failed_at} for i, (n, a) in enumerate(calls)],
        ensure_ascii=False,
    )


def turn(
    tid: str, msg: str, calls, *, at: str = "2024-06-01 10:00", completed=True, explicit=True, failed_at=None
):
    return {
        "turn_id": tid,
        "session_id": "s1",
        "started_at": ts(at),
        "user_message": msg,
        "route": "trading",
        "tool_calls": calls if isinstance(calls, str) else calls_json(calls, failed_at),
        "completed": completed,
        "explicit_learn": explicit,
    }


def feedback(fid: str, lid: str, adopted: bool, success: bool | None, at: str = "2024-06-10 10:00"):
    return {
        "feedback_id": fid,
        "learning_id": lid,
        "turn_id": None,
        "adopted": adopted,
        "success": success,
        "ts": ts(at),
    }


def frame(table: str, rows: list[dict]) -> pl.DataFrame:
    schema = LANDING_TABLES[table].polars_schema()
    return pl.DataFrame([{c: r.get(c) for c in schema} for r in rows], schema=schema, orient="row")


def build(turns, fb=(), deleted=(), threshold=7.0, min_calls=3):
    return build_learnings(
        frame("agent_turns", turns),
        frame("learning_feedback", list(fb)),
        pl.DataFrame(
            {
                "learning_id": list(deleted),
                "deleted_at": [AS_OF] * len(deleted),
                "reason": ["x"] * len(deleted),
            },
            schema=LEARNING_DELETIONS_DTYPES,
        ),
        TIERS,
        as_of=AS_OF,
        min_calls=min_calls,
        threshold=threshold,
    )


def review(result, turn_id: str) -> dict:
    return result.reviews.filter(pl.col("turn_id") == turn_id).to_dicts()[0]


# --------------------------------------------------------------------------------------- core


def test_learning_id_is_l_plus_sha256_of_normalized_trigger_and_tool_names():
    expected = "l_" + hashlib.sha256(b"check btc funding then size a long|a,b").hexdigest()[:16]
    assert learning_id_for("  Check BTC funding then size a LONG \n", ["a", "b"]) == expected
    result = build([turn("t1", "Check BTC funding then size a long", FUNDING)])
    names = ",".join(n for n, _ in FUNDING)
    raw = f"check btc funding then size a long|{names}".encode()
    assert result.learnings["learning_id"].to_list() == ["l_" + hashlib.sha256(raw).hexdigest()[:16]]


def test_only_explicit_completed_all_ok_turns_with_enough_calls_are_reviewed():
    result = build(
        [
            turn("ok", "check btc funding then size a long", FUNDING),
            turn("implicit", "check btc funding then size a long", FUNDING, explicit=False),
            turn("unfinished", "check btc funding then size a long", FUNDING, completed=False),
            turn("failed", "check btc funding then size a long", FUNDING, failed_at=1),
            turn("short", "quote eth", FUNDING[:2]),
            turn("broken", "check btc funding", '[{"args": {}, "ok": true}]'),
        ]
    )
    got = {r["turn_id"]: (r["outcome"], r["reason"]) for r in result.reviews.to_dicts()}
    assert got["ok"][0] == "created"
    assert got["implicit"] == ("not_reviewed", "not_explicit_learn")
    assert got["unfinished"] == ("not_reviewed", "not_completed")
    assert got["failed"] == ("not_reviewed", "failed_tool_call")
    assert got["short"] == ("not_reviewed", "too_few_calls: 2 < 3")
    assert got["broken"] == ("rejected", "malformed_tool_calls: call 1 has no tool_name")
    assert result.learnings.height == 1 and result.reviews.height == 6


def test_documented_score_decides_below_threshold():
    repeated = [("get_quote", {"symbol": "X"})] * 3 + [("mystery_tool", {})]
    result = build(
        [
            turn("best", "check btc funding then size a long", FUNDING),  # 4+2+1+1+1+1
            turn("weak", "quote", repeated, at="2024-06-02 10:00"),  # 4+2+1+0+0+0 = 7
            turn("long", "check books", [("get_quote", {"i": i}) for i in range(13)]),  # 4+0+0+1+0+1
        ],
        threshold=7,
    )
    assert review(result, "best")["score"] == 10
    assert review(result, "weak")["score"] == 7 and review(result, "weak")["outcome"] == "created"
    assert review(result, "long")["score"] == 6
    assert review(result, "long") | {"started_at": None} == {
        "turn_id": "long",
        "started_at": None,
        "outcome": "below_threshold",
        "reason": "score 6 < threshold 7",
        "score": 6,
        "candidate_learning_id": None,
        "learning_id": None,
    }
    assert result.learnings.height == 2


def test_similar_trigger_with_same_tools_updates_counters_instead_of_inserting():
    result = build(
        [
            turn("t1", "check BTC funding then size a long", FUNDING, at="2024-06-01 10:00"),
            turn("t2", "Check BTC funding, then size a long", FUNDING, at="2024-06-02 10:00"),
            turn(
                "t3", "check btc funding then size a long", FUNDING[:3] + FUNDING[:1], at="2024-06-03 10:00"
            ),
            turn("t4", "research AAPLX fundamentals before earnings", RESEARCH, at="2024-06-04 10:00"),
        ]
    )
    first = learning_id_for("check BTC funding then size a long", [n for n, _ in FUNDING])
    assert review(result, "t2")["outcome"] == "merged" and review(result, "t2")["learning_id"] == first
    assert review(result, "t3")["outcome"] == "created"  # same words, other tool names: its own learning
    row = result.learnings.filter(pl.col("learning_id") == first).to_dicts()[0]
    assert (row["success_count"], row["turn_count"], row["trigger"]) == (
        2,
        2,
        "check BTC funding then size a long",
    )
    assert row["created_at"] == ts("2024-06-01 10:00") and row["last_used_at"] == ts("2024-06-02 10:00")
    assert result.learnings.height == 3


def test_feedback_counts_adoption_outcomes_and_decays_weight_per_ignore():
    lid = learning_id_for("check btc funding then size a long", [n for n, _ in FUNDING])
    result = build(
        [turn("t1", "check btc funding then size a long", FUNDING)],
        [
            feedback("f1", lid, True, True),
            feedback("f2", lid, True, False),
            feedback("f3", lid, False, None),
            feedback("f4", lid, False, None),
            feedback("f5", lid, False, False),
            feedback("f6", lid, True, None),
            feedback("f7", "l_0000000000000000", True, True),
            feedback("f8", lid, True, True, at="2024-08-01 00:00"),  # after as_of: not yet visible
        ],
    )
    row = result.learnings.to_dicts()[0]
    assert (row["success_count"], row["failure_count"], row["ignored_count"]) == (2, 1, 3)
    assert row["weight"] == pytest.approx(0.95**3)
    assert row["last_used_at"] == ts("2024-06-10 10:00")
    assert result.feedback_counts() == {
        "adopted_failure": 1,
        "adopted_outcome_unknown": 1,
        "adopted_success": 1,
        "ignored": 3,
        "unknown_learning": 1,
    }


def test_each_learning_stores_the_highest_tier_its_sequence_needs():
    result = build(
        [
            turn("t1", "research AAPLX fundamentals before earnings", RESEARCH),
            turn("t2", "place a limit buy for ETH", TRADE),
            turn(
                "t3",
                "check social sentiment",
                [("get_news", {}), ("fetch_social_sentiment", {}), ("get_quote", {})],
            ),
        ]
    )
    tiers = dict(
        result.learnings.join(result.reviews.select("turn_id", "learning_id"), on="learning_id")
        .select("turn_id", "required_tier")
        .rows()
    )
    assert tiers == {"t1": 1, "t2": 4, "t3": 4}  # place_order is 4; an undeclared tool counts as 4


def test_suggest_ranks_by_similarity_times_weight_and_never_exceeds_max_tier():
    lid_trade = learning_id_for("buy eth with a limit order now", [n for n, _ in TRADE])
    result = build(
        [
            turn("t1", "buy eth with a limit order now", TRADE),
            turn("t2", "buy eth with a limit order", RESEARCH, at="2024-06-02 10:00"),
            turn("t3", "summarize the macro outlook", RESEARCH, at="2024-06-03 10:00"),
        ],
        [
            feedback(
                f"f{i}", learning_id_for("buy eth with a limit order", [n for n, _ in RESEARCH]), False, None
            )
            for i in range(30)
        ],
    )
    ranked = rank_learnings(result.learnings, "buy eth with a limit order", k=3)
    assert ranked["learning_id"].to_list()[0] == lid_trade  # the exact match was ignored 30 times
    assert ranked["score"].to_list() == sorted(ranked["score"].to_list(), reverse=True)
    assert ranked.filter(pl.col("learning_id") == lid_trade)["required_tier"].item() == 4
    capped = rank_learnings(result.learnings, "buy eth with a limit order", k=3, max_tier=3)
    assert capped.height == 1 and capped["required_tier"].max() <= 3  # the macro learning shares no word
    assert rank_learnings(result.learnings, "buy eth", k=1)["learning_id"].to_list() == [lid_trade]


def test_a_tombstoned_learning_is_not_rebuilt_from_its_turns():
    lid = learning_id_for("check btc funding then size a long", [n for n, _ in FUNDING])
    result = build(
        [
            turn("t1", "check btc funding then size a long", FUNDING),
            turn("t2", "Check BTC funding, then size a long", FUNDING, at="2024-06-03 10:00"),
        ],
        [feedback("f1", lid, True, True)],
        deleted=[lid],
    )
    assert result.learnings.height == 0
    assert set(result.reviews["outcome"]) == {"suppressed_deleted"}
    assert result.feedback_counts() == {"learning_deleted": 1}


def test_tools_file_with_a_bad_tier_is_refused_with_its_name():
    with pytest.raises(ToolTierError, match="tool 'place_order' has tier 7"):
        parse_tool_tiers({"tools": {"get_quote": 1, "place_order": 7}}, "tools.yaml")
    with pytest.raises(ToolTierError, match="top-level 'tools:'"):
        parse_tool_tiers(["get_quote"], "tools.yaml")
    assert TIERS.tier("never_declared") == 4


# --------------------------------------------------------------------------------------- assets


def secret_world(world: World) -> None:
    turns = []
    for i, (key, secret) in enumerate(SECRETS.items()):
        calls = [(FUNDING[0][0], {**FUNDING[0][1], key: secret}), *FUNDING[1:]]
        turns.append(
            turn(f"s{i}", f"check btc funding then size a long {i}", calls, at=f"2024-06-0{i + 1} 10:00")
        )
    turns.append(turn("m1", f"my key is {SECRETS['api_key']} please research AAPLX", RESEARCH))
    # the same message again: each distinct text is redacted once, and every turn of it gets that
    again = f"my key is {SECRETS['api_key']} please research AAPLX"
    turns.append(turn("m2", again, RESEARCH, at="2024-06-21 10:00"))
    turns.append(turn("r1", "research AAPLX fundamentals before earnings", RESEARCH, at="2024-06-20 10:00"))
    world.write("agent_turns", turns)
    world.write("learning_feedback", [])


def all_text(world: World, table: str) -> str:
    cols = [
        c
        for (c,) in world.rows(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = ? AND table_schema = 'main'",
            [table],
        )
    ]
    rows = world.rows(f"SELECT {', '.join(f'CAST({c} AS VARCHAR)' for c in cols)} FROM main.{table}")
    return "\n".join(str(v) for row in rows for v in row)


def test_secrets_in_args_never_reach_a_stored_learning(world: World):
    secret_world(world)
    result = world.materialize(LEARNING)
    [check] = [c for c in result.get_asset_check_evaluations() if c.check_name == "learnings_invariants"]
    assert check.passed
    assert world.rows("SELECT count(*) FROM learnings")[0][0] >= 2
    stored = all_text(world, "learnings") + all_text(world, "learning_reviews")
    fragments = [
        *SECRETS.values(),
        "4f9Qz7XbT2mLk8Rv1Nw3",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "Tr0ub4dor",
        "abandon ability able",
        "4c0883a69102937d",
    ]
    for fragment in fragments:
        assert fragment not in stored, fragment
    assert "[REDACTED:" in stored  # the sequences are kept, with placeholders where secrets were


def test_rematerializing_unchanged_inputs_changes_no_row(world: World):
    secret_world(world)
    world.materialize(LEARNING)
    before = {t: world.query(f"SELECT * FROM {t} ORDER BY ALL") for t in ("learnings", "learning_reviews")}
    world.materialize(LEARNING)
    for table, frame_before in before.items():
        assert world.query(f"SELECT * FROM {table} ORDER BY ALL").equals(frame_before)


def test_cli_delete_sticks_across_rematerialization_and_suggest_reads_the_warehouse(world: World):
    from tradingmem_assets.cli import main

    secret_world(world)
    world.materialize(LEARNING)
    env = {"TRADINGMEM_DB": str(world.db)}
    runner = CliRunner()
    top = json.loads(runner.invoke(main, ["learnings", "top", "--json"], env=env).output)
    assert len(top["learnings"]) == world.rows("SELECT count(*) FROM learnings")[0][0]
    target = world.rows(
        "SELECT learning_id FROM learnings WHERE trigger = 'research AAPLX fundamentals before earnings'"
    )[0][0]

    got = suggest("research AAPLX fundamentals", k=5, database=world.db)
    assert got[0]["learning_id"] == target and got[0]["tool_sequence"][0]["tool_name"] == "get_fundamentals"
    out = json.loads(
        runner.invoke(main, ["learnings", "suggest", "research AAPLX fundamentals", "--json"], env=env).output
    )
    assert out["suggestions"][0]["learning_id"] == target

    deleted = runner.invoke(main, ["learnings", "delete", target, "--json"], env=env)
    assert deleted.exit_code == 0 and json.loads(deleted.output)["deleted"] is True
    world.materialize(LEARNING)
    assert world.rows("SELECT count(*) FROM learnings WHERE learning_id = ?", [target])[0][0] == 0
    assert world.rows("SELECT outcome FROM learning_reviews WHERE turn_id = 'r1'") == [
        ("suppressed_deleted",)
    ]
    missing = runner.invoke(main, ["learnings", "delete", "l_ffffffffffffffff"], env=env)
    assert missing.exit_code != 0 and "no learning 'l_ffffffffffffffff'" in missing.output


DISABLED_SCRIPT = """
import json, sys
from pathlib import Path
import dagster as dg
from click.testing import CliRunner
from tests.world import World
from tests.learning.test_learnings import secret_world, LEARNING
from tradingmem_assets.cli import main
from tradingmem_assets.defs.learning.suggest import suggest

with dg.instance_for_test() as instance:
    world = World(Path(sys.argv[1]), instance)
    secret_world(world)
    result = world.materialize(LEARNING)
    tables = [t for (t,) in world.rows(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'")]
    meta = result.asset_materializations_for_node("learnings")[0].metadata
    cli = CliRunner().invoke(main, ["learnings", "suggest", "research AAPLX", "--json"],
                             env={"TRADINGMEM_DB": str(world.db)})
    print(json.dumps({"tables": tables, "written": meta["written"].value, "success": result.success,
                      "suggest": suggest("research AAPLX", database=world.db),
                      "cli": json.loads(cli.output)}))
"""


def test_learning_enabled_false_turns_off_review_writes_and_suggestions(tmp_path: Path):
    env = {**os.environ, "LEARNING_ENABLED": "false", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [sys.executable, "-c", DISABLED_SCRIPT, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["success"] and got["written"] is False
    assert "learnings" not in got["tables"] and "learning_reviews" not in got["tables"]
    assert got["suggest"] == []
    assert got["cli"] == {
        "enabled": False,
        "suggestions": [],
        "note": "learning is disabled (LEARNING_ENABLED=false)",
    }
