"""What no batch of a streamed validation sees: a unique column or key, and the nulls of the columns
no rule reads, over the whole query (``validation.validate_query``). The stream carries each key's
hash and a flag of such nulls beside the batches; SQL reads the query again only to spell the
failure cases, when there are some."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import duckdb
import numpy as np
import polars as pl

from tradingmem_assets.lib.sql_json import sql_literal

# Up to this many rows, ``validate_query`` looks for a repeated unique key among the 64-bit key
# hashes streamed beside the batches (8 bytes a row and key); beyond it, in SQL over the whole
# query, so that SF 30's 17 million runs keep their memory.
KEY_HASHES_MAX_ROWS = 8_000_000


class StreamedChecks:
    """What ``validate_query``'s checks over the whole query read from its one stream, beside the
    batches: each unique key's 64-bit hash (``hash(key)``, as ``repeated_values`` groups them) while
    at most ``KEY_HASHES_MAX_ROWS`` rows came, and whether a row has a null in a column that must
    have none and that no rule reads. A query read once, not once for each such check: the role
    cases' chain and coverage are joins, computed again by every pass over them."""

    def __init__(
        self, keys: Sequence[str | tuple[str, ...]], not_null: Sequence[str], screen: str | None = None
    ) -> None:
        self.keys, self.not_null, self.screen = list(keys), list(not_null), screen
        self.hash_columns = [f"__tm_key_{i}" for i in range(len(self.keys))]
        self.columns = [
            *self.hash_columns,
            *(["__tm_nulls"] if self.not_null else []),
            *(["__tm_suspect"] if screen else []),
        ]
        self.hashes: dict[str, list[np.ndarray]] | None = {name: [] for name in self.hash_columns}
        self.rows, self.nulls, self.suspect = 0, False, False

    def sql(self) -> list[str]:
        """The streamed columns of these checks (none when the query has no key and no such column):
        with a ``screen`` (``lib.screen``), whether a row might break a rule Pandera would see."""
        hashed = [
            f"hash({', '.join(map(_quoted, [key] if isinstance(key, str) else key))}) AS {_quoted(name)}"
            for key, name in zip(self.keys, self.hash_columns, strict=True)
        ]
        if self.not_null:
            hashed.append(f"({' OR '.join(f'{_quoted(c)} IS NULL' for c in self.not_null)}) AS __tm_nulls")
        return [*hashed, f"({self.screen}) AS __tm_suspect"] if self.screen else hashed

    def read(
        self,
        con: duckdb.DuckDBPyConnection,
        query: str,
        params: Mapping[str, object] | Sequence[object] | None,
        batch_rows: int,
    ) -> None:
        """Stream only these checks' columns of every row of ``query`` (no rule's column)."""
        for batch in con.sql(f"SELECT {', '.join(self.sql())} FROM ({query})", params=params).to_arrow_reader(
            batch_rows
        ):
            self.add(pl.from_arrow(batch))  # type: ignore[arg-type]

    def add(self, batch: pl.DataFrame) -> None:
        self.rows += batch.height
        self.nulls = self.nulls or bool(self.not_null and batch.get_column("__tm_nulls").any())
        self.suspect = self.suspect or bool(self.screen and batch.get_column("__tm_suspect").any())
        if self.rows > KEY_HASHES_MAX_ROWS:
            self.hashes = None  # too many to hold: SQL looks for repeated keys
        elif self.hashes is not None:
            for name in self.hash_columns:  # a copy: a column of the batch would keep all of it
                self.hashes[name].append(batch.get_column(name).to_numpy().copy())

    def found(self) -> tuple[list[str | tuple[str, ...]], list[str]]:
        """The keys some of whose hashes repeat (SQL then finds which values, if any: hashes of
        different values may be equal), every key when there were too many rows to hold their
        hashes; and the columns to look for nulls in (every one of them when a row had one). Once:
        the hashes are let go as they are checked."""
        repeated = (
            self.keys
            if self.hashes is None
            else [key for key, name in zip(self.keys, self.hash_columns, strict=True) if self._repeats(name)]
        )
        return repeated, self.not_null if self.nulls else []

    def _repeats(self, name: str) -> bool:
        """Whether a hash of the key repeats (its hashes are let go: the next key's are checked alone)."""
        batches = self.hashes.pop(name)  # type: ignore[union-attr]
        if not batches:
            return False
        values = np.concatenate(batches)
        del batches
        values.sort()
        return bool((values[1:] == values[:-1]).any())


