"""A landing file that grew at its end is ingested from its first new row (SPEC section 14).

A feed appends: one more day of landing data is the same file with that day's rows after the
rows it held. ``raw.<table>`` and the table's rows of ``raw_rejects`` are a function of the file's
rows in order (the first valid occurrence of a key wins), so they can be extended instead of
rewritten: the kept rows stay as they are, and the new rows are typed, checked and deduplicated
against them (``ingest.ingest_into`` with ``kept``).

``landing_ingests`` holds, per landing table, what its last ingest read and left: the file, its
columns, its rows and a digest of them as read and in order (each row's hash covers its number),
digests of ``raw.<table>`` and of its rejects as written, and the fingerprint of the code and
settings. A file is read from its first new row only when all of these hold:

- the same file (same name in the same folder), with the same columns, no fewer rows, and its
  first rows have the digest the last ingest recorded for all of its rows;
- ``raw.<table>`` and its rejects have the digests the last ingest recorded (nothing edited by
  hand, nothing left by a failed run);
- the same code and settings.

Otherwise the file is ingested whole, and the landing asset's metadata says why.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from tradingmem_assets.defs.landing.ingest import IngestResult, Kept, find_landing_file, ingest_into
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import (
    NO_ROWS,
    RunDigests,
    added_digests,
    append_rows,
    ensure_table,
    rejects_key,
    rows_digest,
    table_exists,
)

LANDING_INGESTS_DTYPES = pl.Schema(
    {
        "table_name": pl.String(),
        "source_file": pl.String(),
        "columns": pl.List(pl.String()),
        "rows_read": pl.Int64(),
        "source_digest": pl.String(),
        "raw_digest": pl.String(),
        "rejects_digest": pl.String(),
        "code_fingerprint": pl.String(),
    }
)


def _left_digests(
    con: duckdb.DuckDBPyConnection, table: str, digests: RunDigests | None = None
) -> tuple[str, str]:
    """Digests of ``raw.<table>`` and of its rows of ``raw_rejects``, as they are now (as the run
    knows them, with ``digests``)."""
    known = RunDigests() if digests is None else digests
    return known.of(con, tables.raw_table(table)), _rejects_digest(con, table, known)


def _rejects_digest(con: duckdb.DuckDBPyConnection, table: str, known: RunDigests | None = None) -> str:
    rejects = None if known is None else known.get(rejects_key(table))
    if rejects is None:
        rejects = NO_ROWS
        if table_exists(con, tables.RAW_REJECTS):
            rejects = rows_digest(
                con, f"(SELECT * FROM {tables.RAW_REJECTS} WHERE table_name = $t)", {"t": table}
            )
    return rejects


def kept_rows(
    con: duckdb.DuckDBPyConnection,
    landing_dir: Path,
    table: str,
    code: str | None,
    digests: RunDigests | None = None,
) -> tuple[Kept | None, str]:
    """What the last ingest of ``table`` read, when its file may be read from its first new row,
    and otherwise None with the reason the file is ingested whole (``digests``: what the run
    knows the raw table and its rejects hold now)."""
    if code is None:
        return None, "no fingerprint of the code and settings (not a main job run)"
    if not table_exists(con, tables.LANDING_INGESTS) or not table_exists(con, tables.raw_table(table)):
        return None, "no earlier ingest of the table is recorded"
    last = con.execute(
        "SELECT source_file, columns, rows_read, source_digest, raw_digest, rejects_digest, "
        f"code_fingerprint FROM {tables.LANDING_INGESTS} WHERE table_name = ?",
        [table],
    ).fetchall()
    if not last or last[0][0] is None:
        return None, "no earlier ingest of a file of the table is recorded"
    source_file, columns, rows, source_digest, raw_digest, rejects_digest, code_then = last[0]
    path = find_landing_file(landing_dir, table)
    if path is None or str(path) != source_file:
        return None, f"the last ingest read another file ({Path(source_file).name})"
    if code_then != code:
        return None, "the code or settings changed since the last ingest"
    if _left_digests(con, table, digests) != (raw_digest, rejects_digest):
        return None, f"raw.{table} or its rejects changed since the last ingest"
    return Kept(tuple(columns), rows, source_digest, raw_digest), ""


def land(
    con: duckdb.DuckDBPyConnection,
    landing_dir: Path,
    table: str,
    code: str | None,
    digests: RunDigests | None = None,
) -> tuple[IngestResult, str]:
    """Ingest the table's landing file, from its first new row when it only grew at its end, and
    record what was read and left; with how it was read (for the asset's metadata). Call inside a
    transaction; with the run's ``digests``, call ``landed`` once it committed."""
    kept, why_whole = kept_rows(con, landing_dir, table, code, digests)
    if digests is not None:  # written from here on: known again only once committed
        digests.forget(tables.raw_table(table), rejects_key(table))
    result = ingest_into(con, landing_dir, table, kept)
    if result.read_after:
        how = (
            f"appended: the file's first {result.read_after} rows are the rows its last ingest read, "
            f"in order; only the {result.rows_read - result.read_after} rows after them were read"
        )
    elif kept is None:
        how = f"whole: {why_whole}"
    elif result.columns != kept.columns:
        how = "whole: the file's columns are not those its last ingest read"
    elif result.rows_read < kept.rows:
        how = f"whole: the file has fewer rows than the {kept.rows} its last ingest read"
    else:
        how = f"whole: the file's first {kept.rows} rows are not the rows its last ingest read"
    if kept is not None and result.appended_digest is not None:
        # the kept rows are as the last ingest left them (checked above): only the new ones are hashed
        raw_digest = added_digests(kept.raw_digest, result.appended_digest)
        rejects_digest = _rejects_digest(con, table)
    else:
        raw_digest, rejects_digest = _left_digests(con, table)
    ensure_table(con, tables.LANDING_INGESTS, pl.DataFrame(schema=LANDING_INGESTS_DTYPES))
    con.execute(f"DELETE FROM {tables.LANDING_INGESTS} WHERE table_name = ?", [table])
    record = {
        "table_name": table,
        "source_file": result.source_file,
        "columns": list(result.columns),
        "rows_read": result.rows_read,
        "source_digest": result.source_digest,
        "raw_digest": raw_digest,
        "rejects_digest": rejects_digest,
        "code_fingerprint": code,
    }
    append_rows(con, tables.LANDING_INGESTS, pl.DataFrame([record], schema=LANDING_INGESTS_DTYPES))
    return result, how


def landed(con: duckdb.DuckDBPyConnection, table: str, digests: RunDigests) -> None:
    """Tell the run's ``digests`` what ``land`` left, once its transaction committed (the digests
    its ingest record holds: nothing else writes the table or its rejects in the run)."""
    ((raw_digest, rejects_digest),) = con.execute(
        f"SELECT raw_digest, rejects_digest FROM {tables.LANDING_INGESTS} WHERE table_name = ?", [table]
    ).fetchall()
    digests.note(tables.raw_table(table), raw_digest)
    digests.note(rejects_key(table), rejects_digest)
