"""The data dictionary's records: a stored table, what it holds and each column's type and meaning.

Each domain declares its tables as data in ``defs/<domain>/columns.toml``: one TOML table per
stored table, keyed by its qualified name (``[main.<table>]`` or ``[raw.<table>]``), with a
``description`` and its ``columns`` as ``[column, DuckDB type, meaning]`` rows. :func:`table_docs`
reads one domain's file into :class:`TableDoc` records; the assets turn them into the column
schemas they declare (``dagster_kit``), :func:`table_dtypes` into the Polars dtypes of a stored
table, and ``tradingmem_assets.docs_tables`` writes them to ``docs/tables.md``. The files ship as
package data (``pyproject.toml``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dtypes import UTC_TS

COLUMNS_FILE = "columns.toml"
SCHEMAS = ("main", tables.RAW_SCHEMA_NAME)
# the domains with a data dictionary, in the order docs/tables.md lists them
DICTIONARY_DOMAINS = (
    "landing",
    "evaluation",
    "role_memory",
    "learning",
    "memory",
    "profile",
    "efficacy",
    "audit",
    "migration",
    "operations",
)
# the Polars dtype a DuckDB column type is read as
DUCKDB_TO_POLARS: dict[str, pl.DataType] = {
    "VARCHAR": pl.String(),
    "JSON": pl.String(),
    "VARCHAR[]": pl.List(pl.String()),
    "BOOLEAN": pl.Boolean(),
    "INTEGER": pl.Int32(),
    "BIGINT": pl.Int64(),
    "UBIGINT": pl.UInt64(),
    "HUGEINT": pl.Int128(),
    "DOUBLE": pl.Float64(),
    "DATE": pl.Date(),
    "TIMESTAMP WITH TIME ZONE": UTC_TS,
}


@dataclass(frozen=True)
class TableDoc:
    """One stored table: qualified name, one line on what it holds, (column, DuckDB type, meaning)."""

    table: str
    description: str
    columns: tuple[tuple[str, str, str], ...]

    @property
    def column_names(self) -> list[str]:
        return [name for name, _, _ in self.columns]


def _column(table: str, row: object) -> tuple[str, str, str]:
    if not (isinstance(row, list) and len(row) == 3 and all(isinstance(x, str) and x for x in row)):
        raise ValueError(f"{table}: a column is [name, type, meaning], got {row!r}")
    name, sql_type, meaning = row
    return name, sql_type, meaning


def parse_table_docs(text: str, source: str) -> tuple[TableDoc, ...]:
    """The tables of one ``columns.toml`` text, in its order (``source`` names it in errors)."""
    data = tomllib.loads(text)
    unknown = sorted(set(data) - set(SCHEMAS))
    if unknown:
        raise ValueError(f"{source}: tables live in {SCHEMAS}, not {unknown}")
    return tuple(
        TableDoc(
            f"{schema}.{name}",
            entry["description"],
            tuple(_column(f"{schema}.{name}", row) for row in entry["columns"]),
        )
        for schema, entries in data.items()
        for name, entry in entries.items()
    )


@cache
def table_docs(domain: str) -> tuple[TableDoc, ...]:
    """The tables of ``defs/<domain>/columns.toml``, in the file's order."""
    source = resources.files(f"tradingmem_assets.defs.{domain}").joinpath(COLUMNS_FILE)
    return parse_table_docs(source.read_text(encoding="utf-8"), f"{domain}/{COLUMNS_FILE}")


@cache
def _all_docs() -> dict[str, TableDoc]:
    return {doc.table: doc for domain in DICTIONARY_DOMAINS for doc in table_docs(domain)}


def table_dtypes(table: str) -> pl.Schema:
    """The Polars dtypes of a stored table (qualified name), from its declared columns."""
    return pl.Schema({name: DUCKDB_TO_POLARS[sql_type] for name, sql_type, _ in _all_docs()[table].columns})
