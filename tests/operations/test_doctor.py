"""`tradingmem doctor`: the pure checks, and the command over a real warehouse (exit 1 on action)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner

from tradingmem_assets.cli import main
from tradingmem_assets.defs.operations import doctor as d

AS_OF = datetime(2024, 7, 1, tzinfo=UTC)
TS = pl.Datetime("us", "UTC")


def pending(*rows: tuple[str, str, float]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "case_id": [r[0] for r in rows],
            "role_id": [r[1] for r in rows],
            "since": [AS_OF - timedelta(days=r[2]) for r in rows],
        },
        schema={"case_id": pl.String, "role_id": pl.String, "since": TS},
    )


def test_a_case_pending_longer_than_twice_its_maturity_window_needs_action():
    maturity = {"valuation": 7, "macro_rates": 30}
    on_time = d.overdue_pending_cases(
        pending(("c1", "valuation", 14), ("c2", "macro_rates", 59)), maturity, AS_OF
    )
    assert on_time.status == "ok"
    late = d.overdue_pending_cases(
        pending(("c1", "valuation", 14.5), ("c2", "macro_rates", 59)), maturity, AS_OF
    )
    assert late.status == "action"
    assert late.details["sample_case_ids"] == ["c1"] and late.details["overdue_by_role"] == {"valuation": 1}


def test_insufficient_primary_evaluation_runs_need_action_pending_ones_are_info():
    counts = pl.DataFrame({"status": ["complete", "pending"], "is_primary": [True, True], "n": [3, 2]})
    assert d.evaluation_status(counts).status == "info"
    counts = pl.DataFrame(
        {"status": ["complete", "insufficient_data"], "is_primary": [True, True], "n": [3, 1]}
    )
    check = d.evaluation_status(counts)
    assert check.status == "action" and check.details["primary_by_status"]["insufficient_data"] == 1
    assert (
        d.evaluation_status(pl.DataFrame({"status": ["complete"], "is_primary": [True], "n": [4]})).status
        == "ok"
    )


@pytest.mark.parametrize("as_json_text", [False, True])
def test_quarantined_cases_are_counted_by_each_reason(as_json_text):
    reasons = [["unknown_role"], ["unknown_source", "unknown_role"]]
    column = [json.dumps(r) for r in reasons] if as_json_text else reasons
    check = d.quarantined_by_reason(pl.DataFrame({"case_id": ["c1", "c2"], "reasons": column}))
    assert check.status == "action"
    assert check.details["by_reason"] == {"unknown_role": 2, "unknown_source": 1}


def test_memory_units_with_conflicts_wait_for_adjudication():
    units = pl.DataFrame(
        {
            "unit_id": ["u2", "u1"],
            "customer_id": ["k1", "k1"],
            "fact_key": ["a", "b"],
            "conflict_count": [1, 2],
        }
    )
    check = d.adjudication_backlog(units)
    assert check.status == "action" and check.details["units"] == 2 and check.details["customers"] == 1
    assert d.adjudication_backlog(units.clear()).status == "ok"


def test_an_exhausted_budget_needs_action_a_soft_one_is_info():
    assert d.budget_status([{"category": "review", "status": "ok", "month_usd": 1.0}]).status == "ok"
    assert d.budget_status([{"category": "review", "status": "soft"}]).status == "info"
    assert d.budget_status([{"category": "review", "status": "exhausted"}]).status == "action"


@pytest.mark.parametrize(
    ("tier", "isolation_ok", "status"),
    [
        ("healthy", True, "ok"),
        ("watch", True, "ok"),
        ("degraded", True, "action"),
        ("alarm", True, "action"),
        ("healthy", False, "action"),
        ("insufficient_data", True, "info"),
        ("disabled", True, "info"),
    ],
)
def test_the_last_audit_tier_needs_action_when_degraded_alarm_or_not_isolated(tier, isolation_ok, status):
    latest = {"pass_id": "ap_1", "tier": tier, "composite": None, "isolation_ok": isolation_ok}
    assert d.last_audit(latest, 0).status == status


def test_a_learning_heartbeat_older_than_two_days_or_failed_or_missing_needs_action():
    now = AS_OF
    assert d.heartbeat_staleness({"status": "ok", "ts": now - timedelta(hours=47)}, now).status == "ok"
    assert d.heartbeat_staleness({"status": "ok", "ts": now - timedelta(hours=49)}, now).status == "action"
    assert d.heartbeat_staleness({"status": "failed", "ts": now - timedelta(hours=1)}, now).status == "action"
    assert d.heartbeat_staleness(None, now).status == "action"


def test_landing_rejects_are_reported_by_table():
    by_table = pl.DataFrame({"table_name": ["trade_fills"], "n": [3], "top_reason": ["qty must be > 0"]})
    check = d.landing_rejects(by_table)
    assert check.status == "action" and check.details["by_table"]["trade_fills"]["rows"] == 3


def test_a_table_that_does_not_exist_is_reported_not_materialized_and_needs_no_action():
    doc = d.report([d.not_materialized("last_audit", "main.methodology_audit_reports")], AS_OF)
    assert doc["needs_action"] is False
    assert doc["checks"][0]["status"] == "not_materialized"


# --- the command -----------------------------------------------------------------------------------


def run_doctor(monkeypatch, db) -> tuple[int, dict]:
    monkeypatch.setenv("TRADINGMEM_DB", str(db))
    monkeypatch.setenv("TRADINGMEM_AS_OF", AS_OF.isoformat())
    result = CliRunner().invoke(main, ["doctor", "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, json.loads(result.stdout)


def test_doctor_on_a_missing_warehouse_fails_with_one_line_naming_it(tmp_path, monkeypatch):
    missing = tmp_path / "nothing.duckdb"
    monkeypatch.setenv("TRADINGMEM_DB", str(missing))
    result = CliRunner().invoke(main, ["doctor", "--json"])
    assert result.exit_code != 0 and result.stdout == ""
    assert str(missing) in result.stderr and "does not exist" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not missing.exists()  # the doctor never creates the warehouse


def build_troubled_warehouse(db) -> None:
    con = duckdb.connect(str(db))
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE SCHEMA raw")
        con.execute("CREATE TABLE raw.trading_decisions (decision_id VARCHAR, decided_at TIMESTAMPTZ)")
        con.execute(
            "INSERT INTO raw.trading_decisions VALUES ('d1', '2024-06-01 00:00:00+00'), "
            "('d2', '2024-06-28 00:00:00+00')"
        )
        con.execute("""CREATE TABLE main.role_cases (case_id VARCHAR, decision_id VARCHAR, role_id VARCHAR,
                       status VARCHAR, reasons VARCHAR[], quarantined BOOLEAN, created_at TIMESTAMPTZ)""")
        con.execute("""INSERT INTO main.role_cases VALUES
            ('c1', 'd1', 'valuation', 'pending', ['not_settled'], false, '2024-07-01 00:00:00+00'),
            ('c2', 'd2', 'valuation', 'pending', ['not_settled'], false, '2024-07-01 00:00:00+00'),
            ('c3', 'd3', 'ghost', 'quarantined', ['unknown_role'], true, '2024-07-01 00:00:00+00')""")
        con.execute("CREATE TABLE main.evaluation_runs (run_id VARCHAR, status VARCHAR, is_primary BOOLEAN)")
        con.execute(
            "INSERT INTO main.evaluation_runs VALUES ('r1', 'complete', true), "
            "('r2', 'insufficient_data', true)"
        )
        con.execute("""CREATE TABLE raw.memory_unit (unit_id VARCHAR, customer_id VARCHAR, fact_key VARCHAR,
                       conflict_count BIGINT)""")
        con.execute(
            "INSERT INTO raw.memory_unit VALUES ('u1', 'k1', 'preference:risk_level', 1), "
            "('u2', 'k1', 'profile:investment_horizon', 0)"
        )
        con.execute("""CREATE TABLE main.raw_rejects (table_name VARCHAR, source_file VARCHAR,
                       row_number BIGINT, row_key VARCHAR, reason VARCHAR, raw_row VARCHAR)""")
        con.execute(
            "INSERT INTO main.raw_rejects VALUES ('trade_fills', 'f.csv', 3, 'f9', 'qty missing', '{}')"
        )
        con.execute(
            "CREATE TABLE main.methodology_cron_runs (run_id VARCHAR, status VARCHAR, ts TIMESTAMPTZ)"
        )
        con.execute("INSERT INTO main.methodology_cron_runs VALUES ('x', 'ok', now() - INTERVAL 3 DAY)")
        con.execute(
            "CREATE TABLE main.memory_efficacy AS SELECT 'lesson' AS subject_kind, 'logic_error' AS subject_id, "
            "'trend_follower' AS role_id, 'role' AS scope, 0.9 AS before_win_rate, 0.2 AS after_win_rate, "
            "'hurts' AS verdict"
        )
    finally:
        con.close()


def test_doctor_exits_non_zero_and_names_every_problem(tmp_path, monkeypatch):
    db = tmp_path / "tradingmem.duckdb"
    build_troubled_warehouse(db)
    code, doc = run_doctor(monkeypatch, db)
    assert code == 1
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["overdue_pending_cases"]["status"] == "action"
    assert checks["overdue_pending_cases"]["details"]["sample_case_ids"] == ["c1"]  # d2 is 3 days old
    assert checks["quarantined_cases"]["details"]["by_reason"] == {"unknown_role": 1}
    assert checks["evaluation_runs"]["status"] == "action"
    assert checks["memory_units_awaiting_adjudication"]["details"]["units"] == 1
    assert checks["landing_rejects"]["details"]["by_table"]["trade_fills"]["rows"] == 1
    assert checks["learning_heartbeat"]["status"] == "action"  # 3 days old
    assert checks["last_audit"]["status"] == "not_materialized"
    assert checks["llm_budget"]["status"] == "not_materialized"
    assert set(doc["actions"]) == {
        "overdue_pending_cases",
        "quarantined_cases",
        "evaluation_runs",
        "memory_units_awaiting_adjudication",
        "landing_rejects",
        "learning_heartbeat",
        "memory_that_hurts",
    }
    assert "trend_follower" in checks["memory_that_hurts"]["details"]["hurting"][0]


def test_doctor_is_quiet_and_exits_zero_on_a_healthy_warehouse(tmp_path, monkeypatch):
    db = tmp_path / "tradingmem.duckdb"
    con = duckdb.connect(str(db))
    try:
        con.execute(
            "CREATE TABLE main.methodology_cron_runs "
            "(run_id VARCHAR, status VARCHAR, ts TIMESTAMPTZ, as_of TIMESTAMPTZ)"
        )
        # wall clock far from the doctor's as_of: staleness is judged on the run's as_of
        con.execute(
            "INSERT INTO main.methodology_cron_runs VALUES ('x', 'ok', now(), ?::TIMESTAMPTZ - INTERVAL 1 HOUR)",
            [AS_OF],
        )
        con.execute("CREATE TABLE main.evaluation_runs (run_id VARCHAR, status VARCHAR, is_primary BOOLEAN)")
        con.execute("INSERT INTO main.evaluation_runs VALUES ('r1', 'complete', true)")
    finally:
        con.close()
    code, doc = run_doctor(monkeypatch, db)
    assert code == 0 and doc["needs_action"] is False
    text = CliRunner().invoke(main, ["doctor"]).stdout
    assert "needs action: nothing" in text


def test_memory_that_hurts_needs_action_and_names_the_subject():
    import polars as pl

    from tradingmem_assets.defs.operations import doctor as rules

    assert rules.harmful_memory(pl.DataFrame(schema={"subject_kind": pl.String})).status == "ok"
    hurting = pl.DataFrame(
        {
            "subject_kind": ["lesson"],
            "subject_id": ["logic_error"],
            "role_id": ["trend_follower"],
            "scope": ["role"],
            "before_win_rate": [0.9166],
            "after_win_rate": [0.1666],
        }
    )
    check = rules.harmful_memory(hurting)
    assert check.needs_action and "0.92 -> 0.17" in check.details["hurting"][0]
    assert "trend_follower" in check.details["hurting"][0]
