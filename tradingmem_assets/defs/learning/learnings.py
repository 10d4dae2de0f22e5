"""Learnings (SPEC section 8): reusable tool sequences reviewed from agent turns, deduplicated, suggested.

The whole table is a deterministic function of ``raw.agent_turns``, ``raw.learning_feedback``,
the operator's tombstones (``learning_deletions``) and ``as_of``; it is recomputed from scratch on
every run, so re-materializing unchanged inputs changes no row.

Each turn is reviewed (``review``); a reviewed candidate joins an earlier, similar learning or
starts one (``dedup``); learnings an operator deleted are suppressed; this module then counts turns
and feedback into the table. ``suggest`` ranks it.

Counters. Each reviewed turn of a learning is one success (``success_count`` starts at 1).
Feedback: adopted and successful -> ``success_count + 1``; adopted and failed ->
``failure_count + 1``; adopted with unknown success -> no counter (reported); not adopted ->
``ignored_count + 1`` and ``weight = 0.95 ** ignored_count``. ``last_used_at`` = the latest turn or
adopted feedback. Only rows at or before ``as_of`` count. These rules are one SQL query
(``counters_query``): the build runs it over its frames at the run's ``as_of``, and
``learnings_as_of`` runs it over ``learning_reviews`` and ``raw.learning_feedback`` at any instant T,
so a warehouse built later reads, as of T, exactly the counters a warehouse built at T stored.

Time (SPEC 16). ``known_at`` = ``created_at`` = the started_at of the turn that created the
learning (its first reviewed turn); dedup decisions are made in arrival order against the learnings
of that instant (``dedup``), so a learning's id, turns and ``known_at`` never depend on later turns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.defs.learning.dedup import TRIGGER_SIMILARITY, cluster_candidates
from tradingmem_assets.defs.learning.review import CREATED, MERGED, SUPPRESSED, review_turns
from tradingmem_assets.defs.learning.tiers import ToolTiers
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.dtypes import UTC_TS, as_utc

IGNORE_DECAY = 0.95

LEARNINGS_DTYPES = table_dtypes(tables.LEARNINGS)
LEARNING_REVIEWS_DTYPES = table_dtypes(tables.LEARNING_REVIEWS)
LEARNING_DELETIONS_DTYPES = table_dtypes(tables.LEARNING_DELETIONS)
LEARNING_FEEDBACK_REPORT_DTYPES = pl.Schema(
    {"feedback_id": pl.String(), "learning_id": pl.String(), "ts": UTC_TS, "status": pl.String()}
)

# --------------------------------------------------------------------------------------- counters

# the columns a learning's history moves; every other column is fixed by the turn that created it
COUNTER_COLUMNS = ("success_count", "failure_count", "ignored_count", "weight", "last_used_at", "turn_count")
LEARNED_OUTCOMES = (CREATED, MERGED)

# what one feedback row does to its learning (the 'status' of the build's feedback report)
FEEDBACK_KIND_SQL = """CASE
    WHEN NOT adopted THEN 'ignored'
    WHEN success IS NULL THEN 'adopted_outcome_unknown'
    WHEN success THEN 'adopted_success'
    ELSE 'adopted_failure' END"""


def counters_query(learnings: str, reviews: str, feedback: str) -> str:
    """SQL (parameter ``$as_of``): the counters of every learning known at ``as_of``.

    ``learnings`` needs learning_id and known_at; ``reviews`` learning_id, started_at, outcome (the
    ``learning_reviews`` rows); ``feedback`` learning_id, adopted, success, ts. Only turns with
    started_at <= as_of and feedback with ts <= as_of count. One row per learning, COUNTER_COLUMNS.
    """
    outcomes = ", ".join(f"'{o}'" for o in LEARNED_OUTCOMES)
    return f"""
WITH known AS (
    SELECT learning_id FROM {learnings} WHERE known_at <= $as_of
), turns AS (
    SELECT learning_id, count(*)::BIGINT AS turn_count, max(started_at) AS last_turn_at
    FROM {reviews}
    WHERE outcome IN ({outcomes}) AND started_at <= $as_of
    GROUP BY learning_id
), fb AS (
    SELECT learning_id, ts, {FEEDBACK_KIND_SQL} AS kind
    FROM {feedback}
    WHERE ts <= $as_of
), fb_counts AS (
    SELECT
        learning_id,
        count(*) FILTER (WHERE kind = 'adopted_success')::BIGINT AS fb_success,
        count(*) FILTER (WHERE kind = 'adopted_failure')::BIGINT AS fb_failure,
        count(*) FILTER (WHERE kind = 'ignored')::BIGINT AS fb_ignored,
        max(ts) FILTER (WHERE kind LIKE 'adopted%') AS last_adopted_at
    FROM fb
    GROUP BY learning_id
)
SELECT
    k.learning_id,
    t.turn_count + coalesce(f.fb_success, 0) AS success_count,
    coalesce(f.fb_failure, 0) AS failure_count,
    coalesce(f.fb_ignored, 0) AS ignored_count,
    pow({IGNORE_DECAY}::DOUBLE, coalesce(f.fb_ignored, 0)) AS weight,
    greatest(t.last_turn_at, f.last_adopted_at) AS last_used_at,
    t.turn_count
