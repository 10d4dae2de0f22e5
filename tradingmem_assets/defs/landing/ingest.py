"""Landing ingestion: one landing file into ``raw.<table>`` and its rows of ``raw_rejects``.

Nothing is dropped silently: every row read ends up either accepted or in ``raw_rejects`` with
every reason that applies, so ``rows_read == accepted + rejected`` always holds.

The work is set-based, in the warehouse's DuckDB: a Parquet file is scanned where it lies
(``read_parquet``, numbered by its file row), a CSV is read as text by Polars (a ragged line is
kept, numbered, to be rejected with its raw text) and scanned from there. One ``TRY_CAST`` pass
types every column and flags what did not survive the cast; the value rules are the checks of
the Pandera schema ``invariants.landing_schema`` translated to SQL (``value_reasons_sql``: the
same reason text, the same treatment of nulls and NaN); among otherwise valid rows the first row
of a key wins and the later ones are ``duplicate_key``. Only the rejected rows come back to Python,
where their raw values are written as JSON.

A file that grew at its end since its last ingest (``appended.py`` decides when that is known) is
read from its first new row: the kept rows stay, and a valid new row whose key a kept row holds
is ``duplicate_key``, as it would be in a whole ingest.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq

from tradingmem_assets.defs.landing.invariants import (
    DUCKDB_TYPES,
    LANDING_TABLES,
    RAW_REJECTS_DTYPES,
    LandingTable,
    value_reasons_sql,
)
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.sql_json import sql_identifier, sql_literal
from tradingmem_assets.lib.warehouse import (
    append_rows,
    read_frame,
    replace_table,
    rows_digest,
    rows_digest_sql,
    scalar,
    table_exists,
)

ROW = "__row_number"
RAGGED = "__ragged_line"
SOURCE, TYPED, REJECTED = "_tm_landing", "_tm_landing_typed", "_tm_landing_rejected"


class LandingFileError(RuntimeError):
    """A landing file that cannot be ingested at all; the message names the file."""


@dataclass(frozen=True)
class Kept:
    """What the last ingest of a table read: its file's columns, rows and their digest, in order."""

    columns: tuple[str, ...]
    rows: int
    source_digest: str
    raw_digest: str  # of the raw table it left, as it still is


@dataclass(frozen=True)
class IngestResult:
    table: str
    source_file: str | None
    rows_read: int
    accepted: int
    rejects: pl.DataFrame
    filled_columns: tuple[str, ...]
    columns: tuple[str, ...] = ()
    source_digest: str = ""  # of every row read, as read and in order
    read_after: int = 0  # the rows kept from the last ingest (0: the file was ingested whole)
    appended_digest: str | None = None  # rows_digest of the raw rows appended after the kept ones

    @property
    def rejected(self) -> int:
        return self.rejects.height


def find_landing_file(landing_dir: Path, table: str) -> Path | None:
    """The table's landing file, or None; two candidates are ambiguous and refused."""
    found = [p for p in (landing_dir / f"{table}.parquet", landing_dir / f"{table}.csv") if p.exists()]
    if len(found) > 1:
        raise LandingFileError(
            f"both {found[0]} and {found[1]} exist: keep exactly one landing file for table {table}"
        )
    return found[0] if found else None


def read_landing_csv(path: Path) -> pl.DataFrame:
    """A CSV as text (typing happens later, row by row).

    A line with more or fewer fields than the header does not sink the file: the frame keeps
    every record, and a ragged one has its raw text in ``__ragged_line`` (its values null) and
    why in ``__ragged_line_reason``, so that it becomes a reject row with the raw line.
    """
    with _reading(path):
        try:
            return pl.read_csv(path, infer_schema=False, truncate_ragged_lines=False)
        except pl.exceptions.ComputeError:
            return _read_ragged_csv(path)


def count_landing_rows(path: Path) -> int:
    """Rows of a landing file (Parquet from its footer; a CSV's records, ragged ones included)."""
    if path.suffix != ".csv":
        with _reading(path):
            return pq.ParquetFile(path).metadata.num_rows
    return read_landing_csv(path).height


@contextmanager
def _reading(path: Path, failures: tuple[type[BaseException], ...] = (Exception,)) -> Iterator[None]:
    """A reader failure means the file as a whole is unusable: one error naming it."""
    try:
        yield
    except LandingFileError:
        raise
    except failures as exc:
        raise LandingFileError(f"cannot read landing file {path}: {exc}") from exc


