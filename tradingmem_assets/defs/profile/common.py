"""What the profile-domain assets share: the group name, reading inputs, validating in chunks,
failing on a broken red line."""

from collections.abc import Callable, Mapping, Sequence

import dagster as dg
import duckdb
import pandera.polars as pa
import polars as pl

from tradingmem_assets.defs.memory.layers import as_utc
from tradingmem_assets.lib.validation import Validation, validate
from tradingmem_assets.lib.warehouse import read_frame, table_exists


def read_columns(
    con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], limit: int | None = None
) -> pl.DataFrame:
    """The named columns of a table, or a clear failure naming the asset to materialize first."""
    if not table_exists(con, table):
        schema, _, name = table.rpartition(".")
        upstream = f"raw/{name}" if schema == "raw" else name
        raise dg.Failure(description=f"table {table} does not exist yet: materialize {upstream} first")
    cols = ", ".join(f'"{c}"' for c in columns)
    suffix = f" LIMIT {int(limit)}" if limit is not None else ""
    return read_frame(con, f"SELECT {cols} FROM {table}{suffix}")


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


def validate_by_customer(
    con: duckdb.DuckDBPyConnection,
    schema: pa.DataFrameSchema,
    query: Callable[[str], str],
    ranges: Sequence[tuple[str | None, str | None]],
    params: Mapping[str, object] | None = None,
) -> Validation:
    """Validate every row of ``query(condition)`` one customer range at a time (only one range is
    in Python at once); ``condition`` restricts ``customer_id`` to the range."""
    failures = []
    for lo, hi in ranges:
        bounds = {name: value for name, value in (("lo", lo), ("hi", hi)) if value is not None}
        condition = " AND ".join(
            {"lo": "customer_id >= $lo", "hi": "customer_id < $hi"}[name] for name in bounds
        )
        frame = con.sql(query(condition or "true"), params={**(params or {}), **bounds} or None).pl()
        failures.append(validate(schema, as_utc(frame)).failure_cases)
    return Validation(schema.name or "schema", pl.concat(failures))


def fail_on(validation: Validation, table: str) -> None:
    """Stop before writing when a red line would break: the message names the violated invariants."""
    if not validation.passed:
        raise dg.Failure(
            description=f"{table} would break its invariants; nothing was written. {validation.summary()}",
            metadata={"summary": dg.MetadataValue.md(validation.summary())},
        )
