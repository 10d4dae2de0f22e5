"""Incremental evaluation (see ``scoring``'s docstring): which decisions a later ``as_of`` can
change, and storing their rows in place of the stored ones."""

from __future__ import annotations

import duckdb

from tradingmem_assets.lib import tables

# The decisions an instant in (since, as_of] can change (see the module's docstring).
TOUCHED_SQL = """
CREATE OR REPLACE TEMP TABLE _ev_touched AS
SELECT decision_id FROM raw.trading_decisions WHERE decided_at > $since AND decided_at <= $as_of
UNION
SELECT e.decision_id FROM raw.trade_executions e
WHERE e.executed_at > $since AND e.executed_at <= $as_of
   OR EXISTS (SELECT 1 FROM raw.benchmark_profiles p
              WHERE e.executed_at + to_days(p.horizon_days::INTEGER) > $since
                AND e.executed_at + to_days(p.horizon_days::INTEGER) <= $as_of)
UNION
SELECT e.decision_id FROM raw.trade_fills f JOIN raw.trade_executions e USING (execution_id)
WHERE f.filled_at > $since AND f.filled_at <= $as_of
UNION
SELECT d.decision_id FROM raw.preview_consumptions c JOIN raw.trading_decisions d USING (preview_id)
WHERE c.consumed_at > $since AND c.consumed_at <= $as_of
UNION
SELECT decision_id FROM raw.evaluation_promotions WHERE promoted_at > $since AND promoted_at <= $as_of
"""


def write_runs(con: duckdb.DuckDBPyConnection, incremental: bool) -> None:
    """Store ``_ev_all`` and ``_ev_primaries`` (call in a transaction): the whole tables, or, when
    incremental, in place of the touched decisions' rows."""
    if incremental:
        for table in (tables.EVALUATION_RUNS, tables.EVALUATION_PRIMARIES):
            con.execute(f"DELETE FROM {table} WHERE decision_id IN (SELECT decision_id FROM _ev_touched)")
        con.execute(f"INSERT INTO {tables.EVALUATION_RUNS} BY NAME SELECT * FROM _ev_all").fetchall()
        con.execute(
            f"INSERT INTO {tables.EVALUATION_PRIMARIES} BY NAME "
            "SELECT * FROM _ev_primaries ORDER BY decision_id, primary_from"
        ).fetchall()
        return
    con.execute(f"CREATE OR REPLACE TABLE {tables.EVALUATION_RUNS} AS SELECT * FROM _ev_all").fetchall()
    con.execute(
        f"CREATE OR REPLACE TABLE {tables.EVALUATION_PRIMARIES} AS "
        "SELECT * FROM _ev_primaries ORDER BY decision_id, primary_from"
    ).fetchall()
