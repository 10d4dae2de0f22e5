"""A hand edit of a stored table is reported as a failed check by warehouse_checks_job (SPEC 18)."""

from __future__ import annotations

import dagster as dg
import duckdb
import pytest

from tests.world import DEFS, World
from tradingmem_assets.defs.operations.jobs import warehouse_checks_job


def run_checks(world: World) -> dict[tuple[str, str], dg.AssetCheckEvaluation]:
    definitions = dg.Definitions(
        assets=list(DEFS.assets or []),
        asset_checks=list(DEFS.asset_checks or []),
        jobs=[warehouse_checks_job],
        resources={"warehouse": world.resource()},
    )
    result = definitions.resolve_job_def("warehouse_checks_job").execute_in_process(
        instance=world.instance, raise_on_error=False
    )
    assert not result.get_asset_materialization_events(), "the checks job must materialize nothing"
    return {(e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()}


def tamper(world: World, *statements: str) -> None:
    con = duckdb.connect(str(world.db))
    try:
        for sql in statements:
            con.execute(sql)
    finally:
        con.close()


def test_every_stored_check_passes_on_an_untouched_warehouse(built):
    evaluations = run_checks(built)
    assert len(evaluations) >= 30
    failed = {k: e.metadata for k, e in evaluations.items() if not e.passed}
    assert failed == {}


@pytest.mark.parametrize(
    ("edit", "check"),
    [
        (
            "INSERT INTO main.customer_kb SELECT doc_id, title, 'public' AS visibility, body "
            "FROM raw.kb_documents WHERE visibility = 'internal' LIMIT 1",
            ("customer_kb", "stored_no_internal_document_in_customer_kb"),
        ),
        (
            "UPDATE main.fin_customer_profile SET investor_type = CASE WHEN investor_type = 'C5' THEN 'C1' "
            "ELSE 'C5' END WHERE customer_id = (SELECT min(customer_id) FROM main.fin_customer_profile "
            "WHERE investor_type IS NOT NULL)",
            ("fin_customer_profile", "stored_profile_red_lines"),
        ),
        (
            "UPDATE main.fin_customer_profile SET generation_basis = replace(generation_basis, "
            "'\"risk_tags\":', '\"risk_tagz\":') WHERE customer_id = (SELECT min(customer_id) "
            "FROM main.fin_customer_profile)",
            ("fin_customer_profile", "stored_profile_red_lines"),
        ),
        (
            "UPDATE main.evaluation_runs SET is_primary = true, promoted_at = known_at WHERE run_id = ("
            "SELECT min(r.run_id) FROM main.evaluation_runs r WHERE NOT r.is_primary AND r.status = 'complete' "
            "AND r.decision_id IN (SELECT decision_id FROM main.evaluation_runs WHERE is_primary))",
            ("evaluation_runs", "stored_evaluation_runs_invariants"),
        ),
        (
            "UPDATE main.evaluation_runs SET excess_return = excess_return + 0.5 WHERE run_id = ("
            "SELECT min(run_id) FROM main.evaluation_runs WHERE status = 'complete')",
            ("evaluation_runs", "stored_evaluation_runs_invariants"),
        ),
        (
            "INSERT INTO main.role_cases SELECT * FROM main.role_cases LIMIT 1",
            ("role_cases", "role_cases_invariants"),
        ),
    ],
    ids=[
        "internal_doc_in_customer_kb",
        "investor_type_overwritten",
        "a_field_without_basis",
        "second_primary_run",
        "excess_return_edited",
        "duplicate_case",
    ],
)
def test_a_hand_edit_is_reported_as_a_failed_check(built, edit, check):
    tamper(built, edit)
    evaluations = run_checks(built)
    assert evaluations[check].passed is False, f"{check} did not catch: {edit}"
    assert evaluations[check].metadata["violations"].value > 0
    others = {k for k, e in evaluations.items() if not e.passed} - {check}
    # the edit breaks its own invariant; anything else that fails must be explained by the same edit
    assert all(k[0] == check[0] or k[0] in {"role_stats", "profile_snapshots"} for k in others), others


def test_a_broken_invariant_refuses_the_write_shows_a_failed_check_and_stops_downstream(built):
    # a duplicated stored run: the next evaluation would carry it into its write
    tamper(built, "INSERT INTO main.evaluation_runs SELECT * FROM main.evaluation_runs LIMIT 1")
    before = built.query("SELECT * FROM main.evaluation_runs ORDER BY run_id")
    result = built.materialize(raise_on_error=False)
    assert not result.success
    evaluation = {e.check_name: e for e in result.get_asset_check_evaluations()}["evaluation_runs_invariants"]
    assert evaluation.passed is False
    assert evaluation.metadata["violations"].value > 0 and "failure_cases" in evaluation.metadata
    assert built.query("SELECT * FROM main.evaluation_runs ORDER BY run_id").equals(before)  # rolled back
    ran = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    assert "role_cases" not in ran  # the blocking check stopped what is downstream


VALIDATED_AT_WRITE = {
    ("evaluation_runs", "stored_evaluation_runs_invariants"): "main.evaluation_runs",
    ("role_cases", "role_cases_invariants"): "raw.trade_executions",  # a table the invariants read
    ("role_cases", "every_role_decision_exactly_once"): "raw.trade_executions",
}


def test_a_table_stored_as_validated_is_not_read_again_until_written(built):
    evaluations = run_checks(built)
    for check in VALIDATED_AT_WRITE:
        assert evaluations[check].passed and evaluations[check].metadata["rows"].value == 0, check
        assert evaluations[check].metadata["validated_at_write_by_run"].value
    # harmless hand edits: the invariants still hold, but the checks read every row again
    tamper(
        built,
        "UPDATE main.evaluation_runs SET created_at = created_at + INTERVAL 1 SECOND WHERE run_version = 1",
        "UPDATE raw.trade_executions SET executed_at = executed_at WHERE false",  # no write at all
    )
    evaluations = run_checks(built)
    assert "validated_at_write_by_run" in evaluations[("role_cases", "role_cases_invariants")].metadata
    # a value the invariants do not read: still a write to what they read
    tamper(built, "UPDATE raw.trade_executions SET symbol = symbol || 'X' WHERE rowid = 0")
    evaluations = run_checks(built)
    for check in VALIDATED_AT_WRITE:
        assert evaluations[check].passed, check
        assert "validated_at_write_by_run" not in evaluations[check].metadata, check
    runs = built.rows("SELECT count(*) FROM main.evaluation_runs")[0][0]
    assert (
        evaluations[("evaluation_runs", "stored_evaluation_runs_invariants")].metadata["rows"].value == runs
    )
