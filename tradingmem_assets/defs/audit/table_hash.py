"""Content hashes of the learning tables, so an audit pass can prove it changed none of them.

The digest of a table is one SHA-256 over a canonical form of its full contents:

- a header naming the table and every column with its DuckDB type, columns in name order;
- every row as ``to_json(row(col_1, ..., col_n))``: a JSON array, columns in name order, so every
  value is serialized unambiguously (strings quoted and escaped, NULL as ``null``, timestamps in
  UTC, lists and structs as JSON), and one row's text ends where the next begins;
- the rows in a canonical total order of the multiset of rows, independent of physical order: by
  DuckDB's 64-bit ``hash`` of the text, then by the text (a sort on fixed-width keys, comparing
  texts only when two hashes are equal);
- the row count.

Until format v2 each row was SHA-256'd on its own and the sorted row digests were hashed; DuckDB's
SHA-256 runs at a fraction of the speed of ``hashlib``'s, so that took about 1.5 times as long. The
digest depends on DuckDB's ``to_json`` and ``hash``: digests of the same contents agree between
processes on one DuckDB version (an audit pass compares two digests of its own).

A missing table hashes as :data:`MISSING_TABLE_SHA256`. The combined digest of several tables is
the SHA-256 of ``"<table>=<digest>\\n"`` lines in the given order. DuckDB serializes and sorts
(vectorized, in parallel) and the texts stream through ``hashlib`` in Arrow batches: no Python loop
over rows (Python's ``hash()`` is salted per process and never used here).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.sql_json import sql_identifier

HASH_FORMAT = "tradingmem/table_hash/v2"

LEARNING_TABLES: tuple[str, ...] = (
    tables.METHODOLOGIES,
    tables.METHODOLOGY_LIFECYCLE_EVENTS,
    tables.METHODOLOGY_CASES,
    tables.METHODOLOGY_CASE_HINTS,
)

#: The digest of a table that does not exist (documented constant, see docs/audit.md).
MISSING_TABLE_SHA256: str = hashlib.sha256(f"{HASH_FORMAT}:missing-table".encode()).hexdigest()

_BATCH_ROWS = 262_144


@dataclass(frozen=True)
class TablesDigest:
    """The combined digest of a set of tables, with each table's digest and row count."""

    combined: str
    tables: dict[str, str]
    rows: dict[str, int | None]

    def changed_tables(self, other: TablesDigest) -> list[str]:
        """The tables whose digest differs between two hashes of the same set."""
        names = list(dict.fromkeys([*self.tables, *other.tables]))
        return [t for t in names if self.tables.get(t) != other.tables.get(t)]


def _split(qualified: str) -> tuple[str, str]:
    schema, _, name = qualified.rpartition(".")
    return schema or "main", name


def _columns(con: duckdb.DuckDBPyConnection, qualified: str) -> list[tuple[str, str]] | None:
    schema, name = _split(qualified)
    rows = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = ? AND table_name = ?",
        [schema, name],
    ).fetchall()
    if not rows:
        return None
    return sorted((str(c), str(t)) for c, t in rows)


def _update_with_binary_column(hasher, column: pa.Array) -> int:
    """Feed the concatenated values of a binary Arrow column to ``hasher`` without copying rows."""
    column = column.cast(pa.large_binary())
    if len(column) == 0:
        return 0
    _, offsets_buf, data_buf = column.buffers()
    offsets = np.frombuffer(offsets_buf, dtype="<i8")[column.offset : column.offset + len(column) + 1]
    hasher.update(memoryview(data_buf)[int(offsets[0]) : int(offsets[-1])])
    return len(column)


def table_sha256(con: duckdb.DuckDBPyConnection, qualified: str) -> tuple[str, int | None]:
    """The canonical content digest of one table and its row count (None when it does not exist)."""
    columns = _columns(con, qualified)
    if columns is None:
        return MISSING_TABLE_SHA256, None
    schema, name = _split(qualified)
    con.execute("SET TimeZone = 'UTC'")  # timestamps with time zone serialize in UTC, always
    header = "\n".join([HASH_FORMAT, f"{schema}.{name}", *(f"{c}\t{t}" for c, t in columns)]) + "\n"
    hasher = hashlib.sha256(header.encode())
    values = ", ".join(sql_identifier(c) for c, _ in columns)
    sql = (
        f"SELECT j FROM (SELECT to_json(row({values}))::VARCHAR AS j "
        f"FROM {sql_identifier(schema)}.{sql_identifier(name)}) ORDER BY hash(j), j"
    )
    rows = 0
    for batch in con.sql(sql).to_arrow_reader(_BATCH_ROWS):
        rows += _update_with_binary_column(hasher, batch.column(0))
    hasher.update(f"\nrows={rows}".encode())
    return hasher.hexdigest(), rows


def tables_sha256(con: duckdb.DuckDBPyConnection, tables: Sequence[str] = LEARNING_TABLES) -> TablesDigest:
    """The combined digest of ``tables`` (default: the four learning tables the audit must not touch)."""
    digests: dict[str, str] = {}
    counts: dict[str, int | None] = {}
    for qualified in tables:
        digests[qualified], counts[qualified] = table_sha256(con, qualified)
    combined = hashlib.sha256("".join(f"{t}={d}\n" for t, d in digests.items()).encode()).hexdigest()
    return TablesDigest(combined=combined, tables=digests, rows=counts)
