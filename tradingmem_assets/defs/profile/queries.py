"""Reads of a customer's profile and its snapshots (`tradingmem explain`); empty before materialization."""

from __future__ import annotations

import duckdb

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import read_frame, table_exists


def customer_profile(con: duckdb.DuckDBPyConnection, customer_id: str) -> dict | None:
    if not table_exists(con, tables.FIN_CUSTOMER_PROFILE):
        return None
    found = read_frame(
        con, f"SELECT * FROM {tables.FIN_CUSTOMER_PROFILE} WHERE customer_id = ?", [customer_id]
    ).to_dicts()
    return found[0] if found else None


def profile_snapshots(con: duckdb.DuckDBPyConnection, customer_id: str) -> list[dict]:
    """The customer's snapshot versions (ids, hashes, which is current), oldest first."""
    if not table_exists(con, tables.PROFILE_SNAPSHOTS):
        return []
    return read_frame(
        con,
        "SELECT snapshot_id, version, snapshot_hash, is_current, created_at "
        f"FROM {tables.PROFILE_SNAPSHOTS} WHERE customer_id = ? ORDER BY version",
        [customer_id],
    ).to_dicts()
