"""memory_efficacy materialized through Dagster on the crafted world (tests/efficacy/world.py)."""

from datetime import UTC, datetime

import pytest

from tests.efficacy import world as crafted
from tests.efficacy.conftest import EFFICACY_UPSTREAM
from tests.world import DEFS, World
from tradingmem_assets.defs.efficacy.queries import memory_efficacy
from tradingmem_assets.defs.efficacy.verdicts import MEMORY_EFFICACY_DTYPES
from tradingmem_assets.defs.role_memory.admission import registry_frame
from tradingmem_assets.lib.registry import load_registry
from tradingmem_assets.lib.warehouse import connection
from tradingmem_assets.settings import SETTINGS

COUNTS = "subject_kind, subject_id, role_id, scope, before_n, before_wins, after_n, after_wins, verdict"
BEFORE_FIRST_LESSON = datetime(2024, 2, 14, tzinfo=UTC)
REGISTRY = registry_frame(load_registry(SETTINGS.roles_file).rows())


def rows(world: World, where: str = "true") -> list[tuple]:
    return world.rows(f"SELECT {COUNTS} FROM memory_efficacy WHERE {where}")


def test_every_subject_is_counted_by_hand(efficacy_world):
    world, _ = efficacy_world
    m = crafted.M
    assert rows(world) == [
        # trend_follower: 11 of 12 before its first lesson (02-15 16:30), 2 of 12 after
        ("lesson", "logic_error", "trend_follower", "role", 12, 11, 12, 2, "hurts"),
        ("lesson", "logic_error", "trend_follower", "symbol:CCC", 12, 11, 12, 2, "hurts"),
        # no missing_data lesson: every decision is "before"
        ("lesson", "missing_data", "trend_follower", "role", 24, 13, 0, 0, "insufficient_data"),
        # valuation: 3 of 12 before (BBB 1 of 2, AAA 2 of 10), 10 of 12 after; BBB has no "after"
        ("lesson", "logic_error", "valuation", "role", 12, 3, 12, 10, "helps"),
        ("lesson", "logic_error", "valuation", "symbol:AAA", 10, 2, 12, 10, "helps"),
        ("lesson", "missing_data", "valuation", "role", 24, 13, 0, 0, "insufficient_data"),
        # M graduates at day(8): r00..r07 (3 windows each) before, r08..r19 after, all right
        ("methodology", m, None, "methodology", 24, 24, 36, 36, "no_evidence"),
        # injected r20..r29 all right; r30..r39 without injection (r35 had one: out) all wrong;
        # the crypto_alt runs and the runs before the first injection are not compared
        ("injection", m, None, "asset_class:crypto_major", 27, 0, 30, 30, "helps"),
    ]


def test_intervals_rates_and_mean_excess(efficacy_world):
    world, _ = efficacy_world
    frame = world.query("SELECT * FROM memory_efficacy WHERE role_id = 'valuation' AND scope = 'role'")
    helps, insufficient = frame.row(0, named=True), frame.row(1, named=True)
    assert helps["before_win_rate"] == pytest.approx(0.25) and helps["after_win_rate"] == pytest.approx(
        10 / 12
    )
    assert (helps["before_low"], helps["before_high"]) == pytest.approx((0.08894, 0.53231), abs=1e-5)
    assert (helps["after_low"], helps["after_high"]) == pytest.approx((0.55196, 0.95304), abs=1e-5)
    # excess returns as priced: 3 wins, 7 losses and 2 flats at +-0.10; 10 wins and 2 losses
    assert helps["mean_excess_before"] == pytest.approx(-0.4 / 12, abs=1e-9)
    assert helps["mean_excess_after"] == pytest.approx(0.8 / 12, abs=1e-9)
    assert insufficient["after_win_rate"] is None and insufficient["mean_excess_after"] is None
    assert (insufficient["after_low"], insufficient["after_high"]) == (0.0, 1.0)
    kinds = world.rows(
        "SELECT DISTINCT subject_kind, mean_excess_before IS NULL FROM memory_efficacy ORDER BY 1"
    )
    assert kinds == [("injection", True), ("lesson", False), ("methodology", True)]
    assert set(world.rows("SELECT DISTINCT as_of FROM memory_efficacy")) == {
        (datetime(2024, 7, 1, tzinfo=UTC),)
    }
    assert world.query("SELECT * FROM memory_efficacy").schema == MEMORY_EFFICACY_DTYPES


