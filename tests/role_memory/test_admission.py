"""Role cases: one test per reason code (core admission over a tiny chain in DuckDB), combinations,
and the assets end to end (real ingestion, evaluation and blocking checks through dg.materialize)."""

from datetime import timedelta

import duckdb
import polars as pl
import pytest

from tests.role_memory.world import AS_OF, EXECUTED, Chain, band, fill_price_for, load_runs
from tests.world import World
from tradingmem_assets.defs.role_memory import writes
from tradingmem_assets.defs.role_memory.admission import (
    ROLE_CASES_DTYPES,
    admitted_cases,
    case_id_for,
    registry_frame,
)
from tradingmem_assets.defs.role_memory.writes import write_cases
from tradingmem_assets.lib.registry import load_registry
from tradingmem_assets.lib.tables import EXECUTION_CHAIN
from tradingmem_assets.settings import SETTINGS

REGISTRY = registry_frame(load_registry(SETTINGS.roles_file).rows())


def written(con: duckdb.DuckDBPyConnection, as_of=AS_OF, table: str = "main.cases") -> pl.DataFrame:
    """Admit and (re)write the cases to ``table``, as the asset does; the table as a frame."""
    with admitted_cases(con, REGISTRY, as_of) as cases:
        write_cases(con, cases, as_of, table)
    return con.sql(f"SELECT * FROM {table}").pl()


def admitted(chain: Chain, runs: list[dict] | None = None, as_of=AS_OF) -> dict[str, dict]:
    """Admit the chain; by default every decision with an execution gets a complete primary run (a win)."""
    con = duckdb.connect()
    chain.load(con)
    if runs is None:
        first_exec: dict[str, str] = {}
        for c in chain.tables["preview_consumptions"]:
            d = c["preview_id"][2:]
            if any(e["execution_id"] == c["execution_id"] for e in chain.tables["trade_executions"]):
                first_exec.setdefault(d, c["execution_id"])
        runs = [
            {"decision_id": d, "execution_id": e, "excess": 0.10, "volatility": 0.01}
            for d, e in first_exec.items()
        ]
    load_runs(con, runs)
    return {r["decision_id"]: r for r in written(con, as_of).iter_rows(named=True)}


def case(chain: Chain, decision_id: str = "d", **kwargs) -> dict:
    return admitted(chain, **kwargs)[decision_id]


def test_a_fully_linked_manual_settled_evaluated_decision_is_eligible():
    got = case(Chain().add("d"))
    assert got["reasons"] == [] and got["status"] == "eligible" and got["scoring_eligible"] is True
    assert got["quarantined"] is False and got["outcome"] == "win"
    assert got["execution_id"] == "e_d_0" and got["case_id"] == case_id_for("d", "valuation")


# --- one test per reason code ------------------------------------------------------------------


def test_unknown_role_is_quarantined_never_mapped_to_a_generic_role():
    got = case(Chain().add("d", role_id="valuation_v2"))
    assert (got["reasons"], got["status"], got["quarantined"]) == (["unknown_role"], "quarantined", True)
    assert got["role_id"] == "valuation_v2" and got["outcome"] is None


def test_role_not_declared_by_the_decisions_skill_is_ineligible():
    got = case(Chain().add("d", role_id="valuation", skill_id="crypto_trading"))
    assert (got["reasons"], got["status"]) == (["role_not_declared_by_skill"], "ineligible")


def test_no_preview_lists_no_execution_beside_it():
    got = case(Chain().add("d", preview=False))
    assert got["reasons"] == ["no_preview", "no_execution", "not_settled", "no_primary_run"]
    assert got["status"] == "ineligible" and got["execution_id"] is None


def test_a_preview_recorded_for_another_decision_is_no_preview():
    got = case(Chain().add("d", preview_owner="someone_else"))
    assert got["reasons"][:2] == ["no_preview", "no_execution"] and got["status"] == "ineligible"


def test_preview_not_consumed_lists_no_execution_beside_it():
    got = case(Chain().add("d", consumptions=0))
    assert got["reasons"] == ["preview_not_consumed", "no_execution", "not_settled", "no_primary_run"]
    assert got["status"] == "ineligible"


