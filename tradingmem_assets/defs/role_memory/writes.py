"""Writing role cases: keep ``updated_at`` of unchanged rows; replace only the changed rows when
they are few, else the whole table (declared with ``create_table_as``: provenance is stored with ZSTD)."""

from __future__ import annotations

from datetime import datetime

import duckdb

from tradingmem_assets.defs.role_memory.admission import CONTENT_COLUMNS, ROLE_CASES_DTYPES, polars_json
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import create_table_as, scalar, table_exists

UNCHANGED = "_tm_unchanged_cases"
ENCODED = "_tm_encoded_cases"

# Per admitted case that is stored, the updated_at of its stored row when the admission did not
# change its content (NULL: changed). A CASE, not a WHERE: as a filter, the comparisons would
# become keys of a very wide hash join. A case id stored twice (a hand edit: the run's own writes
# keep it unique) counts as changed, so both rows go and the admitted case replaces them.
UNCHANGED_SQL = """
CREATE OR REPLACE TEMP TABLE {into} AS
SELECT c.case_id,
       CASE WHEN count(*) = 1 AND bool_and({unchanged}) THEN any_value(p.updated_at) END AS updated_at
FROM {admitted} c
JOIN {table} p ON p.case_id = c.case_id
GROUP BY c.case_id
"""

# Beyond this share of changed or removed rows the table is rewritten whole.
IN_PLACE_SHARE = 0.1

WRITE_SQL = """
SELECT {columns}, coalesce(u.updated_at, $1) AS updated_at
FROM {admitted} c
LEFT JOIN {unchanged} u ON u.case_id = c.case_id
"""


def write_cases(
    con: duckdb.DuckDBPyConnection,
    admitted: str,
    as_of: datetime,
    table: str = tables.ROLE_CASES,
    *,
    partial: bool = False,
) -> int:
    """Make ``table`` hold the ``admitted`` cases (a relation read once: ``admitted_cases``' view);
    reasons stay VARCHAR[], provenance is JSON.

    ``updated_at`` is kept from the stored row when none of the content columns changed, else it is
    ``as_of``: re-materializing unchanged inputs changes no row, and a changed row says when it
    changed. When at most ``IN_PLACE_SHARE`` of the rows changed, appeared or went, only those are
    deleted and inserted (a later day usually changes few cases); otherwise the table is rewritten
    (unsorted: nothing reads it by range, and the sort cost 1-2 s of a 4 s write at SF 10). With
    ``partial`` (an incremental run), ``admitted`` holds the cases of some decisions only: they
    replace those cases' stored rows, in place, and every other row stays. Returns the number of
    rows written (changed or new). Call inside ``transaction``.
    """
    provenance = con.sql(f"SELECT provenance FROM {admitted}").types[0]
    with polars_json(con, "_tm_provenance_json", provenance) as json:
        if not table_exists(con, table):  # every case is new: the admission is read straight in
            columns = _columns(f"{json}(c.provenance)")
            create_table_as(con, table, f"SELECT {columns}, $1 AS updated_at FROM {admitted} c", [as_of])
            return scalar(con, f"SELECT count(*) FROM {table}")
        try:
            # read once and encoded once (the encoder is Python): compared with the stored rows, then written
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE {ENCODED} AS "
                f"SELECT * REPLACE ({json}(provenance) AS provenance) FROM {admitted}"
            )
            unchanged = " AND ".join(
                "c.provenance::VARCHAR IS NOT DISTINCT FROM p.provenance::VARCHAR"
                if c == "provenance"
                else f"c.{c} IS NOT DISTINCT FROM p.{c}"
                for c in CONTENT_COLUMNS
            )
            con.execute(
                UNCHANGED_SQL.format(into=UNCHANGED, admitted=ENCODED, table=table, unchanged=unchanged)
            )
            columns = _columns("c.provenance")
            ((admitted_rows, kept),) = con.execute(
                f"SELECT (SELECT count(*) FROM {ENCODED}), "
                f"(SELECT count(*) FROM {UNCHANGED} WHERE updated_at IS NOT NULL)"
            ).fetchall()
            if not _write_in_place(con, table, columns, as_of, admitted_rows, kept, partial):
                rows = WRITE_SQL.format(columns=columns, admitted=ENCODED, unchanged=UNCHANGED)
                create_table_as(con, table, rows, [as_of], replace=True)
        finally:
            con.execute(f"DROP TABLE IF EXISTS {ENCODED}")
            con.execute(f"DROP TABLE IF EXISTS {UNCHANGED}")
    return admitted_rows - kept


def _columns(provenance: str) -> str:
    """The written columns but ``updated_at``, of the cases ``c``, with ``provenance`` encoded as given."""
    return ", ".join(
        f"{provenance} AS provenance" if c == "provenance" else f"c.{c}"
        for c in ROLE_CASES_DTYPES.names()
        if c != "updated_at"
    )


def _write_in_place(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: str,
    as_of: datetime,
    admitted: int,
    kept: int,
    partial: bool,
) -> bool:
    """Delete the changed and removed rows and insert the changed and new ones, when they are few
    or only some decisions were admitted (False: nothing written, rewrite the table). Unchanged
    rows are not touched."""
    keep = f"(SELECT case_id FROM {UNCHANGED} WHERE updated_at IS NOT NULL)"
    if partial:  # only the admitted cases' rows can go
        con.execute(
            f"DELETE FROM {table} WHERE case_id IN (SELECT case_id FROM {ENCODED}) AND case_id NOT IN {keep}"
        )
    else:
        stored = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        if (stored - kept) + (admitted - kept) > IN_PLACE_SHARE * max(stored, admitted):
            return False
        con.execute(f"DELETE FROM {table} WHERE case_id NOT IN {keep}")
    con.execute(
        f"INSERT INTO {table} BY NAME SELECT {columns}, $1 AS updated_at FROM {ENCODED} c "
        f"WHERE c.case_id NOT IN {keep}",
        [as_of],
    )
    return True
