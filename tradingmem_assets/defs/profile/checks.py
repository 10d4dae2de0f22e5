"""Profile red lines re-read from the stored tables: an overwritten investor_type, a second current
snapshot or an internal document in customer_kb fails a check in the UI and in warehouse_checks_job."""

import pandera.polars as pa
import polars as pl

from tradingmem_assets.defs.profile import fields
from tradingmem_assets.defs.profile.invariants import (
    BASIS_CHECK,
    CUSTOMER_KB_INVARIANTS,
    INVESTOR_TYPE_CHECK,
    PROFILE_SNAPSHOTS_INVARIANTS,
    latest_investor_types_sql,
)
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import StoredTableCheck, stored_table_checks
from tradingmem_assets.lib.warehouse import read_frame


def _profile_read(con, built_at) -> pl.DataFrame:
    keys = ", ".join(f"'{f}'" for f in fields.PROFILE_FIELDS)
    # each basis is parsed once (its top-level keys), not once per field
    return read_frame(
        con,
        f"SELECT p.customer_id, p.investor_type, q.expected_investor_type, "
        f"len(list_filter([{keys}], lambda k: NOT list_contains(p.basis_keys, k))) AS fields_without_basis "
        f"FROM (SELECT customer_id, investor_type, json_keys(generation_basis) AS basis_keys "
        f"FROM {tables.FIN_CUSTOMER_PROFILE}) p "
        f"LEFT JOIN ({latest_investor_types_sql()}) q USING (customer_id)",
        [built_at],
    )


STORED_PROFILE_INVARIANTS = pa.DataFrameSchema(
    {
        "customer_id": pa.Column(pl.String, unique=True),
        "investor_type": pa.Column(pl.String, nullable=True),
        "expected_investor_type": pa.Column(pl.String, nullable=True),
        "fields_without_basis": pa.Column(pl.Int64, pa.Check.eq(0, name=BASIS_CHECK)),
    },
    name="fin_customer_profile",
    checks=[
        pa.Check(
            lambda data: data.lazyframe.select(
                pl.col("investor_type").eq_missing(pl.col("expected_investor_type")).alias("ok")
            ),
            name=INVESTOR_TYPE_CHECK,
        )
    ],
)
SNAPSHOTS_READ_SQL = f"""
SELECT s.snapshot_id, s.customer_id, s.version, s.snapshot_hash, s.is_current, p.snapshot_hash AS profile_hash
FROM {tables.PROFILE_SNAPSHOTS} s LEFT JOIN {tables.FIN_CUSTOMER_PROFILE} p USING (customer_id)
"""
KB_READ_SQL = f"""
SELECT k.doc_id, k.title, k.visibility, d.visibility AS source_visibility
FROM {tables.CUSTOMER_KB} k LEFT JOIN raw.kb_documents d USING (doc_id)
"""

PROFILE_CHECKS = stored_table_checks(
    [
        StoredTableCheck(
            "stored_profile_red_lines",
            "fin_customer_profile",
            "investor_type is the latest questionnaire's (never a conversation's); every field has a basis.",
            STORED_PROFILE_INVARIANTS,
            read=_profile_read,
        ),
        StoredTableCheck(
            "stored_one_current_snapshot_per_customer",
            "profile_snapshots",
            "Versions 1..n per customer, exactly one current snapshot, matching the profile.",
            PROFILE_SNAPSHOTS_INVARIANTS,
            read=SNAPSHOTS_READ_SQL,
        ),
        StoredTableCheck(
            "stored_no_internal_document_in_customer_kb",
            "customer_kb",
            "Only public kb_documents reach customer_kb (checked against the source visibility).",
            CUSTOMER_KB_INVARIANTS,
            read=KB_READ_SQL,
        ),
    ]
)
