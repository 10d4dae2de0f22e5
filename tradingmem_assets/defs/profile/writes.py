"""Writing the profile tables chunk by chunk inside one transaction (no Dagster here).

``fin_customer_profile`` rows are replaced only where they changed (hash, basis or version), so
an unchanged re-run rewrites nothing; ``profile_snapshots`` only ever gets rows appended and
``is_current`` flipped on the superseded version.
"""

from dataclasses import dataclass, field

import duckdb
import polars as pl

from tradingmem_assets.core import profile
from tradingmem_assets.schemas.validation import Validation
from tradingmem_assets.warehouse import append_rows, replace_table, scalar, table_exists

PROFILE_TABLE = "main.fin_customer_profile"
SNAPSHOTS_TABLE = "main.profile_snapshots"


@dataclass
class ProfileStats:
    """What one materialization did, summed over chunks (for metadata)."""

    profile_validation: Validation = field(
        default_factory=lambda: Validation(
            "fin_customer_profile",
            pl.DataFrame(
                schema={"column": pl.String, "check": pl.String, "failure_case": pl.String, "index": pl.Int64}
            ),
        )
    )
    profiles: int = 0
    rewritten: int = 0
    removed: int = 0
    appended: int = 0
    superseded: int = 0
    without_questionnaire: int = 0
    self_reported: int = 0
    conflicts: int = 0

    def add_validation(self, validation: Validation) -> None:
        self.profile_validation = Validation(
            self.profile_validation.schema_name,
            pl.concat([self.profile_validation.failure_cases, validation.failure_cases]),
        )

    def count(self, current: pl.DataFrame, plan: profile.SnapshotPlan) -> None:
        tags = current.get_column("risk_tags")
        self.profiles += current.height
        self.appended += plan.appended.height
        self.superseded += plan.superseded.height
        self.without_questionnaire += int(current.get_column("investor_type").is_null().sum())
        self.self_reported += int(
            tags.list.eval(pl.element().str.starts_with(profile.SELF_REPORTED_TAG)).list.any().sum()
        )
        self.conflicts += int(tags.list.contains(profile.SUITABILITY_CONFLICT_TAG).sum())


def ensure_profile_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create both tables when missing; a profile table of another layout is rebuilt (call inside the
    transaction, so a failed run keeps the old one)."""
    empty = pl.DataFrame(schema=profile.PROFILE_SCHEMA)
    if table_exists(con, PROFILE_TABLE):
        columns = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = 'main' AND table_name = 'fin_customer_profile' "
                "ORDER BY ordinal_position"
            ).fetchall()
        ]
        if columns != empty.columns:
            replace_table(con, PROFILE_TABLE, empty)
    else:
        replace_table(con, PROFILE_TABLE, empty)
    if not table_exists(con, SNAPSHOTS_TABLE):
        replace_table(con, SNAPSHOTS_TABLE, pl.DataFrame(schema=profile.SNAPSHOTS_SCHEMA))


def existing_profiles(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """What each current profile row is (hash, version, md5 of its basis): one scan, slim columns."""
    return con.sql(
        "SELECT customer_id, snapshot_hash, profile_version, md5(generation_basis) AS basis_md5 "
        f"FROM {PROFILE_TABLE}"
    ).pl()


def write_profiles(con: duckdb.DuckDBPyConnection, built: pl.DataFrame, existing: pl.DataFrame) -> int:
    """Replace the rows of these customers that changed (and add new ones); returns how many.

    ``built``: PROFILE_SCHEMA columns plus ``basis_md5``; ``existing``: ``existing_profiles`` rows.
    The comparison runs on hashes, so an unchanged chunk never sends its JSON to DuckDB.
    """
    stored = built.select("customer_id").join(existing, on="customer_id", how="left", maintain_order="left")
    changed = (
        stored.get_column("snapshot_hash").ne_missing(built.get_column("snapshot_hash"))
        | stored.get_column("profile_version").ne_missing(built.get_column("profile_version"))
        | stored.get_column("basis_md5").ne_missing(built.get_column("basis_md5"))
    )
    rows = built.filter(changed).select(profile.PROFILE_SCHEMA.names())
    if rows.height == 0:
        return 0
    cols = ", ".join(f'"{c}"' for c in rows.columns)
    con.register("_profile_rows", rows)
    try:
        con.execute(
            f"DELETE FROM {PROFILE_TABLE} WHERE customer_id IN (SELECT customer_id FROM _profile_rows)"
        )
        con.execute(f"INSERT INTO {PROFILE_TABLE} ({cols}) SELECT {cols} FROM _profile_rows")
    finally:
        con.unregister("_profile_rows")
    return rows.height


def remove_vanished(con: duckdb.DuckDBPyConnection, customer_ids: pl.DataFrame) -> int:
    """Drop the current profile of customers no longer present (their snapshots stay)."""
    con.register("_profile_ids", customer_ids)
    try:
        vanished = "customer_id NOT IN (SELECT customer_id FROM _profile_ids)"
        gone = scalar(con, f"SELECT count(*) FROM {PROFILE_TABLE} WHERE {vanished}")
        if gone:
            con.execute(f"DELETE FROM {PROFILE_TABLE} WHERE {vanished}")
    finally:
        con.unregister("_profile_ids")
    return int(gone or 0)


def supersede_and_append(con: duckdb.DuckDBPyConnection, plan: profile.SnapshotPlan) -> None:
    """Flip is_current off the superseded versions, then append the new ones (old rows stay as they were)."""
    if plan.superseded.height:
        con.register("_superseded", plan.superseded)
        try:
            con.execute(
                f"UPDATE {SNAPSHOTS_TABLE} SET is_current = false "
                "WHERE is_current AND customer_id IN (SELECT customer_id FROM _superseded)"
            )
        finally:
            con.unregister("_superseded")
    append_rows(con, SNAPSHOTS_TABLE, plan.appended)
