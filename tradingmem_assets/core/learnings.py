"""Learnings (SPEC section 8): reusable tool sequences reviewed from agent turns, deduplicated, suggested.

The whole table is a deterministic function of ``raw.agent_turns``, ``raw.learning_feedback``,
the operator's tombstones (``learning_deletions``) and ``as_of``; it is recomputed from scratch on
every run, so re-materializing unchanged inputs changes no row.

Review (deterministic, offline). A turn is reviewed only if ``explicit_learn``, ``completed``, every
tool call ``ok`` and at least ``min_calls`` calls. Its score (0-10) is the sum of:

====  ==========================================================================
 4    it passed the review filter (completed, explicit, all calls ok, >= min calls)
 2    a reusable length: 3-8 calls (1 point for 1-2 or 9-12 calls, 0 above 12)
 1    at least two distinct tools (not one tool repeated)
 1    no call immediately repeats the previous one (same tool, same args)
 1    a usable trigger: the user message has at least 3 words
 1    every tool is declared in tools.yaml (no unvetted tool)
====  ==========================================================================

A learning is written only at ``score >= threshold`` (default 7).

Identity and dedup. ``learning_id = "l_" + sha256(normalized trigger + "|" + ",".join(tool names))[:16]``
with normalized trigger = user message stripped and lower-cased. Candidates are taken in
``(started_at, turn_id)`` order; a candidate whose redacted trigger has TF-IDF cosine >= 0.8 with an
existing learning's trigger *and the same tool names in the same order* joins that learning
(its counters grow) instead of creating one. The first turn of a learning gives its id, trigger,
tool sequence and ``created_at``.

Counters. Each reviewed turn of a learning is one success (``success_count`` starts at 1).
Feedback: adopted and successful -> ``success_count + 1``; adopted and failed ->
``failure_count + 1``; adopted with unknown success -> no counter (reported); not adopted ->
``ignored_count + 1`` and ``weight = 0.95 ** ignored_count``. ``last_used_at`` = the latest turn or
adopted feedback. Only rows at or before ``as_of`` count.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tradingmem_assets.core.redaction import redact_text, redact_value
from tradingmem_assets.core.similarity import tfidf_cosine, tfidf_vectors
from tradingmem_assets.core.tiers import ToolTiers

TRIGGER_SIMILARITY = 0.8
IGNORE_DECAY = 0.95

TS = pl.Datetime("us", "UTC")
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
        "created_at": TS,
        "last_used_at": TS,
        "required_tier": pl.Int64(),
        "tool_names": pl.String(),
        "turn_count": pl.Int64(),
        "source_turn_id": pl.String(),
    }
)
REVIEWS_SCHEMA = pl.Schema(
    {
        "turn_id": pl.String(),
        "started_at": TS,
        "outcome": pl.String(),
        "reason": pl.String(),
        "score": pl.Int64(),
        "candidate_learning_id": pl.String(),
        "learning_id": pl.String(),
    }
)
DELETIONS_SCHEMA = pl.Schema({"learning_id": pl.String(), "deleted_at": TS, "reason": pl.String()})
FEEDBACK_REPORT_SCHEMA = pl.Schema(
    {"feedback_id": pl.String(), "learning_id": pl.String(), "ts": TS, "status": pl.String()}
)

# review outcomes
NOT_REVIEWED, REJECTED, BELOW_THRESHOLD, CREATED, MERGED, SUPPRESSED = (
    "not_reviewed",
    "rejected",
    "below_threshold",
    "created",
    "merged",
    "suppressed_deleted",
)
REVIEW_OUTCOMES = (NOT_REVIEWED, REJECTED, BELOW_THRESHOLD, CREATED, MERGED, SUPPRESSED)


def normalize_trigger(user_message: str) -> str:
    return (user_message or "").strip().lower()


def learning_id_for(user_message: str, tool_names: Sequence[str]) -> str:
    """``l_`` + the first 16 hex of sha256(normalized trigger | tool names joined by ',')."""
    raw = normalize_trigger(user_message) + "|" + ",".join(tool_names)
    return "l_" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


# --------------------------------------------------------------------------------------- parsing


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def parse_tool_calls(text: str | None) -> dict[str, Any]:
    """One turn's tool calls: names, ok-ness, the redacted sequence, or the reason it is malformed."""
    out: dict[str, Any] = {
        "tool_names": [],
        "n_calls": 0,
        "all_ok": False,
        "repeated_call": False,
        "tool_sequence": None,
        "error": None,
    }
    try:
        calls = json.loads(text) if text is not None else None
    except (TypeError, ValueError):
        out["error"] = "tool_calls is not valid JSON"
        return out
    if not isinstance(calls, list):
        out["error"] = "tool_calls is not a JSON list"
        return out
    names: list[str] = []
    sequence: list[dict[str, Any]] = []
    raw_keys: list[str] = []
    all_ok = True
    for i, call in enumerate(calls, start=1):
        if not isinstance(call, dict):
            out["error"] = f"call {i} is not an object"
            return out
        name = call.get("tool_name")
        if not isinstance(name, str) or not name.strip():
            out["error"] = f"call {i} has no tool_name"
            return out
        ok = call.get("ok")
        if not isinstance(ok, bool):
            out["error"] = f"call {i} ({name}): 'ok' must be true or false"
            return out
        args = call.get("args", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            out["error"] = f"call {i} ({name}): 'args' must be an object"
            return out
        all_ok &= ok
        names.append(name)
        raw_keys.append(name + "|" + _canonical(args))
        redacted, _kinds = redact_value(args)
        sequence.append({"tool_name": name, "args": redacted})
    out.update(
        tool_names=names,
        n_calls=len(names),
        all_ok=all_ok,
        repeated_call=any(a == b for a, b in zip(raw_keys, raw_keys[1:], strict=False)),
        tool_sequence=_canonical(sequence),
    )
    return out


_PARSED_SCHEMA = pl.Schema(
    {
        "tool_calls": pl.String(),
        "tool_names": pl.List(pl.String()),
        "n_calls": pl.Int64(),
        "all_ok": pl.Boolean(),
        "repeated_call": pl.Boolean(),
        "tool_sequence": pl.String(),
        "error": pl.String(),
    }
)


def _parse_unique(texts: pl.Series) -> pl.DataFrame:
    """Parse each distinct tool_calls text once (JSON with arbitrary args has no set-based parser)."""
    uniq = texts.unique(maintain_order=True).to_list()
    rows = [{"tool_calls": t, **parse_tool_calls(t)} for t in uniq]
    return pl.DataFrame(rows, schema=_PARSED_SCHEMA) if rows else pl.DataFrame(schema=_PARSED_SCHEMA)


# --------------------------------------------------------------------------------------- review


def score_expr(min_calls: int, known_tools: Sequence[str]) -> pl.Expr:
    """The documented 0-10 review score of a turn that passed the review filter."""
    n = pl.col("n_calls")
    length = pl.when(n.is_between(3, 8)).then(2).when(n <= 12).then(1).otherwise(0)
    distinct = (pl.col("tool_names").list.n_unique() >= 2).cast(pl.Int64)
    no_repeat = (~pl.col("repeated_call")).cast(pl.Int64)
    words = (pl.col("user_message").str.count_matches(r"\w+") >= 3).cast(pl.Int64)
    known = pl.col("tool_names").list.eval(pl.element().is_in(list(known_tools))).list.all().cast(pl.Int64)
    return (4 + length + distinct + no_repeat + words + known).cast(pl.Int64)


def review_turns(
    turns: pl.DataFrame, tiers: ToolTiers, *, min_calls: int, threshold: float
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(candidates, reviews): turns that earn a learning, and one review row per turn.

    ``turns``: turn_id, started_at, user_message, tool_calls, completed, explicit_learn.
    Candidates carry the redacted trigger and sequence, the tool names and the candidate id.
    """
    gate = (
        pl.when(~pl.col("explicit_learn"))
        .then(pl.lit("not_explicit_learn"))
        .when(~pl.col("completed"))
        .then(pl.lit("not_completed"))
    )
    base = turns.with_columns(gate.alias("gate"))
    parsed = _parse_unique(base.filter(pl.col("gate").is_null()).get_column("tool_calls"))
    frame = base.join(parsed, on="tool_calls", how="left", nulls_equal=True)
    passed_filter = pl.col("gate").is_null() & pl.col("error").is_null() & pl.col("all_ok")
    passed_filter = passed_filter & (pl.col("n_calls") >= min_calls)
    frame = frame.with_columns(
        pl.when(passed_filter).then(score_expr(min_calls, list(tiers.tiers))).alias("score"),
    )
    outcome = (
        pl.when(pl.col("gate").is_not_null())
        .then(pl.lit(NOT_REVIEWED))
        .when(pl.col("error").is_not_null())
        .then(pl.lit(REJECTED))
        .when(~pl.col("all_ok") | (pl.col("n_calls") < min_calls))
        .then(pl.lit(NOT_REVIEWED))
        .when(pl.col("score") < threshold)
        .then(pl.lit(BELOW_THRESHOLD))
    )
    reason = (
        pl.when(pl.col("gate").is_not_null())
        .then(pl.col("gate"))
        .when(pl.col("error").is_not_null())
        .then(pl.lit("malformed_tool_calls: ") + pl.col("error"))
        .when(~pl.col("all_ok"))
        .then(pl.lit("failed_tool_call"))
        .when(pl.col("n_calls") < min_calls)
        .then(pl.format("too_few_calls: {} < {}", pl.col("n_calls"), pl.lit(min_calls)))
        .when(pl.col("score") < threshold)
        .then(pl.format("score {} < threshold {}", pl.col("score"), pl.lit(threshold)))
    )
    frame = frame.with_columns(outcome.alias("outcome"), reason.alias("reason"))
    candidates = frame.filter(pl.col("outcome").is_null())
    if candidates.height:
        triggers = [redact_text(m.strip())[0] for m in candidates.get_column("user_message").to_list()]
        ids = [
            learning_id_for(m, names)
            for m, names in zip(
                candidates.get_column("user_message").to_list(),
                candidates.get_column("tool_names").to_list(),
                strict=True,
            )
        ]
    else:
        triggers, ids = [], []
    candidates = candidates.with_columns(
        pl.Series("trigger", triggers, dtype=pl.String),
        pl.Series("candidate_learning_id", ids, dtype=pl.String),
        pl.col("tool_names").list.join(",").alias("tool_key"),
        tiers.required_tier_expr(pl.col("tool_names")).alias("required_tier"),
    ).sort("started_at", "turn_id")
    reviews = frame.filter(pl.col("outcome").is_not_null()).select(
        "turn_id",
        "started_at",
        "outcome",
        "reason",
        "score",
        pl.lit(None, dtype=pl.String).alias("candidate_learning_id"),
        pl.lit(None, dtype=pl.String).alias("learning_id"),
    )
    return candidates, reviews


# --------------------------------------------------------------------------------------- dedup


def cluster_candidates(candidates: pl.DataFrame, threshold: float = TRIGGER_SIMILARITY) -> pl.DataFrame:
    """Give every candidate the learning it joins (``learning_id``): its own, or an earlier similar one.

    Merges only happen between candidates with the same tool names (``tool_key``), in
    ``(started_at, turn_id)`` order. Equal candidate ids are equal texts, so the greedy pass runs over
    distinct candidates only (a compact array), against the representatives created so far.
    """
    if candidates.height == 0:
        return candidates.with_columns(pl.lit(None, dtype=pl.String).alias("learning_id"))
    ordered = candidates.sort("started_at", "turn_id")
    uniq = ordered.unique(subset="candidate_learning_id", keep="first", maintain_order=True)
    ids = uniq.get_column("candidate_learning_id").to_list()
    keys = uniq.get_column("tool_key").to_list()
    vectors = tfidf_vectors(uniq.get_column("trigger").to_list())
    assigned: dict[str, str] = {}
    reps_by_key: dict[str, list[int]] = {}
    for i, (cid, key) in enumerate(zip(ids, keys, strict=True)):
        reps = reps_by_key.setdefault(key, [])
        if reps and vectors is not None:
            sims = (vectors[reps] @ vectors[i].T).toarray().ravel()
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                assigned[cid] = ids[reps[best]]
                continue
        reps.append(i)
        assigned[cid] = cid
    mapping = pl.DataFrame(
        {"candidate_learning_id": list(assigned), "learning_id": list(assigned.values())},
        schema={"candidate_learning_id": pl.String, "learning_id": pl.String},
    )
    return ordered.join(mapping, on="candidate_learning_id", how="left")


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


# --------------------------------------------------------------------------------------- suggest


def rank_learnings(
    learnings: pl.DataFrame, message: str, *, k: int, max_tier: int | None = None
) -> pl.DataFrame:
    """Top-``k`` learnings for ``message``: TF-IDF cosine to the trigger x weight, above zero.

    ``max_tier`` is a hard filter applied before ranking: a learning that needs a higher tool
    tier than the caller may use is never returned, however similar it is.
    """
    pool = learnings if max_tier is None else learnings.filter(pl.col("required_tier") <= max_tier)
    if pool.height == 0 or k <= 0 or not (message or "").strip():
        return pool.clear().with_columns(
            pl.lit(None, dtype=pl.Float64).alias("similarity"), pl.lit(None, dtype=pl.Float64).alias("score")
        )
    sims = tfidf_cosine([message], pool.get_column("trigger").to_list())[0]
    ranked = pool.with_columns(pl.Series("similarity", sims, dtype=pl.Float64)).with_columns(
        (pl.col("similarity") * pl.col("weight")).alias("score")
    )
    return (
        ranked.filter(pl.col("score") > 0)
        .sort(["score", "success_count", "learning_id"], descending=[True, True, False])
        .head(k)
    )


def suggest(
    message: str,
    k: int | None = None,
    max_tier: int | None = None,
    *,
    database: str | Path | None = None,
    enabled: bool | None = None,
) -> list[dict[str, Any]]:
    """The Python API: top-K learnings for a user message (empty when learning is disabled).

    Reads ``learnings`` from the warehouse (``TRADINGMEM_DB`` unless ``database`` is given). Each
    result carries the learning's fields, its parsed ``tool_sequence``, ``similarity`` and ``score``.
    """
    from tradingmem_assets.settings import SETTINGS, default_db_path
    from tradingmem_assets.warehouse import connection, read_table, table_exists

    if not (SETTINGS.learning_enabled if enabled is None else enabled):
        return []
    k = SETTINGS.learning_top_k if k is None else k
    path = Path(database or default_db_path())
    if not path.exists():
        return []
    with connection(path, read_only=True) as con:
        if not table_exists(con, "main.learnings"):
            return []
        frame = read_table(con, "main.learnings")
    rows = rank_learnings(frame, message, k=k, max_tier=max_tier).to_dicts()
    for row in rows:
        row["tool_sequence"] = json.loads(row["tool_sequence"])
    return rows
