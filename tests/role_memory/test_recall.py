"""Recall: exact filters first (role, symbol, scenario, eligible, non-quarantined, reflected, point in
time), TF-IDF only orders what passed them, so the best-matching text never leaks through."""

import shutil
from datetime import UTC, datetime

import duckdb
import polars as pl
import pytest

from tests.role_memory.test_admission import DOWNSTREAM, PIPELINE
from tests.role_memory.world import Chain, band, bars, fill_price_for
from tests.world import World
from tradingmem_assets.defs.role_memory.recall import RoleMemoryUnavailableError, require_active, search_cases
from tradingmem_assets.defs.role_memory.recall_tfidf import RecallIndexOutdatedError
from tradingmem_assets.lib import tables
from tradingmem_assets.settings import SETTINGS

QUERY = "short squeeze on thin liquidity after the earnings gap"
FIRST, SECOND = "2024-02-20T00:00:00Z", "2024-03-01T00:00:00Z"
DECOYS = ["other_role", "quarantined", "ineligible_later", "unreflected", "variance"]

pytestmark = pytest.mark.skipif(
    SETTINGS.role_memory_mode == "off", reason="ROLE_MEMORY_MODE=off: nothing to recall"
)


def recall_chain(*, quarantined_source: str | None = "manual_agent", automated_later: bool = False) -> Chain:
    loss, win, flat = fill_price_for(-band() * 2), fill_price_for(band() * 2), fill_price_for(0.0)
    return (
        Chain()
        .add("mine_a", decision_text="buy AAA on a valuation gap", fill_price=loss)
        .add("mine_b", decision_text="buy AAA on a momentum breakout", scenario="rate_cut", fill_price=win)
        .add("mine_sym", symbol="BBB", decision_text=QUERY + " BBB", fill_price=loss)
        .add(
            "future",
            decision_text="earnings gap fade",
            fill_price=loss,
            closed_at=datetime(2024, 2, 18, tzinfo=UTC),
        )
        # decoys: each has the query as its text, and each must stay invisible to valuation's recall
        .add(
            "other_role",
            role_id="trend_follower",
            skill_id="crypto_trading",
            decision_text=QUERY,
            evidence='["price_history", "volume"]',
            fill_price=loss,
        )
        .add("quarantined", decision_text=QUERY, fill_price=loss, source=quarantined_source)
        .add("ineligible_later", decision_text=QUERY, fill_price=loss, automation_flag=automated_later)
        .add("unreflected", decision_text=QUERY, fill_price=loss, closed_at=datetime(2024, 2, 25, tzinfo=UTC))
        .add("variance", decision_text=QUERY, fill_price=flat)
    )


@pytest.fixture(scope="module")
def recall_world(tmp_path_factory, instance) -> World:
    world = World(tmp_path_factory.mktemp("recall"), instance)
    extra = {"price_bars": bars() + bars("BBB")}
    recall_chain().write_world(world, extra=extra)
    world.materialize(PIPELINE, as_of=FIRST)
    # the chain changes after the first reflections: one source turns out unknown, one was automated
    recall_chain(quarantined_source=None, automated_later=True).write_world(world, extra=extra)
    world.materialize(["raw/trade_executions", *DOWNSTREAM], as_of=SECOND)
    return world


def hits(world: World, role="valuation", query=QUERY, **kwargs) -> list:
    con = duckdb.connect(str(world.db), read_only=True)
    try:
        return search_cases(con, role, query, **kwargs)
    finally:
        con.close()


def decision_of(world: World) -> dict[str, str]:
    return dict(world.rows("SELECT case_id, decision_id FROM role_cases"))


def test_the_decoys_really_match_best_and_exist_in_the_tables(recall_world: World):
    states = dict(
        recall_world.rows(
            "SELECT decision_id, status || ':' || coalesce((SELECT max(classification) "
            "FROM role_reflections rr "
            "WHERE rr.case_id = rc.case_id), 'unreflected') FROM role_cases rc"
        )
    )
    assert states["other_role"] == "eligible:logic_error"
    assert states["quarantined"] == "quarantined:logic_error"  # reflected while it still looked manual
    assert states["ineligible_later"] == "ineligible:logic_error"
    assert states["unreflected"] == "eligible:unreflected"
    assert states["variance"] == "eligible:variance"


def test_recall_never_returns_another_roles_quarantined_ineligible_unreflected_or_no_guidance_case(
    recall_world,
):
    got = [decision_of(recall_world)[h.case_id] for h in hits(recall_world, k=50)]
    assert sorted(got) == ["future", "mine_a", "mine_b", "mine_sym"]
    assert not set(got) & set(DECOYS)
    assert all(h.role_id == "valuation" for h in hits(recall_world, k=50))


def test_another_role_sees_only_its_own_cases(recall_world: World):
    got = [decision_of(recall_world)[h.case_id] for h in hits(recall_world, role="trend_follower", k=50)]
    assert got == ["other_role"]
    assert hits(recall_world, role="valuatio") == [] and hits(recall_world, role="VALUATION") == []