def test_preview_consumed_twice_is_ineligible_and_names_no_single_execution():
    got = case(Chain().add("d", consumptions=2))
    assert (got["reasons"], got["status"], got["execution_id"]) == (
        ["preview_consumed_multiple"],
        "ineligible",
        None,
    )


def test_every_execution_of_a_multiply_consumed_preview_is_checked():
    chain = Chain().add(
        "d", executions=[{}, {"account_id": "acct9"}, {"direction": "short", "source": "autopilot"}]
    )
    got = case(chain)
    assert got["reasons"] == [
        "preview_consumed_multiple",
        "link_mismatch:direction",
        "link_mismatch:account_id",
        "automated_source",
    ]


def test_consumption_naming_a_missing_execution_is_no_execution():
    got = case(Chain().add("d", execution={"exists": False}))
    assert (
        got["reasons"] == ["no_execution", "not_settled", "no_primary_run"] and got["status"] == "ineligible"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("decision_id", "other"),
        ("symbol", "BBB"),
        ("direction", "short"),
        ("account_id", "acct2"),
        ("market", "perp"),
    ],
)
def test_link_mismatch_names_the_field_that_differs(field, value):
    got = case(Chain().add("d", execution={field: value}))
    assert (got["reasons"], got["status"]) == ([f"link_mismatch:{field}"], "ineligible")


@pytest.mark.parametrize("source", ["autopilot", "Strategy Studio", "XStrategy", "workflow"])
def test_automated_sources_are_ineligible_whatever_they_are_called(source):
    got = case(Chain().add("d", source=source))
    assert (got["reasons"], got["status"]) == (["automated_source"], "ineligible")


def test_unverified_external_source_is_ineligible():
    for verified in (False, None):
        got = case(Chain().add("d", source="manual_external", source_verified=verified))
        assert (got["reasons"], got["status"]) == (["unverified_external"], "ineligible")
    assert case(Chain().add("d", source="manual_external", source_verified=True))["status"] == "eligible"


@pytest.mark.parametrize("source", [None, "telegram_bot", "Manual_Agent"])
def test_unknown_source_is_quarantined(source):
    got = case(Chain().add("d", source=source))
    assert (got["reasons"], got["status"], got["quarantined"]) == (["unknown_source"], "quarantined", True)


@pytest.mark.parametrize(
    "kwargs",
    [{"position_status": "open"}, {"position_status": None}, {"closed_at": AS_OF + timedelta(days=1)}],
    ids=["open", "no_position", "closed_after_as_of"],
)
def test_not_settled_alone_is_pending(kwargs):
    got = case(Chain().add("d", **kwargs))
    assert (got["reasons"], got["status"]) == (["not_settled"], "pending")


def test_no_primary_run_alone_is_pending():
    got = case(Chain().add("d"), runs=[])
    assert (got["reasons"], got["status"], got["primary_run_id"]) == (["no_primary_run"], "pending", None)
    runs = [
        {"decision_id": "d", "execution_id": "e_d_0", "excess": 0.1, "volatility": 0.01, "is_primary": False}
    ]
    assert case(Chain().add("d"), runs=runs)["reasons"] == ["no_primary_run"]


@pytest.mark.parametrize(
    "run",
    [{"status": "pending"}, {"status": "insufficient_data"}, {"volatility": None}, {"excess": None}],
    ids=["pending", "insufficient_data", "no_volatility", "no_excess_return"],
)
def test_insufficient_evaluation_alone_is_pending(run):
    runs = [{"decision_id": "d", "execution_id": "e_d_0", "excess": 0.1, "volatility": 0.01, **run}]
    got = case(Chain().add("d"), runs=runs)
    assert (got["reasons"], got["status"], got["outcome"]) == (["insufficient_evaluation"], "pending", None)


# --- combinations --------------------------------------------------------------------------------


def test_automation_flag_outranks_a_consumed_manual_preview():
    got = case(Chain().add("d", source="manual_agent", source_verified=True, automation_flag=True))
    assert (got["reasons"], got["status"], got["scoring_eligible"]) == (
        ["automated_source"],
        "ineligible",
        False,
    )


def test_a_perp_of_unknown_origin_is_quarantined():
    got = case(Chain().add("d", market="perp", source=None))
    assert (got["reasons"], got["status"], got["scoring_eligible"]) == (
        ["unknown_source"],
        "quarantined",
        False,
    )