def _quoted(name: str) -> str:
    return f'"{name}"'


def whole_query_failures(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    unique: Sequence[str | tuple[str, ...]],
    not_null: Sequence[str],
    params: Mapping[str, object] | Sequence[object] | None = None,
    schema_name: str = "",
) -> list[pl.DataFrame]:
    """The failure cases of the ``unique`` columns and keys of several columns (``repeated_values``,
    a key's under ``schema_name``) and of the ``not_null`` columns (``null_values``) of
    ``relation``. One pass counts the nulls of every column, and only the columns found with nulls
    are read again, for their cases. (Counting each key's distinct hashes in that pass too was
    slower than grouping by them, key by key: DuckDB's distinct aggregates of one group run on one
    thread.)"""
    found = [repeated_values(con, relation, key, schema_name, params) for key in unique]
    if not not_null:
        return found
    counted = ", ".join(f'count(*) FILTER (WHERE "{c}" IS NULL)' for c in not_null)
    ((*counts,),) = con.execute(f"SELECT {counted} FROM {relation}", params).fetchall()
    null = [c for c, nulls in zip(not_null, counts, strict=True) if nulls]
    return [*found, null_values(con, relation, null, params)] if null else found


def null_values(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    columns: Sequence[str],
    params: Mapping[str, object] | Sequence[object] | None = None,
) -> pl.DataFrame:
    """Failure cases (``validation.FAILURE_CASES_DTYPES``, Pandera's ``not_nullable``) of the nulls of
    ``columns`` in ``relation``, one per null value, found in SQL."""
    named = ", ".join(f'CASE WHEN "{c}" IS NULL THEN {sql_literal(c)} END' for c in columns)
    any_null = " OR ".join(f'"{c}" IS NULL' for c in columns)
    return con.sql(
        f"SELECT unnest(list_filter([{named}], lambda c: c IS NOT NULL)) AS column, 'not_nullable' AS check, "
        f"NULL::VARCHAR AS failure_case, NULL::BIGINT AS index FROM {relation} "
        f"WHERE {any_null}",
        params=params,
    ).pl()


def repeated_values(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    columns: str | Sequence[str],
    schema_name: str = "",
    params: Mapping[str, object] | Sequence[object] | None = None,
) -> pl.DataFrame:
    """Failure cases (``validation.FAILURE_CASES_DTYPES``, Pandera's check names) of the values of a unique
    column, or of a unique key of several ``columns``, that more than one row of ``relation`` has,
    found in SQL over the whole relation. A key's case is its values as one JSON object, under
    ``schema_name`` (where Pandera reports a check of the whole frame). Pandera sees one frame at a time, and
    its check of a unique string column was most of its time. Only the values whose 64-bit hash
    more than one row has are grouped by the value: grouping millions of distinct strings cost
    more than grouping their hashes, and finding the repeated hashes by sorting them (a hash equal
    to the one before it) cost less than grouping them (0.35 s against 0.51 s for 5.8 million run
    ids)."""
    key = [columns] if isinstance(columns, str) else list(columns)
    names = ", ".join(key)
    if len(key) == 1:
        column, check, case = f"'{key[0]}'", "field_uniqueness", f"{key[0]}::VARCHAR"
    else:
        column, check = sql_literal(schema_name), "multiple_fields_uniqueness"
        case = "to_json({" + ", ".join(f"'{c}': {c}" for c in key) + "})::VARCHAR"
    return con.sql(
        f"WITH repeated AS (SELECT DISTINCT h FROM (SELECT hash({names}) AS h FROM {relation}) "
        "QUALIFY h = lag(h) OVER (ORDER BY h)) "
        f"SELECT {column}::VARCHAR AS column, '{check}' AS check, {case} AS failure_case, "
        f"NULL::BIGINT AS index FROM {relation} WHERE hash({names}) IN (SELECT h FROM repeated) "
        f"GROUP BY {names} HAVING count(*) > 1 ORDER BY {names}",
        params=params,
    ).pl()
