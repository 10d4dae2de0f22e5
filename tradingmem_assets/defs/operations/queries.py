"""What the operations commands read from the warehouse: the summary of a build."""

from __future__ import annotations

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import connection, table_exists

SUMMARY_TABLES = (
    "raw_rejects",
    "evaluation_runs",
    "role_cases",
    "role_reflections",
    "learnings",
    "methodologies",
    "user_facts",
    "fin_customer_profile",
    "profile_snapshots",
    "customer_kb",
)


def warehouse_summary(database: str) -> dict[str, int | None]:
    """Row counts of the main output tables (None: not materialized)."""
    out: dict[str, int | None] = {}
    with connection(database, read_only=True) as con:
        for table in SUMMARY_TABLES:
            if table_exists(con, f"main.{table}"):
                out[table] = con.execute(f"SELECT count(*) FROM main.{table}").fetchall()[0][0]
            else:
                out[table] = None
        if table_exists(con, tables.ROLE_CASES):
            out.update(
                {
                    f"role_cases.{status}": n
                    for status, n in con.execute(
                        "SELECT status, count(*) FROM main.role_cases GROUP BY status ORDER BY status"
                    ).fetchall()
                }
            )
    return out
