"""Materialization metadata the Dagster UI renders well: row count, column schema, table name."""

import dagster as dg
import polars as pl


def table_metadata(table_name: str, frame: pl.DataFrame | None = None, row_count: int | None = None) -> dict:
    meta: dict = {"dagster/table_name": table_name}
    if frame is not None:
        meta["dagster/row_count"] = frame.height if row_count is None else row_count
        meta["dagster/column_schema"] = dg.TableSchema(
            columns=[dg.TableColumn(name, str(dtype)) for name, dtype in frame.schema.items()]
        )
    elif row_count is not None:
        meta["dagster/row_count"] = row_count
    return meta


def check_result(check_name: str, validation, asset_key: dg.AssetKey | None = None) -> dg.AssetCheckResult:
    """An asset check result from a ``schemas.validation.Validation``, with its failures as metadata."""
    return dg.AssetCheckResult(
        check_name=check_name,
        asset_key=asset_key,
        passed=validation.passed,
        metadata={
            "violations": validation.failure_cases.height,
            "summary": dg.MetadataValue.md(validation.summary()),
        },
    )


def fail_on(validation, table: str) -> None:
    """Stop before writing when a red line would break: the message names the violated invariants."""
    if not validation.passed:
        raise dg.Failure(
            description=f"{table} would break its invariants; nothing was written. {validation.summary()}",
            metadata={"summary": dg.MetadataValue.md(validation.summary())},
        )
