"""Incremental evaluation (see ``scoring``'s docstring): whether the past an evaluation saw is
unchanged, which decisions a later ``as_of`` can change, and storing their rows in place.

The *basis* of an evaluation at ``as_of`` is, per raw table the pipeline reads, a digest of the
rows it could see (those stamped at or before ``as_of``; all benchmark profiles). It is stored with the
evaluation's write (``evaluation_basis``, in the same transaction). A later evaluation is
incremental when the basis holds now, so the landing files may have grown (one more day of
data) or been rewritten, as long as nothing at or before that ``as_of`` changed, and the
evaluation tables are exactly as the run that wrote the basis left them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.warehouse import replace_table, table_exists

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
EVALUATION_TABLES = (tables.EVALUATION_RUNS, tables.EVALUATION_PRIMARIES, tables.EVALUATION_COMPONENTS)
BASIS_DTYPES = table_dtypes(tables.EVALUATION_BASIS)
WRITTEN = "_ev_written"  # the runs an incremental evaluation wrote (the touched decisions')


@dataclass(frozen=True)
class Basis:
    """The latest stored basis: the run that wrote it, its ``as_of`` and a digest per raw table."""

    run_id: str
    as_of: datetime
    digests: dict[str, str]


def _digests(con: duckdb.DuckDBPyConnection, as_of: datetime) -> dict[str, str]:
    out = {}
    for table, column in VISIBLE_BY.items():
        where = f"WHERE {column} <= $as_of" if column else ""
        ((digest,),) = con.execute(
            "SELECT count(*)::VARCHAR || ':' || coalesce(sum(hash(t)::HUGEINT), 0)::VARCHAR "
            f"FROM {tables.raw_table(table)} t {where}",
            {"as_of": as_of} if column else {},
        ).fetchall()
        out[table] = digest
    return out


def record_basis(con: duckdb.DuckDBPyConnection, run_id: str, as_of: datetime) -> None:
    """Store what this evaluation saw (call in the transaction that writes the evaluation)."""
    rows = pl.DataFrame(
        [(run_id, as_of, table, digest) for table, digest in _digests(con, as_of).items()],
        schema=BASIS_DTYPES,
        orient="row",
    )
    replace_table(con, tables.EVALUATION_BASIS, rows)  # the latest basis is the only one used


def latest_basis(con: duckdb.DuckDBPyConnection) -> Basis | None:
    if not table_exists(con, tables.EVALUATION_BASIS):
        return None
    rows = con.execute(
        f"SELECT run_id, as_of, table_name, visible_digest FROM {tables.EVALUATION_BASIS}"
    ).fetchall()
    if len({(r[0], r[1]) for r in rows}) != 1 or {r[2] for r in rows} != set(VISIBLE_BY):
        return None
    return Basis(run_id=rows[0][0], as_of=rows[0][1], digests={r[2]: r[3] for r in rows})


def holds(con: duckdb.DuckDBPyConnection, basis: Basis) -> bool:
    """Whether every row the basis's evaluation could see is still exactly there, and no other."""
    return _digests(con, basis.as_of) == basis.digests


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
            f"INSERT INTO {tables.EVALUATION_PRIMARIES} BY NAME "
            "SELECT * FROM _ev_primaries ORDER BY decision_id, primary_from"
        ).fetchall()
        return WRITTEN
    # stored in decision order: a validation range then reads only its own row groups
    con.execute(
        f"CREATE OR REPLACE TABLE {tables.EVALUATION_RUNS} AS "
        "SELECT * FROM _ev_all ORDER BY decision_id, profile_id, run_version"
    ).fetchall()
    con.execute(
        f"CREATE OR REPLACE TABLE {tables.EVALUATION_PRIMARIES} AS "
        "SELECT * FROM _ev_primaries ORDER BY decision_id, primary_from"
    ).fetchall()
    return tables.EVALUATION_RUNS
