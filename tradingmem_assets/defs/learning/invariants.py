"""Pandera (polars) models of the learning loop (SPEC section 8).

- ``ROLE_OUTPUT_INVARIANTS``: the structured schemas institution roles declare (AnalystReport,
  TraderProposal, PortfolioDecision); a role output is kept only if it validates.
- Invariants of the stored tables, named after the spec; the ones that protect users run as
  blocking asset checks: no secret in a learning, no injection pattern in a methodology, a graduated
  methodology has earned it, lazy/manual runs never feed a methodology.
"""

from __future__ import annotations

import json

import pandera.polars as pa
import polars as pl

from tradingmem_assets.defs.safety.injection import scan_column
from tradingmem_assets.defs.safety.redaction import secret_kinds_in_text, secret_kinds_in_value
from tradingmem_assets.lib import vocabulary as v
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.validation import named_checks

METHODOLOGY_EVENTS = (
    "created",
    "merged",
    "rejected_injection",
    "rejected_invalid",
    "outcome_recorded",
    "graduated",
    "demoted",
)


# --------------------------------------------------------------------------- role output schemas


def _citations_are_strings(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select(pl.col(data.key))


def _role_output_schema(name: str, description: str) -> pa.DataFrameSchema:
    return pa.DataFrameSchema(
        {
            "action": pa.Column(pl.String, pa.Check.isin(list(v.INSTITUTION_ACTIONS)), nullable=False),
            "confidence": pa.Column(pl.Float64, [pa.Check.ge(0.0), pa.Check.le(1.0)], nullable=False),
            "citations_valid": pa.Column(
                pl.Boolean,
                pa.Check(_citations_are_strings, name="cited_methodology_ids_is_a_list_of_strings"),
            ),
        },
        name=name,
        description=description,
        strict="filter",
    )


ANALYST_REPORT = _role_output_schema(
    "AnalystReport",
    "An analyst/bull/bear/risk view: stance (action), confidence, cited methodologies, proposal.",
)
TRADER_PROPOSAL = _role_output_schema(
    "TraderProposal", "The trader's proposed action with confidence and the methodologies it relies on."
)
PORTFOLIO_DECISION = _role_output_schema(
    "PortfolioDecision", "The portfolio manager's decision: the action the reflection ladder scores."
)
ROLE_OUTPUT_INVARIANTS: dict[str, pa.DataFrameSchema] = {
    s.name: s
    for s in (ANALYST_REPORT, TRADER_PROPOSAL, PORTFOLIO_DECISION)  # type: ignore[misc]
}


# --------------------------------------------------------------------------- learnings


def _no_secret_in_learning(data: pa.PolarsData) -> pl.LazyFrame:
    frame = data.lazyframe.select("name", "trigger", "guidance", "tool_sequence").collect()
    ok = []
    for name, trigger, guidance, sequence in frame.iter_rows():
        try:
            parsed = json.loads(sequence) if sequence is not None else None
        except ValueError:
            parsed = sequence
        found = (
            secret_kinds_in_text(name)
            + secret_kinds_in_text(trigger)
            + secret_kinds_in_text(guidance)
            + secret_kinds_in_value(parsed)
        )
        ok.append(not found)
    return pl.LazyFrame({"ok": ok}, schema={"ok": pl.Boolean})


def _weight_follows_ignores(data: pa.PolarsData) -> pl.LazyFrame:
    expected = pl.lit(0.95).pow(pl.col("ignored_count"))
    return data.lazyframe.select(((pl.col("weight") - expected).abs() < 1e-9).alias("ok"))


def _turns_are_successes(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select((pl.col("success_count") >= pl.col("turn_count")).alias("ok"))


LEARNINGS_RULES = {
    "no_secret_reaches_a_stored_learning": _no_secret_in_learning,
    "weight_is_0.95_pow_ignored_count": _weight_follows_ignores,
    "every_learned_turn_is_a_success": _turns_are_successes,
}
LEARNINGS_INVARIANTS = pa.DataFrameSchema(
    {
        "learning_id": pa.Column(pl.String, pa.Check.str_matches(r"^l_[0-9a-f]{16}$"), unique=True),
        "name": pa.Column(pl.String, pa.Check.str_length(min_value=1)),
        "trigger": pa.Column(pl.String, pa.Check.str_length(min_value=1)),
        "tool_sequence": pa.Column(pl.String),
        "guidance": pa.Column(pl.String),
        "success_count": pa.Column(pl.Int64, pa.Check.ge(1)),
        "failure_count": pa.Column(pl.Int64, pa.Check.ge(0)),
        "ignored_count": pa.Column(pl.Int64, pa.Check.ge(0)),
        "weight": pa.Column(pl.Float64, [pa.Check.gt(0.0), pa.Check.le(1.0)]),
        "created_at": pa.Column(UTC_TS),
        "last_used_at": pa.Column(UTC_TS, nullable=True),
        "required_tier": pa.Column(pl.Int64, pa.Check.isin([1, 2, 3, 4])),
        "turn_count": pa.Column(pl.Int64, pa.Check.ge(1)),
    },
    name="learnings",
    checks=named_checks(LEARNINGS_RULES),
)


# --------------------------------------------------------------------------- methodologies


def _no_injection(data: pa.PolarsData) -> pl.LazyFrame:
    text = pl.concat_str(["name", "description", "indicators", "phases"], separator="\n", ignore_nulls=True)
    return data.lazyframe.select((scan_column(text).list.len() == 0).alias("ok"))


def _id_from_dedup_key(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select(
        (pl.col("methodology_id") == pl.lit("m_") + pl.col("dedup_key").str.slice(0, 16)).alias("ok")
    )


def _correct_within_used(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select((pl.col("times_correct") <= pl.col("times_used")).alias("ok"))


METHODOLOGY_RULES = {
    "no_injected_text_becomes_a_methodology": _no_injection,
    "methodology_id_is_m_plus_dedup_key_prefix": _id_from_dedup_key,
    "times_correct_at_most_times_used": _correct_within_used,
}


def methodologies_schema(injection_threshold: float, min_uses: int) -> pa.DataFrameSchema:
    """Invariants of ``methodologies``; graduation thresholds are the process settings."""

    def _graduation_earned(data: pa.PolarsData) -> pl.LazyFrame:
        earned = (pl.col("confidence") >= injection_threshold - 1e-12) & (pl.col("times_used") >= min_uses)
        return data.lazyframe.select(((pl.col("quarantine") == 1) | earned).alias("ok"))

    return pa.DataFrameSchema(
        {
            "methodology_id": pa.Column(pl.String, pa.Check.str_matches(r"^m_[0-9a-f]{16}$"), unique=True),
            "name": pa.Column(pl.String, pa.Check.str_length(min_value=1)),
            "description": pa.Column(pl.String, pa.Check.str_length(min_value=1)),
            "direction": pa.Column(pl.String, pa.Check.isin(list(v.METHODOLOGY_DIRECTIONS))),
            "primary_signal": pa.Column(pl.String, pa.Check.isin(list(v.PRIMARY_SIGNALS))),
            "timeframe": pa.Column(pl.String, pa.Check.isin(list(v.TIMEFRAMES))),
            "asset_class": pa.Column(pl.String, pa.Check.isin(list(v.ASSET_CLASSES))),
            "dedup_key": pa.Column(pl.String, pa.Check.str_matches(r"^[0-9a-f]{64}$"), unique=True),
            "quarantine": pa.Column(pl.Int64, pa.Check.isin([0, 1])),
            "confidence": pa.Column(pl.Float64, [pa.Check.ge(0.0), pa.Check.le(1.0)]),
            "times_used": pa.Column(pl.Int64, pa.Check.ge(0)),
            "times_correct": pa.Column(pl.Int64, pa.Check.ge(0)),
            "times_proposed": pa.Column(pl.Int64, pa.Check.ge(1)),
        },
        name="methodologies",
        checks=named_checks(
            {**METHODOLOGY_RULES, "graduated_only_with_confidence_and_uses": _graduation_earned}
        ),
    )


def methodology_cases_schema(windows: tuple[int, ...]) -> pa.DataFrameSchema:
    """Invariants of ``methodology_cases`` (validated with the run's ``kind`` joined in)."""
    return pa.DataFrameSchema(
        {
            "case_id": pa.Column(pl.String, unique=True),
            "methodology_id": pa.Column(pl.String),
            "run_id": pa.Column(pl.String),
            "window": pa.Column(pl.Int64, pa.Check.isin(list(windows))),
            "correct": pa.Column(pl.Boolean),
            "recorded_at": pa.Column(UTC_TS),
            "kind": pa.Column(pl.String, pa.Check.isin(["scheduled"]), nullable=False),
        },
        name="methodology_cases",
        unique=["run_id", "window", "methodology_id"],
    )


METHODOLOGY_LIFECYCLE_EVENTS_INVARIANTS = pa.DataFrameSchema(
    {
        "event_id": pa.Column(pl.String, unique=True),
        "methodology_id": pa.Column(pl.String, nullable=True),
        "event": pa.Column(pl.String, pa.Check.isin(list(METHODOLOGY_EVENTS))),
        "ts": pa.Column(UTC_TS),
        "detail": pa.Column(pl.String),
    },
    name="methodology_lifecycle_events",
)
