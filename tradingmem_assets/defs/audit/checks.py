"""The audit's asset checks: its isolation invariant and the report row's own invariants.

Both are evaluated inside the audit asset (they need the pass's two hashes and the row before
it is written); ``audit_isolation`` is evaluated again, failed, by ``audit_isolation_alert_job``
whenever ``audit_isolation_sensor`` finds a pass whose hashes differ.
"""

import dagster as dg

from tradingmem_assets.defs.audit.table_hash import TablesDigest

AUDIT_ASSET_KEY = dg.AssetKey("methodology_audit_reports")
ISOLATION_CHECK = "audit_isolation"
REPORT_INVARIANTS_CHECK = "audit_report_invariants"
SHA_BEFORE_KEY = "learning_tables_sha256_before"
SHA_AFTER_KEY = "learning_tables_sha256_after"

AUDIT_CHECK_SPECS = [
    dg.AssetCheckSpec(
        ISOLATION_CHECK,
        asset=AUDIT_ASSET_KEY,
        blocking=True,
        description="The four learning tables hash identically before and after the audit pass.",
    ),
    dg.AssetCheckSpec(
        REPORT_INVARIANTS_CHECK,
        asset=AUDIT_ASSET_KEY,
        blocking=True,
        description="Tier matches composite, weights renormalized, isolation_ok iff the hashes are equal.",
    ),
]


def isolation_check_result(before: TablesDigest, after: TablesDigest, pass_id: str) -> dg.AssetCheckResult:
    changed = before.changed_tables(after)
    return dg.AssetCheckResult(
        check_name=ISOLATION_CHECK,
        asset_key=AUDIT_ASSET_KEY,
        passed=not changed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(
            "learning tables unchanged by the pass"
            if not changed
            else f"learning tables changed during pass {pass_id}: {', '.join(changed)}"
        ),
        metadata={
            "pass_id": pass_id,
            SHA_BEFORE_KEY: before.combined,
            SHA_AFTER_KEY: after.combined,
            "changed_tables": ", ".join(changed) or "(none)",
        },
    )
