"""The run ledger (SPEC section 16): every writing run is recorded, and learning moves forward.

``warehouse_runs`` has one row per writing run. A learning run (one that materializes assets of
the main job, whatever launched it) whose ``as_of`` is earlier than the latest ``as_of`` of a
successful learning run is refused before it writes anything, not even its own ledger row. An
equal ``as_of`` is a replay: recorded, and it changes no derived row. Audit and migration runs
are recorded but neither move nor obey the bound (the audit writes only its report).

``started_at`` and ``finished_at`` are the wall clock: these rows record runs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

import duckdb
import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.warehouse import ensure_table, table_exists, transaction

RunKind = Literal["learning", "audit", "migration"]
RUN_KINDS: tuple[RunKind, ...] = ("learning", "audit", "migration")
RUN_STATUSES = ("running", "ok", "failed")

WAREHOUSE_RUNS_DTYPES = table_dtypes(tables.WAREHOUSE_RUNS)


class RunRefusedError(RuntimeError):
    """A learning run would move the warehouse back in time; nothing was written."""


def run_kind(job_name: str, selected_assets: set[str]) -> RunKind | None:
    """What a run is, from its job and the assets it materializes (None: it writes no table)."""
    if job_name in (tables.METHODOLOGY_AUDIT_JOB, tables.AUDIT_ISOLATION_ALERT_JOB):
        return "audit"
    if not selected_assets:
        return None  # a checks-only run reads the stored tables
    if selected_assets - tables.AUDIT_ASSETS - tables.MIGRATION_ASSETS:
        return "learning"
    return "audit" if selected_assets & tables.AUDIT_ASSETS else "migration"


def learning_bound(con: duckdb.DuckDBPyConnection) -> datetime | None:
    """The latest ``as_of`` of a successful learning run (None on a fresh warehouse)."""
    if not table_exists(con, tables.WAREHOUSE_RUNS):
        return None
    rows = con.execute(
        f"SELECT max(as_of) FROM {tables.WAREHOUSE_RUNS} WHERE kind = 'learning' AND status = 'ok'"
    ).fetchall()
    return rows[0][0]


def refusal(as_of: datetime, bound: datetime | None, database: str) -> str | None:
    """Why a learning run at ``as_of`` may not write this warehouse (None: it may)."""
    if bound is None or as_of >= bound:
        return None
    return (
        f"refused: this run's as_of {as_of.isoformat()} is earlier than {bound.isoformat()}, the as_of of the "
        f"latest successful learning run of warehouse {database}; learning runs move forward. To look at "
        f"the past, read it as of that instant (tradingmem recall/learnings suggest/methodologies list "
        f"--as-of {as_of.isoformat()}), or backtest into a fresh warehouse (TRADINGMEM_DB=<new file>)."
    )


def open_run(
    con: duckdb.DuckDBPyConnection,
    *,
    run_id: str,
    job_name: str,
    kind: RunKind,
    as_of: datetime,
    database: str,
) -> None:
    """Record a run as ``running``, or refuse it (raising, with nothing written)."""
    with transaction(con):
        if (
            table_exists(con, tables.WAREHOUSE_RUNS)
            and con.execute(
                f"SELECT count(*) FROM {tables.WAREHOUSE_RUNS} WHERE run_id = ?", [run_id]
            ).fetchall()[0][0]
        ):
            return  # a re-executed step of a run already recorded
        if kind == "learning":
            message = refusal(as_of, learning_bound(con), database)
            if message:
                raise RunRefusedError(message)
        ensure_table(con, tables.WAREHOUSE_RUNS, pl.DataFrame(schema=WAREHOUSE_RUNS_DTYPES))
        con.execute(
            f"INSERT INTO {tables.WAREHOUSE_RUNS} VALUES (?, ?, ?, ?, ?, NULL, 'running')",
            [run_id, job_name, kind, as_of, datetime.now(UTC)],
        )


def close_run(con: duckdb.DuckDBPyConnection, *, run_id: str, failed: bool) -> None:
    """Mark a recorded run ``ok`` or ``failed`` (a run never opened is left alone)."""
    if not table_exists(con, tables.WAREHOUSE_RUNS):
        return
    con.execute(
        f"UPDATE {tables.WAREHOUSE_RUNS} SET status = ?, finished_at = ? WHERE run_id = ?",
        ["failed" if failed else "ok", datetime.now(UTC), run_id],
    )
