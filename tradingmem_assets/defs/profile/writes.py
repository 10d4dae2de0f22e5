"""Writing the profile tables inside one transaction, set-based in DuckDB (no Dagster here).

``fin_customer_profile`` rows are replaced only where they changed (hash, version or basis), so
an unchanged re-run rewrites nothing; ``profile_snapshots`` only ever gets rows appended and
``is_current`` flipped on the superseded version. The ``build`` argument is a
``build.create_profiles`` table (sorted by customer_id) with ``snapshots.assign_versions``'
columns: every write is a filtered scan of it, so rows are written in customer_id order without
sorting the wide JSON.
"""

from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.defs.profile import snapshots
from tradingmem_assets.defs.profile.basis import generation_basis_sql
from tradingmem_assets.defs.profile.build import profile_rows_sql
from tradingmem_assets.defs.profile.fields import FIN_CUSTOMER_PROFILE_DTYPES
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import replace_table, scalar, table_columns, table_exists


def ensure_profile_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create both tables when missing; a profile table of another layout is rebuilt (call inside the
    transaction, so a failed run keeps the old one)."""
    empty = pl.DataFrame(schema=FIN_CUSTOMER_PROFILE_DTYPES)
    if table_columns(con, tables.FIN_CUSTOMER_PROFILE) != empty.columns:  # missing, or another layout
        replace_table(con, tables.FIN_CUSTOMER_PROFILE, empty)
    if not table_exists(con, tables.PROFILE_SNAPSHOTS):
        replace_table(con, tables.PROFILE_SNAPSHOTS, pl.DataFrame(schema=snapshots.PROFILE_SNAPSHOTS_DTYPES))


def mark_rewrites(con: duckdb.DuckDBPyConnection, build: str) -> int:
    """Add ``rewrite`` to the build: false where the stored row already is this profile (hash,
    version and basis), so an unchanged re-run rewrites nothing; returns how many are rewritten.

    Hash and version are compared first: the basis is only written out for rows where they agree.
    """
    con.execute(f"ALTER TABLE {build} ADD COLUMN rewrite BOOLEAN DEFAULT true")
    unchanged = f"""
        SELECT customer_id
        FROM (SELECT b.*, s.snapshot_hash AS stored_hash, s.profile_version AS stored_version,
                     s.generation_basis AS stored_basis
              FROM {build} b JOIN {tables.FIN_CUSTOMER_PROFILE} s USING (customer_id))
        WHERE stored_hash = snapshot_hash AND stored_version IS NOT DISTINCT FROM profile_version
          AND stored_basis = ({generation_basis_sql()})
    """
    con.execute(f"UPDATE {build} SET rewrite = false WHERE customer_id IN ({unchanged})")
    return int(scalar(con, f"SELECT count(*) FROM {build} WHERE rewrite") or 0)


def write_profiles(con: duckdb.DuckDBPyConnection, build: str) -> None:
    """Replace the stored rows marked ``rewrite`` (and add the new ones), in the build's order."""
    cols = ", ".join(f'"{c}"' for c in FIN_CUSTOMER_PROFILE_DTYPES.names())
    rows = f"(SELECT * FROM {build} WHERE rewrite)"
    con.execute(
        f"DELETE FROM {tables.FIN_CUSTOMER_PROFILE} WHERE customer_id IN (SELECT customer_id FROM {rows})"
    )
    con.execute(
        f"INSERT INTO {tables.FIN_CUSTOMER_PROFILE} ({cols}) SELECT {cols} FROM ({profile_rows_sql(rows)})"
    )


def supersede_and_append(con: duckdb.DuckDBPyConnection, build: str, as_of: datetime) -> tuple[int, int]:
    """Flip is_current off the superseded versions, then append the new ones (old rows stay as they
    were); returns (superseded, appended)."""
    superseded = snapshots.supersede(con, tables.PROFILE_SNAPSHOTS, build)
    cols = ", ".join(f'"{c}"' for c in snapshots.PROFILE_SNAPSHOTS_DTYPES.names())
    rows = f"({profile_rows_sql(f'(SELECT * FROM {build} WHERE is_new)')})"
    appended = con.execute(
        f"INSERT INTO {tables.PROFILE_SNAPSHOTS} ({cols}) "
        f"SELECT {cols} FROM ({snapshots.new_snapshots_sql(rows)})",
        {"as_of": as_of},
    ).fetchall()[0][0]
    return superseded, int(appended)


def remove_vanished(con: duckdb.DuckDBPyConnection, build: str) -> int:
    """Drop the current profile of customers no longer present (their snapshots stay)."""
    vanished = f"customer_id NOT IN (SELECT customer_id FROM {build})"
    gone = int(scalar(con, f"SELECT count(*) FROM {tables.FIN_CUSTOMER_PROFILE} WHERE {vanished}") or 0)
    if gone:
        con.execute(f"DELETE FROM {tables.FIN_CUSTOMER_PROFILE} WHERE {vanished}")
    return gone