def _read_ragged_csv(path: Path) -> pl.DataFrame:
    """The slow path for a CSV with malformed lines: every record, a ragged one's values null."""
    with path.open(newline="", encoding="utf-8") as handle:
        records = list(csv.reader(handle))
    if not records:
        return pl.DataFrame()
    header, body = records[0], records[1:]
    width = len(header)
    rows = [r if len(r) == width else [None] * width for r in body]
    ragged = [None if len(r) == width else ",".join(r) for r in body]
    reasons = [
        None if len(r) == width else f"ragged_line: {len(r)} fields where the header has {width}"
        for r in body
    ]
    frame = pl.DataFrame(rows, schema=dict.fromkeys(header, pl.String), orient="row")
    return frame.with_columns(
        pl.Series(RAGGED, ragged, dtype=pl.String), pl.Series(RAGGED + "_reason", reasons, dtype=pl.String)
    )


@contextmanager
def _source(con: duckdb.DuckDBPyConnection, path: Path, spec: LandingTable) -> Iterator[list[str]]:
    """The landing file as the relation ``_tm_landing``: its columns of the table (unknown ones
    are left out, whatever their name), a ragged CSV line's text and reason, and each row's number
    from 1 in ``__row_number``. Yields the file's column names."""
    wanted = set(spec.column_names)
    if path.suffix == ".csv":
        frame = read_landing_csv(path)
        columns = frame.columns
        wanted |= {RAGGED, RAGGED + "_reason"}  # set by the reader (_read_ragged_csv) only
    else:
        literal = sql_literal(str(path))
        with _reading(path):
            columns = [
                r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet({literal})").fetchall()
            ]
        if "file_row_number" not in columns:  # else DuckDB's row number option would collide
            kept = ", ".join(sql_identifier(c) for c in columns if c in wanted)
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {SOURCE} AS SELECT file_row_number + 1 AS {ROW}"
                f"{', ' if kept else ''}{kept} FROM read_parquet({literal}, file_row_number = true)"
            )
            try:
                yield columns
            finally:
                con.execute(f"DROP VIEW IF EXISTS {SOURCE}")
            return
        with _reading(path):
            frame = pl.read_parquet(path, columns=[c for c in columns if c in wanted])
    numbered = frame.select(c for c in frame.columns if c in wanted).with_row_index(ROW, offset=1)
    con.register(SOURCE, numbered.with_columns(pl.col(ROW).cast(pl.Int64)))
    try:
        yield columns
    finally:
        con.unregister(SOURCE)


def _typing_sql(spec: LandingTable, present: set[str], ragged: bool, after: int) -> str:
    """Every row of the file after row ``after``, typed, with the list of reasons it is refused
    for (empty if none)."""
    typed, failed, tested = [ROW], [], ["*"]
    for col in spec.columns:
        q = sql_identifier(col.name)
        if col.name not in present:
            typed.append(f"CAST(NULL AS {DUCKDB_TYPES[col.kind]}) AS {q}")
            continue
        text = f"CAST({q} AS VARCHAR)"
        if col.kind in ("json_list", "json_object"):
            want = "ARRAY" if col.kind == "json_list" else "OBJECT"
            # a JSON null is a SQL null; anything else must be valid JSON of the declared shape.
            # Tested once a row, beneath the typing (both the value and its flag read the test).
            is_null, ok = sql_identifier(f"__null_{col.name}"), sql_identifier(f"__json_{col.name}")
            tested.append(f"({q} IS NULL OR trim({text}) = 'null') AS {is_null}")
            shape = f"CASE WHEN json_valid({text}) THEN json_type(TRY_CAST({text} AS JSON)) END"
            tested.append(f"({shape} = '{want}') AS {ok}")
            typed.append(f"CASE WHEN {is_null} THEN NULL WHEN {ok} THEN {text} END AS {q}")
            failed.append((col.name, f"NOT {is_null} AND NOT coalesce({ok}, false)", "bad_json"))
        elif col.kind == "str":
            typed.append(f"{text} AS {q}")
        else:
            cast = f"TRY_CAST({q} AS {DUCKDB_TYPES[col.kind]})"
            typed.append(f"{cast} AS {q}")
            failed.append((col.name, f"{q} IS NOT NULL AND {cast} IS NULL", "bad_type"))
    flags = [f"({cond}) AS {sql_identifier('__failed_' + name)}" for name, cond, _ in failed]
    carried = [RAGGED, RAGGED + "_reason"] if ragged else []
    # a value that failed its cast is null now: its not-null failure is the same problem, said once
    failed_names = {name for name, _, _ in failed}
    reasons = [
        f"CASE WHEN {sql_identifier('__failed_' + name)} THEN '{tag}:{name}' END" for name, _, tag in failed
    ] + value_reasons_sql(spec, cast_failed={n: sql_identifier("__failed_" + n) for n in failed_names})
    listed = "[]::VARCHAR[]"
    if reasons:
        listed = f"list_filter([{', '.join(reasons)}]::VARCHAR[], lambda x: x IS NOT NULL)"
    if ragged:  # a ragged line's values are null: its one reason is the line's shape
        listed = f"CASE WHEN {RAGGED} IS NOT NULL THEN [{RAGGED}_reason] ELSE {listed} END"
    inner = ", ".join(typed + flags + carried)
    return (
        f"SELECT {', '.join([ROW, *map(sql_identifier, spec.column_names)])}, {listed} AS __reasons "
        f"FROM (SELECT {inner} FROM (SELECT {', '.join(tested)} FROM {SOURCE} WHERE {ROW} > {int(after)}))"
    )


