"""Landing ingestion: read one landing file, type it, validate it, split accepted from rejected.

Nothing is dropped silently: every row read ends up either accepted or in the rejects frame
with every reason that applies, so ``rows_read == accepted + rejected`` always holds. A Parquet
file is ingested ``CHUNK_ROWS`` rows at a time (``ingest_chunks``), so a large file never sits in
Python whole; a key seen in an earlier chunk makes a later row a ``duplicate_key``, as in one pass
(earlier keys are kept as pairs of 64-bit hashes, ``SeenKeys``: 16 bytes a row, whatever the key).
Typing is one set-based DuckDB ``TRY_CAST`` pass; the value rules are the Pandera schema of
``schemas.landing``; its failure cases (with their row index) become reject reasons.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandera.polars as pa
import polars as pl
import pyarrow.parquet as pq
from pandera.errors import SchemaErrors

from tradingmem_assets.defs.landing.invariants import (
    DUCKDB_TYPES,
    LANDING_TABLES,
    RAW_REJECTS_DTYPES,
    LandingTable,
    landing_schema,
)
from tradingmem_assets.lib.warehouse import read_frame

ROW = "__row_number"
# rows of one ingestion chunk of a Parquet file (SF 10's 5 million transactions: ten chunks)
CHUNK_ROWS = 500_000


class LandingFileError(RuntimeError):
    """A landing file that cannot be ingested at all; the message names the file."""


@dataclass(frozen=True)
class IngestResult:
    table: str
    source_file: str | None
    rows_read: int
    accepted: pl.DataFrame
    rejects: pl.DataFrame
    filled_columns: tuple[str, ...]

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


def read_landing_file(path: Path) -> pl.DataFrame:
    """CSV is read as text (typing happens later, row by row); Parquet keeps its own types.

    A CSV line with more or fewer fields than the header does not sink the file: the frame keeps
    the well-formed rows, numbered as in the file (``__row_number``), and ``ragged_lines`` says
    which lines were cut out, so they become reject rows with the raw line.
    """
    with _reading(path):
        if path.suffix == ".csv":
            try:
                return pl.read_csv(path, infer_schema=False, truncate_ragged_lines=False)
            except pl.exceptions.ComputeError:
                return _read_ragged_csv(path)
        return pl.read_parquet(path)


def landing_chunks(path: Path) -> Iterator[tuple[int, pl.DataFrame]]:
    """(number of its first row, frame) per chunk: Parquet in record batches of ``CHUNK_ROWS``, CSV
    whole. An empty file is one empty chunk (its columns are still checked)."""
    if path.suffix != ".csv":
        with _reading(path):
            parquet = pq.ParquetFile(path)
            if parquet.metadata.num_rows > CHUNK_ROWS:
                first = 1
                for batch in parquet.iter_batches(batch_size=CHUNK_ROWS):
                    yield first, pl.from_arrow(batch)  # type: ignore[misc]
                    first += batch.num_rows
                return
    yield 1, read_landing_file(path)


def count_landing_rows(path: Path) -> int:
    """Rows of a landing file (Parquet from its footer; a CSV's records, ragged ones included)."""
    if path.suffix != ".csv":
        with _reading(path):
            return pq.ParquetFile(path).metadata.num_rows
    return read_landing_file(path).height


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Any reader failure means the file as a whole is unusable: one error naming it."""
    try:
        yield
    except LandingFileError:
        raise
    except Exception as exc:
        raise LandingFileError(f"cannot read landing file {path}: {exc}") from exc


RAGGED = "__ragged_line"


def _read_ragged_csv(path: Path) -> pl.DataFrame:
    """The slow path for a CSV with malformed lines: every record, numbered, with a ragged one's
    raw text in ``__ragged_line`` (its values null), so ``ingest_frame`` rejects it with a reason."""
    with path.open(newline="", encoding="utf-8") as handle:
        records = list(csv.reader(handle))
    if not records:
        return pl.DataFrame()
    header, body = records[0], records[1:]
    width = len(header)
    rows = [r if len(r) == width else [None] * width for r in body]
    ragged = [None if len(r) == width else ",".join(r) for r in body]
    widths = [len(r) for r in body]
    frame = pl.DataFrame(rows, schema=dict.fromkeys(header, pl.String), orient="row")
    reasons = [
        None if w == width else f"ragged_line: {w} fields where the header has {width}" for w in widths
    ]
    return frame.with_columns(
        pl.Series(RAGGED, ragged, dtype=pl.String), pl.Series(RAGGED + "_reason", reasons, dtype=pl.String)
    )


def _typing_sql(spec: LandingTable, present: set[str]) -> str:
    """One SELECT that casts every column and flags the values that did not survive the cast."""
    selects, flags = [f'"{ROW}"'], []
    for col in spec.columns:
        q = f'"{col.name}"'
        if col.name not in present:
            selects.append(f"CAST(NULL AS {DUCKDB_TYPES[col.kind]}) AS {q}")
            continue
        text = f"CAST({q} AS VARCHAR)"
        if col.kind in ("json_list", "json_object"):
            want = "ARRAY" if col.kind == "json_list" else "OBJECT"
            # a JSON null is a SQL null; anything else must be valid JSON of the declared shape
            is_null = f"({q} IS NULL OR trim({text}) = 'null')"
            ok = f"(CASE WHEN json_valid({text}) THEN json_type(TRY_CAST({text} AS JSON)) END = '{want}')"
            selects.append(f"CASE WHEN {is_null} THEN NULL WHEN {ok} THEN {text} END AS {q}")
            flags.append(
                f"CASE WHEN NOT {is_null} AND NOT coalesce({ok}, false) THEN 'bad_json:{col.name}' END"
            )
        elif col.kind == "str":
            selects.append(f"{text} AS {q}")
        else:
            cast = f"TRY_CAST({q} AS {DUCKDB_TYPES[col.kind]})"
            selects.append(f"{cast} AS {q}")
            flags.append(f"CASE WHEN {q} IS NOT NULL AND {cast} IS NULL THEN 'bad_type:{col.name}' END")
    flag_list = f"list_filter([{', '.join(flags)}], lambda x: x IS NOT NULL)" if flags else "[]::VARCHAR[]"
    return f'SELECT {", ".join(selects)}, {flag_list} AS __type_reasons FROM _landing ORDER BY "{ROW}"'


def _pandera_reasons(spec: LandingTable, typed: pl.DataFrame) -> pl.DataFrame:
    """(row index, reason) pairs for every value rule the typed rows break."""
    schema: pa.DataFrameSchema = landing_schema(spec.name)
    try:
        schema.validate(typed.select(spec.column_names), lazy=True)
    except SchemaErrors as err:
        cases = err.failure_cases
        if cases["index"].null_count():
            # schema-level failures (wrong dtype, missing column) are bugs of the typing step, not data
            raise RuntimeError(f"landing schema for {spec.name} failed as a whole:\n{cases}") from err
        return cases.select(
            pl.col("index").cast(pl.Int64).alias("idx"),
            pl.col("column"),
            pl.format("{}: {}", pl.col("column"), pl.col("check")).alias("reason"),
        )
    return pl.DataFrame(schema={"idx": pl.Int64, "column": pl.String, "reason": pl.String})


def ingest_frame(
    table: str,
    frame: pl.DataFrame,
    source_file: str | None,
    first_row: int = 1,
    seen_keys: SeenKeys | None = None,
) -> IngestResult:
    """Type and validate an already-read landing frame whose first row is row ``first_row`` of its
    file; an otherwise valid row whose key is in ``seen_keys`` (earlier chunks') is a duplicate."""
    spec = LANDING_TABLES[table]
    ragged = (
        frame.with_row_index(ROW, offset=1)
        .filter(pl.col(RAGGED).is_not_null())
        .select(pl.col(ROW).cast(pl.Int64), pl.col(RAGGED), pl.col(RAGGED + "_reason"))
        if RAGGED in frame.columns
        else None
    )
    present = set(frame.columns) & set(spec.column_names)
    missing = [c for c in spec.columns if c.name not in present]
    required_missing = [c.name for c in missing if not c.nullable]
    if required_missing and frame.height:
        raise LandingFileError(
            f"landing file {source_file} lacks required column(s) {', '.join(required_missing)} "
            f"of table {table}"
        )
    original = frame.select(sorted(present, key=spec.column_names.index)).with_row_index(
        ROW, offset=first_row
    )
    original = original.with_columns(pl.col(ROW).cast(pl.Int64))
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("_landing", original)
        typed = read_frame(con, _typing_sql(spec, present))
    finally:
        con.close()

    type_reasons = (
        typed.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("idx"), pl.col("__type_reasons"))
        .explode("__type_reasons")
        .drop_nulls()
        .select(
            "idx",
            pl.col("__type_reasons").str.split(":").list.last().alias("column"),
            pl.col("__type_reasons").alias("reason"),
        )
    )
    typed = typed.drop("__type_reasons")
    value_reasons = _pandera_reasons(spec, typed)
    # a value that failed its cast is null now: its not-null failure is the same problem, said once
    value_reasons = value_reasons.join(type_reasons.select("idx", "column"), on=["idx", "column"], how="anti")
    reasons = pl.concat([type_reasons, value_reasons])

    bad_idx = reasons.get_column("idx").unique()
    is_bad = pl.int_range(pl.len(), dtype=pl.Int64).is_in(bad_idx.implode())
    # among rows that are otherwise valid, the first occurrence of a key wins
    valid = typed.with_row_index("idx").filter(~is_bad)
    dup = valid.filter(~pl.struct(list(spec.key)).is_first_distinct())
    if seen_keys:
        earlier = valid.filter(seen_keys.contains(valid))
        dup = pl.concat([dup, earlier]).unique("idx").sort("idx")
    dup = dup.select(pl.col("idx").cast(pl.Int64), pl.lit("duplicate_key").alias("reason"))
    per_row = (
        pl.concat([reasons.select("idx", "reason"), dup])
        .unique(maintain_order=True)
        .group_by("idx", maintain_order=True)
        .agg(pl.col("reason").sort().str.join("; "))
    )
    rejected_idx = per_row.get_column("idx")
    accepted = (
        typed.with_row_index("idx")
        .filter(~pl.col("idx").cast(pl.Int64).is_in(rejected_idx.implode()))
        .select(spec.column_names)
    )
    if ragged is not None and ragged.height:
        ragged_idx = ragged.get_column(ROW) - 1  # its values are null: drop the row's other reasons
        per_row = per_row.filter(~pl.col("idx").is_in(ragged_idx.implode()))
        accepted = (
            typed.with_row_index("idx")
            .filter(
                ~pl.col("idx")
                .cast(pl.Int64)
                .is_in(pl.concat([per_row.get_column("idx"), ragged_idx]).implode())
            )
            .select(spec.column_names)
        )
    rejects = _rejects_frame(spec, original, per_row, source_file)
    if ragged is not None and ragged.height:
        rejects = pl.concat([rejects, _ragged_rejects(spec, ragged, source_file)]).sort("row_number")
    return IngestResult(
        table=table,
        source_file=source_file,
        rows_read=frame.height,
        accepted=accepted,
        rejects=rejects,
        filled_columns=tuple(c.name for c in missing),
    )


def _rejects_frame(
    spec: LandingTable, original: pl.DataFrame, per_row: pl.DataFrame, source_file: str | None
) -> pl.DataFrame:
    if per_row.height == 0:
        return pl.DataFrame(schema=RAW_REJECTS_DTYPES)
    bad = original.with_row_index("idx").with_columns(pl.col("idx").cast(pl.Int64)).join(per_row, on="idx")
    value_cols = [c for c in original.columns if c != ROW]
    as_text = [pl.col(c).cast(pl.String) for c in value_cols]
    key_cols = [c for c in spec.key if c in value_cols]
    row_key = (
        pl.concat_str([pl.col(c).cast(pl.String) for c in key_cols], separator="|")
        if len(key_cols) == len(spec.key)
        else pl.lit(None, dtype=pl.String)
    )
    return bad.select(
        pl.lit(spec.name).alias("table_name"),
        pl.lit(source_file, dtype=pl.String).alias("source_file"),
        pl.col(ROW).alias("row_number"),
        row_key.alias("row_key"),
        pl.col("reason"),
        pl.struct(as_text).struct.json_encode().alias("raw_row"),
    ).cast(RAW_REJECTS_DTYPES)


def _ragged_rejects(spec: LandingTable, ragged: pl.DataFrame, source_file: str | None) -> pl.DataFrame:
    return ragged.select(
        pl.lit(spec.name).alias("table_name"),
        pl.lit(source_file, dtype=pl.String).alias("source_file"),
        pl.col(ROW).alias("row_number"),
        pl.lit(None, dtype=pl.String).alias("row_key"),
        pl.col(RAGGED + "_reason").alias("reason"),
        pl.struct(pl.col(RAGGED).alias("line")).struct.json_encode().alias("raw_row"),
    ).cast(RAW_REJECTS_DTYPES)


def ingest_chunks(landing_dir: Path, table: str) -> Iterator[IngestResult]:
    """Ingest ``<table>.parquet|csv`` from the landing folder, one chunk at a time (``landing_chunks``);
    no file means one empty result."""
    spec = LANDING_TABLES[table]
    path = find_landing_file(Path(landing_dir), table)
    if path is None:
        yield IngestResult(table, None, 0, spec.empty(), pl.DataFrame(schema=RAW_REJECTS_DTYPES), ())
        return
    seen = SeenKeys(spec.key)
    for first_row, frame in landing_chunks(path):
        result = ingest_frame(table, frame, str(path), first_row=first_row, seen_keys=seen)
        seen.add(result.accepted)
        yield result


class SeenKeys:
    """The keys accepted from earlier chunks, as two independent 64-bit hashes each, kept sorted by
    the first (16 bytes a key, whatever the key): a false duplicate would need both to collide, the
    odds the project's 64-bit ids already take."""

    def __init__(self, key: tuple[str, ...]):
        self.key = list(key)
        self.h0 = np.empty(0, dtype=np.uint64)
        self.h1 = np.empty(0, dtype=np.uint64)

    def __len__(self) -> int:
        return len(self.h0)

    def _hashes(self, frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        row = frame.select(pl.struct(self.key).alias("k")).get_column("k")
        return row.hash(seed=0).to_numpy(), row.hash(seed=1).to_numpy()

    def add(self, frame: pl.DataFrame) -> None:
        h0, h1 = self._hashes(frame)
        order = np.argsort(h0, kind="stable")
        at = np.searchsorted(self.h0, h0[order])
        self.h0, self.h1 = np.insert(self.h0, at, h0[order]), np.insert(self.h1, at, h1[order])

    def contains(self, frame: pl.DataFrame) -> np.ndarray:
        """Per row of ``frame``: whether its key was seen."""
        h0, h1 = self._hashes(frame)
        order = np.argsort(h0)  # sorted probes walk the sorted hashes in one direction: cache-friendly
        lo, hi = np.empty(len(h0), dtype=np.intp), np.empty(len(h0), dtype=np.intp)
        lo[order] = np.searchsorted(self.h0, h0[order], "left")
        hi[order] = np.searchsorted(self.h0, h0[order], "right")
        found = np.zeros(len(h0), dtype=bool)
        one = hi - lo == 1
        found[one] = self.h1[lo[one]] == h1[one]
        for i in np.flatnonzero(hi - lo > 1):  # two earlier keys share a first hash: compare both
            found[i] = bool((self.h1[lo[i] : hi[i]] == h1[i]).any())
        return found


def ingest_table(landing_dir: Path, table: str) -> IngestResult:
    """The whole landing file as one result (every chunk's rows together)."""
    parts = list(ingest_chunks(landing_dir, table))
    if len(parts) == 1:
        return parts[0]
    return IngestResult(
        table=table,
        source_file=parts[0].source_file,
        rows_read=sum(p.rows_read for p in parts),
        accepted=pl.concat([p.accepted for p in parts]),
        rejects=pl.concat([p.rejects for p in parts]),
        filled_columns=parts[0].filled_columns,
    )
