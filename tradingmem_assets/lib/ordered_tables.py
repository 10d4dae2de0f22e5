"""Writing a derived table in its writer's order, keeping the stored rows when the table only grew.

The methodology ladder sorts its history tables by time (lifecycle events, cases and reflections
by when they were recorded, hints by when they were injected), so a later day usually adds rows
only after the ones already stored: the outcomes, cases and windows that became knowable since.
Writing such a table whole every day rewrote every stored row (at SF 10, 600,000 events with
their JSON detail) to add a day's worth.

``write_in_order`` compares the stored rows, in their stored order, with the first rows of the
new frame, exactly: every column, nulls equal, floating-point values with their sign (``-0.0``
and ``0.0`` differ), nested values by their text. When they are the same rows in the same order,
only the frame's rows after them are inserted; otherwise the table is written whole. Either way
the table then holds the frame's rows in the frame's order, as a whole write would leave it: no
reader, with or without an ``ORDER BY``, can tell the two apart. Call inside ``transaction``.
"""

from __future__ import annotations

import duckdb
import polars as pl

from tradingmem_assets.lib.warehouse import replace_table, table_exists

_POS = "_tm_pos"
_NEW = "_tm_ordered_new"

# types whose equal values are the same value; floats also need their sign (0.0 = -0.0), and any
# other column (lists, structs, JSON) is compared by its text
_EXACT_TYPES = (
    "VARCHAR",
    "BOOLEAN",
    "BIGINT",
    "INTEGER",
    "SMALLINT",
    "TINYINT",
    "UBIGINT",
    "UINTEGER",
    "HUGEINT",
    "DATE",
    "TIMESTAMP",
    "TIMESTAMP WITH TIME ZONE",
)
_FLOAT_TYPES = ("DOUBLE", "FLOAT")


def _same(column: str, kind: str) -> str:
    """SQL: stored row ``s`` and new row ``f`` hold the same value in ``column`` (nulls equal)."""
    s, f = f's."{column}"', f'f."{column}"'
    if kind in _FLOAT_TYPES:
        return f"({s} IS NOT DISTINCT FROM {f} AND signbit({s}) IS NOT DISTINCT FROM signbit({f}))"
    if kind not in _EXACT_TYPES:
        s, f = f"{s}::VARCHAR", f"{f}::VARCHAR"
    return f"{s} IS NOT DISTINCT FROM {f}"


def write_in_order(con: duckdb.DuckDBPyConnection, qualified: str, frame: pl.DataFrame) -> str:
    """Make ``qualified`` hold ``frame``'s rows in ``frame``'s order: by appending the rows after
    the stored ones when the stored rows are the frame's first rows, else by writing it whole.
    Returns how it was written, in words (for the asset's metadata)."""
    if not table_exists(con, qualified):
        replace_table(con, qualified, frame)
        return f"written whole: {frame.height} rows, the table is new"
    con.register(_NEW, frame.with_row_index(_POS))
    try:
        stored_types = con.execute(f"DESCRIBE {qualified}").fetchall()
        new_types = con.execute(f"DESCRIBE SELECT * EXCLUDE ({_POS}) FROM {_NEW}").fetchall()
        stored = con.execute(f"SELECT count(*) FROM {qualified}").fetchall()[0][0]
        if [r[:2] for r in stored_types] != [r[:2] for r in new_types]:
            why = "its columns changed"
        elif stored > frame.height:
            why = f"it held {stored} rows, more than the {frame.height} it holds now"
        else:
            same = " AND ".join(_same(name, kind) for name, kind, *_ in stored_types)
            kept = con.execute(  # each stored row beside the new row at its place, in scan order
                f"SELECT count(*) FROM {qualified} s "
                f"POSITIONAL JOIN (SELECT * FROM {_NEW} WHERE {_POS} < $1) f WHERE {same}",
                [stored],
            ).fetchall()[0][0]
            if kept == stored == frame.height:
                return f"unchanged: the {stored} stored rows are the new ones"
            if kept == stored:
                columns = ", ".join(f'"{name}"' for name, *_ in stored_types)
                new_rows = f"SELECT {columns} FROM {_NEW} WHERE {_POS} >= $1 ORDER BY {_POS}"
                con.execute(f"INSERT INTO {qualified} {new_rows}", [stored])
                added = frame.height - stored
                return f"appended {added} rows after the {stored} stored ones, which are unchanged"
            why = "a stored row is not the row at its place among the new ones"
    finally:
        con.unregister(_NEW)
    replace_table(con, qualified, frame)
    return f"written whole: {frame.height} rows, {why}"
