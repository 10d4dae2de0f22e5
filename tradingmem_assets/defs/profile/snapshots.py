"""Versioned profile snapshots (SPEC section 10): a new version only when the profile's hash changes.

Set-based SQL over a profile build (``build.create_profiles``) and ``profile_snapshots``;
``plan_snapshots`` runs the same statements over plain frames.

- A version is appended only when ``snapshot_hash`` differs from the customer's newest snapshot:
  ``version`` = previous + 1 (1 for a new customer), ``snapshot_id`` = ``ps_`` +
  sha256(``customer_id|version``)[:16], ``created_at`` = as_of, ``is_current``.
- The previous current row only gets ``is_current = false``; no other column of an old snapshot
  ever changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.defs.memory.facts import hashed_ids
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes

PROFILE_SNAPSHOTS_DTYPES = table_dtypes(tables.PROFILE_SNAPSHOTS)


def latest_sql(snapshots: str) -> str:
    """customer_id, version, snapshot_hash of each customer's newest snapshot."""
    return (
        "SELECT customer_id, max(version) AS version, arg_max(snapshot_hash, version) AS snapshot_hash "
        f"FROM {snapshots} GROUP BY customer_id"
    )


def snapshot_id_sql(customer_id: str, version: str) -> str:
    """``ps_`` + sha256(customer_id|version)[:16]: the same version of a customer always has one id."""
    return f"'ps_' || left(sha256({customer_id} || '|' || {version}::VARCHAR), 16)"


def snapshot_id_for(customer_ids: pl.Series, versions: pl.Series) -> pl.Series:
    """``snapshot_id_sql`` for plain series."""
    keys = pl.select(
        pl.concat_str([pl.lit(customer_ids), pl.lit(versions).cast(pl.String)], separator="|")
    ).to_series()
    return hashed_ids("ps_", keys)


def assign_versions(con: duckdb.DuckDBPyConnection, profiles: str, latest: str) -> None:
    """Add to the table ``profiles`` (customer_id, snapshot_hash) each customer's newest stored
    version (``latest_version``), whether it gets a new one (``is_new``) and the version it has
    then (``profile_version``). ``latest``: a ``latest_sql`` relation. Updated in place, so the
    table keeps its row order."""
    for column, kind in (
        ("latest_version", "BIGINT"),
        ("latest_hash", "VARCHAR"),
        ("is_new", "BOOLEAN"),
        ("profile_version", "BIGINT"),
    ):
        con.execute(f"ALTER TABLE {profiles} ADD COLUMN {column} {kind}")
    con.execute(
        f"UPDATE {profiles} SET latest_version = l.version, latest_hash = l.snapshot_hash "
        f"FROM ({latest}) l WHERE {profiles}.customer_id = l.customer_id"
    )
    con.execute(
        f"UPDATE {profiles} SET is_new = coalesce(latest_hash IS NULL OR latest_hash <> snapshot_hash, false)"
    )
    con.execute(
        f"UPDATE {profiles} SET profile_version = "
        "CASE WHEN is_new THEN coalesce(latest_version, 0) + 1 ELSE latest_version END"
    )


def new_snapshots_sql(rows: str) -> str:
    """The snapshot rows (PROFILE_SNAPSHOTS_DTYPES) of ``rows`` (customer_id, profile_version, profile,
    generation_basis, snapshot_hash of customers that get a new version), in their order; $as_of."""
    return (
        f"SELECT {snapshot_id_sql('customer_id', 'profile_version')} AS snapshot_id, customer_id, "
        "profile_version AS version, profile, generation_basis, snapshot_hash, true AS is_current, "
        f"$as_of::TIMESTAMPTZ AS created_at FROM {rows}"
    )


SUPERSEDED = "_profile_superseded"  # the superseded snapshots, while they are written again


def _superseded_sql(profiles: str) -> str:
    """The customers of ``profiles`` whose current snapshot is replaced by a new version."""
    return f"SELECT customer_id FROM {profiles} WHERE is_new AND latest_version IS NOT NULL"


def supersede(con: duckdb.DuckDBPyConnection, snapshots: str, profiles: str) -> int:
    """Flip is_current off the previous version of the customers that get a new one; how many.

    Those rows are deleted and appended again with the flag off (the same rows): an UPDATE would
    make DuckDB's next checkpoint rewrite every row group it touched, whole (about 9 s for 31,000
    customers of 500,000), while a delete only marks rows and an append adds row groups.
    """
    superseded = _superseded_sql(profiles)
    count = con.execute(f"SELECT count(*) FROM ({superseded})").fetchall()[0][0]
    if count:
        current = f"is_current AND customer_id IN ({superseded})"
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {SUPERSEDED} AS "
            f"SELECT * REPLACE (false AS is_current) FROM {snapshots} WHERE {current}"
        )
        con.execute(f"DELETE FROM {snapshots} WHERE {current}")
        con.execute(f"INSERT INTO {snapshots} SELECT * FROM {SUPERSEDED}")
        con.execute(f"DROP TABLE {SUPERSEDED}")
    return int(count)


@dataclass(frozen=True)
class SnapshotPlan:
    appended: pl.DataFrame  # new snapshot rows (PROFILE_SNAPSHOTS_DTYPES), each is_current
    superseded: pl.DataFrame  # customer_id of customers whose previous current snapshot flips to false
    versions: pl.DataFrame  # customer_id, profile_version: the current version of every profile


def plan_snapshots(profiles: pl.DataFrame, latest: pl.DataFrame, as_of: datetime) -> SnapshotPlan:
    """``assign_versions`` and ``new_snapshots_sql`` over plain frames.

    ``profiles``: customer_id, profile, generation_basis, snapshot_hash. ``latest``: customer_id,
    version, snapshot_hash of each customer's newest snapshot (empty on the first run).
    """
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("_frame", profiles.select("customer_id", "profile", "generation_basis", "snapshot_hash"))
        con.register("_latest", latest.select("customer_id", "version", "snapshot_hash"))
        con.execute("CREATE TEMP TABLE _profiles AS SELECT * FROM _frame")
        assign_versions(con, "_profiles", "SELECT * FROM _latest")
        appended = con.sql(
            new_snapshots_sql("(SELECT * FROM _profiles WHERE is_new ORDER BY customer_id)"),
            params={"as_of": as_of},
        ).pl()
        superseded = con.sql(f"{_superseded_sql('_profiles')} ORDER BY customer_id").pl()
        versions = con.sql("SELECT customer_id, profile_version FROM _profiles").pl()
    finally:
        con.close()
    return SnapshotPlan(
        appended=appended.cast(PROFILE_SNAPSHOTS_DTYPES),  # type: ignore[arg-type]
        superseded=superseded,
        versions=versions,
    )