def test_automation_with_an_unknown_source_is_quarantined_with_both_reasons():
    got = case(Chain().add("d", source="bot9000", automation_flag=True))
    assert (got["reasons"], got["status"]) == (["automated_source", "unknown_source"], "quarantined")


def test_a_permanent_reason_outranks_waiting_for_settlement():
    got = case(Chain().add("d", automation_flag=True, position_status="open"), runs=[])
    assert (got["reasons"], got["status"]) == (
        ["automated_source", "not_settled", "no_primary_run"],
        "ineligible",
    )


def test_unknown_role_and_automation_list_every_reason_and_quarantine():
    got = case(Chain().add("d", role_id="ghost", source="autopilot"))
    assert (got["reasons"], got["status"]) == (["unknown_role", "automated_source"], "quarantined")


# --- the chain, not the case, is the source of truth ------------------------------------------------


def test_the_execution_comes_from_the_consumption_not_from_an_execution_claiming_the_decision():
    chain = Chain().add("d")
    stray = dict(
        chain.tables["trade_executions"][0], execution_id="e_stray", source="autopilot", automation_flag=True
    )
    chain.tables["trade_executions"].append(stray)
    got = case(chain)
    assert got["execution_id"] == "e_d_0" and got["status"] == "eligible"


def test_chain_rows_after_as_of_do_not_exist_yet():
    chain = Chain().add("d")
    got = case(chain, as_of=EXECUTED - timedelta(minutes=1))
    assert got["reasons"][:2] == ["preview_not_consumed", "no_execution"]
    later = Chain().add("late", decided_at=AS_OF + timedelta(days=1))
    assert "late" not in admitted(later)


def test_every_decision_with_a_role_appears_once_and_decisions_without_a_role_do_not():
    chain = Chain().add("a").add("b", role_id=None).add("c", role_id="ghost").add("e", consumptions=3)
    got = admitted(chain)
    assert sorted(got) == ["a", "c", "e"]


def test_provenance_names_the_whole_chain():
    import json

    prov = json.loads(case(Chain().add("d"))["provenance"])
    assert prov["consumption_ids"] == ["c_d_0"] and prov["position_ids"] == ["pos_e_d_0"]
    assert prov["executions"][0]["source"] == "manual_agent" and prov["primary_run"]["profile_id"] == "abs_7d"


def test_updated_at_moves_only_when_the_row_changes():
    con = duckdb.connect()
    Chain().add("a").add("b").load(con)
    load_runs(
        con, [{"decision_id": d, "execution_id": f"e_{d}_0", "excess": 0.1, "volatility": 0.01} for d in "ab"]
    )
    first = written(con, AS_OF)
    later = AS_OF + timedelta(days=3)
    again = written(con, later)
    assert again.equals(first)
    con.execute("UPDATE raw.trade_executions SET automation_flag = true WHERE execution_id = 'e_b_0'")
    changed = written(con, later)
    by_id = {r["decision_id"]: r for r in changed.iter_rows(named=True)}
    assert by_id["a"]["updated_at"] == AS_OF and by_id["b"]["updated_at"] == later
    assert by_id["b"]["created_at"] == by_id["a"]["created_at"]  # decided_at, never the run time