def test_metadata_counts_verdicts_as_numbers_and_shows_the_strongest_effects(efficacy_world):
    _, result = efficacy_world
    [mat] = result.asset_materializations_for_node("memory_efficacy")
    meta = mat.metadata
    assert {v: meta[v].value for v in ("helps", "hurts", "no_evidence", "insufficient_data")} == {
        "helps": 3,
        "hurts": 2,
        "no_evidence": 1,
        "insufficient_data": 2,
    }
    assert meta["dagster/row_count"].value == 8
    columns = meta["dagster/column_schema"].schema.columns
    assert [c.name for c in columns] == MEMORY_EFFICACY_DTYPES.names() and all(c.description for c in columns)
    effects = meta["strongest_effects"].md_str
    assert effects.splitlines()[2].startswith("| injection |")  # the largest change first (0 -> 1)
    assert "0.0 [0.0, 0.125]" in effects and "insufficient_data" not in effects


def test_asset_is_in_the_efficacy_group_and_the_main_job():
    graph = DEFS.resolve_asset_graph()
    node = graph.get(next(k for k in graph.get_all_asset_keys() if k.to_user_string() == "memory_efficacy"))
    assert node.group_name == "efficacy" and "duckdb" in node.kinds
    assert {"role_reflections", "evaluation_primaries", "methodology_case_hints", "raw/institution_runs"} <= {
        k.to_user_string() for k in node.parent_keys
    }
    job = DEFS.resolve_job_def("trading_memory_job")
    assert "memory_efficacy" in {k.to_user_string() for k in job.asset_layer.executable_asset_keys}


def test_a_replay_replaces_the_table(efficacy_world):
    world, _ = efficacy_world
    before = world.rows("SELECT * FROM memory_efficacy ORDER BY ALL")
    world.materialize(["memory_efficacy"])
    assert world.rows("SELECT * FROM memory_efficacy ORDER BY ALL") == before


def test_as_of_before_the_first_lesson_everything_is_before(efficacy_world):
    world, _ = efficacy_world
    with connection(world.db, read_only=True) as con:
        early = memory_efficacy(con, REGISTRY, BEFORE_FIRST_LESSON)
    lessons = early.filter(early["subject_kind"] == "lesson").select(COUNTS.split(", ")).rows()
    # settled by 02-14 00:00: the decisions of 02-01..02-06 (closed 7 days + 1.5 h later)
    assert lessons == [
        ("lesson", "logic_error", "trend_follower", "role", 6, 5, 0, 0, "insufficient_data"),
        ("lesson", "missing_data", "trend_follower", "role", 6, 5, 0, 0, "insufficient_data"),
        ("lesson", "logic_error", "valuation", "role", 6, 2, 0, 0, "insufficient_data"),
        ("lesson", "missing_data", "valuation", "role", 6, 2, 0, 0, "insufficient_data"),
    ]
    assert set(early["as_of"]) == {BEFORE_FIRST_LESSON}


def test_as_of_reads_equal_a_warehouse_built_then(efficacy_world, tmp_path, instance):
    late, _ = efficacy_world
    for instant in (
        BEFORE_FIRST_LESSON,
        datetime(2024, 2, 25, tzinfo=UTC),
        crafted.FIRST_LESSON_KNOWN["valuation"],
    ):
        built = World(tmp_path / instant.strftime("%Y%m%dT%H%M"), instance, as_of=instant.isoformat())
        crafted.write(built)
        built.materialize(EFFICACY_UPSTREAM)
        with connection(late.db, read_only=True) as con:
            read = memory_efficacy(con, REGISTRY, instant)
        assert built.query("SELECT * FROM memory_efficacy").equals(read), instant


def test_the_split_instant_is_the_first_lesson_known(efficacy_world):
    world, _ = efficacy_world
    first = dict(
        world.rows(
            "SELECT role_id, min(known_at) FROM role_reflections "
            "WHERE classification = 'logic_error' GROUP BY 1"
        )
    )
    assert first == crafted.FIRST_LESSON_KNOWN
    # at the instant the valuation lesson is known, no later decision has settled yet
    with connection(world.db, read_only=True) as con:
        at_split = memory_efficacy(con, REGISTRY, crafted.FIRST_LESSON_KNOWN["valuation"])
    row = at_split.filter((at_split["role_id"] == "valuation") & (at_split["scope"] == "role")).row(
        0, named=True
    )
    assert (row["before_n"], row["after_n"]) == (8, 0)  # decided 02-01..02-08, closed by 02-15 15:30
