"""Institution role outputs (SPEC section 8): each must validate against the schema its role declares.

Roles declare one structured schema each: analyst, bull, bear and risk emit ``AnalystReport``,
trader emits ``TraderProposal``, portfolio_manager emits ``PortfolioDecision`` (the Pandera models in
``schemas.learning``: action buy/sell/hold, confidence 0-1, cited_methodology_ids a JSON list of
strings, proposed_methodology a JSON object or null). Only those fields are read; anything else
in a landing row (free text, rationales) is discarded. An output that does not validate is rejected
with every reason that applies (``institution_output_rejects``), never repaired or guessed at: its
action and citations count for nothing, and a proposal it carries is ``rejected_invalid``.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.defs.learning.invariants import ROLE_OUTPUT_INVARIANTS
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.warehouse import read_frame

ROLE_OUTPUT_SCHEMA_NAMES: dict[str, str] = {
    "analyst": "AnalystReport",
    "bull": "AnalystReport",
    "bear": "AnalystReport",
    "risk": "AnalystReport",
    "trader": "TraderProposal",
    "portfolio_manager": "PortfolioDecision",
}

INSTITUTION_OUTPUT_REJECTS_DTYPES = table_dtypes(tables.INSTITUTION_OUTPUT_REJECTS)

# Narrow: what validation, decisions and citations read (a proposal's text is read on its own,
# ``read_proposals``: at SF 30 the 3.6 million outputs with their JSON texts took gigabytes).
_OUTPUTS_SQL = """
SELECT o.output_id, o.run_id, o.role, o.schema, o.action, o.confidence,
       o.proposed_methodology IS NOT NULL AS has_proposal,
       r.run_id IS NOT NULL AS run_exists, r.started_at,
       CASE WHEN o.cited_methodology_ids IS NULL THEN []::VARCHAR[]
            ELSE list_distinct(json_extract_string(o.cited_methodology_ids, '$[*]')) END AS cited_ids,
       o.cited_methodology_ids IS NULL OR coalesce(list_bool_and(list_transform(
           json_extract(o.cited_methodology_ids, '$[*]'), lambda x: json_type(x) = 'VARCHAR')), true)
           AS citations_valid
FROM raw.institution_role_outputs o
LEFT JOIN raw.institution_runs r ON r.run_id = o.run_id
WHERE r.run_id IS NULL OR r.started_at <= $1
ORDER BY o.output_id
"""
# the outputs of known runs started at or before as_of that propose a methodology
_PROPOSALS_SQL = """
SELECT o.output_id, o.run_id, r.started_at, o.proposed_methodology
FROM raw.institution_role_outputs o
JOIN raw.institution_runs r ON r.run_id = o.run_id
WHERE r.started_at <= $1 AND o.proposed_methodology IS NOT NULL
ORDER BY o.output_id
"""


def read_outputs(con: duckdb.DuckDBPyConnection, as_of: datetime) -> pl.DataFrame:
    """Role outputs of runs started at or before ``as_of`` (and of unknown runs), with parsed citations."""
    return read_frame(con, _OUTPUTS_SQL, [as_of])


def read_proposals(con: duckdb.DuckDBPyConnection, as_of: datetime) -> pl.DataFrame:
    """The proposing outputs of known runs started at or before ``as_of``, with the proposal's text."""
    return read_frame(con, _PROPOSALS_SQL, [as_of])


def validate_outputs(outputs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(valid outputs, in the order of ``outputs``; rejects): every output checked against its role's
    declared schema."""
    reasons: list[pl.DataFrame] = []
    indexed = outputs.with_row_index("_idx").with_columns(pl.col("_idx").cast(pl.Int64))
    expected = pl.col("role").replace_strict(ROLE_OUTPUT_SCHEMA_NAMES, default=None, return_dtype=pl.String)
    indexed = indexed.with_columns(expected.alias("_expected"))
    reasons.append(
        indexed.filter(~pl.col("run_exists")).select("_idx", pl.lit("unknown_run").alias("reason"))
    )
    reasons.append(
        indexed.filter(pl.col("_expected").is_null()).select(
            "_idx", pl.format("unknown_role: {}", pl.col("role")).alias("reason")
        )
    )
    mismatch = indexed.filter(pl.col("_expected").is_not_null() & (pl.col("schema") != pl.col("_expected")))
    reasons.append(
        mismatch.select(
            "_idx",
            pl.format("schema_mismatch: role {} declares {}, got {}", "role", "_expected", "schema").alias(
                "reason"
            ),
        )
    )
    for name, schema in ROLE_OUTPUT_INVARIANTS.items():
        subset = (
            indexed.lazy()
            .filter((pl.col("_expected") == name) & (pl.col("schema") == name))
            .select("_idx", *schema.columns)
            .collect()
        )
        if subset.height == 0:
            continue
        try:
            schema.validate(subset.drop("_idx"), lazy=True)
        except Exception as err:  # pandera SchemaErrors: failure cases with row indexes
            cases = getattr(err, "failure_cases", None)
            if cases is None:
                raise
            bad = cases.filter(pl.col("index").is_not_null()).select(
                pl.col("index").cast(pl.Int64),
                pl.format("{}.{}: {}", pl.lit(name), pl.col("column"), pl.col("check")).alias("reason"),
            )
            reasons.append(
                bad.with_columns(
                    subset.get_column("_idx").gather(bad.get_column("index")).alias("_idx")
                ).select("_idx", "reason")
            )
    all_reasons = (
        pl.concat([r.cast({"_idx": pl.Int64, "reason": pl.String}) for r in reasons])
        .unique(maintain_order=True)
        .group_by("_idx")
        .agg(pl.col("reason").sort().str.join("; "))
    )
    rejected = indexed.join(all_reasons, on="_idx", how="inner")
    # only what decisions and citations read (a copy of every column would double the outputs),
    # in the order of ``outputs``
    valid = (
        indexed.lazy()
        .filter(~pl.col("_idx").is_in(all_reasons.get_column("_idx").implode()))
        .select("output_id", "run_id", "role", "action", "cited_ids")
        .collect()
    )
    rejects = (
        rejected.select(
            "output_id",
            "run_id",
            "role",
            "schema",
            "reason",
            "has_proposal",
            "started_at",
        )
        .cast(INSTITUTION_OUTPUT_REJECTS_DTYPES)  # type: ignore[arg-type]
        .sort("output_id")
    )
    return valid, rejects


def run_decisions(valid: pl.DataFrame) -> pl.DataFrame:
    """Per run: the portfolio manager's action, or why there is none (no_decision / multiple_decisions)."""
    pm = valid.filter(pl.col("role") == "portfolio_manager")
    return (
        pm.group_by("run_id")
        .agg(
            pl.len().alias("decisions"),
            pl.col("action").first().alias("action"),
        )
        .with_columns(
            pl.when(pl.col("decisions") == 1).then(pl.col("action")).alias("action"),
            pl.when(pl.col("decisions") > 1).then(pl.lit("multiple_decisions")).alias("decision_problem"),
        )
    )


def run_citations(valid: pl.DataFrame) -> pl.DataFrame:
    """Per run: every distinct methodology id cited by its valid outputs."""
    return (
        valid.select("run_id", pl.col("cited_ids").alias("methodology_id"))
        .explode("methodology_id")
        .drop_nulls("methodology_id")
        .with_columns(pl.col("methodology_id").str.strip_chars())
        .filter(pl.col("methodology_id") != "")
        .unique()
        .sort("run_id", "methodology_id")
    )
