"""Reading and atomically writing the DuckDB warehouse (no Dagster here: the CLI uses it too).

Every derived table is replaced or appended inside one transaction, so a failed or killed run
leaves the tables as they were (SPEC section 13). Frames move between Polars and DuckDB through
Arrow, never through Python rows.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
import polars as pl

from tradingmem_assets.lib.tables import COLUMN_COMPRESSION, RAW_REJECTS, RAW_SCHEMA_NAME


class WarehouseLockedError(RuntimeError):
    """Another process holds the single DuckDB writer lock for longer than we were willing to wait."""


def open_warehouse(
    path: str | Path, *, read_only: bool = False, wait_s: float = 30.0
) -> duckdb.DuckDBPyConnection:
    """Open the warehouse, waiting for a lock held by another process, then failing with a clear message."""
    path = str(path)
    if path != ":memory:":
        if read_only and not Path(path).exists():
            raise FileNotFoundError(
                f"warehouse {path} does not exist yet: run `tradingmem demo --run` or trading_memory_job first"
            )
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    delay = 0.1
    while True:
        try:
            con = duckdb.connect(path, read_only=read_only)
            break
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or time.monotonic() >= deadline:
                if "lock" in str(exc).lower():
                    raise WarehouseLockedError(
                        f"warehouse {path} is locked by another process (a Dagster run or the UI's "
                        f"code server writing to it); waited {wait_s:.0f}s. Retry when that run finishes."
                    ) from exc
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    con.execute("SET TimeZone = 'UTC'")
    if not read_only:
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {RAW_SCHEMA_NAME}")
    return con


@contextmanager
def connection(path: str | Path, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    con = open_warehouse(path, read_only=read_only)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All-or-nothing: commit when the block finishes, roll back when it raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


# When DuckDB checkpoints a table that has deleted rows, it merges the row groups the deletes
# thinned ("vacuum"), rewriting them. An incremental writer replaces a few rows spread over a whole
# table (at SF 10 the next day rebuilds 6 % of the customer profiles): the merge then rewrites
# every row group of that wide table, each day. A run defers the merges (``defer_vacuum``) and, as
# it ends, compacts only the tables whose deleted rows outgrew this share of their live rows.
DEAD_ROWS_SHARE = 0.25


def defer_vacuum(con: duckdb.DuckDBPyConnection) -> None:
    """No row-group merge at this database's checkpoints while it stays open (a global setting:
    every connection to the open database shares it); deleted rows stay stored until ``compact``."""
    con.execute("SET max_vacuum_tasks = 0")


def sparse_tables(
    con: duckdb.DuckDBPyConnection, share: float = DEAD_ROWS_SHARE
) -> list[tuple[str, int, int]]:
    """``(table, live rows, deleted rows still stored)`` of this database's tables whose deleted
    rows exceed ``share`` of their live rows. Tables with a constraint, an index or a column
    default are left out, as ``compact`` would drop those (here: the LLM usage ledger, appended to,
    and the recall index, which its writer updates, never deletes from)."""
    stored = con.execute(
        """
        WITH left_out AS (  -- what a rewrite as a new table would drop
            SELECT database_name, schema_name, table_name FROM duckdb_constraints()
            UNION SELECT database_name, schema_name, table_name FROM duckdb_indexes()
            UNION SELECT database_name, schema_name, table_name FROM duckdb_columns()
                  WHERE column_default IS NOT NULL
        )
        SELECT t.schema_name, t.table_name, t.estimated_size
        FROM duckdb_tables() t ANTI JOIN left_out USING (database_name, schema_name, table_name)
        WHERE t.database_name = current_database() AND NOT t.temporary AND t.estimated_size > 0
        ORDER BY t.schema_name, t.table_name
        """
    ).fetchall()
    if not stored:
        return []
    live = con.execute(
        " UNION ALL ".join(
            f'SELECT {i} AS i, count(*) AS n FROM {schema}."{name}"'
            for i, (schema, name, _) in enumerate(stored)
        )
        + " ORDER BY i"
    ).fetchall()
    return [
        (f"{schema}.{name}", n, size - n)
        for (schema, name, size), (_, n) in zip(stored, live, strict=True)
        if size - n > share * n
    ]


def compact(con: duckdb.DuckDBPyConnection, qualified: str) -> None:
    """Rewrite a table (no constraint, index or default: ``sparse_tables``' kind) as a new one of its live
    rows, in their order, in one transaction (``create_table_as``: its columns keep their
    ``COLUMN_COMPRESSION``). Rows appended after deletes fill the row group that holds the deleted
    ones: a new table has none."""
    with transaction(con):
        con.execute(f"CREATE OR REPLACE TEMP TABLE _compact AS FROM {qualified}")
        create_table_as(con, qualified, "FROM _compact", replace=True)
        con.execute("DROP TABLE _compact")


def table_type(con: duckdb.DuckDBPyConnection, qualified: str) -> str | None:
    """``BASE TABLE`` or ``VIEW`` (None: no such relation)."""
    schema, _, name = qualified.rpartition(".")
    found = con.execute(
        "SELECT table_type FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
        [schema or "main", name],
    ).fetchall()
    return found[0][0] if found else None


def table_exists(con: duckdb.DuckDBPyConnection, qualified: str) -> bool:
    return table_type(con, qualified) is not None


def md5_lower_sql(expr: str) -> str:
    """The UBIGINT ``md5_number_lower(expr)`` gives, by a shift. In DuckDB 2 that function is a
    macro that writes the 128-bit number as a string of 128 bits and reads its first 64 back,
    which cost more than the md5 itself over millions of rows."""
    return f"(md5_number({expr}) >> 64)::UBIGINT"


def md5_upper_sql(expr: str) -> str:
    """The UBIGINT ``md5_number_upper(expr)`` gives (the bit string's last 64), by a mask."""
    return f"(md5_number({expr}) & 18446744073709551615::UHUGEINT)::UBIGINT"


def rows_digest_sql(row: str, where: str | None = None) -> str:
    """The aggregate digest of a set of rows: ``count:sum of row hashes``, the same for the same
    multiset of rows in any order (``row``: a row, a table alias, or any value standing for one;
    ``where``: of only the rows it holds for)."""
    only = f" FILTER (WHERE {where})" if where else ""
    return f"count(*){only}::VARCHAR || ':' || coalesce(sum(hash({row})::HUGEINT){only}, 0)::VARCHAR"


NO_ROWS = "0:0"  # rows_digest of no rows


def added_digests(*digests: str) -> str:
    """The ``rows_digest`` of the union of disjoint multisets of rows, from theirs: counts and sums add."""
    parts = [d.split(":") for d in digests]
    return f"{sum(int(n) for n, _ in parts)}:{sum(int(s) for _, s in parts)}"


def rows_digest(
    con: duckdb.DuckDBPyConnection, relation: str, params: Mapping[str, object] | None = None
) -> str:
    """``rows_digest_sql`` of every row of ``relation`` (a table, or a parenthesized query)."""
    ((digest,),) = con.execute(f"SELECT {rows_digest_sql('t')} FROM {relation} t", params or {}).fetchall()
    return digest


class RunDigests:
    """The ``rows_digest`` of whole tables as a run knows them, so that a run hashes a table once
    where several of its steps and checks would each hash it again (at SF 10 a landing table was
    hashed up to seven times a run, and every derived table twice).

    A digest is known only when it was told (``note``/``written``): by the run's start, which hashes
    every table while the run holds the file, or by the one step that writes the table, after its
    last write. Anything else is hashed when asked and not remembered, since nothing here sees a
    table change. A writer ``forget``s its table before writing, so a failed write leaves nothing
    stale. A key is a qualified table name, or ``(table, part)`` for a digest of part of one.
    """

    def __init__(self) -> None:
        self._known: dict[str | tuple[str, str], str] = {}

    def of(self, con: duckdb.DuckDBPyConnection, table: str) -> str:
        """The digest of every row of ``table`` now."""
        known = self._known.get(table)
        return rows_digest(con, table) if known is None else known

    def get(self, key: str | tuple[str, str]) -> str | None:
        return self._known.get(key)

    def note(self, key: str | tuple[str, str], digest: str) -> None:
        self._known[key] = digest

    def forget(self, *keys: str | tuple[str, str]) -> None:
        """Forget each key; a table's name also forgets every part of it (``(table, part)``)."""
        names = {k for k in keys if isinstance(k, str)}
        for key in [*keys, *(k for k in self._known if isinstance(k, tuple) and k[0] in names)]:
            self._known.pop(key, None)

    def written(self, con: duckdb.DuckDBPyConnection, table: str) -> str:
        """Hash ``table`` as its writer left it (call after its last write of the run) and remember it."""
        digest = rows_digest(con, table)
        self._known[table] = digest
        return digest


def rejects_key(table: str) -> tuple[str, str]:
    """The ``RunDigests`` key of a landing table's rows of ``raw_rejects`` (a shared table)."""
    return (RAW_REJECTS, table)


def table_columns(con: duckdb.DuckDBPyConnection, qualified: str) -> list[str]:
    """The table's column names in their order; empty when it does not exist."""
    schema, _, name = qualified.rpartition(".")
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
        "ORDER BY ordinal_position",
        [schema or "main", name],
    ).fetchall()
    return [r[0] for r in rows]


def read_frame(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence | Mapping[str, object] | None = None
) -> pl.DataFrame:
    """Run a query (positional or ``$name`` parameters) and return a Polars frame (Arrow, zero-copy)."""
    if isinstance(params, Mapping):
        return con.sql(sql, params=dict(params)).pl()
    return con.sql(sql, params=list(params) if params else None).pl()


def read_table(
    con: duckdb.DuckDBPyConnection, qualified: str, empty: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The whole table, or ``empty`` (an empty frame with the right schema) when it does not exist yet."""
    if not table_exists(con, qualified):
        if empty is None:
            raise LookupError(f"table {qualified} does not exist yet: materialize it first")
        return empty.clear()
    return read_frame(con, f"SELECT * FROM {qualified}")


@contextmanager
def _frame_view(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> Iterator[str]:
    """``frame`` as the view ``_tm_frame``, for the block."""
    con.register("_tm_frame", frame)
    try:
        yield "_tm_frame"
    finally:
        con.unregister("_tm_frame")


def create_table_as(
    con: duckdb.DuckDBPyConnection,
    qualified: str,
    query: str,
    params: Sequence[object] | Mapping[str, object] | None = None,
    *,
    replace: bool = False,
) -> None:
    """``CREATE [OR REPLACE] TABLE qualified AS query``, with the table's ``COLUMN_COMPRESSION``:
    the table is declared from the query's columns, then the query's rows inserted. A table it
    replaces is dropped only once the new one holds its rows (a new name, then renamed), since the
    query may read it (the evaluation's previous runs are a view of the table it writes again)."""
    compression = COLUMN_COMPRESSION.get(qualified, {})
    if not compression:
        con.execute(
            f"CREATE {'OR REPLACE ' if replace else ''}TABLE {qualified} AS {query}", params
        ).fetchall()
        return
    declared = ", ".join(
        f'"{name}" {kind}' + (f" USING COMPRESSION {compression[name]}" if name in compression else "")
        for name, kind, *_ in con.execute(f"DESCRIBE {query}", params).fetchall()
    )
    swap = replace and table_exists(con, qualified)
    target = f"{qualified}__next" if swap else qualified
    con.execute(f"CREATE {'OR REPLACE ' if replace else ''}TABLE {target} ({declared})")
    con.execute(f"INSERT INTO {target} {query}", params).fetchall()
    if swap:
        con.execute(f"DROP TABLE {qualified}")
        con.execute(f"ALTER TABLE {target} RENAME TO {qualified.rpartition('.')[2]}")


def replace_table(con: duckdb.DuckDBPyConnection, qualified: str, frame: pl.DataFrame) -> int:
    """Replace a table's contents with ``frame`` (call inside ``transaction``)."""
    with _frame_view(con, frame) as view:
        create_table_as(con, qualified, f"SELECT * FROM {view}", replace=True)
    return frame.height


def append_rows(con: duckdb.DuckDBPyConnection, qualified: str, frame: pl.DataFrame) -> int:
    """Append ``frame`` to a table, creating it from the frame's schema the first time."""
    if not table_exists(con, qualified):
        return replace_table(con, qualified, frame)
    if frame.height == 0:
        return 0
    cols = ", ".join(f'"{c}"' for c in frame.columns)
    with _frame_view(con, frame) as view:
        con.execute(f"INSERT INTO {qualified} ({cols}) SELECT {cols} FROM {view}")
    return frame.height


def ensure_table(con: duckdb.DuckDBPyConnection, qualified: str, empty: pl.DataFrame) -> None:
    """Create an empty table with ``empty``'s schema if it does not exist (for append-only tables)."""
    if not table_exists(con, qualified):
        replace_table(con, qualified, empty.clear())


def read_columns(
    con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], limit: int | None = None
) -> pl.DataFrame:
    """The named columns of a table, or a clear error naming the asset to materialize first."""
    if not table_exists(con, table):
        schema, _, name = table.rpartition(".")
        upstream = f"raw/{name}" if schema == "raw" else name
        raise LookupError(f"table {table} does not exist yet: materialize {upstream} first")
    cols = ", ".join(f'"{c}"' for c in columns)
    suffix = f" LIMIT {int(limit)}" if limit is not None else ""
    return read_frame(con, f"SELECT {cols} FROM {table}{suffix}")


def run_script(
    con: duckdb.DuckDBPyConnection, script: str, params: Mapping[str, object] | None = None
) -> None:
    """Execute the statements of ``script`` (each ending with ``;`` at a line end, so no comment may
    end a line with one) in order, each with the named parameters it uses: DuckDB binds parameters
    to one statement at a time."""
    for statement in (part.strip() for part in script.split(";\n")):
        if statement:
            used = {name: value for name, value in (params or {}).items() if f"${name}" in statement}
            con.execute(statement, used or None).fetchall()


_STAGE = re.compile(r"CREATE OR REPLACE TEMP (TABLE|VIEW) (\w+)")


def run_stages(
    con: duckdb.DuckDBPyConnection, script: str, params: Mapping[str, object] | None, keep: str
) -> None:
    """``run_script`` a script of temp-table stages whose last table is ``keep``; the other temp
    tables it creates (its stages) are dropped afterwards, whether it succeeded or not."""
    with staged(con, script, params, keep=keep):
        pass


@contextmanager
def staged(
    con: duckdb.DuckDBPyConnection, script: str, params: Mapping[str, object] | None, keep: str | None = None
) -> Iterator[None]:
    """``run_script`` a script of temp-table stages and temp views over them, for the block: every
    temp table and view it creates but ``keep`` is dropped when the block ends, whether it
    succeeded or not. A view as the last stage is computed only where it is read, never stored in
    between."""
    created = [(kind, name) for kind, name in dict.fromkeys(_STAGE.findall(script)) if name != keep]
    try:
        run_script(con, script, params)
        yield
    finally:
        for kind, name in reversed(created):  # a view before the tables it reads
            con.execute(f"DROP {kind} IF EXISTS {name}")


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence | None = None):
    """The first column of the first row (the result is consumed fully: DuckDB 2 requires it)."""
    rows = con.execute(sql, list(params or [])).fetchall()
    return rows[0][0] if rows else None
