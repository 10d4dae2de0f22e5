"""What the role-case invariant checks read from the execution chain, never from the case itself."""

from __future__ import annotations

from tradingmem_assets.lib import tables

CHAIN_SQL = """
SELECT rc.*, e.source AS chain_source, e.automation_flag AS chain_automation_flag,
       e.source_verified AS chain_source_verified
FROM {cases} rc
LEFT JOIN raw.trade_executions e ON e.execution_id = rc.execution_id
WHERE {decisions}
"""

COVERAGE_SQL = """
WITH expected AS (
    SELECT decision_id FROM raw.trading_decisions
    WHERE role_id IS NOT NULL AND decided_at <= $as_of AND {decisions}
),
seen AS (SELECT decision_id, count(*) AS n_cases FROM {cases} WHERE {decisions} GROUP BY decision_id)
SELECT coalesce(x.decision_id, s.decision_id) AS decision_id,
       x.decision_id IS NOT NULL AS names_a_role,
       coalesce(s.n_cases, 0) AS n_cases
FROM expected x FULL OUTER JOIN seen s ON s.decision_id = x.decision_id
"""


# what the role-case invariants read besides the cases (their verdict holds while these do)
CHAIN_TABLES = (tables.raw_table("trade_executions"), tables.raw_table("trading_decisions"))


def with_chain(cases: str = tables.ROLE_CASES, decisions: str = "TRUE") -> str:
    """The query of the cases (those the SQL condition ``decisions`` on ``rc`` keeps) with the source
    facts of their linked execution, read from ``raw.trade_executions``: validate it with
    ``lib.validation.validate_query``, or read a small one whole."""
    return CHAIN_SQL.format(cases=cases, decisions=decisions)


def decision_coverage(cases: str = tables.ROLE_CASES, decisions: str = "TRUE") -> str:
    """The query, per decision (of those the SQL condition ``decisions`` keeps), of whether it names
    a role and how many cases it has (must be exactly one), at the instant ``$as_of``."""
    return COVERAGE_SQL.format(cases=cases, decisions=decisions)