FROM known k
JOIN turns t USING (learning_id)
LEFT JOIN fb_counts f USING (learning_id)
ORDER BY k.learning_id
"""


def feedback_report_query(learnings: str, deletions: str, feedback: str) -> str:
    """SQL (``$as_of``): every feedback row at or before ``as_of`` and what it did (its status)."""
    return f"""
SELECT
    feedback_id,
    learning_id,
    ts,
    CASE
        WHEN learning_id IN (SELECT learning_id FROM {deletions}) THEN 'learning_deleted'
        WHEN learning_id NOT IN (SELECT learning_id FROM {learnings}) THEN 'unknown_learning'
        ELSE {FEEDBACK_KIND_SQL} END AS status
FROM {feedback}
WHERE ts <= $as_of
ORDER BY ts, feedback_id
"""


def learnings_as_of(con: duckdb.DuckDBPyConnection, as_of: datetime) -> pl.DataFrame:
    """``learnings`` as it stood at ``as_of`` (SPEC 16), read from a warehouse built at any later time.

    The learnings with known_at <= as_of, their counters and weight from the turns
    (``learning_reviews``) and feedback (``raw.learning_feedback``) at or before as_of only. An
    instant after the warehouse's latest learning run reads as of that run: turns after it were not
    reviewed, so feedback after it does not count either.
    """
    from tradingmem_assets.defs.operations.ledger import learning_bound

    bound = learning_bound(con)
    if bound is not None and as_of > bound:
        as_of = bound
    columns = {
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'main' AND table_name = 'learnings'"
        ).fetchall()
    }
    if "known_at" not in columns:
        raise ValueError(
            "table learnings has no known_at column (built by an older version): "
            "materialize learnings again before reading it as of an instant"
        )
    fixed = [c for c in LEARNINGS_DTYPES.names() if c not in COUNTER_COLUMNS]
    counters = counters_query(
        tables.LEARNINGS, tables.LEARNING_REVIEWS, tables.raw_table("learning_feedback")
    )
    sql = (
        f"SELECT {', '.join(f'l.{c}' for c in fixed)}, {', '.join(f'c.{c}' for c in COUNTER_COLUMNS)} "
        f"FROM {tables.LEARNINGS} l JOIN ({counters}) c USING (learning_id)"
    )
    frame = as_utc(con.sql(sql, params={"as_of": as_of}).pl())
    return frame.select(LEARNINGS_DTYPES.names()).cast(LEARNINGS_DTYPES).sort("learning_id")  # type: ignore[arg-type]


def _apply_rules(
    identity: pl.DataFrame,
    reviews: pl.DataFrame,
    feedback: pl.DataFrame,
    deletions: pl.DataFrame,
    as_of: datetime,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(counters per learning, feedback report): the SQL of ``learnings_as_of``, run over frames."""
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("learnings_", identity.select("learning_id", "known_at"))
        con.register("reviews_", reviews.select("learning_id", "started_at", "outcome"))
        con.register("feedback_", feedback.select("feedback_id", "learning_id", "adopted", "success", "ts"))
        con.register("deletions_", deletions.select("learning_id"))
        params = {"as_of": as_of}
        counters = as_utc(con.sql(counters_query("learnings_", "reviews_", "feedback_"), params=params).pl())
        report = as_utc(
            con.sql(feedback_report_query("learnings_", "deletions_", "feedback_"), params=params).pl()
        )
    finally:
        con.close()
    return counters, report


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
    ).cast(LEARNING_REVIEWS_DTYPES)  # type: ignore[arg-type]
    reviews = reviews.sort("started_at", "turn_id")

    kept = clustered.filter(pl.col("outcome") != SUPPRESSED)
    identity = kept.filter(pl.col("outcome") == CREATED).select(
        "learning_id",
        "trigger",
        "tool_sequence",
        "tool_names",
        "required_tier",
        pl.col("started_at").alias("created_at"),
        pl.col("started_at").alias("known_at"),
        pl.col("turn_id").alias("source_turn_id"),
    )
    counters, fb_report = _apply_rules(identity, reviews, feedback, deletions, as_of)
    out = identity.join(counters, on="learning_id", how="left")
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
        pl.col("tool_names").list.join(",").alias("tool_names"),
    )
    learnings = out.select(LEARNINGS_DTYPES.names()).cast(LEARNINGS_DTYPES).sort("learning_id")  # type: ignore[arg-type]
    fb_report = fb_report.select(LEARNING_FEEDBACK_REPORT_DTYPES.names()).cast(
        LEARNING_FEEDBACK_REPORT_DTYPES
    )  # type: ignore[arg-type]
    return LearningBuild(learnings=learnings, reviews=reviews, feedback=fb_report)
