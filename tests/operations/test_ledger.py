"""Learning runs move forward (SPEC section 16): a run earlier than the bound is refused and writes nothing."""

from __future__ import annotations

import hashlib

import duckdb

from tests.operations.conftest import BUILT_AS_OF as T
from tradingmem_assets.defs.audit.table_hash import tables_sha256
from tradingmem_assets.defs.operations import ledger

EARLIER = "2024-06-01T00:00:00Z"
# tables that record runs: they may change on a replay (SPEC section 13)
RECORDS = {
    "warehouse_runs",
    "run_inputs",
    "run_table_states",
    "evaluation_basis",
    "role_cases_basis",
    "profile_basis",
    "memory_promotion_basis",
    "validated_contents",
    "methodology_cron_runs",
    "llm_usage",
    "methodology_audit_reports",
}


def _all_tables(db) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [
            f"{s}.{t}"
            for s, t in con.execute(
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_type = 'BASE TABLE' ORDER BY 1, 2"
            ).fetchall()
        ]
    finally:
        con.close()


def _digests(db, exclude=frozenset()) -> dict[str, str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [t for t in _all_tables(db) if t.split(".")[1] not in exclude]
        return dict(tables_sha256(con, names).tables)
    finally:
        con.close()


def test_a_learning_run_is_recorded_with_its_as_of(built):
    rows = built.rows("SELECT kind, status, as_of, finished_at IS NOT NULL FROM main.warehouse_runs")
    assert len(rows) == 1
    kind, status, as_of, finished = rows[0]
    assert (kind, status, finished) == ("learning", "ok", True)
    assert as_of.isoformat().startswith("2024-07-01T00:00:00")


def test_an_earlier_learning_run_is_refused_and_leaves_every_table_byte_identical(built):
    before = _digests(built.db)
    result = built.materialize(as_of=EARLIER, raise_on_error=False)
    assert not result.success
    messages = " ".join(e.message or "" for e in result.all_events if e.is_failure) + " ".join(
        str(e.event_specific_data) for e in result.all_events if e.is_failure
    )
    assert "2024-06-01T00:00:00+00:00" in messages and "2024-07-01T00:00:00+00:00" in messages
    assert "TRADINGMEM_DB" in messages
    assert _digests(built.db) == before  # not even a ledger row or a heartbeat
    assert built.rows("SELECT count(*) FROM main.warehouse_runs")[0][0] == 1


def test_a_replay_at_the_same_as_of_changes_no_derived_row(built):
    before = _digests(built.db, exclude=RECORDS)
    assert built.materialize(as_of=T).success
    assert _digests(built.db, exclude=RECORDS) == before
    assert built.rows("SELECT count(*), count(*) FILTER (WHERE status = 'ok') FROM main.warehouse_runs")[
        0
    ] == (2, 2)


def test_audit_runs_neither_obey_nor_move_the_bound():
    assert ledger.run_kind("methodology_audit_job", set()) == "audit"
    assert ledger.run_kind("__ASSET_JOB", {"methodology_audit_reports"}) == "audit"
    assert ledger.run_kind("__ASSET_JOB", {"migrated_role_cases"}) == "migration"
    assert ledger.run_kind("__ASSET_JOB", {"role_cases", "methodology_audit_reports"}) == "learning"
    assert ledger.run_kind("trading_memory_job", {"raw/trading_decisions", "role_cases"}) == "learning"
    assert ledger.run_kind("warehouse_checks_job", set()) is None


def test_the_refusal_names_both_instants_and_the_way_to_backtest():
    from datetime import UTC, datetime

    later, earlier = datetime(2024, 7, 1, tzinfo=UTC), datetime(2024, 6, 1, tzinfo=UTC)
    assert ledger.refusal(later, earlier, "w.duckdb") is None
    assert ledger.refusal(later, later, "w.duckdb") is None  # a replay
    message = ledger.refusal(earlier, later, "w.duckdb")
    assert "2024-06-01" in message and "2024-07-01" in message and "--as-of" in message
    assert hashlib.sha256(message.encode()).hexdigest()  # a plain string
