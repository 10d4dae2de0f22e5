"""Invariants of Role Memory (SPEC sections 5 and 6), run as blocking asset checks.

- ``ROLE_CASES_INVARIANTS`` validates role cases joined with the source facts of their linked
  execution (``core.admission.with_chain``): eligible <=> reasons empty <=> status ``eligible``;
  quarantined => not eligible; the status follows from the reasons; eligible => the chain's source
  is manual (external ones verified) and its automation flag is false.
- ``DECISION_COVERAGE_INVARIANTS`` validates ``core.admission.decision_coverage``: every decision
  with a role appears exactly once, and no case exists for anything else.
- ``ROLE_REFLECTIONS_INVARIANTS``: known classes, lessons exactly for the trainable ones, <= 280 chars.
  ``REFLECTION_BATCH_INVARIANTS`` adds, for a batch about to be written, that its cases are eligible.

Each runs over a DuckDB query too big for one frame with ``lib.validation.validate_query``.
"""

import pandera.polars as pa
import polars as pl

from tradingmem_assets.defs.role_memory.reasons import PENDING_REASONS, QUARANTINE_REASONS
from tradingmem_assets.defs.role_memory.reflection import LESSON_MAX_CHARS
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.screen import sql_values
from tradingmem_assets.lib.validation import named_checks, row_rule
from tradingmem_assets.lib.vocabulary import (
    CASE_REASONS,
    CASE_STATUSES,
    LINK_FIELDS,
    MANUAL_SOURCES,
    OUTCOMES,
    REFLECTION_CLASSES,
    TRAINABLE_CLASSES,
)

KNOWN_REASONS = [r for r in CASE_REASONS if r != "link_mismatch"] + [
    f"link_mismatch:{f}" for f in LINK_FIELDS
]


_n_reasons = pl.col("reasons").list.len()
_eligible = pl.col("scoring_eligible")

_has_quarantine = pl.col("reasons").list.eval(pl.element().is_in(list(QUARANTINE_REASONS))).list.any()
_has_permanent = pl.col("reasons").list.eval(~pl.element().is_in(list(PENDING_REASONS))).list.any()


def _any_reason(predicate: str) -> str:
    """SQL: some reason of the case satisfies ``predicate`` (of the reason ``r``)."""
    return f"len(list_filter(reasons, lambda r: {predicate})) > 0"


# a role case's rules over whole rows, by the check name a failure reports (each with its SQL
# twin; a null reason makes the twins of the rules over reasons false, so Pandera judges it)
ROLE_CASES_RULES = {
    "eligible_iff_reasons_empty_iff_status_eligible": row_rule(
        (_eligible == (_n_reasons == 0)) & (_eligible == (pl.col("status") == "eligible")),
        sql="scoring_eligible = (len(reasons) = 0) AND scoring_eligible = (status = 'eligible')",
    ),
    "quarantined_implies_not_eligible": row_rule(
        (~pl.col("quarantined") | ~_eligible)
        & (pl.col("quarantined") == (pl.col("status") == "quarantined")),
        sql="(NOT quarantined OR NOT scoring_eligible) AND quarantined = (status = 'quarantined')",
    ),
    "status_follows_from_reasons": row_rule(
        pl.when(_has_quarantine)
        .then(pl.col("status") == "quarantined")
        .when(_has_permanent)
        .then(pl.col("status") == "ineligible")
        .when(_n_reasons > 0)
        .then(pl.col("status") == "pending")
        .otherwise(pl.col("status") == "eligible"),
        sql=f"NOT ({_any_reason('r IS NULL')}) AND CASE "
        f"WHEN {_any_reason(f'r IN ({sql_values(QUARANTINE_REASONS)})')} THEN status = 'quarantined' "
        f"WHEN {_any_reason(f'r NOT IN ({sql_values(PENDING_REASONS)})')} THEN status = 'ineligible' "
        "WHEN len(reasons) > 0 THEN status = 'pending' ELSE status = 'eligible' END",
    ),
    "reasons_are_known_codes": row_rule(
        pl.col("reasons").list.eval(pl.element().is_in(KNOWN_REASONS)).list.all() | (_n_reasons == 0),
        sql=f"NOT ({_any_reason(f'r IS NULL OR r NOT IN ({sql_values(KNOWN_REASONS)})')})",
    ),
    "eligible_implies_manual_source_without_automation": row_rule(
        ~_eligible
        | (
            pl.col("chain_source").is_in(list(MANUAL_SOURCES))
            & (pl.col("chain_automation_flag") == False)  # noqa: E712 - polars expression
            & ((pl.col("chain_source") != "manual_external") | (pl.col("chain_source_verified") == True))  # noqa: E712
        ),
        sql=f"NOT scoring_eligible OR (chain_source IN ({sql_values(MANUAL_SOURCES)}) "
        "AND chain_automation_flag = false "
        "AND (chain_source <> 'manual_external' OR chain_source_verified = true))",
    ),
    "eligible_implies_execution_run_and_outcome": row_rule(
        ~_eligible
        | (
            pl.col("execution_id").is_not_null()
            & pl.col("primary_run_id").is_not_null()
            & pl.col("outcome").is_not_null()
        ),
        sql="NOT scoring_eligible "
        "OR (execution_id IS NOT NULL AND primary_run_id IS NOT NULL AND outcome IS NOT NULL)",
    ),
}
ROLE_CASES_INVARIANTS = pa.DataFrameSchema(
    {
        "case_id": pa.Column(pl.String, unique=True),
        "decision_id": pa.Column(pl.String, unique=True),
        "role_id": pa.Column(pl.String),
        "symbol": pa.Column(pl.String),
        "scenario": pa.Column(pl.String, nullable=True),
        "direction": pa.Column(pl.String),
        "account_id": pa.Column(pl.String),
        "market": pa.Column(pl.String),
        "execution_id": pa.Column(pl.String, nullable=True),
        "primary_run_id": pa.Column(pl.String, nullable=True),
        "decision_text": pa.Column(pl.String, nullable=True),
        "outcome": pa.Column(pl.String, pa.Check.isin(list(OUTCOMES)), nullable=True),
        "status": pa.Column(pl.String, pa.Check.isin(list(CASE_STATUSES))),
        "reasons": pa.Column(pl.List(pl.String)),
        "quarantined": pa.Column(pl.Boolean),
        "scoring_eligible": pa.Column(pl.Boolean),
        "provenance": pa.Column(pl.String),
        "created_at": pa.Column(UTC_TS),
        "known_at": pa.Column(UTC_TS, nullable=True),
        "updated_at": pa.Column(UTC_TS),
        "chain_source": pa.Column(pl.String, nullable=True),
        "chain_automation_flag": pa.Column(pl.Boolean, nullable=True),
        "chain_source_verified": pa.Column(pl.Boolean, nullable=True),
    },
    name="role_cases",
    checks=named_checks(ROLE_CASES_RULES),
)

