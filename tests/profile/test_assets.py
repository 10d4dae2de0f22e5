"""The customer profile through real Dagster materializations into a real DuckDB file."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from tests.profile.world import (
    ALL,
    AS_OF_TS,
    BASE,
    PROFILE_ASSETS,
    PROFILE_CORE,
    PROFILE_LANDING,
    unit,
    write_base,
)
from tests.world import DEFS, World
from tradingmem_assets.defs.memory.promotion import units_awaiting_adjudication
from tradingmem_assets.defs.profile import assets as profile_assets
from tradingmem_assets.defs.profile import build as core_profile
from tradingmem_assets.defs.profile import invariants as schemas


@pytest.fixture(scope="module")
def base(tmp_path_factory, instance) -> tuple[World, dg.ExecuteInProcessResult]:
    """The base world, materialized once for the read-only tests of this module."""
    world = World(tmp_path_factory.mktemp("profile_base"), instance)
    write_base(world)
    return world, world.materialize(ALL)


def profile_row(world: World, customer_id: str) -> dict:
    rows = world.query("SELECT * FROM fin_customer_profile WHERE customer_id = ?", [customer_id]).to_dicts()
    assert len(rows) == 1
    row = rows[0]
    row["generation_basis"] = json.loads(row["generation_basis"])
    return row


def snapshots(world: World) -> list[dict]:
    return world.query("SELECT * FROM profile_snapshots ORDER BY customer_id, version").to_dicts()


def test_the_profiles_json_columns_are_stored_with_zstd(base):
    world, _ = base
    declared = dict(
        world.rows(
            "SELECT table_name, sql FROM duckdb_tables() "
            "WHERE table_name IN ('fin_customer_profile', 'profile_snapshots')"
        )
    )
    assert "generation_basis VARCHAR USING COMPRESSION ZSTD" in declared["fin_customer_profile"]
    assert "profile VARCHAR USING COMPRESSION ZSTD" in declared["profile_snapshots"]
    assert "generation_basis VARCHAR USING COMPRESSION ZSTD" in declared["profile_snapshots"]


# --- red lines on the base world ----------------------------------------------------------------


def test_aggressive_self_report_keeps_questionnaire_investor_type_and_adds_tag_and_conflict(base):
    world, _ = base
    c1 = profile_row(world, "c1")
    # the conversation says aggressive with confidence 0.99: it is a promoted fact ...
    assert world.rows("SELECT fact_value, is_critical FROM user_facts WHERE source_unit_id = 'u1'") == [
        ("aggressive", True)
    ]
    # ... yet investor_type stays the latest questionnaire's (q2, C2; q3 is after as_of)
    assert c1["investor_type"] == "C2"
    assert c1["generation_basis"]["investor_type"]["row_ids"] == {"questionnaire_results": ["q2"]}
    assert c1["risk_tags"] == ["self_reported:aggressive", "suitability_conflict"]
    basis = c1["generation_basis"]["risk_tags"]
    fact_id = world.rows("SELECT fact_id FROM user_facts WHERE source_unit_id='u1'")[0][0]
    assert basis["row_ids"] == {
        "user_facts": [fact_id],
        "memory_unit": ["u1"],
        "questionnaire_results": ["q2"],
        "customer_transactions": ["t2"],  # the R4 buy above C2
    }
    # the advisor still may sell at most R2
    assert world.rows(
        "SELECT max_product_risk_level, suitability_conflict, self_reported_risk FROM advisor_customer_view "
        "WHERE customer_id = 'c1'"
    ) == [("R2", True, "aggressive")]


def test_behavior_fields_come_only_from_transactions(base):
    world, _ = base
    c1, c2 = profile_row(world, "c1"), profile_row(world, "c2")
    assert (c1["total_asset"], c1["trading_frequency"], c1["behavior_score"]) == (500.0, 2, 50.0)
    assert (c2["total_asset"], c2["trading_frequency"], c2["behavior_score"]) == (2000.0, 1, 100.0)
    assert c1["generation_basis"]["behavior_score"]["row_ids"] == {"customer_transactions": ["t1", "t2"]}


def test_one_off_statement_never_reaches_user_facts(base):
    world, _ = base
    assert world.rows("SELECT count(*) FROM user_facts WHERE source_unit_id = 'u2'") == [(0,)]
    assert world.rows("SELECT status FROM memory_promotions WHERE unit_id = 'u2'") == [("below_threshold",)]
    c2 = profile_row(world, "c2")
    assert c2["preferred_asset_class"] is None
    assert "one-off statement" in c2["generation_basis"]["preferred_asset_class"]["reason"]
    # two pieces of evidence are enough even at confidence 0.7
    assert c2["investment_horizon"] == "long_term"
    assert c2["risk_tags"] == []


def test_conflicting_unit_waits_for_adjudication_and_stays_out_of_the_profile(base):
    world, _ = base
    assert world.rows("SELECT count(*) FROM user_facts WHERE source_unit_id = 'u4'") == [(0,)]
    assert world.rows("SELECT status FROM memory_promotions WHERE unit_id = 'u4'") == [
        ("awaiting_adjudication",)
    ]
    units = world.query("SELECT * FROM raw.memory_unit")
    waiting = units_awaiting_adjudication(units, AS_OF_TS)
    assert waiting.get_column("unit_id").to_list() == ["u4"]
    c3 = profile_row(world, "c3")
    assert c3["preferred_asset_class"] is None
    assert "adjudication" in c3["generation_basis"]["preferred_asset_class"]["reason"]


def test_every_field_has_a_basis_even_when_null(base):
    world, _ = base
    c4 = profile_row(world, "c4")
    basis = c4["generation_basis"]
    for field in (
        "investor_type",
        "total_asset",
        "behavior_score",
        "preferred_asset_class",
        "investment_horizon",
        "real_name",
        "birth_date",
        "occupation",
        "mobile_masked",
    ):
        assert c4[field] is None
        entry = basis[field]
        assert entry["source"] and entry["rule"] and entry["reason"], field
    assert basis["investor_type"]["reason"].startswith("no questionnaire")
    assert c4["trading_frequency"] == 0 and c4["risk_tags"] == []


def test_mobile_is_masked_and_identity_comes_from_customers(base):
    world, _ = base
    c1 = profile_row(world, "c1")
    assert c1["mobile_masked"] == "138****5678"
    assert c1["real_name"] == "Name c1"
    assert c1["generation_basis"]["real_name"]["row_ids"] == {"customers": ["c1"]}
    assert "13812345678" not in json.dumps(c1, default=str)


def test_internal_kb_document_never_reaches_customer_kb(base):
    world, result = base
    assert world.rows("SELECT doc_id, visibility FROM customer_kb") == [("k1", "public")]
    evaluation = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert evaluation[schemas.KB_CHECK] is True


def test_session_contexts_hold_only_active_sessions(base):
    world, _ = base
    rows = world.query("SELECT * FROM session_contexts").to_dicts()
    assert [r["session_id"] for r in rows] == ["s1"]  # s2 idle 60 min, s3 older than 24 h, s4 in the future
    messages = json.loads(rows[0]["messages"])
    assert [m["message_id"] for m in messages] == ["m10", "m11"]  # oldest first
    assert rows[0]["token_estimate"] == 8 + 5  # 8 CJK characters; "Noted, thank you." is 17 chars -> 5


def test_all_red_line_checks_pass_and_are_blocking(base):
    _, result = base
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    for name in (
        schemas.INVESTOR_TYPE_CHECK,
        schemas.BASIS_CHECK,
        schemas.ONE_CURRENT_CHECK,
        schemas.KB_CHECK,
        schemas.FACTS_CHECK,
        schemas.SESSIONS_CHECK,
    ):
        assert evaluations[name].passed, name
    specs = {
        spec.name: spec
        for a in DEFS.assets or []
        if isinstance(a, dg.AssetsDefinition)
        for spec in a.check_specs
    }
    for name in (
        schemas.INVESTOR_TYPE_CHECK,
        schemas.BASIS_CHECK,
        schemas.ONE_CURRENT_CHECK,
        schemas.KB_CHECK,
    ):
        assert specs[name].blocking, name


def test_consumers_read_the_profile_never_memory_unit():
    graph = DEFS.resolve_asset_graph()
    parents = {k.to_user_string() for k in graph.get(dg.AssetKey("advisor_customer_view")).parent_keys}
    assert parents == {"fin_customer_profile"}
    readers = {k.to_user_string() for k in graph.get(dg.AssetKey(["raw", "memory_unit"])).child_keys}
    assert readers == {"memory_promotions"}
    # short-term memory never feeds the profile
    upstream = _ancestors(graph, dg.AssetKey("fin_customer_profile"))
    assert "session_contexts" not in upstream and "raw/conversation_message" not in upstream


def _ancestors(graph, key: dg.AssetKey) -> set[str]:
    seen: set[str] = set()
    todo = [key]
    while todo:
        for parent in graph.get(todo.pop()).parent_keys:
            name = parent.to_user_string()
            if name not in seen:
                seen.add(name)
                todo.append(parent)
    return seen


# --- versions ------------------------------------------------------------------------------------


def test_rematerializing_unchanged_inputs_adds_no_snapshot_and_changes_no_row(base):
    world, _ = base  # same inputs, same as_of: safe to re-run on the shared world
    tables = (
        "fin_customer_profile",
        "profile_snapshots",
        "user_facts",
        "memory_promotions",
        "session_contexts",
        "advisor_customer_view",
        "customer_kb",
    )
    before = {t: world.query(f"SELECT * FROM {t} ORDER BY ALL") for t in tables}
    result = world.materialize(ALL)
    for t in tables:
        assert world.query(f"SELECT * FROM {t} ORDER BY ALL").equals(before[t]), t
    assert world.rows("SELECT max(version) FROM profile_snapshots") == [(1,)]
    # nothing was even rewritten: unchanged rows are left alone
    assert metadata(result, "fin_customer_profile")["rows_rewritten"] == 0
    assert metadata(result, "profile_snapshots")["appended_versions"] == 0


def metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey(asset)]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def test_profiles_validated_batch_by_batch_equal_one_pass(base, world: World, monkeypatch):
    monkeypatch.setattr(profile_assets, "PROFILE_BATCH_ROWS", 1)  # every customer is its own batch
    write_base(world)
    world.materialize(PROFILE_CORE)
    for table, order in (
        ("fin_customer_profile", "customer_id"),
        ("profile_snapshots", "customer_id, version"),
    ):
        sql = f"SELECT * FROM {table} ORDER BY {order}"
        assert world.query(sql).equals(base[0].query(sql)), table


def test_a_broken_red_line_fails_the_run_and_rolls_back_every_chunk(world: World, monkeypatch):
    write_base(world)
    world.materialize(PROFILE_CORE)
    before = {
        t: world.query(f"SELECT * FROM {t} ORDER BY ALL")
        for t in ("fin_customer_profile", "profile_snapshots")
    }
    real_create = core_profile.create_profiles

    def buggy_create(con, as_of, table, customers):  # a bug that lets a conversation write investor_type
        real_create(con, as_of, table, customers)
        con.execute(f"UPDATE {table} SET investor_type = 'C5' WHERE customer_id = 'c2'")

    monkeypatch.setattr(profile_assets, "PROFILE_BATCH_ROWS", 1)  # c1's batch passes before c2's fails
    monkeypatch.setattr(core_profile, "create_profiles", buggy_create)
    world.write(
        "questionnaire_results",
        [
            *BASE["questionnaire_results"],
            {
                "assessment_id": "q8",
                "customer_id": "c1",
                "investor_type": "C1",
                "assessed_at": AS_OF_TS.replace(month=5),
            },
        ],
    )
    result = world.materialize(
        ["raw/questionnaire_results", "fin_customer_profile", "profile_snapshots"], raise_on_error=False
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert schemas.INVESTOR_TYPE_CHECK in str(failure.event_specific_data.error)
    for table, frame in before.items():
        assert world.query(f"SELECT * FROM {table} ORDER BY ALL").equals(frame), table


def test_a_customer_built_twice_fails_the_run_whatever_the_batches(world: World, monkeypatch):
    """Uniqueness is the one profile rule over more than one row: found in SQL over every built
    row, so two rows of a customer in different batches still fail the red lines."""
    write_base(world)
    real_create = core_profile.create_profiles

    def doubling_create(con, as_of, table, customers):  # a bug that builds a customer twice
        real_create(con, as_of, table, customers)
        con.execute(f"INSERT INTO {table} SELECT * FROM {table} WHERE customer_id = 'c2'")

    monkeypatch.setattr(profile_assets, "PROFILE_BATCH_ROWS", 1)
    monkeypatch.setattr(core_profile, "create_profiles", doubling_create)
    result = world.materialize(PROFILE_CORE, raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    message = str(failure.event_specific_data.error)
    assert "customer_id: field_uniqueness x1" in message
    # nothing written: the tables the run created rolled back with its profiles
    [(stored,)] = world.rows("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'fin_customer_profile'")
    assert stored == 0 or world.rows("SELECT count(*) FROM fin_customer_profile") == [(0,)]


def test_a_change_adds_exactly_one_version_and_leaves_older_rows_byte_identical(world: World):
    write_base(world)
    world.materialize(ALL)
    first = snapshots(world)
    # a new questionnaire for c1 (C3): only c1 gets version 2
    rows = [
        *BASE["questionnaire_results"],
        {
            "assessment_id": "q9",
            "customer_id": "c1",
            "investor_type": "C3",
            "assessed_at": AS_OF_TS.replace(month=6),
        },
    ]
    world.write("questionnaire_results", rows)
    world.materialize(["raw/questionnaire_results", "fin_customer_profile", "profile_snapshots"])
    after = snapshots(world)
    assert len(after) == len(first) + 1
    c1 = [s for s in after if s["customer_id"] == "c1"]
    assert [(s["version"], s["is_current"]) for s in c1] == [(1, False), (2, True)]
    assert json.loads(c1[1]["profile"])["investor_type"] == "C3"
    old = {s["snapshot_id"]: s for s in first}
    for s in after:
        if s["snapshot_id"] in old:
            expected = dict(old[s["snapshot_id"]])
            if s["customer_id"] == "c1":
                expected["is_current"] = False  # the only column an old snapshot may change
            assert s == expected
    assert world.rows("SELECT profile_version FROM fin_customer_profile WHERE customer_id = 'c1'") == [(2,)]
    assert world.rows(
        "SELECT count(*) FROM (SELECT customer_id FROM profile_snapshots "
        "GROUP BY ALL HAVING sum(is_current::INT) <> 1)"
    ) == [(0,)]


def test_stale_fact_is_demoted_and_leaves_the_profile_with_the_reason_in_its_basis(world: World):
    stale = unit(
        "u9", "c2", "preference:asset_class", "equity", confidence=0.95, evidence=3, updated="2023-06-01"
    )
    write_base(world, memory_unit=[*BASE["memory_unit"], stale])
    world.materialize(PROFILE_CORE, as_of="2024-05-01T00:00:00Z")  # 335 days after the last evidence: fresh
    assert world.rows("SELECT preferred_asset_class FROM fin_customer_profile WHERE customer_id='c2'") == [
        ("equity",)
    ]
    world.materialize(PROFILE_CORE)  # 2024-07-01: 396 days > MEMORY_STALE_DAYS=365
    assert world.rows("SELECT count(*) FROM user_facts WHERE source_unit_id = 'u9'") == [(0,)]
    assert world.rows("SELECT status FROM memory_promotions WHERE unit_id = 'u9'") == [("stale",)]
    c2 = profile_row(world, "c2")
    assert c2["preferred_asset_class"] is None
    reason = c2["generation_basis"]["preferred_asset_class"]["reason"]
    assert "unit u9" in reason and "stale" in reason and "demoted" in reason
    versions = world.rows(
        "SELECT version, is_current FROM profile_snapshots WHERE customer_id='c2' ORDER BY version"
    )
    assert versions[-1] == (len(versions), True) and len(versions) >= 2


def test_a_missing_landing_table_fails_with_a_message_naming_it(world: World):
    result = world.materialize(["user_facts", "memory_promotions"], raise_on_error=False)
    assert not result.success
    failure = [e for e in result.all_events if e.is_step_failure][0]
    assert "raw.memory_unit" in str(failure.event_specific_data.error) and "raw/memory_unit" in str(
        failure.event_specific_data.error
    )


def test_profile_landing_and_assets_are_in_the_main_job():
    job = DEFS.resolve_job_def("trading_memory_job")
    keys = {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
    assert set(PROFILE_ASSETS) | set(PROFILE_LANDING) <= keys


def test_empty_landing_gives_empty_tables_and_passing_checks(world: World):
    result = world.materialize(ALL)  # no landing file at all: every raw table is empty
    assert result.success
    for table in (
        "session_contexts",
        "user_facts",
        "fin_customer_profile",
        "profile_snapshots",
        "customer_kb",
    ):
        assert world.rows(f"SELECT count(*) FROM {table}") == [(0,)], table
    assert all(e.passed for e in result.get_asset_check_evaluations())