def test_a_few_changed_cases_are_replaced_in_place_as_a_full_rewrite_would(monkeypatch):
    """A later day that changes a few of many cases deletes and inserts only those: same rows,
    updated_at included, as rewriting the whole table, and the other rows are not touched."""
    decisions = [f"d{i:02d}" for i in range(40)]
    late = AS_OF + timedelta(days=2)
    chain = Chain()
    for d in decisions:
        chain.add(d)
    chain.add("newcomer", decided_at=AS_OF + timedelta(days=1))  # exists only from the later day
    results, taken = {}, []
    in_place = writes._write_in_place

    def spy(*args):
        taken.append(in_place(*args))
        return taken[-1]

    monkeypatch.setattr(writes, "_write_in_place", spy)
    for mode, share in (("in_place", writes.IN_PLACE_SHARE), ("rewrite", -1.0)):
        monkeypatch.setattr(writes, "IN_PLACE_SHARE", share)
        con = duckdb.connect()
        chain.load(con)
        load_runs(
            con,
            [
                {"decision_id": d, "execution_id": f"e_{d}_0", "excess": 0.1, "volatility": 0.01}
                for d in decisions
            ],
        )
        written(con, AS_OF)
        con.execute("UPDATE raw.trade_executions SET automation_flag = true WHERE execution_id = 'e_d03_0'")
        con.execute("DELETE FROM raw.trading_decisions WHERE decision_id = 'd07'")
        results[mode] = written(con, late).sort("case_id")
        con.close()
    assert taken == [True, False]  # the first later day was written in place, the second rewritten
    assert results["in_place"].equals(results["rewrite"])
    by_id = {r["decision_id"]: r for r in results["in_place"].iter_rows(named=True)}
    assert "d07" not in by_id and by_id["d03"]["updated_at"] == late and by_id["d00"]["updated_at"] == AS_OF
    assert by_id["newcomer"]["updated_at"] == late


# --- assets end to end ------------------------------------------------------------------------------

LANDING = [
    f"raw/{t}"
    for t in (
        *EXECUTION_CHAIN,
        "trade_fills",
        "position_lifecycles",
        "price_bars",
        "market_events",
        "benchmark_profiles",
        "evaluation_promotions",
    )
]
ROLE_MEMORY = ["role_cases", "role_reflections", "role_stats"]
DOWNSTREAM = [
    "evaluation_runs",
    "evaluation_primaries",
    "evaluation_components",
] + ROLE_MEMORY  # what as_of alone can change
PIPELINE = LANDING + DOWNSTREAM

pytestmark_off = pytest.mark.skipif(
    SETTINGS.role_memory_mode == "off",
    reason="ROLE_MEMORY_MODE=off in this environment: role memory assets idle",
)


def e2e_chain() -> Chain:
    b = band()
    return (
        Chain()
        .add("win", fill_price=fill_price_for(b * 1.05), decision_text="buy AAA on a valuation gap")
        .add("loss", fill_price=fill_price_for(-b * 1.05), decision_text="buy AAA after guidance cut")
        .add("auto", automation_flag=True)
        .add("ghost", role_id="ghost")
        .add("open", position_status="open")
    )


@pytest.fixture(scope="module")
def e2e(tmp_path_factory, instance) -> World:
    world = World(tmp_path_factory.mktemp("role_memory_e2e"), instance)
    e2e_chain().write_world(world)
    result = world.materialize(PIPELINE)
    world.first_result = result  # type: ignore[attr-defined]
    return world


@pytestmark_off
def test_pipeline_admits_reflects_and_counts_with_every_blocking_check_green(e2e: World):
    statuses = dict(e2e.rows("SELECT decision_id, status FROM role_cases"))
    assert statuses == {
        "win": "eligible",
        "loss": "eligible",
        "auto": "ineligible",
        "ghost": "quarantined",
        "open": "pending",
    }
    refl = dict(
        e2e.rows(
            "SELECT rc.decision_id, rr.classification "
            "FROM role_reflections rr JOIN role_cases rc USING (case_id)"
        )
    )
    assert refl == {"win": "sound", "loss": "logic_error"}
    checks = {e.check_name: e.passed for e in e2e.first_result.get_asset_check_evaluations()}
    for name in (
        "role_cases_invariants",
        "every_role_decision_exactly_once",
        "role_reflections_invariants",
        "role_stats_consistent",
    ):
        assert checks[name] is True


@pytestmark_off
def test_role_cases_table_has_exactly_the_spec_columns_with_list_reasons_and_json_provenance(e2e: World):
    described = e2e.rows("DESCRIBE role_cases")
    assert [r[0] for r in described] == ROLE_CASES_DTYPES.names()
    types = {r[0]: r[1] for r in described}
    assert types["reasons"] == "VARCHAR[]" and types["provenance"] == "JSON"


@pytestmark_off
def test_rematerializing_unchanged_inputs_changes_no_row(e2e: World):
    before = {
        t: e2e.query(f"SELECT * FROM {t} ORDER BY ALL")
        for t in ("role_cases", "role_reflections", "role_stats")
    }
    e2e.materialize(PIPELINE)
    for table, frame in before.items():
        assert e2e.query(f"SELECT * FROM {table} ORDER BY ALL").equals(frame), table


