"""Run a Pandera schema lazily and keep its failure cases as data (never a bare traceback).

Large tables are validated one customer range or one range of decisions at a time, so only one range
is in Python at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb
import pandera.polars as pa
import polars as pl
from pandera.errors import SchemaError, SchemaErrors

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.dtypes import as_utc
from tradingmem_assets.lib.warehouse import ensure_table, rows_digest, table_exists

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


# keys sampled to place the bounds of ``bucket_frames``' ranges (any bounds are correct; a sample
# only keeps the ranges near their intended size)
BOUND_SAMPLE_ROWS = 100_000


def bucket_frames(
    con: duckdb.DuckDBPyConnection, relation: str, columns: str, key: str, size: int
) -> Iterator[pl.DataFrame]:
    """``columns`` of ``relation`` in ranges of ``key`` of about ``size`` rows each: every row of
    one key value falls in one range, so a per-key or unique-key check over each range checks the
    whole table, with one range in Python at once. The bounds are quantiles of a sample of the
    keys, so finding them is one scan of one column; on a table stored sorted by ``key`` each range
    reads only its own row groups, and the whole validation stays linear in the rows."""
    [(rows,)] = con.execute(f"SELECT count(*) FROM {relation}").fetchall()
    buckets = max(1, -(-rows // size))
    bounds: list = []
    if buckets > 1:
        quantiles = [i / buckets for i in range(1, buckets)]
        [(sampled,)] = con.execute(
            f"SELECT quantile_disc({key}, $q) FROM (SELECT {key} FROM {relation} WHERE {key} IS NOT NULL "
            f"USING SAMPLE reservoir({BOUND_SAMPLE_ROWS} ROWS) REPEATABLE (7))",
            {"q": quantiles},
        ).fetchall()
        bounds = sorted(set(sampled or []))
    edges = [None, *bounds, None]
    for lo, hi in zip(edges, edges[1:], strict=False):
        condition = " AND ".join(
            [*([f"{key} >= $lo"] if lo is not None else []), *([f"{key} < $hi"] if hi is not None else [])]
        )
        if lo is None:  # the first range also holds the rows without a key
            condition = f"({condition or 'true'} OR {key} IS NULL)"
        params = {name: v for name, v in (("lo", lo), ("hi", hi)) if v is not None}
        frame = con.sql(f"SELECT {columns} FROM {relation} WHERE {condition}", params=params or None)
        yield as_utc(frame.pl())


def unique_across_buckets(
    con: duckdb.DuckDBPyConnection, relation: str, column: str, key: str, validation: Validation
) -> Validation:
    """``validation`` (of ``bucket_frames`` by ``key``) with the values of the unique ``column``
    shared by rows of different keys, which no single bucket sees (Pandera's check name)."""
    shared = con.sql(
        f"SELECT '{column}' AS column, 'field_uniqueness' AS check, {column}::VARCHAR AS failure_case, "
        f"NULL::BIGINT AS index FROM {relation} GROUP BY {column} "
        f"HAVING min({key}) <> max({key}) ORDER BY {column}"
    ).pl()
    if shared.height == 0:
        return validation
    return Validation(validation.schema_name, pl.concat([validation.failure_cases, shared]))


def validate_frames(schema: pa.DataFrameSchema, frames: Iterable[pl.DataFrame]) -> tuple[Validation, int]:
    """Validate each frame (ranges of one table) and collect every failure; also the rows seen."""
    failures, rows = [pl.DataFrame(schema=FAILURE_CASES_DTYPES)], 0
    for frame in frames:
        rows += frame.height
        failures.append(validate(schema, frame).failure_cases)
    return Validation(schema.name or "schema", pl.concat(failures)), rows


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
    con: duckdb.DuckDBPyConnection, table: str, reads: Sequence[str], as_of: datetime | None
) -> str:
    """The content of ``table`` and of the tables its invariants also read (row count and sum of
    row hashes each), and the instant they are checked at: while all are the same, so is every
    invariant's verdict. A tenth of a validation's time: hashing never leaves DuckDB."""
    digests = [rows_digest(con, name) for name in (table, *reads)]
    return " ".join([*digests, *([as_of.isoformat()] if as_of is not None else [])])


def record_validated(
    con: duckdb.DuckDBPyConnection,
    table: str,
    run_id: str,
    reads: Sequence[str] = (),
    as_of: datetime | None = None,
) -> None:
    """Say that ``table``, as it is stored now, was validated whole by run ``run_id`` (call after
    the write committed, and only when every invariant of its stored checks held over every row;
    ``reads``: the other tables those invariants read, ``as_of``: the instant they were checked at)."""
    state = _validated_state(con, table, reads, as_of)
    ensure_table(con, tables.VALIDATED_CONTENTS, pl.DataFrame(schema=table_dtypes(tables.VALIDATED_CONTENTS)))
    con.execute(f"DELETE FROM {tables.VALIDATED_CONTENTS} WHERE table_name = ?", [table])
    con.execute(f"INSERT INTO {tables.VALIDATED_CONTENTS} VALUES (?, ?, ?)", [table, state, run_id])


def validated_by(
    con: duckdb.DuckDBPyConnection, table: str, reads: Sequence[str] = (), as_of: datetime | None = None
) -> str | None:
    """The run that validated ``table`` whole with the content it has now (``record_validated`` with
    the same ``reads`` and ``as_of``), or None: never recorded, or one of the tables written since,
    by a run or by hand, or another instant."""
    if not table_exists(con, tables.VALIDATED_CONTENTS):
        return None
    rows = con.execute(
        f"SELECT run_id FROM {tables.VALIDATED_CONTENTS} WHERE table_name = ? AND content_digest = ?",
        [table, _validated_state(con, table, reads, as_of)],
    ).fetchall()
    return rows[0][0] if rows else None
