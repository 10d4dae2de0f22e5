"""Read (never write) what one audit pass scores: the learning tables, heartbeats, known run ids.

This is the only audit module that holds a DuckDB connection for reading; it issues SELECTs only
and hands plain Polars frames to ``core.audit_scoring``. The SQL narrows rows to what a dimension
can use (the window, plus every graduation for graduation times) so a pass stays fast at scale;
the scoring functions filter by the window again, so the narrowing never changes a score.
"""

import duckdb
import polars as pl

from tradingmem_assets.defs.audit import inputs
from tradingmem_assets.defs.audit.inputs import AuditInputError, AuditInputs, AuditWindow
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import read_frame, table_columns, table_exists

METHODOLOGIES = tables.METHODOLOGIES
EVENTS = tables.METHODOLOGY_LIFECYCLE_EVENTS
CASES = tables.METHODOLOGY_CASES
HINTS = tables.METHODOLOGY_CASE_HINTS
HEARTBEATS = tables.METHODOLOGY_CRON_RUNS
INSTITUTION_RUNS = tables.raw_table("institution_runs")


def _select(
    con: duckdb.DuckDBPyConnection, table: str, columns: dict, where: str = "", params: list | None = None
) -> pl.DataFrame:
    if not table_exists(con, table):
        return pl.DataFrame(schema=columns)
    cols = ", ".join(f'"{c}"' for c in columns)
    try:
        return read_frame(con, f"SELECT {cols} FROM {table} {where}", params)
    except duckdb.BinderException as exc:
        raise AuditInputError(f"{table} cannot be read by the audit: {exc}".splitlines()[0]) from exc


def read_heartbeats(con: duckdb.DuckDBPyConnection, until) -> pl.DataFrame:
    """Heartbeats timed by their run's ``as_of`` (SPEC section 8: every heartbeat time rule uses it),
    so a warehouse built under ``TRADINGMEM_AS_OF`` is scored like a live one. Heartbeats written
    before ``as_of`` was recorded fall back to their wall-clock ``ts``."""
    if not table_exists(con, HEARTBEATS):
        return pl.DataFrame(schema=inputs.HEARTBEAT_COLUMNS)
    time = "coalesce(as_of, ts)" if "as_of" in table_columns(con, HEARTBEATS) else "ts"
    return read_frame(
        con, f"SELECT status, {time} AS ts FROM {HEARTBEATS} WHERE {time} <= ? ORDER BY ts", [until]
    )


def read_audit_inputs(con: duckdb.DuckDBPyConnection, window: AuditWindow) -> AuditInputs:
    """Every row a pass needs, as Polars frames (missing tables read as empty frames)."""
    span = [window.start, window.end]
    # Learning tables first, so a missing column is reported against its own table.
    methodologies = _select(con, METHODOLOGIES, inputs.METHODOLOGY_COLUMNS)
    events = _select(
        con, EVENTS, inputs.EVENT_COLUMNS, "WHERE ts BETWEEN ? AND ? OR event = 'graduated'", span
    )
    cases = _select(con, CASES, inputs.CASE_COLUMNS, "WHERE recorded_at BETWEEN ? AND ?", span)
    hints = _select(con, HINTS, inputs.HINT_COLUMNS, "WHERE injected_at BETWEEN ? AND ?", span)
    heartbeats = read_heartbeats(con, window.end)
    cases_in_window = f"SELECT run_id FROM {CASES} WHERE recorded_at BETWEEN ? AND ?"
    hints_in_window = f"SELECT run_id FROM {HINTS} WHERE injected_at BETWEEN ? AND ?"
    cited = [q for t, q in ((CASES, cases_in_window), (HINTS, hints_in_window)) if table_exists(con, t)]
    if cited and table_exists(con, INSTITUTION_RUNS):
        known_runs = _select(
            con,
            INSTITUTION_RUNS,
            inputs.RUN_ID_COLUMNS,
            f"WHERE run_id IN ({' UNION ALL '.join(cited)})",
            span * len(cited),
        ).unique()
    else:
        known_runs = pl.DataFrame(schema=inputs.RUN_ID_COLUMNS)
    return AuditInputs(
        methodologies=methodologies,
        lifecycle_events=events,
        cases=cases,
        case_hints=hints,
        heartbeats=heartbeats,
        known_run_ids=known_runs,
    )