def ingest_into(
    con: duckdb.DuckDBPyConnection, landing_dir: Path, table: str, kept: Kept | None = None
) -> IngestResult:
    """Ingest ``<table>.parquet|csv`` from the landing folder into ``raw.<table>`` and its rejects
    into ``raw_rejects``; no file means an empty table. Whole, the table and the table's rejects
    are replaced; with ``kept`` (what the last ingest read, with ``raw.<table>`` and its rejects
    as it left them) and a file that starts with exactly those rows, only the rows after them are
    ingested. Call inside a transaction."""
    spec = LANDING_TABLES[table]
    raw = tables.raw_table(table)
    path = find_landing_file(Path(landing_dir), table)
    if path is None:
        _forget_rejects(con, table)
        replace_table(con, raw, spec.empty())
        return IngestResult(table, None, 0, 0, pl.DataFrame(schema=RAW_REJECTS_DTYPES), ())
    with _source(con, path, spec) as source_columns:
        ragged = path.suffix == ".csv" and {RAGGED, RAGGED + "_reason"} <= set(source_columns)
        columns = tuple(c for c in source_columns if c not in (RAGGED, RAGGED + "_reason"))
        present = set(columns) & set(spec.column_names)
        missing = tuple(c.name for c in spec.columns if c.name not in present)
        required_missing = [c.name for c in spec.columns if c.name in missing and not c.nullable]
        after = kept.rows if kept is not None and kept.columns == columns else 0
        # each row as read, with its number (and a ragged line's text): the digest is of the order too
        row = ", ".join([f"s.{ROW}", *(f"s.{sql_identifier(c)}" for c in columns if c in present)])
        row += f", s.{RAGGED}" if ragged else ", NULL"
        with _reading(path, (duckdb.IOException, duckdb.InvalidInputException)):
            ((rows_read, prefix, digest),) = con.execute(
                f"SELECT count(*), {rows_digest_sql(row, f's.{ROW} <= {int(after)}')}, "
                f"{rows_digest_sql(row)} FROM {SOURCE} s"
            ).fetchall()
        if kept is None or rows_read < after or prefix != kept.source_digest:
            after = 0
        if required_missing and rows_read:
            raise LandingFileError(
                f"landing file {path} lacks required column(s) {', '.join(required_missing)} of table {table}"
            )
        if not after:
            _forget_rejects(con, table)
        try:
            # the Parquet file is scanned here: a corrupt page fails the file, not the code
            with _reading(path, (duckdb.IOException, duckdb.InvalidInputException)):
                accepted, appended = _split(con, spec, raw, present, ragged, after)
                rejects = _rejects(con, spec, present, str(path), ragged)
        finally:
            con.execute(f"DROP TABLE IF EXISTS {TYPED}")
            con.execute(f"DROP TABLE IF EXISTS {REJECTED}")
    append_rows(con, tables.RAW_REJECTS, rejects)
    return IngestResult(
        table, str(path), rows_read, accepted, rejects, missing, columns, digest, after, appended
    )


