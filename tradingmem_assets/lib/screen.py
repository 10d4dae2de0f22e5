"""A schema's rules of one row spelled in SQL, to screen a validated query's rows before Pandera
sees them (``validation.validate_query``).

The screen is a single SQL expression, true for a row that might break a rule: a null where the
schema allows none, a value a column check refuses, a row rule that does not hold (a rule's SQL
twin, ``row_rule(..., sql=...)``), or a float that is not finite (NaN and the infinities compare
and subtract differently in Polars and DuckDB, so Pandera always judges them). It is only a
screen: a row it passes must be one Pandera passes; a row it flags is judged by Pandera, with
the rest of the query, exactly as without a screen. A schema with a rule or a check that has no
SQL form gets no screen.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

import pandera.polars as pa
import polars as pl

from tradingmem_assets.lib.sql_json import sql_identifier, sql_literal


def sql_value(value: object) -> str:
    """A SQL literal of a check's bound or allowed value (text, boolean or finite number)."""
    if isinstance(value, str):
        return sql_literal(value)
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return repr(value)
    raise ValueError(f"no SQL literal for the rule value {value!r}")


def sql_values(values: Iterable[object]) -> str:
    """SQL literals of ``values``, comma-separated (an ``IN`` list)."""
    return ", ".join(sql_value(v) for v in values)


def _length_sql(q: str, stats: Mapping) -> str:
    if stats.get("exact_value") is not None:
        return f"length({q}) = {int(stats['exact_value'])}"
    bounds = [f"length({q}) >= {int(stats['min_value'])}"] if stats.get("min_value") is not None else []
    if stats.get("max_value") is not None:
        bounds.append(f"length({q}) <= {int(stats['max_value'])}")
    return " AND ".join(bounds) or "true"


def _range_sql(q: str, stats: Mapping) -> str:
    low = ">=" if stats["include_min"] else ">"
    high = "<=" if stats["include_max"] else "<"
    return f"{q} {low} {sql_value(stats['min_value'])} AND {q} {high} {sql_value(stats['max_value'])}"


# The SQL form of each built-in Pandera column check (by its function's name, which a custom check
# name does not change): a predicate on a non-null value.
SQL_CHECKS: dict[str, Callable[[str, Mapping], str]] = {
    "isin": lambda q, s: f"{q} IN ({sql_values(s['allowed_values'])})",
    "equal_to": lambda q, s: f"{q} = {sql_value(s['value'])}",
    "greater_than": lambda q, s: f"{q} > {sql_value(s['min_value'])}",
    "greater_than_or_equal_to": lambda q, s: f"{q} >= {sql_value(s['min_value'])}",
    "less_than": lambda q, s: f"{q} < {sql_value(s['max_value'])}",
    "less_than_or_equal_to": lambda q, s: f"{q} <= {sql_value(s['max_value'])}",
    "in_range": _range_sql,
    "str_length": _length_sql,
}


def check_sql(check: pa.Check, q: str) -> str | None:
    """The SQL predicate of a built-in column check on the non-null value ``q``, or None."""
    spell = SQL_CHECKS.get(getattr(check._check_fn, "__name__", ""))
    return None if spell is None else spell(q, check.statistics)


def screen_sql(schema: pa.DataFrameSchema, frame: pl.DataFrame) -> str | None:
    """The SQL expression true for a row of a query that might break a rule of ``schema`` (its
    columns' nullability and checks, its row rules), given the query's empty ``frame`` (for the
    float columns); None when a check or a rule has no SQL form. A null verdict counts as a
    possible failure."""
    holds: list[str] = []
    for name, column in schema.columns.items():
        q = sql_identifier(name)
        if column.coerce or column.regex:
            return None
        if not column.nullable:
            holds.append(f"{q} IS NOT NULL")
        if name in frame.columns and frame.schema[name].is_float():
            holds.append(f"({q} IS NULL OR isfinite({q}))")
        for check in column.checks:
            predicate = check_sql(check, q)
            if predicate is None or not check.ignore_na:
                return None
            holds.append(f"({q} IS NULL OR ({predicate}))")
    for check in schema.checks:
        rule = getattr(check._check_fn, "sql", None)
        if rule is None:
            return None
        holds.append(f"({rule})")
    return f"NOT coalesce({' AND '.join(holds)}, false)" if holds else "false"
