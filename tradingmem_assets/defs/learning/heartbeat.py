"""Heartbeat rows of ``methodology_cron_runs``: one per learning run, ``ok`` or ``failed``.

Heartbeats record runs, so ``ts`` is the real wall clock (the one exception to determinism), and
``as_of`` is the run's time anchor, which every time rule about heartbeats uses (audit
``cron_health``, doctor staleness), so a warehouse built under ``TRADINGMEM_AS_OF`` scores them
like a live one. The row is keyed by the Dagster run id: the heartbeat asset inserts ``ok`` only
when the run has no row yet, and the warehouse resource turns the run's row into ``failed`` as the
run ends (failed wins), so a run whose learning assets succeeded but that failed elsewhere still
ends as ``failed``.
"""

import json
from datetime import UTC, datetime

import duckdb
import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.warehouse import ensure_table, transaction

METHODOLOGY_CRON_RUNS_DTYPES = table_dtypes(tables.METHODOLOGY_CRON_RUNS)


def write_heartbeat(
    con: duckdb.DuckDBPyConnection,
    *,
    run_id: str,
    job_name: str,
    status: str,
    as_of: datetime,
    detail: dict,
) -> None:
    """Record the run's heartbeat (``ok`` never overwrites; ``failed`` always wins)."""
    if status not in ("ok", "failed"):
        raise ValueError(f"heartbeat status must be ok or failed, got {status!r}")
    now = datetime.now(UTC)
    text = json.dumps(detail, default=str, sort_keys=True)
    with transaction(con):
        ensure_table(con, tables.METHODOLOGY_CRON_RUNS, pl.DataFrame(schema=METHODOLOGY_CRON_RUNS_DTYPES))
        if status == "failed":
            con.execute(
                f"DELETE FROM {tables.METHODOLOGY_CRON_RUNS} WHERE run_id = ? AND status = 'ok'", [run_id]
            )
        exists = con.execute(
            f"SELECT count(*) FROM {tables.METHODOLOGY_CRON_RUNS} WHERE run_id = ?", [run_id]
        ).fetchall()
        if exists[0][0]:
            return
        con.execute(
            f"INSERT INTO {tables.METHODOLOGY_CRON_RUNS} (run_id, job_name, status, ts, as_of, detail) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [run_id, job_name, status, now, as_of, text],
        )
