"""Invariants of the legacy role-memory migration (SPEC section 11), named after the spec."""

from collections.abc import Iterable
from functools import cache

import pandera.polars as pa
import polars as pl

from tradingmem_assets.defs.migration.classification import (
    MIGRATED,
    QUARANTINED,
    REJECT_REASONS,
    UNKNOWN_ROLE,
    partition_key_expr,
)
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.validation import row_rule
from tradingmem_assets.lib.vocabulary import MIGRATION_STATUSES

PARTITION_KEY = pa.Column(pl.String, pa.Check.str_matches(r"^\d{4}-\d{2}-01$"))
SHA256 = pa.Column(pl.String, pa.Check.str_matches(r"^[0-9a-f]{64}$"))


def _row_in_its_partition() -> pa.Check:
    return pa.Check(
        row_rule(partition_key_expr("created_at") == pl.col("partition_key")),
        name="row_belongs_to_its_partition_month",
    )


@cache
def _migrated_role_cases_schema(known_roles: frozenset[str]) -> pa.DataFrameSchema:
    known = pl.col("role_id").is_in(pl.Series(sorted(known_roles), dtype=pl.String).implode())
    migrated = pl.col("status") == MIGRATED
    quarantined = pl.col("status") == QUARANTINED
    return pa.DataFrameSchema(
        {
            "legacy_id": pa.Column(pl.String, unique=True),
            "role_id": pa.Column(pl.String, pa.Check.str_length(min_value=1)),
            "skill_id": pa.Column(pl.String, nullable=True),
            "content": pa.Column(
                pl.String,
                pa.Check(row_rule(pl.col("content").str.strip_chars() != ""), name="content_not_blank"),
            ),
            "provenance": pa.Column(pl.String),
            "legacy_score": pa.Column(pl.Float64, nullable=True),
            "status": pa.Column(pl.String, pa.Check.isin(list(MIGRATION_STATUSES))),
            "reason": pa.Column(pl.String, nullable=True),
            "scoring_eligible": pa.Column(
                pl.Boolean, pa.Check.isin([False], name="migrated_cases_are_never_scoring_eligible")
            ),
            "symbol": pa.Column(pl.String, nullable=True),
            "decision_id": pa.Column(pl.String, nullable=True),
            "created_at": pa.Column(UTC_TS),
            "partition_key": PARTITION_KEY,
            "backup_sha256": SHA256,
        },
        name="migrated_role_cases",
        strict=True,
        checks=[
            pa.Check(row_rule(~migrated | known), name="migrated_only_for_registered_roles"),
            pa.Check(
                row_rule(~quarantined | (~known & (pl.col("reason") == UNKNOWN_ROLE))),
                name="unknown_roles_are_quarantined_never_mapped",
            ),
            pa.Check(
                row_rule(~migrated | pl.col("skill_id").is_not_null()), name="migrated_case_names_its_skill"
            ),
            _row_in_its_partition(),
        ],
    )


def migrated_role_cases_schema(known_roles: Iterable[str]) -> pa.DataFrameSchema:
    """The schema of migrated cases for a given role registry (which roles count as known)."""
    return _migrated_role_cases_schema(frozenset(known_roles))


MIGRATION_REJECTS_INVARIANTS = pa.DataFrameSchema(
    {
        "legacy_id": pa.Column(pl.String, unique=True),
        "partition_key": PARTITION_KEY,
        "reason": pa.Column(
            pl.String,
            pa.Check(
                row_rule(
                    pl.col("reason")
                    .str.split("; ")
                    .list.eval(pl.element().is_in(list(REJECT_REASONS)))
                    .list.all()
                ),
                name="reject_reason_is_a_known_code",
            ),
        ),
        "backup_sha256": SHA256,
    },
    name="migration_rejects",
)

MIGRATION_BACKUPS_INVARIANTS = pa.DataFrameSchema(
    {
        "partition_key": pa.Column(pl.String, pa.Check.str_matches(r"^\d{4}-\d{2}-01$"), unique=True),
        "path": pa.Column(pl.String, pa.Check.str_length(min_value=1)),
        "row_count": pa.Column(pl.Int64, pa.Check.ge(0)),
        "sha256": SHA256,
        "created_at": pa.Column(UTC_TS),
    },
    name="migration_backups",
    strict=True,
)

_COUNTS = ("rows_in", "migrated", "quarantined", "rejected")
MIGRATION_CONSERVATION_REPORT_INVARIANTS = pa.DataFrameSchema(
    {
        "partition_key": pa.Column(pl.String, pa.Check.str_matches(r"^\d{4}-\d{2}-01$"), unique=True),
        **{c: pa.Column(pl.Int64, pa.Check.ge(0)) for c in _COUNTS},
        "checksum_ok": pa.Column(pl.Boolean, pa.Check.isin([True], name="backup_checksum_verified")),
        "conserved": pa.Column(pl.Boolean, pa.Check.isin([True], name="partition_is_conserved")),
        "backup_sha256": pa.Column(pl.String, nullable=True),
        "detail": pa.Column(pl.String, nullable=True),
    },
    name="migration_conservation_report",
    strict=True,
    checks=[
        pa.Check(
            row_rule(pl.col("rows_in") == pl.col("migrated") + pl.col("quarantined") + pl.col("rejected")),
            name="rows_in_equal_migrated_plus_quarantined_plus_rejected",
        ),
    ],
)