def test_symbol_and_scenario_filters_are_exact_even_when_text_matches_best(recall_world: World):
    best = hits(recall_world, k=1)[0]
    assert decision_of(recall_world)[best.case_id] == "mine_sym"  # its text is the query
    got = [decision_of(recall_world)[h.case_id] for h in hits(recall_world, symbol="AAA", k=50)]
    assert sorted(got) == ["future", "mine_a", "mine_b"]
    got = [decision_of(recall_world)[h.case_id] for h in hits(recall_world, scenario="rate_cut", k=50)]
    assert got == ["mine_b"]


def test_point_in_time_recall_never_sees_a_lesson_from_its_own_future(recall_world: World):
    # a lesson is visible from the instant it was knowable (close + 7 maturity days), not from the
    # batch that happened to write it: "future" closed 2024-02-18 and matured on 2024-02-25
    before_future = [
        decision_of(recall_world)[h.case_id] for h in hits(recall_world, as_of="2024-02-24T23:59:00Z", k=50)
    ]
    assert sorted(before_future) == ["mine_a", "mine_b", "mine_sym"]
    assert hits(recall_world, as_of=datetime(2024, 2, 15, 14, tzinfo=UTC)) == []  # before any matured
    at_maturity = [
        decision_of(recall_world)[h.case_id] for h in hits(recall_world, as_of="2024-02-25T00:00:00Z", k=50)
    ]
    assert "future" in at_maturity


def test_ranking_orders_by_tfidf_over_decision_text_and_lesson_and_k_limits(recall_world: World):
    top = hits(recall_world, query="momentum breakout", symbol="AAA", k=2)
    assert len(top) == 2 and decision_of(recall_world)[top[0].case_id] == "mine_b"
    assert top[0].classification == "sound" and top[0].lesson is None  # a success pattern
    assert top[0].score > top[1].score
    lesson = hits(recall_world, query="overpaid_for_growth", symbol="AAA", k=1)[0]
    assert lesson.classification == "logic_error" and "overpaid_for_growth" in lesson.lesson
    with pytest.raises(ValueError, match="k must be"):
        hits(recall_world, k=0)


def test_recall_outside_active_mode_is_refused_with_a_clear_message():
    with pytest.raises(RoleMemoryUnavailableError, match="ROLE_MEMORY_MODE is 'shadow'"):
        require_active("recall", mode="shadow")
    require_active("recall", mode="active")


def test_role_cases_keeps_the_recall_index_unless_a_recallable_case_changed(recall_world, tmp_path):
    world = World(tmp_path / "copy", recall_world.instance)
    shutil.copy(recall_world.db, world.db)
    shutil.copytree(recall_world.landing, world.landing, dirs_exist_ok=True)

    def role_cases_run(*keys: str) -> str:
        result = world.materialize([*keys, "role_cases"], as_of=SECOND)
        [m] = [m for m in result.asset_materializations_for_node("role_cases")]
        return m.metadata["recall_index"].value

    assert role_cases_run() == "unchanged"  # nothing changed: index and term statistics kept
    decisions = world.landing / "trading_decisions.parquet"
    frame = pl.read_parquet(decisions)
    text = "sold AAA into a liquidity squeeze"
    frame.with_columns(
        decision_text=pl.when(pl.col("decision_id") == "mine_a").then(pl.lit(text)).otherwise("decision_text")
    ).write_parquet(decisions)
    assert role_cases_run("raw/trading_decisions") == "rebuilt"  # without role_reflections running
    [hit] = [h for h in hits(world, k=50) if decision_of(world)[h.case_id] == "mine_a"]
    assert hit.decision_text == text


def test_role_cases_renews_a_term_index_an_older_version_wrote(recall_world, tmp_path):
    """Terms stored with s = 1 + ln tf (the previous layout) are refused by a read, and the next
    role_cases rebuilds them although no case changed."""
    world = World(tmp_path / "copy", recall_world.instance)
    shutil.copy(recall_world.db, world.db)
    shutil.copytree(recall_world.landing, world.landing, dirs_exist_ok=True)
    want = hits(world, k=50)
    with duckdb.connect(str(world.db)) as con:
        for table in (tables.ROLE_RECALL_TERMS, tables.ROLE_RECALL_POSTINGS):
            con.execute(
                f"CREATE OR REPLACE TABLE {table} AS SELECT * EXCLUDE (tf), 1 + ln(tf) AS s FROM {table}"
            )
    with pytest.raises(RecallIndexOutdatedError, match="older version"):
        hits(world, k=50)
    result = world.materialize(["role_cases"], as_of=SECOND)
    [m] = [m for m in result.asset_materializations_for_node("role_cases")]
    assert m.metadata["recall_index"].value == "rebuilt"
    assert hits(world, k=50) == want and want


def test_the_index_tie_is_a_key_looked_up_through_an_art_index(recall_world: World):
    """A read fetches its k rows by tie: unique across roles, with an ART index on it."""
    [(rows, ties)] = recall_world.rows("SELECT count(*), count(DISTINCT tie) FROM role_recall_index")
    assert rows == ties and rows > 1
    indexes = recall_world.rows(
        "SELECT index_name, expressions FROM duckdb_indexes() WHERE table_name = 'role_recall_index'"
    )
    assert indexes == [("role_recall_index_tie", "[tie]")]
