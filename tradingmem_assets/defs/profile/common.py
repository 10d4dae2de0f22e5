"""What the profile-domain assets share: the group name, reading inputs, failing on a broken red line."""

from collections.abc import Sequence

import dagster as dg
import duckdb
import polars as pl

from tradingmem_assets.schemas.validation import Validation
from tradingmem_assets.warehouse import read_frame, table_exists

PROFILE_GROUP = "profile"


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


def fail_on(validation: Validation, table: str) -> None:
    """Stop before writing when a red line would break: the message names the violated invariants."""
    if not validation.passed:
        raise dg.Failure(
            description=f"{table} would break its invariants; nothing was written. {validation.summary()}",
            metadata={"summary": dg.MetadataValue.md(validation.summary())},
        )
