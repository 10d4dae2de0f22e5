"""Learnings (SPEC section 8): reusable tool sequences reviewed from agent turns, deduplicated, suggested.

The whole table is a deterministic function of ``raw.agent_turns``, ``raw.learning_feedback``,
the operator's tombstones (``learning_deletions``) and ``as_of``; it is recomputed from scratch on
every run, so re-materializing unchanged inputs changes no row.

Each turn is reviewed (``core.learning_review``); a reviewed candidate joins an earlier, similar
learning or starts one (``core.learning_dedup``); learnings an operator deleted are suppressed;
this module then counts turns and feedback into the table. ``core.learning_suggest`` ranks it.

Counters. Each reviewed turn of a learning is one success (``success_count`` starts at 1).
Feedback: adopted and successful -> ``success_count + 1``; adopted and failed ->
``failure_count + 1``; adopted with unknown success -> no counter (reported); not adopted ->
``ignored_count + 1`` and ``weight = 0.95 ** ignored_count``. ``last_used_at`` = the latest turn or
adopted feedback. Only rows at or before ``as_of`` count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from tradingmem_assets.defs.learning.dedup import TRIGGER_SIMILARITY, cluster_candidates
from tradingmem_assets.defs.learning.review import CREATED, MERGED, SUPPRESSED, review_turns
from tradingmem_assets.defs.learning.tiers import ToolTiers
from tradingmem_assets.lib.dtypes import UTC_TS

IGNORE_DECAY = 0.95

LEARNINGS_SCHEMA = pl.Schema(
    {
        "learning_id": pl.String(),
        "name": pl.String(),
        "trigger": pl.String(),
        "tool_sequence": pl.String(),
        "guidance": pl.String(),
        "success_count": pl.Int64(),
        "failure_count": pl.Int64(),
        "ignored_count": pl.Int64(),
        "weight": pl.Float64(),
        "created_at": UTC_TS,
        "last_used_at": UTC_TS,
        "required_tier": pl.Int64(),
        "tool_names": pl.String(),
        "turn_count": pl.Int64(),
        "source_turn_id": pl.String(),
    }
)
REVIEWS_SCHEMA = pl.Schema(
    {
        "turn_id": pl.String(),
        "started_at": UTC_TS,
        "outcome": pl.String(),
        "reason": pl.String(),
        "score": pl.Int64(),
        "candidate_learning_id": pl.String(),
        "learning_id": pl.String(),
    }
)
DELETIONS_SCHEMA = pl.Schema({"learning_id": pl.String(), "deleted_at": UTC_TS, "reason": pl.String()})
FEEDBACK_REPORT_SCHEMA = pl.Schema(
    {"feedback_id": pl.String(), "learning_id": pl.String(), "ts": UTC_TS, "status": pl.String()}
)

# --------------------------------------------------------------------------------------- build


def _slug(trigger: str, fallback: str) -> str:
    words = re.findall(r"[a-z0-9]+", re.sub(r"\[REDACTED:[a-z_]+\]", " ", trigger.lower()))
    slug = "_".join(words[:8])[:64].strip("_")
    return slug or fallback


def _guidance(tool_names: list[str], tier: int, tiers: ToolTiers) -> str:
    shown = " -> ".join(tool_names[:8]) + (
        f" -> ... ({len(tool_names)} calls)" if len(tool_names) > 8 else ""
    )
    unknown = sorted({t for t in tool_names if t not in tiers.tiers})
    note = f"; undeclared tools count as tier 4: {', '.join(unknown)}" if unknown else ""
    return (
        f"For requests like this, call {shown} in this order (needs tool tier {tier}{note}). "
        "A suggestion only: permission tiers and risk confirmations still apply."
    )


@dataclass(frozen=True)
class LearningBuild:
    learnings: pl.DataFrame
    reviews: pl.DataFrame
    feedback: pl.DataFrame  # every feedback row at or before as_of with how it was applied

    def feedback_counts(self) -> dict[str, int]:
        return dict(self.feedback.group_by("status").len().sort("status").rows())


def build_learnings(
    turns: pl.DataFrame,
    feedback: pl.DataFrame,
    deletions: pl.DataFrame,
    tiers: ToolTiers,
    *,
    as_of: datetime,
    min_calls: int,
    threshold: float,
    similarity: float = TRIGGER_SIMILARITY,
) -> LearningBuild:
    """The learnings table, one review per turn and the fate of every feedback row."""
    turns = turns.filter(pl.col("started_at") <= as_of)
    candidates, reviews = review_turns(turns, tiers, min_calls=min_calls, threshold=threshold)
    clustered = cluster_candidates(candidates, similarity)
    deleted = deletions.get_column("learning_id").unique().implode()
    clustered = clustered.with_columns(
        pl.when(pl.col("learning_id").is_in(deleted))
        .then(pl.lit(SUPPRESSED))
        .when(pl.int_range(pl.len()).over("learning_id") == 0)
        .then(pl.lit(CREATED))
        .otherwise(pl.lit(MERGED))
        .alias("outcome"),
    )
    clustered = clustered.with_columns(
        pl.when(pl.col("outcome") == SUPPRESSED)
        .then(pl.lit("learning deleted by an operator (learning_deletions)"))
        .when(pl.col("outcome") == MERGED)
        .then(pl.lit("joined an existing learning"))
        .otherwise(pl.lit("new learning"))
        .alias("reason")
    )
    reviews = pl.concat(
        [
            reviews,
            clustered.select(
                "turn_id", "started_at", "outcome", "reason", "score", "candidate_learning_id", "learning_id"
            ),
        ]
    ).cast(REVIEWS_SCHEMA)  # type: ignore[arg-type]
    reviews = reviews.sort("started_at", "turn_id")

    kept = clustered.filter(pl.col("outcome") != SUPPRESSED)
    first = kept.filter(pl.col("outcome") == CREATED)
    per = kept.group_by("learning_id").agg(
        pl.len().cast(pl.Int64).alias("turn_count"),
        pl.col("started_at").max().alias("last_turn_at"),
    )
    base = first.select(
        "learning_id",
        "trigger",
        "tool_sequence",
        "tool_names",
        "required_tier",
        pl.col("started_at").alias("created_at"),
        pl.col("turn_id").alias("source_turn_id"),
    ).join(per, on="learning_id", how="left")

    fb = feedback.filter(pl.col("ts") <= as_of)
    known = base.get_column("learning_id").implode()
    fb = fb.with_columns(
        pl.when(pl.col("learning_id").is_in(deleted))
        .then(pl.lit("learning_deleted"))
        .when(~pl.col("learning_id").is_in(known))
        .then(pl.lit("unknown_learning"))
        .when(~pl.col("adopted"))
        .then(pl.lit("ignored"))
        .when(pl.col("success").is_null())
        .then(pl.lit("adopted_outcome_unknown"))
        .when(pl.col("success"))
        .then(pl.lit("adopted_success"))
        .otherwise(pl.lit("adopted_failure"))
        .alias("status")
    )
    counts = fb.group_by("learning_id").agg(
        (pl.col("status") == "adopted_success").sum().cast(pl.Int64).alias("fb_success"),
        (pl.col("status") == "adopted_failure").sum().cast(pl.Int64).alias("fb_failure"),
        (pl.col("status") == "ignored").sum().cast(pl.Int64).alias("fb_ignored"),
        pl.col("ts").filter(pl.col("status").str.starts_with("adopted")).max().alias("last_adopted_at"),
    )
    out = base.join(counts, on="learning_id", how="left").with_columns(
        pl.col("fb_success", "fb_failure", "fb_ignored").fill_null(0)
    )
    names = [
        _slug(t, lid) for t, lid in zip(out["trigger"].to_list(), out["learning_id"].to_list(), strict=True)
    ]
    guidance = [
        _guidance(n, tier, tiers)
        for n, tier in zip(out["tool_names"].to_list(), out["required_tier"].to_list(), strict=True)
    ]
    out = out.with_columns(
        pl.Series("name", names, dtype=pl.String),
        pl.Series("guidance", guidance, dtype=pl.String),
        (pl.col("turn_count") + pl.col("fb_success")).alias("success_count"),
        pl.col("fb_failure").alias("failure_count"),
        pl.col("fb_ignored").alias("ignored_count"),
        pl.lit(IGNORE_DECAY).pow(pl.col("fb_ignored")).cast(pl.Float64).alias("weight"),
        pl.max_horizontal("last_turn_at", "last_adopted_at").alias("last_used_at"),
        pl.col("tool_names").list.join(",").alias("tool_names"),
    )
    learnings = out.select(LEARNINGS_SCHEMA.names()).cast(LEARNINGS_SCHEMA).sort("learning_id")  # type: ignore[arg-type]
    fb_report = fb.select("feedback_id", "learning_id", "ts", "status").cast(FEEDBACK_REPORT_SCHEMA)  # type: ignore[arg-type]
    return LearningBuild(learnings=learnings, reviews=reviews, feedback=fb_report.sort("ts", "feedback_id"))
