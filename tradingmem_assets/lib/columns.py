"""The data dictionary's records: a stored table, what it holds and each column's type and meaning.

Each domain declares its tables in ``defs/<domain>/columns.py`` (``<DOMAIN>_TABLE_DOCS``, a tuple of
:class:`TableDoc`); the assets turn them into the column schemas they declare (``dagster_kit``),
and ``tradingmem_assets.docs_tables`` writes them to ``docs/tables.md``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TableDoc:
    """One stored table: qualified name, one line on what it holds, (column, DuckDB type, meaning)."""

    table: str
    description: str
    columns: tuple[tuple[str, str, str], ...]

    @property
    def column_names(self) -> list[str]:
        return [name for name, _, _ in self.columns]
