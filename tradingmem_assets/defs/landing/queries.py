"""Reads of the landed trading record behind one decision (``tradingmem explain``).

Each read returns plain rows (dicts) and is empty, never an error, when its table is not landed yet.
"""

from __future__ import annotations

import duckdb

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import read_frame, table_exists

DECISIONS = tables.raw_table("trading_decisions")
EXECUTIONS = tables.raw_table("trade_executions")
FILLS = tables.raw_table("trade_fills")
POSITIONS = tables.raw_table("position_lifecycles")
PREVIEW_CONSUMPTIONS = tables.raw_table("preview_consumptions")


def _rows(con: duckdb.DuckDBPyConnection, table: str, sql: str, params: list) -> list[dict]:
    return read_frame(con, sql, params).to_dicts() if table_exists(con, table) else []


def decision(con: duckdb.DuckDBPyConnection, decision_id: str) -> dict | None:
    found = _rows(con, DECISIONS, f"SELECT * FROM {DECISIONS} WHERE decision_id = ?", [decision_id])
    return found[0] if found else None


def execution(con: duckdb.DuckDBPyConnection, execution_id: str) -> dict | None:
    found = _rows(con, EXECUTIONS, f"SELECT * FROM {EXECUTIONS} WHERE execution_id = ?", [execution_id])
    return found[0] if found else None


def execution_fills(con: duckdb.DuckDBPyConnection, execution_id: str) -> list[dict]:
    return _rows(
        con,
        FILLS,
        f"SELECT * FROM {FILLS} WHERE execution_id = ? ORDER BY filled_at, fill_id",
        [execution_id],
    )


def execution_positions(con: duckdb.DuckDBPyConnection, execution_id: str) -> list[dict]:
    return _rows(con, POSITIONS, f"SELECT * FROM {POSITIONS} WHERE execution_id = ?", [execution_id])


def decision_preview_consumptions(con: duckdb.DuckDBPyConnection, decision_id: str) -> list[dict]:
    """The consumptions of the preview a decision acted on."""
    if not table_exists(con, DECISIONS):
        return []
    return _rows(
        con,
        PREVIEW_CONSUMPTIONS,
        f"SELECT c.* FROM {PREVIEW_CONSUMPTIONS} c JOIN {DECISIONS} d ON d.preview_id = c.preview_id "
        "WHERE d.decision_id = ? ORDER BY c.consumed_at",
        [decision_id],
    )
