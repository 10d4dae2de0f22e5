"""Reads of the evaluation runs behind one decision (``tradingmem explain``); empty before materialization."""

from __future__ import annotations

import duckdb

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import read_frame, table_exists


def _rows(con: duckdb.DuckDBPyConnection, table: str, sql: str, params: list) -> list[dict]:
    return read_frame(con, sql, params).to_dicts() if table_exists(con, table) else []


def evaluation_run(con: duckdb.DuckDBPyConnection, run_id: str) -> dict | None:
    found = _rows(
        con, tables.EVALUATION_RUNS, f"SELECT * FROM {tables.EVALUATION_RUNS} WHERE run_id = ?", [run_id]
    )
    return found[0] if found else None


def run_components(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict]:
    return _rows(
        con,
        tables.EVALUATION_COMPONENTS,
        f"SELECT component, value, quality_flag FROM {tables.EVALUATION_COMPONENTS} "
        "WHERE run_id = ? ORDER BY component",
        [run_id],
    )


def decision_runs(con: duckdb.DuckDBPyConnection, decision_id: str) -> list[dict]:
    """Every evaluation run of a decision (each profile and version), each with its components."""
    runs = _rows(
        con,
        tables.EVALUATION_RUNS,
        f"SELECT * FROM {tables.EVALUATION_RUNS} WHERE decision_id = ? ORDER BY profile_id, run_version",
        [decision_id],
    )
    for run in runs:
        run["components"] = run_components(con, run["run_id"])
    return runs