DECISION_COVERAGE_INVARIANTS = pa.DataFrameSchema(
    {
        "decision_id": pa.Column(pl.String, unique=True),
        "names_a_role": pa.Column(pl.Boolean, pa.Check.eq(True, name="case_only_for_a_decision_with_a_role")),
        "n_cases": pa.Column(pl.Int64, pa.Check.eq(1, name="every_decision_with_a_role_exactly_once")),
    },
    name="role_cases_decision_coverage",
)

_trainable = pl.col("classification").is_in(list(TRAINABLE_CLASSES))
_trainable_sql = f"classification IN ({sql_values(TRAINABLE_CLASSES)})"
ROLE_REFLECTIONS_INVARIANTS = pa.DataFrameSchema(
    {
        "reflection_id": pa.Column(pl.String, unique=True),
        "case_id": pa.Column(pl.String),
        "role_id": pa.Column(pl.String),
        "run_id": pa.Column(pl.String),
        "classification": pa.Column(pl.String, pa.Check.isin(list(REFLECTION_CLASSES))),
        "trainable": pa.Column(pl.Boolean),
        "outcome": pa.Column(pl.String, pa.Check.isin(list(OUTCOMES))),
        "lesson": pa.Column(pl.String, pa.Check.str_length(1, LESSON_MAX_CHARS), nullable=True),
        "reflector": pa.Column(pl.String),
        "reflected_at": pa.Column(UTC_TS),
        "known_at": pa.Column(UTC_TS),
    },
    name="role_reflections",
    checks=[
        pa.Check(
            row_rule(pl.col("trainable") == _trainable, sql=f"trainable = ({_trainable_sql})"),
            name="trainable_iff_missing_data_or_logic_error",
        ),
        pa.Check(
            row_rule(
                pl.col("lesson").is_not_null() == _trainable, sql=f"(lesson IS NOT NULL) = ({_trainable_sql})"
            ),
            name="lesson_only_and_always_for_trainable",
        ),
    ],
)

REFLECTION_BATCH_INVARIANTS = ROLE_REFLECTIONS_INVARIANTS.add_columns(
    {"case_chain_eligible": pa.Column(pl.Boolean, pa.Check.isin([True], name="reflected_case_is_eligible"))}
).set_name("role_reflections_batch")

ROLE_STATS_INVARIANTS = pa.DataFrameSchema(
    {
        "role_id": pa.Column(pl.String, unique=True),
        "win_rate": pa.Column(pl.Float64, pa.Check.in_range(0, 1), nullable=True),
    },
    name="role_stats",
    checks=[
        pa.Check(
            row_rule(
                pl.col("cases")
                == pl.col("eligible") + pl.col("pending") + pl.col("ineligible") + pl.col("quarantined")
            ),
            name="cases_equal_sum_of_statuses",
        ),
        pa.Check(
            row_rule(pl.col("scored") == pl.col("wins") + pl.col("losses") + pl.col("flats")),
            name="scored_split",
        ),
    ],
)
