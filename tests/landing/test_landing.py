"""Landing ingestion: every row read is accepted into raw or rejected with its file, row and reason."""

import json

import pytest

from tests.world import World, ts

DECISION = {
    "decision_id": "d1",
    "role_id": "valuation",
    "skill_id": "equity_research",
    "symbol": "GOOG",
    "direction": "long",
    "account_id": "a1",
    "market": "spot",
    "scenario": None,
    "decision_text": "x",
    "evidence": '["fundamentals"]',
    "preview_id": "p1",
    "decided_at": ts("2024-01-02 10:00"),
}

DECISIONS_CSV = """decision_id,role_id,skill_id,symbol,direction,account_id,market,scenario,decision_text,evidence,preview_id,decided_at,unknown_extra
d1,valuation,equity_research,GOOG,long,a1,spot,,buy,"[""fundamentals""]",p1,2024-01-02T10:00:00Z,ignored
d2,valuation,equity_research,GOOG,sideways,a1,spot,,buy,[],p2,2024-01-02T10:00:00Z,ignored
d3,valuation,equity_research,GOOG,short,a1,spot,,sell,[],p3,not-a-time,ignored
d1,valuation,equity_research,GOOG,short,a1,spot,,dup,[],p4,2024-01-02T11:00:00Z,ignored
,valuation,equity_research,GOOG,short,a1,spot,,nokey,[],p5,2024-01-02T11:00:00Z,ignored
d6,,,MSFT,short,a2,perp,breakout,"no role",[1,2,2024-01-03 09:30:00+02:00,ignored
d7,trend_follower,crypto_trading,BTCUSD,long,a2,perp,,ok,"[""volume""]",,2024-01-03 09:30:00,ignored
"""


def rejects(world: World, table: str) -> list[tuple]:
    return world.rows(
        "SELECT row_number, row_key, reason FROM raw_rejects WHERE table_name = ? ORDER BY row_number",
        [table],
    )


def test_good_and_bad_rows_are_split_with_exact_reasons(world: World):
    world.write_text("trading_decisions.csv", DECISIONS_CSV)
    result = world.materialize(["raw/trading_decisions"])
    accepted = world.rows("SELECT decision_id, decided_at FROM raw.trading_decisions ORDER BY decision_id")
    assert accepted == [("d1", ts("2024-01-02 10:00")), ("d7", ts("2024-01-03 09:30"))]
    assert rejects(world, "trading_decisions") == [
        (2, "d2", "direction: isin(['long', 'short'])"),
        (3, "d3", "bad_type:decided_at"),
        (4, "d1", "duplicate_key"),
        (5, None, "decision_id: not_nullable"),
        (6, "d6", "bad_json:evidence"),
    ]
    raw_row = json.loads(world.rows("SELECT raw_row FROM raw_rejects WHERE row_number = 3")[0][0])
    assert raw_row["decided_at"] == "not-a-time" and "unknown_extra" not in raw_row
    meta = result.asset_materializations_for_node("raw__trading_decisions")[0].metadata
    assert (meta["rows_read"].value, meta["accepted"].value, meta["rejected"].value) == (7, 2, 5)
    [check] = [
        c
        for c in result.get_asset_check_evaluations()
        if c.check_name == "rows_read_equal_accepted_plus_rejected"
    ]
    assert check.passed and check.check_name == "rows_read_equal_accepted_plus_rejected"


def test_parquet_and_csv_landing_give_the_same_raw_rows(world: World, tmp_path, instance):
    world.write("trading_decisions", [DECISION], fmt="parquet")
    world.materialize(["raw/trading_decisions"])
    other = World(tmp_path / "csv", instance)
    other.write("trading_decisions", [DECISION], fmt="csv")
    other.materialize(["raw/trading_decisions"])
    q = "SELECT * FROM raw.trading_decisions"
    assert world.query(q).equals(other.query(q))


