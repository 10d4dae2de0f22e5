"""The admission's reason codes (SPEC section 5) that decide a case's status, declared once."""

from __future__ import annotations

QUARANTINE_REASONS = ("unknown_role", "unknown_source")
PENDING_REASONS = ("not_settled", "no_primary_run", "insufficient_evaluation")
# reasons that depend on which run is primary: a case whose other reasons are empty was eligible
# whenever one of its complete runs was primary
RUN_REASONS = ("no_primary_run", "insufficient_evaluation")


def chain_eligible_sql(case: str) -> str:
    """SQL: the case's chain (role, preview, link, source, settlement) admits it, whatever run is primary."""
    listed = ", ".join(f"'{r}'" for r in RUN_REASONS)
    return f"(NOT {case}.quarantined AND len(list_filter({case}.reasons, lambda x: x NOT IN ({listed}))) = 0)"
