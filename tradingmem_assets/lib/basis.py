"""What an incremental asset saw: per input, a digest of the rows it could see at its ``as_of``.

An asset that recomputes only what a later ``as_of`` can change (the evaluation, the role cases,
the customer profiles) stores its *basis* with its write, in the same transaction: per input, the row count and the sum
of row hashes of what its SQL selects at that ``as_of``. The next run may build on the stored rows
only while the basis *holds*: the same inputs, selected at the basis's ``as_of``, have the same
digests now, so the landing files may have grown (one more day) or been rewritten, as long as
nothing the earlier run could see changed. Each asset keeps only its latest basis, in its own table
(``evaluation_basis``, ``role_cases_basis``, ``profile_basis``: one row per input, declared
alike). ``usable_basis`` says whether a run may build on it; ``touched_only`` then restricts the
asset's SQL to the keys an instant since can change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.warehouse import RunDigests, replace_table, rows_digest, table_exists


@dataclass(frozen=True)
class Basis:
    """The latest stored basis: the run that wrote it, its ``as_of`` and a digest per input."""

    run_id: str
    as_of: datetime
    digests: dict[str, str]


@dataclass(frozen=True)
class Visible:
    """A table's rows stamped at or before ``$as_of`` by the column ``stamped_by`` (every row:
    None; a null stamp counts as visible with ``null_visible``)."""

    table: str
    stamped_by: str | None = None
    null_visible: bool = False

    @property
    def sql(self) -> str:
        if self.stamped_by is None:
            return f"SELECT * FROM {self.table}"
        visible = f"{self.stamped_by} <= $as_of"
        if self.null_visible:
            visible = f"{self.stamped_by} IS NULL OR {visible}"
        return f"SELECT * FROM {self.table} WHERE {visible}"

    def all_rows(self, con: duckdb.DuckDBPyConnection, as_of: datetime) -> bool:
        """Whether every row of the table is visible at ``as_of`` (a scan of one column)."""
        if self.stamped_by is None:
            return True
        hidden = f"{self.stamped_by} > $as_of" + (
            "" if self.null_visible else f" OR {self.stamped_by} IS NULL"
        )
        ((n,),) = con.execute(
            f"SELECT count(*) FROM {self.table} WHERE {hidden}", {"as_of": as_of}
        ).fetchall()
        return n == 0


def visible_rows(table: str, stamped_by: str | None, *, null_visible: bool = False) -> Visible:
    """A table's rows stamped at or before ``$as_of`` (all of them: ``stamped_by`` None)."""
    return Visible(table, stamped_by, null_visible)


def digests(
    con: duckdb.DuckDBPyConnection,
    visible: Mapping[str, Visible | str],
    as_of: datetime,
    known: RunDigests | None = None,
) -> dict[str, str]:
    """Per input (a landing table's name), the ``rows_digest`` of what it selects at ``as_of``
    (``Visible`` rows, or SQL which may read ``$as_of``). With ``known`` (the run's digests), each
    is remembered under its raw table, whose landing forgets it: the evaluation and the role cases
    share most inputs. When every row of a ``Visible`` table is visible (as in a run at the end of
    its landing data), its digest is the whole table's, as the run knows it from its landing: not
    hashed again (0.4-0.5 s a step at SF 10)."""
    known = RunDigests() if known is None else known
    out = {}
    for name, rows in visible.items():
        sql = rows.sql if isinstance(rows, Visible) else rows
        key = (tables.raw_table(name), f"{as_of.isoformat()} {sql}")
        digest = known.get(key)
        if digest is None and isinstance(rows, Visible):
            whole = known.get(rows.table)  # told by the table's landing, or the run's start
            if whole is not None and rows.all_rows(con, as_of):
                digest = whole
        if digest is None:
            digest = rows_digest(con, f"({sql})", {"as_of": as_of} if "$as_of" in sql else None)
        known.note(key, digest)
        out[name] = digest
    return out


def record_basis(
    con: duckdb.DuckDBPyConnection,
    table: str,
    visible: Mapping[str, Visible | str],
    run_id: str,
    as_of: datetime,
    known: RunDigests | None = None,
) -> None:
    """Store what this run saw (call in the transaction that writes what it built)."""
    rows = pl.DataFrame(
        [(run_id, as_of, name, digest) for name, digest in digests(con, visible, as_of, known).items()],
        schema=table_dtypes(table),
        orient="row",
    )
    replace_table(con, table, rows)  # the latest basis is the only one used


def _latest_basis(
    con: duckdb.DuckDBPyConnection, table: str, visible: Mapping[str, Visible | str]
) -> Basis | None:
    """The basis stored in ``table``, when it is one run's and names exactly these inputs."""
    if not table_exists(con, table):
        return None
    rows = con.execute(f"SELECT run_id, as_of, table_name, visible_digest FROM {table}").fetchall()
    if len({(r[0], r[1]) for r in rows}) != 1 or {r[2] for r in rows} != set(visible):
        return None
    return Basis(run_id=rows[0][0], as_of=rows[0][1], digests={r[2]: r[3] for r in rows})


def _holds(
    con: duckdb.DuckDBPyConnection,
    basis: Basis,
    visible: Mapping[str, Visible | str],
    known: RunDigests | None,
) -> bool:
    """Whether every row the basis's run could see is still exactly there, and no other."""
    return digests(con, visible, basis.as_of, known) == basis.digests


def usable_basis(
    con: duckdb.DuckDBPyConnection,
    table: str,
    visible: Mapping[str, Visible | str],
    as_of: datetime,
    left_as_they_were: Callable[[str], bool],
    known: RunDigests | None = None,
) -> Basis | None:
    """The basis stored in ``table`` when a run at ``as_of`` may build on it: it is not later, the
    tables it built were left as they are by its run (``left_as_they_were(run_id)``: no hand edit,
    the same code, settings and registry), and it holds. None: build everything."""
    basis = _latest_basis(con, table, visible)
    if (
        basis is not None
        and basis.as_of <= as_of
        and left_as_they_were(basis.run_id)
        and _holds(con, basis, visible, known)
    ):
        return basis
    return None


def touched_only(touched: str | None, column: str) -> str:
    """A SQL condition keeping the rows whose ``column`` is in the table ``touched`` (its one column
    has that name without a table alias), or every row (TRUE) in a full build (None)."""
    key = column.rpartition(".")[2]
    return "TRUE" if touched is None else f"{column} IN (SELECT {key} FROM {touched})"