@pytestmark_off
def test_stats_count_only_scoring_eligible_primary_complete_runs_and_never_legacy_scores(e2e: World):
    stats = e2e.query("SELECT * FROM role_stats WHERE role_id = 'valuation'").row(0, named=True)
    assert (stats["cases"], stats["eligible"], stats["ineligible"], stats["pending"]) == (4, 2, 1, 1)
    assert (stats["scored"], stats["wins"], stats["losses"], stats["win_rate"]) == (2, 1, 1, 0.5)
    ghost = e2e.query("SELECT * FROM role_stats WHERE role_id = 'ghost'").row(0, named=True)
    assert ghost["declared"] is False and ghost["quarantined"] == 1 and ghost["scored"] == 0
    # the migration's table of legacy cases, with glowing legacy scores, changes nothing
    con = duckdb.connect(str(e2e.db))
    con.execute(
        "CREATE OR REPLACE TABLE main.migrated_role_cases AS "
        "SELECT 'l' || i AS legacy_id, 'valuation' AS role_id, "
        "'great call' AS content, '{}' AS provenance, 10.0 AS legacy_score, 'migrated' AS status, "
        "false AS scoring_eligible, '2024-01-01' AS partition_key FROM range(50) t(i)"
    )
    con.close()
    e2e.materialize(["role_stats"])
    assert e2e.query("SELECT * FROM role_stats WHERE role_id = 'valuation'").row(0, named=True) == stats


@pytestmark_off
def test_a_hand_edited_eligibility_fails_the_blocking_check_and_stops_downstream(e2e: World):
    import dagster as dg

    con = duckdb.connect(str(e2e.db))
    con.execute(
        "UPDATE role_cases SET status = 'eligible', scoring_eligible = true, reasons = [] "
        "WHERE decision_id = 'auto'"
    )
    con.close()
    result = e2e.materialize(
        dg.AssetSelection.checks_for_assets("role_cases") | dg.AssetSelection.assets("role_reflections"),
        raise_on_error=False,
    )
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["role_cases_invariants"] is False
    assert not any(e.is_step_success and e.step_key == "role_reflections" for e in result.all_events), (
        "role_reflections must not run after a failed blocking check"
    )
    # eligibility is recomputed from the chain: the next run undoes the edit
    e2e.materialize(["role_cases"])
    assert e2e.rows("SELECT status FROM role_cases WHERE decision_id = 'auto'") == [("ineligible",)]


# --- the invariants themselves (Pandera) -------------------------------------------------------------


def chained_cases() -> pl.DataFrame:
    from tradingmem_assets.defs.role_memory.chain import with_chain

    con = duckdb.connect()
    Chain().add("ok").add("auto", automation_flag=True).add("ghost", role_id="ghost").load(con)
    load_runs(
        con,
        [
            {"decision_id": d, "execution_id": f"e_{d}_0", "excess": 0.1, "volatility": 0.01}
            for d in ("ok", "auto", "ghost")
        ],
    )
    written(con)
    return con.sql(with_chain("main.cases")).pl()


@pytest.mark.parametrize(
    ("decision", "edit", "check"),
    [
        (
            "auto",
            {"status": "eligible", "scoring_eligible": True, "reasons": []},
            "eligible_implies_manual_source_without_automation",
        ),
        ("auto", {"scoring_eligible": True}, "eligible_iff_reasons_empty_iff_status_eligible"),
        (
            "ghost",
            {"status": "eligible", "scoring_eligible": True, "reasons": [], "quarantined": True},
            "quarantined_implies_not_eligible",
        ),
        ("ghost", {"status": "ineligible", "quarantined": False}, "status_follows_from_reasons"),
        (
            "ok",
            {"reasons": ["looks_fine"], "status": "ineligible", "scoring_eligible": False},
            "reasons_are_known_codes",
        ),
    ],
)
def test_role_case_invariants_catch_each_kind_of_tampering(decision, edit, check):
    from tradingmem_assets.defs.role_memory.invariants import ROLE_CASES_INVARIANTS as INVARIANTS
    from tradingmem_assets.lib.validation import validate

    frame = chained_cases()
    assert validate(INVARIANTS, frame).passed
    target = pl.col("decision_id") == decision
    tampered = frame.with_columns(
        [
            pl.when(target).then(pl.lit(v, dtype=frame.schema[k])).otherwise(pl.col(k)).alias(k)
            for k, v in edit.items()
        ]
    )
    result = validate(INVARIANTS, tampered)
    assert check in set(result.failure_cases.get_column("check"))


