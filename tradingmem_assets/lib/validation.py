"""Run a Pandera schema lazily and keep its failure cases as data (never a bare traceback).

Large tables are validated as the connection streams them, one batch of rows at a time, so only a
few batches are in Python at once; what a batch cannot see (a unique column or key) is found in
SQL over the whole relation.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

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


def stream_validated(
    con: duckdb.DuckDBPyConnection,
    schema: pa.DataFrameSchema,
    query: str,
    batch_rows: int,
    then: Callable[[], list[pl.DataFrame]] = list,
) -> tuple[Validation, int]:
    """Validate every row of ``query`` with ``schema``, ``batch_rows`` rows at a time, and the rows
    seen: the connection streams the rows once (Arrow batches, no scratch copy) and a second thread
    validates each batch while the connection reads the next (Polars and DuckDB both release the
    GIL, so on two cores each has one): at most two batches are in Python at once.
    ``then()`` runs on the connection once the rows are read, while the last batch is still
    being validated; the failure cases it returns (``FAILURE_CASES_DTYPES``: what it checked over
    the whole relation) join the batches'. An exception of it is raised once that batch is done.

    The batches split the rows anywhere: ``schema`` must hold only rules of one row (a rule over a
    key's rows, or a unique key, is checked over the whole relation by the caller). A query without
    rows is validated as one empty frame, so the columns' types are still checked."""
    failures, rows, waiting = [pl.DataFrame(schema=FAILURE_CASES_DTYPES)], 0, deque()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tm_validation") as pool:
        try:
            for batch in con.sql(query).to_arrow_reader(batch_rows):
                frame = as_utc(pl.from_arrow(batch))  # type: ignore[arg-type]
                rows += frame.height
                waiting.append(pool.submit(validate, schema, frame))
                while len(waiting) > 1:
                    failures.append(waiting.popleft().result().failure_cases)
            if not rows:
                waiting.append(pool.submit(validate, schema, as_utc(con.sql(f"{query} LIMIT 0").pl())))
            whole = then()
        finally:
            done = [future.result().failure_cases for future in waiting]
    return Validation(schema.name or "schema", pl.concat([*failures, *done, *whole])), rows


def repeated_values(
    con: duckdb.DuckDBPyConnection, relation: str, columns: str | Sequence[str], schema_name: str = ""
) -> pl.DataFrame:
    """Failure cases (``FAILURE_CASES_DTYPES``, Pandera's check names) of the values of a unique
    column, or of a unique key of several ``columns``, that more than one row of ``relation`` has,
    found in SQL over the whole relation. A key's case is its values as one JSON object, under
    ``schema_name`` (where Pandera reports a check of the whole frame). Pandera sees one frame at a time, and
    its check of a unique string column was most of its time. Only the values whose 64-bit hash
    more than one row has are grouped by the value: grouping millions of distinct strings cost
    more than grouping their hashes."""
    key = [columns] if isinstance(columns, str) else list(columns)
    names = ", ".join(key)
    if len(key) == 1:
        column, check, case = f"'{key[0]}'", "field_uniqueness", f"{key[0]}::VARCHAR"
    else:
        column, check = sql_literal(schema_name), "multiple_fields_uniqueness"
        case = "to_json({" + ", ".join(f"'{c}': {c}" for c in key) + "})::VARCHAR"
    return con.sql(
        f"WITH repeated AS (SELECT hash({names}) AS h FROM {relation} GROUP BY h HAVING count(*) > 1) "
        f"SELECT {column}::VARCHAR AS column, '{check}' AS check, {case} AS failure_case, "
        f"NULL::BIGINT AS index FROM {relation} WHERE hash({names}) IN (SELECT h FROM repeated) "
        f"GROUP BY {names} HAVING count(*) > 1 ORDER BY {names}"
    ).pl()


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
