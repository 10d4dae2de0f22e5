"""Run a Pandera schema lazily and keep its failure cases as data (never a bare traceback)."""

from __future__ import annotations

from dataclasses import dataclass

import pandera.polars as pa
import polars as pl
from pandera.errors import SchemaError, SchemaErrors


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
                schema={
                    "column": pl.String,
                    "check": pl.String,
                    "failure_case": pl.String,
                    "index": pl.Int64,
                },
            ),
        )
    return Validation(
        name,
        pl.DataFrame(
            schema={"column": pl.String, "check": pl.String, "failure_case": pl.String, "index": pl.Int64}
        ),
    )
