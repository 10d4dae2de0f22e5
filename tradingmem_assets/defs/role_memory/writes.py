"""Writing role cases: replace the table in one statement, keeping ``updated_at`` of unchanged rows."""

from __future__ import annotations

from datetime import datetime

import duckdb

from tradingmem_assets.defs.role_memory.admission import CONTENT_COLUMNS, ROLE_CASES_DTYPES, polars_json
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import table_exists

UNCHANGED = "_tm_unchanged_cases"

# The updated_at of every stored row whose content the admission did not change (NULL: changed).
# A CASE, not a WHERE: as a filter, the comparisons would become keys of a very wide hash join.
UNCHANGED_SQL = """
CREATE OR REPLACE TEMP TABLE {into} AS
SELECT c.case_id, CASE WHEN {unchanged} THEN p.updated_at END AS updated_at
FROM {admitted} c
JOIN {table} p ON p.case_id = c.case_id
"""

WRITE_SQL = """
CREATE OR REPLACE TABLE {table} AS
SELECT {columns}, coalesce(u.updated_at, $1) AS updated_at
FROM {admitted} c
LEFT JOIN {unchanged} u ON u.case_id = c.case_id
ORDER BY c.role_id, c.symbol, c.case_id
"""


def write_cases(
    con: duckdb.DuckDBPyConnection, admitted: str, as_of: datetime, table: str = tables.ROLE_CASES
) -> None:
    """Replace ``table`` with the ``admitted`` cases, sorted; reasons stay VARCHAR[], provenance is JSON.

    ``updated_at`` is kept from the row being replaced when none of the content columns changed,
    else it is ``as_of``: re-materializing unchanged inputs changes no row, and a changed row says
    when it changed. Call inside ``transaction``.
    """
    provenance = con.sql(f"SELECT provenance FROM {admitted}").types[0]
    with polars_json(con, "_tm_provenance_json", provenance) as json:
        if table_exists(con, table):
            unchanged = " AND ".join(
                f"{json}(c.provenance)::VARCHAR IS NOT DISTINCT FROM p.provenance::VARCHAR"
                if c == "provenance"
                else f"c.{c} IS NOT DISTINCT FROM p.{c}"
                for c in CONTENT_COLUMNS
            )
            con.execute(
                UNCHANGED_SQL.format(into=UNCHANGED, admitted=admitted, table=table, unchanged=unchanged)
            )
        else:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {UNCHANGED} (case_id VARCHAR, updated_at TIMESTAMPTZ)")
        columns = ", ".join(
            f"{json}(c.provenance) AS provenance" if c == "provenance" else f"c.{c}"
            for c in ROLE_CASES_DTYPES.names()
            if c != "updated_at"
        )
        con.execute(
            WRITE_SQL.format(table=table, columns=columns, admitted=admitted, unchanged=UNCHANGED), [as_of]
        )