def test_a_table_without_landing_file_is_an_empty_table(world: World):
    result = world.materialize(["raw/kb_documents"])
    assert result.success
    assert world.rows("SELECT count(*) FROM raw.kb_documents") == [(0,)]
    cols = [
        r[0]
        for r in world.rows(
            "SELECT column_name FROM information_schema.columns WHERE table_name='kb_documents'"
        )
    ]
    assert cols == ["doc_id", "title", "visibility", "body"]


def test_an_unreadable_file_fails_the_run_naming_the_file_and_keeps_the_old_table(world: World):
    world.write("trading_decisions", [DECISION])
    world.materialize(["raw/trading_decisions"])
    (world.landing / "trading_decisions.parquet").unlink()
    broken = world.write_text("trading_decisions.parquet", "this is not parquet")
    result = world.materialize(["raw/trading_decisions"], raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert str(broken) in failure.step_failure_data.user_failure_data.description
    assert world.rows("SELECT decision_id FROM raw.trading_decisions") == [("d1",)]


def test_a_missing_required_column_is_a_clear_error(world: World):
    world.write_text("trade_previews.csv", "preview_id,created_at\np1,2024-01-01T00:00:00Z\n")
    result = world.materialize(["raw/trade_previews"], raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "decision_id" in failure.step_failure_data.user_failure_data.description


def test_two_landing_files_for_one_table_are_refused(world: World):
    world.write("trade_previews", [])
    world.write_text("trade_previews.csv", "preview_id,decision_id,created_at\n")
    result = world.materialize(["raw/trade_previews"], raise_on_error=False)
    assert not result.success


@pytest.mark.parametrize(
    ("table", "row", "reason"),
    [
        (
            "trade_fills",
            {
                "fill_id": "f",
                "execution_id": "e",
                "qty": -1.0,
                "price": 1.0,
                "fee": 0.0,
                "filled_at": ts("2024-01-01"),
            },
            "qty: greater_than(0)",
        ),
        (
            "benchmark_profiles",
            {"profile_id": "p", "horizon_days": 7, "min_coverage": 1.5},
            "min_coverage: less_than_or_equal_to(1)",
        ),
        (
            "questionnaire_results",
            {
                "assessment_id": "q",
                "customer_id": "c",
                "investor_type": "C9",
                "assessed_at": ts("2024-01-01"),
            },
            "investor_type: isin(['C1', 'C2', 'C3', 'C4', 'C5'])",
        ),
        (
            "kb_documents",
            {"doc_id": "k", "title": "t", "visibility": "secret", "body": "b"},
            "visibility: isin(['public', 'internal'])",
        ),
    ],
)
def test_value_rules_reject_with_the_rule_as_reason(world: World, table, row, reason):
    world.write(table, [row])
    world.materialize([f"raw/{table}"])
    assert [r[2] for r in rejects(world, table)] == [reason]


def test_rematerializing_replaces_a_tables_rejects_instead_of_piling_them_up(world: World):
    world.write_text("trading_decisions.csv", DECISIONS_CSV)
    world.materialize(["raw/trading_decisions"])
    world.materialize(["raw/trading_decisions"])
    assert world.rows("SELECT count(*) FROM raw_rejects") == [(5,)]


RAGGED_CSV = """decision_id,role_id,skill_id,symbol,direction,account_id,market,scenario,decision_text,evidence,preview_id,decided_at
d1,valuation,equity_research,GOOG,long,a1,spot,,buy,[],p1,2024-01-02T10:00:00Z
d2,valuation,equity_research,GOOG,long,a1,spot,,buy,[],p2,2024-01-02T10:00:00Z,one too many,and another
d3,valuation,equity_research,GOOG,long,a1,spot
d4,valuation,equity_research,GOOG,short,a1,spot,,"sell, then wait",[],p4,2024-01-02T11:00:00Z
"""


def test_a_ragged_csv_line_becomes_a_reject_row_with_its_raw_line(world: World):
    world.write_text("trading_decisions.csv", RAGGED_CSV)
    result = world.materialize(["raw/trading_decisions"])
    assert result.success
    assert [r[0] for r in world.rows("SELECT decision_id FROM raw.trading_decisions ORDER BY 1")] == [
        "d1",
        "d4",
    ]
    got = world.rows(
        "SELECT row_number, reason, raw_row FROM raw_rejects WHERE table_name = 'trading_decisions' "
        "ORDER BY row_number"
    )
    assert [(n, reason) for n, reason, _ in got] == [
        (2, "ragged_line: 14 fields where the header has 12"),
        (3, "ragged_line: 7 fields where the header has 12"),
    ]
    assert json.loads(got[0][2])["line"].startswith("d2,valuation") and "and another" in got[0][2]
    [check] = [
        c
        for c in result.get_asset_check_evaluations()
        if c.check_name == "rows_read_equal_accepted_plus_rejected"
    ]
    assert check.passed and check.metadata["rows_read"].value == 4


def test_the_first_valid_row_of_a_key_wins_and_later_ones_are_duplicates(world: World):
    """A row refused for its value does not take its key: a later valid row of that key is accepted."""
    decisions = []
    for i in range(23):
        row = {**DECISION, "decision_id": f"d{i % 17}", "preview_id": f"p{i}", "decision_text": f"t{i}"}
        if i % 5 == 3:
            row["direction"] = "sideways"  # a bad value: rejected, its key free for a later row
        decisions.append(row)
    world.write("trading_decisions", decisions)
    result = world.materialize(["raw/trading_decisions"])
    [materialization] = result.asset_materializations_for_node("raw__trading_decisions")
    accepted = world.rows("SELECT decision_id, preview_id FROM raw.trading_decisions")
    rejected = rejects(world, "trading_decisions")
    counts = {k: materialization.metadata[k].value for k in ("rows_read", "accepted", "rejected")}
    # d8 and d13 only ever come with a bad value; d0..d5 come back at rows 18..23
    assert counts == {"rows_read": 23, "accepted": 15, "rejected": 8}
    assert ("d0", "p0") in accepted and ("d0", "p17") not in accepted  # the first valid occurrence won
    assert ("d3", "p20") in accepted  # d3's first row was rejected for its value: no duplicate
    assert [row for row, _, reason in rejected if reason == "duplicate_key"] == [18, 20, 22, 23]
    # accepted rows keep the file's order
    assert [p for _, p in accepted] == sorted((p for _, p in accepted), key=lambda p: int(p[1:]))


@pytest.mark.parametrize("extra", ["file_row_number", "__row_number", "__ragged_line", "Decision_ID"])
def test_an_unknown_column_is_ignored_whatever_its_name(world: World, extra):
    """Names the ingestion uses for itself, or a table column's in another case, are just unknown."""
    import polars as pl

    world.write("trading_decisions", [DECISION, {**DECISION, "decision_id": "d2", "direction": "up"}])
    path = world.landing / "trading_decisions.parquet"
    pl.read_parquet(path).with_columns(pl.lit("7").alias(extra)).write_parquet(path)
    world.materialize(["raw/trading_decisions"])
    assert world.rows("SELECT decision_id FROM raw.trading_decisions") == [("d1",)]
    [(row, key, reason)] = rejects(world, "trading_decisions")
    assert (row, key, reason) == (2, "d2", "direction: isin(['long', 'short'])")
    raw_row = json.loads(world.rows("SELECT raw_row FROM raw_rejects")[0][0])
    assert extra not in raw_row and raw_row["direction"] == "up"


def test_a_landing_column_names_only_known_rules_and_vocabularies():
    from tradingmem_assets.defs.landing.invariants import parse_landing_tables
    from tradingmem_assets.lib import vocabulary

    text = '[t]\nkey = ["a"]\ndescription = "T."\ncolumns = [{ name = "a", isin = "DIRECTIONS" }]\n'
    (table,) = parse_landing_tables(text)
    assert table.key == ("a",) and table.columns[0].isin is vocabulary.DIRECTIONS
    with pytest.raises(ValueError, match="t.a: unknown"):
        parse_landing_tables(text.replace("isin", "in_set"))
    with pytest.raises(ValueError, match="t.a: unknown"):
        parse_landing_tables(text.replace('isin = "DIRECTIONS"', 'kind = "text"'))
