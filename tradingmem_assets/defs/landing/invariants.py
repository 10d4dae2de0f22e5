"""Landing tables of SPEC section 2: column types, keys and value rules, declared once.

The tables are declared once, as data, in ``tables.toml`` next to this module; ``LANDING_TABLES``
holds them and ``landing_schema(table)`` turns one into the Pandera (polars) schema that decides
which landing rows are accepted into ``raw.<table>``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Literal

import pandera.polars as pa
import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib import vocabulary as v
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.screen import check_sql
from tradingmem_assets.lib.sql_json import sql_identifier, sql_literal

Kind = Literal["str", "int", "float", "bool", "ts", "date", "json_list", "json_object"]

# DuckDB types the typing step casts to, and the Polars dtypes Pandera then checks.
DUCKDB_TYPES: dict[Kind, str] = {
    "str": "VARCHAR",
    "int": "BIGINT",
    "float": "DOUBLE",
    "bool": "BOOLEAN",
    "ts": "TIMESTAMPTZ",
    "date": "DATE",
    "json_list": "VARCHAR",
    "json_object": "VARCHAR",
}
POLARS_TYPES: dict[Kind, pl.DataType] = {
    "str": pl.String(),
    "int": pl.Int64(),
    "float": pl.Float64(),
    "bool": pl.Boolean(),
    "ts": pl.Datetime("us", "UTC"),
    "date": pl.Date(),
    "json_list": pl.String(),
    "json_object": pl.String(),
}


@dataclass(frozen=True)
class Col:
    name: str
    kind: Kind = "str"
    nullable: bool = False
    isin: tuple[str, ...] | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None


@dataclass(frozen=True)
class LandingTable:
    name: str
    key: tuple[str, ...]
    columns: tuple[Col, ...]
    description: str = ""
    extra_checks: tuple[pa.Check, ...] = field(default=())

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def polars_schema(self) -> pl.Schema:
        return pl.Schema({c.name: POLARS_TYPES[c.kind] for c in self.columns})

    def empty(self) -> pl.DataFrame:
        return pl.DataFrame(schema=self.polars_schema())


TABLES_FILE = "tables.toml"
COLUMN_FIELDS = frozenset({"name", "kind", "nullable", "isin", "ge", "gt", "le"})


def _column(table: str, entry: dict) -> Col:
    unknown = sorted(set(entry) - COLUMN_FIELDS)
    if unknown or entry.get("kind", "str") not in DUCKDB_TYPES:
        raise ValueError(f"{TABLES_FILE}: {table}.{entry.get('name')}: unknown {unknown or entry['kind']}")
    isin = entry.get("isin")
    return Col(
        name=entry["name"],
        kind=entry.get("kind", "str"),
        nullable=entry.get("nullable", False),
        isin=None if isin is None else getattr(v, isin),
        ge=entry.get("ge"),
        gt=entry.get("gt"),
        le=entry.get("le"),
    )


def parse_landing_tables(text: str) -> tuple[LandingTable, ...]:
    """The landing tables of a ``tables.toml`` text: ``[<table>]`` with ``key``, ``description``
    and ``columns`` (``isin`` names a vocabulary of ``lib/vocabulary.py``)."""
    return tuple(
        LandingTable(
            name=name,
            key=tuple(entry["key"]),
            columns=tuple(_column(name, c) for c in entry["columns"]),
            description=entry["description"],
        )
        for name, entry in tomllib.loads(text).items()
    )


LANDING_TABLE_DECLARATIONS: tuple[LandingTable, ...] = parse_landing_tables(
    resources.files(__package__).joinpath(TABLES_FILE).read_text(encoding="utf-8")
)
LANDING_TABLES: dict[str, LandingTable] = {t.name: t for t in LANDING_TABLE_DECLARATIONS}


def _checks(col: Col) -> list[pa.Check]:
    checks: list[pa.Check] = []
    if col.isin is not None:
        checks.append(pa.Check.isin(list(col.isin)))
    if col.ge is not None:
        checks.append(pa.Check.ge(col.ge))
    if col.gt is not None:
        checks.append(pa.Check.gt(col.gt))
    if col.le is not None:
        checks.append(pa.Check.le(col.le))
    if col.kind == "str" and not col.nullable:
        checks.append(pa.Check.str_length(min_value=1))
    return checks


@cache
def landing_schema(table: str) -> pa.DataFrameSchema:
    """The Pandera schema a landing row must satisfy to enter ``raw.<table>``."""
    spec = LANDING_TABLES[table]
    return pa.DataFrameSchema(
        {
            c.name: pa.Column(POLARS_TYPES[c.kind], checks=_checks(c), nullable=c.nullable)
            for c in spec.columns
        },
        name=f"raw.{table}",
        strict="filter",
        checks=list(spec.extra_checks),
    )


RAW_REJECTS_DTYPES = table_dtypes(tables.RAW_REJECTS)


def value_reasons_sql(spec: LandingTable, cast_failed: dict[str, str]) -> list[str]:
    """One SQL expression per value rule of ``landing_schema(spec.name)``: the rule's reject reason
    (``<column>: <Pandera's text of the check>``) when a row breaks it, else NULL.

    They say what Pandera says of the same typed rows: a null value is only checked for being
    allowed (``not_nullable``; a float NaN counts as null there, and is still compared, as the
    largest value, by the other rules); a value whose cast failed (``cast_failed``: column → SQL
    flag) is reported by the typing step alone. A rule with no SQL form is refused here.
    """
    schema = landing_schema(spec.name)
    if schema.checks:
        raise ValueError(f"raw.{spec.name}: table-wide Pandera checks have no SQL form")
    kinds = {c.name: c.kind for c in spec.columns}
    out: list[str] = []
    for name, column in schema.columns.items():
        q = sql_identifier(name)
        if not column.nullable:
            null = f"{q} IS NULL OR isnan({q})" if kinds[name] == "float" else f"{q} IS NULL"
            guard = f"NOT {cast_failed[name]} AND " if name in cast_failed else ""
            out.append(f"CASE WHEN {guard}({null}) THEN {sql_literal(f'{name}: not_nullable')} END")
        for check in column.checks:
            predicate = check_sql(check, q)
            if predicate is None:
                raise ValueError(f"raw.{spec.name}.{name}: the Pandera check {check.name} has no SQL form")
            reason = sql_literal(f"{name}: {check.error}")
            out.append(f"CASE WHEN {q} IS NOT NULL AND NOT ({predicate}) THEN {reason} END")
    return out
