"""Run a Pandera schema lazily and keep its failure cases as data (never a bare traceback).

Large tables are validated one customer range or one bucket of decisions at a time, so only one
range or bucket is in Python at once.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb
import pandera.polars as pa
import polars as pl
from pandera.errors import SchemaError, SchemaErrors

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.dtypes import as_utc
from tradingmem_assets.lib.sql_json import sql_literal
from tradingmem_assets.lib.warehouse import RunDigests, ensure_table, rows_digest, table_exists

FAILURE_CASES_DTYPES = pl.Schema(
    {"column": pl.String(), "check": pl.String(), "failure_case": pl.String(), "index": pl.Int64()}
)


@dataclass(frozen=True)
class Validation:
    schema_name: str
    failure_cases: pl.DataFrame

    @property
    def passed(self) -> bool:
        return self.failure_cases.height == 0

    def summary(self, limit: int = 10) -> str:
        if self.passed:
            return f"{self.schema_name}: all invariants hold"
        counts = (
            self.failure_cases.group_by("column", "check")
            .len()
            .sort("len", descending=True)
            .head(limit)
            .rows()
        )
        lines = [f"- {col or '(table)'}: {check} x{n}" for col, check, n in counts]
        return f"{self.schema_name}: {self.failure_cases.height} violation(s)\n" + "\n".join(lines)


def validate(schema: pa.DataFrameSchema, frame: pl.DataFrame) -> Validation:
    """Validate every row and every table-level check; collect all failures."""
    name = schema.name or "schema"
    try:
        schema.validate(frame, lazy=True)
    except SchemaErrors as err:
        cases = err.failure_cases.select(
            pl.col("column").cast(pl.String),
            pl.col("check").cast(pl.String),
            pl.col("failure_case").cast(pl.String),
            pl.col("index").cast(pl.Int64),
        )
        return Validation(name, cases)
    except SchemaError as err:  # non-lazy failure modes still come back as data
        return Validation(
            name,
            pl.DataFrame(
                {"column": [None], "check": [str(err.check)], "failure_case": [str(err)], "index": [None]},
                schema=FAILURE_CASES_DTYPES,
            ),
        )
    return Validation(name, pl.DataFrame(schema=FAILURE_CASES_DTYPES))


def customer_ranges(
    con: duckdb.DuckDBPyConnection, table: str, size: int
) -> list[tuple[str | None, str | None]]:
    """Half-open customer_id ranges [lo, hi) of about ``size`` rows of ``table`` each (None: open
    end). Every row of a customer falls in exactly one range, so a per-customer or unique-key
    check over each range checks the whole table."""
    starts = [
        row[0]
        for row in con.execute(
            "SELECT DISTINCT customer_id FROM (SELECT customer_id, "
            f"row_number() OVER (ORDER BY customer_id) AS n FROM {table}) "
            f"WHERE (n - 1) % {int(size)} = 0 ORDER BY customer_id"
        ).fetchall()
    ]
    if not starts:
        return [(None, None)]
    return list(zip(starts, [*starts[1:], None], strict=True))


# The buckets are scratch files read once: neither compressed nor dictionary-encoded (the ids
# of millions of runs repeat little). At SF 10 the 5.8 million runs' write and read took 1.3 s
# instead of 1.6 s, for 370 MB of scratch files instead of 100 MB.
_SCRATCH_PARQUET = "COMPRESSION uncompressed, DICTIONARY_SIZE_LIMIT 1"


@contextmanager
def buckets(
    con: duckdb.DuckDBPyConnection, relation: str, columns: str, key: str, size: int
) -> Iterator[Callable[[], Iterator[pl.DataFrame]]]:
    """``columns`` of ``relation`` in buckets of ``key`` of about ``size`` rows each, for the block:
    yields a function that reads them, one at a time. Every row of one key value falls in one
    bucket (rows without a key in one of them), so a per-key or unique-key check over each bucket
    checks the whole table, with one bucket in Python at once.

    One scan writes the rows to a Parquet file per bucket (``hash(key)`` modulo the buckets) in a
    scratch folder, removed when the block ends. Reading them does not use the connection, so
    another thread may read them while the connection does other work (``validate_beside``). It
    does not depend on how the rows are stored: ranges of a key read only their own row groups
    when the table is sorted by the key, but every row group of an unsorted one (quadratic in the
    rows), and a sort costs more than this write."""
    [(rows,)] = con.execute(f"SELECT count(*) FROM {relation}").fetchall()
    count = max(1, -(-rows // size))
    with tempfile.TemporaryDirectory(prefix="tm_buckets_") as scratch:
        con.execute(
            f"COPY (SELECT {columns}, hash({key}) % {count} AS _bucket FROM {relation}) "
            f"TO {sql_literal(scratch)} (FORMAT parquet, PARTITION_BY (_bucket), {_SCRATCH_PARQUET})"
        ).fetchall()
        folders = sorted(Path(scratch).iterdir())
        # no rows: one empty frame, so the columns' types are still checked
        empty = [] if folders else [as_utc(con.sql(f"SELECT {columns} FROM {relation} LIMIT 0").pl())]

        def read() -> Iterator[pl.DataFrame]:
            yield from empty
            for folder in folders:
                yield as_utc(pl.read_parquet(folder / "*.parquet"))

        yield read


def repeated_values(con: duckdb.DuckDBPyConnection, relation: str, column: str) -> pl.DataFrame:
    """Failure cases (``FAILURE_CASES_DTYPES``, Pandera's check name) of the values of a unique
    ``column`` that more than one row of ``relation`` has, found in SQL: buckets by another key
    (``buckets``) would not see a value two buckets share, and Pandera's check of a unique string
    column was most of its time. Only the values whose 64-bit hash more than one row has are
    grouped by the value: grouping millions of distinct strings cost more than grouping their
    hashes."""
    return con.sql(
        f"WITH repeated AS (SELECT hash({column}) AS h FROM {relation} GROUP BY h HAVING count(*) > 1) "
        f"SELECT '{column}' AS column, 'field_uniqueness' AS check, {column}::VARCHAR AS failure_case, "
        f"NULL::BIGINT AS index FROM {relation} WHERE hash({column}) IN (SELECT h FROM repeated) "
        f"GROUP BY {column} HAVING count(*) > 1 ORDER BY {column}"
    ).pl()


def validate_frames(schema: pa.DataFrameSchema, frames: Iterable[pl.DataFrame]) -> tuple[Validation, int]:
    """Validate each frame (ranges of one table) and collect every failure; also the rows seen."""
    failures, rows = [pl.DataFrame(schema=FAILURE_CASES_DTYPES)], 0
    for frame in frames:
        rows += frame.height
        failures.append(validate(schema, frame).failure_cases)
    return Validation(schema.name or "schema", pl.concat(failures)), rows


def validate_beside(
    schema: pa.DataFrameSchema, frames: Callable[[], Iterable[pl.DataFrame]], meanwhile: Callable[[], None]
) -> tuple[Validation, int]:
    """``validate_frames(schema, frames())`` in a second thread while ``meanwhile()`` runs in this
    one (work on the DuckDB connection, which the frames must not need: Polars and DuckDB both
    release the GIL, so on two cores each has one). Both always run to their end; an exception of
    ``meanwhile`` is raised once the validation has finished too."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tm_validation") as pool:
        validated = pool.submit(validate_frames, schema, frames())
        meanwhile()
        return validated.result()


