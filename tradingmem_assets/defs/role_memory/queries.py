"""Reads of one role case and its reflections (``tradingmem explain``); empty before materialization."""

from __future__ import annotations

import duckdb

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import read_frame, table_exists


def role_case(con: duckdb.DuckDBPyConnection, *, case_id: str | None = None, decision_id: str | None = None):
    """The case with this id, or the case of this decision (None: no such case)."""
    if not table_exists(con, tables.ROLE_CASES):
        return None
    key, value = ("case_id", case_id) if case_id is not None else ("decision_id", decision_id)
    found = read_frame(con, f"SELECT * FROM {tables.ROLE_CASES} WHERE {key} = ?", [value]).to_dicts()
    return found[0] if found else None


def case_reflections(con: duckdb.DuckDBPyConnection, case_id: str) -> list[dict]:
    if not table_exists(con, tables.ROLE_REFLECTIONS):
        return []
    return read_frame(
        con, f"SELECT * FROM {tables.ROLE_REFLECTIONS} WHERE case_id = ? ORDER BY reflected_at", [case_id]
    ).to_dicts()
