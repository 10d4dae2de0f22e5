"""Incremental evaluation (see ``scoring``'s docstring): whether the past an evaluation saw is
unchanged, which decisions a later ``as_of`` can change, and storing their rows in place.

The *basis* of an evaluation at ``as_of`` (``lib.basis``) is, per raw table the pipeline reads, a
digest of the rows it could see (those stamped at or before ``as_of``; all benchmark profiles). It
is stored with the evaluation's write (``evaluation_basis``, in the same transaction). A later
evaluation is incremental when the basis holds now, so the landing files may have grown (one more
day of data) or been rewritten, as long as nothing at or before that ``as_of`` changed, and the
evaluation tables are exactly as the run that wrote the basis left them.
"""

from __future__ import annotations

import duckdb

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.basis import visible_rows
from tradingmem_assets.lib.warehouse import create_table_as

# what the evaluation pipeline reads of each raw table: the rows stamped by this column (None: all)
VISIBLE_BY = {
    "trading_decisions": "decided_at",
    "preview_consumptions": "consumed_at",
    "trade_executions": "executed_at",
    "trade_fills": "filled_at",
    "price_bars": "ts",
    "evaluation_promotions": "promoted_at",
    "benchmark_profiles": None,
}
# the basis (``lib.basis``): the rows of each of those tables the evaluation could see
EVALUATION_VISIBLE = {
    table: visible_rows(tables.raw_table(table), column) for table, column in VISIBLE_BY.items()
}
# the tables it writes (evaluation_components is a view of the runs)
EVALUATION_TABLES = (tables.EVALUATION_RUNS, tables.EVALUATION_PRIMARIES)
WRITTEN = "_ev_written"  # the runs an incremental evaluation wrote (the touched decisions')


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


def write_runs(con: duckdb.DuckDBPyConnection, incremental: bool) -> str:
    """Store ``_ev_all`` and ``_ev_primaries`` (call in a transaction): the whole tables, or, when
    incremental, in place of the touched decisions' rows. Returns the relation holding the runs
    written, for their validation before the transaction commits."""
    if incremental:
        # _ev_all reads the touched decisions' stored runs: kept before they are deleted
        con.execute(f"CREATE OR REPLACE TEMP TABLE {WRITTEN} AS SELECT * FROM _ev_all").fetchall()
        for table in (tables.EVALUATION_RUNS, tables.EVALUATION_PRIMARIES):
            con.execute(f"DELETE FROM {table} WHERE decision_id IN (SELECT decision_id FROM _ev_touched)")
        con.execute(f"INSERT INTO {tables.EVALUATION_RUNS} BY NAME SELECT * FROM {WRITTEN}").fetchall()
        con.execute(
            f"INSERT INTO {tables.EVALUATION_PRIMARIES} BY NAME SELECT * FROM _ev_primaries"
        ).fetchall()
        return WRITTEN
    # not sorted: sorting the wide rows cost more than anything reading them saves (the validation's
    # buckets do not depend on the order; docs/performance-log.md). Nor the primaries: every reader
    # joins them whole (0.3-0.5 s of sorting 1.9 million intervals at SF 10, for nothing)
    create_table_as(con, tables.EVALUATION_RUNS, "SELECT * FROM _ev_all", replace=True)
    con.execute(
        f"CREATE OR REPLACE TABLE {tables.EVALUATION_PRIMARIES} AS SELECT * FROM _ev_primaries"
    ).fetchall()
    return tables.EVALUATION_RUNS