def test_decision_coverage_fails_when_a_decision_is_missing_or_duplicated():
    from tradingmem_assets.defs.role_memory.invariants import DECISION_COVERAGE_INVARIANTS
    from tradingmem_assets.lib.validation import validate

    ok = pl.DataFrame({"decision_id": ["a", "b"], "names_a_role": [True, True], "n_cases": [1, 1]})
    assert validate(DECISION_COVERAGE_INVARIANTS, ok).passed
    for bad in (
        ok.with_columns(pl.Series("n_cases", [1, 0])),
        ok.with_columns(pl.Series("n_cases", [2, 1])),
        ok.with_columns(pl.Series("names_a_role", [True, False])),
    ):
        assert not validate(DECISION_COVERAGE_INVARIANTS, bad).passed


def test_changed_rows_counts_only_what_a_run_changed(world: World):
    Chain().add("d1").add("d2", source="autopilot").write_world(world)

    def changed_rows() -> int:
        result = world.materialize(PIPELINE)
        [meta] = [m.metadata for m in result.asset_materializations_for_node("role_cases")]
        return meta["changed_rows"].value

    assert changed_rows() == 2  # both cases are new
    assert changed_rows() == 0  # a replay with unchanged inputs and as_of changes nothing


@pytestmark_off
@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE role_cases SET role_id = NULL WHERE decision_id = 'open'",
        "UPDATE role_cases SET provenance = NULL WHERE decision_id = 'loss'",
        "UPDATE role_cases SET case_id = (SELECT min(case_id) FROM role_cases) "
        "WHERE case_id = (SELECT max(case_id) FROM role_cases)",
    ],
    ids=["a role nulled", "a provenance nulled", "a case id repeated"],
)
def test_a_hand_edit_no_streamed_rule_reads_fails_the_blocking_check(e2e: World, edit: str):
    """Columns no row rule reads are checked in SQL over the stored table (their nulls, their
    uniqueness): an edit there fails the check as surely as an edited eligibility."""
    import dagster as dg

    con = duckdb.connect(str(e2e.db))
    con.execute("CREATE TABLE saved_cases AS SELECT * FROM role_cases")
    con.execute(edit)
    con.close()
    result = e2e.materialize(dg.AssetSelection.checks_for_assets("role_cases"), raise_on_error=False)
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["role_cases_invariants"] is False
    con = duckdb.connect(str(e2e.db))  # the stored cases as they were: the check passes again
    con.execute(
        "DELETE FROM role_cases; INSERT INTO role_cases SELECT * FROM saved_cases; DROP TABLE saved_cases"
    )
    con.close()
    result = e2e.materialize(dg.AssetSelection.checks_for_assets("role_cases"))
    assert all(e.passed for e in result.get_asset_check_evaluations())


@pytestmark_off
def test_a_case_id_stored_twice_by_hand_is_replaced_by_the_next_admission(e2e: World):
    """The in-place write keeps a stored row whose content did not change: a second stored row with
    the same case id (a hand edit) must not ride along with it, or role_cases could never be
    written again."""
    before = e2e.rows("SELECT * FROM role_cases ORDER BY case_id")
    con = duckdb.connect(str(e2e.db))
    con.execute(
        "UPDATE role_cases SET case_id = (SELECT min(case_id) FROM role_cases) "
        "WHERE case_id = (SELECT max(case_id) FROM role_cases)"
    )
    con.close()
    e2e.materialize(["role_cases"])
    after = e2e.rows("SELECT * FROM role_cases ORDER BY case_id")
    # every case as before; only the two rows the edit touched were written again
    assert [r[:-1] for r in after] == [r[:-1] for r in before]
    assert e2e.rows("SELECT count(*) = count(DISTINCT case_id) FROM role_cases") == [(True,)]