def _forget_rejects(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Delete the table's rows of ``raw_rejects`` (a whole ingest writes them all again)."""
    if table_exists(con, tables.RAW_REJECTS):
        con.execute(f"DELETE FROM {tables.RAW_REJECTS} WHERE table_name = ?", [table])


def _split(
    con: duckdb.DuckDBPyConnection, spec: LandingTable, raw: str, present: set[str], ragged: bool, after: int
) -> tuple[int, str | None]:
    """Type every row after row ``after`` (``_tm_landing_typed``), decide the rejected ones with
    their reasons (``_tm_landing_rejected``) and write the others to ``raw`` in file order
    (replaced; appended after the kept rows when ``after``); the rows accepted in all, and when
    appended, the ``rows_digest`` of the rows appended (the raw table's is the kept rows' plus it)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {TYPED} AS {_typing_sql(spec, present, ragged, after)}")
    key = ", ".join(map(sql_identifier, spec.key))
    # among rows that are otherwise valid, the first occurrence of a key wins: a kept row's first
    held = " AND ".join(f"k.{c} IS NOT DISTINCT FROM d.{c}" for c in map(sql_identifier, spec.key))
    kept = f" OR EXISTS (SELECT 1 FROM {raw} k WHERE {held})" if after else ""
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE {REJECTED} AS
        SELECT {ROW} FROM (
            SELECT {ROW}, {key}, row_number() OVER (PARTITION BY {key} ORDER BY {ROW}) AS nth
            FROM {TYPED} WHERE len(__reasons) = 0
        ) d WHERE nth > 1{kept}
        """
    )
    if scalar(con, f"SELECT count(*) FROM {REJECTED}"):
        con.execute(
            f"UPDATE {TYPED} SET __reasons = ['duplicate_key'] WHERE {ROW} IN (SELECT {ROW} FROM {REJECTED})"
        )
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {REJECTED} AS SELECT {ROW}, "
        f"array_to_string(list_sort(list_distinct(__reasons)), '; ') AS reason FROM {TYPED} "
        "WHERE len(__reasons) > 0"
    )
    # a scan and a filter keep the typed rows' order, which is the file's (DuckDB's default
    # preserve_insertion_order): no sort of the accepted rows
    columns = ", ".join(map(sql_identifier, spec.column_names))
    accepted = f"SELECT {columns} FROM {TYPED} WHERE len(__reasons) = 0"
    appended = None
    if after:
        appended = rows_digest(con, f"({accepted})")
        con.execute(f"INSERT INTO {raw} {accepted}")
    else:
        con.execute(f"CREATE OR REPLACE TABLE {raw} AS {accepted}")
    return scalar(con, f"SELECT count(*) FROM {raw}"), appended


def _rejects(
    con: duckdb.DuckDBPyConnection, spec: LandingTable, present: set[str], source_file: str, ragged: bool
) -> pl.DataFrame:
    """The rejected rows as ``raw_rejects`` rows: their key and raw values (as read) in JSON."""
    if not scalar(con, f"SELECT count(*) FROM {REJECTED}"):
        return pl.DataFrame(schema=RAW_REJECTS_DTYPES)
    value_cols = [c for c in spec.column_names if c in present]
    carried = [RAGGED] if ragged else []
    selected = ", ".join([f"r.{ROW}", "r.reason", *(f"l.{sql_identifier(c)}" for c in value_cols + carried)])
    bad = read_frame(
        con, f"SELECT {selected} FROM {REJECTED} r JOIN {SOURCE} l USING ({ROW}) ORDER BY r.{ROW}"
    )
    key_cols = [c for c in spec.key if c in value_cols]
    row_key = (
        pl.concat_str([pl.col(c).cast(pl.String) for c in key_cols], separator="|")
        if len(key_cols) == len(spec.key)
        else pl.lit(None, dtype=pl.String)
    )
    raw_row = pl.struct([pl.col(c).cast(pl.String) for c in value_cols]).struct.json_encode()
    if ragged:
        line = pl.struct(pl.col(RAGGED).alias("line")).struct.json_encode()
        raw_row = pl.when(pl.col(RAGGED).is_not_null()).then(line).otherwise(raw_row)
        row_key = pl.when(pl.col(RAGGED).is_not_null()).then(None).otherwise(row_key)
    return bad.select(
        pl.lit(spec.name).alias("table_name"),
        pl.lit(source_file, dtype=pl.String).alias("source_file"),
        pl.col(ROW).alias("row_number"),
        row_key.alias("row_key"),
        pl.col("reason"),
        raw_row.alias("raw_row"),
    ).cast(RAW_REJECTS_DTYPES)


def ingest_table(landing_dir: Path, table: str) -> IngestResult:
    """Ingest one landing file into a throwaway in-memory warehouse (what would be accepted and
    rejected, without touching a real one)."""
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(f"CREATE SCHEMA {tables.RAW_SCHEMA_NAME}")
        return ingest_into(con, landing_dir, table)
    finally:
        con.close()