def validate_by_customer(
    con: duckdb.DuckDBPyConnection,
    schema: pa.DataFrameSchema,
    query: Callable[[str], str],
    ranges: Sequence[tuple[str | None, str | None]],
    params: Mapping[str, object] | None = None,
) -> Validation:
    """Validate every row of ``query(condition)`` one customer range at a time; ``condition``
    restricts ``customer_id`` to the range."""

    def frames() -> Iterator[pl.DataFrame]:
        for lo, hi in ranges:
            bounds = {name: value for name, value in (("lo", lo), ("hi", hi)) if value is not None}
            condition = " AND ".join(
                {"lo": "customer_id >= $lo", "hi": "customer_id < $hi"}[name] for name in bounds
            )
            yield as_utc(
                con.sql(query(condition or "true"), params={**(params or {}), **bounds} or None).pl()
            )

    return validate_frames(schema, frames())[0]


def rule(rules: dict[str, Callable], name: str) -> Callable[[Callable], Callable]:
    """Decorator: the function is a frame-wide rule of ``rules``, checked under ``name``."""

    def register(check: Callable) -> Callable:
        rules[name] = check
        return check

    return register


def named_checks(rules: Mapping[str, Callable]) -> list[pa.Check]:
    """Frame-wide Pandera checks, one per ``{name: rule}``: the name is what a failure reports."""
    return [pa.Check(rule, name=name) for name, rule in rules.items()]


def _validated_state(
    con: duckdb.DuckDBPyConnection,
    table: str,
    reads: Sequence[str],
    as_of: datetime | None,
    digests: RunDigests | None = None,
) -> str:
    """The content of ``table`` and of the tables its invariants also read (row count and sum of
    row hashes each; ``digests``: those the run knows), and the instant they are checked at: while
    all are the same, so is every invariant's verdict. A tenth of a validation's time: hashing
    never leaves DuckDB."""
    digest_of = rows_digest if digests is None else digests.of
    return " ".join(
        [
            *(digest_of(con, name) for name in (table, *reads)),
            *([as_of.isoformat()] if as_of is not None else []),
        ]
    )


def record_validated(
    con: duckdb.DuckDBPyConnection,
    table: str,
    run_id: str,
    reads: Sequence[str] = (),
    as_of: datetime | None = None,
    digests: RunDigests | None = None,
) -> None:
    """Say that ``table``, as it is stored now, was validated whole by run ``run_id`` (call after
    the write committed, and only when every invariant of its stored checks held over every row;
    ``reads``: the other tables those invariants read, ``as_of``: the instant they were checked at).
    With the run's ``digests``, call it after the run's last write of ``table``: they learn its
    content, for the checks and the run's record after it."""
    if digests is not None:
        digests.written(con, table)
    state = _validated_state(con, table, reads, as_of, digests)
    ensure_table(con, tables.VALIDATED_CONTENTS, pl.DataFrame(schema=table_dtypes(tables.VALIDATED_CONTENTS)))
    con.execute(f"DELETE FROM {tables.VALIDATED_CONTENTS} WHERE table_name = ?", [table])
    con.execute(f"INSERT INTO {tables.VALIDATED_CONTENTS} VALUES (?, ?, ?)", [table, state, run_id])


def validated_by(
    con: duckdb.DuckDBPyConnection,
    table: str,
    reads: Sequence[str] = (),
    as_of: datetime | None = None,
    digests: RunDigests | None = None,
) -> str | None:
    """The run that validated ``table`` whole with the content it has now (``record_validated`` with
    the same ``reads`` and ``as_of``; ``digests``: the contents the run knows), or None: never
    recorded, or one of the tables written since, by a run or by hand, or another instant."""
    if not table_exists(con, tables.VALIDATED_CONTENTS):
        return None
    rows = con.execute(
        f"SELECT run_id FROM {tables.VALIDATED_CONTENTS} WHERE table_name = ? AND content_digest = ?",
        [table, _validated_state(con, table, reads, as_of, digests)],
    ).fetchall()
    return rows[0][0] if rows else None
